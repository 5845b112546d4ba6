"""The core (cdc/core) is the bottom layer: none of its modules imports a cdc module outside cdc.core, so
the rest of cdc (cdc.config, the sources, sinks, converters, metrics...) builds on it and no import runs
in a circle between them. Checked in the code (every import statement, those inside functions too) and
at run time (a fresh interpreter that imports every core module)."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

CORE = ROOT / "cdc" / "core"
# Imported under `if TYPE_CHECKING:` for annotations only, never at run time: the types the lag
# capability (ReportsLag, ReportsStatus) hands over, which live with the metrics that use them.
TYPE_ONLY = {("source.py", "cdc.metrics.findings"), ("source.py", "cdc.metrics.lag"),
             ("source.py", "cdc.metrics.registry")}


def _type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and isinstance(test, ast.Name | ast.Attribute) \
        and ast.unparse(test).endswith("TYPE_CHECKING")


def _imports(tree: ast.AST, type_only: bool = False) -> list[tuple[str, bool]]:
    """(module, under TYPE_CHECKING) of every import in ``tree``."""
    found: list[tuple[str, bool]] = []
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.Import):
            found += [(alias.name, type_only) for alias in child.names]
        elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
            found.append((child.module, type_only))
        found += _imports(child, type_only or _type_checking_block(child))
    return found


def _outside(module: str) -> bool:
    return (module == "cdc" or module.startswith("cdc.")) and not (module == "cdc.core" or
                                                                  module.startswith("cdc.core."))


def test_no_core_module_imports_cdc_outside_the_core() -> None:
    found = set()
    for path in sorted(CORE.glob("*.py")):
        for module, type_only in _imports(ast.parse(path.read_text())):
            if _outside(module) and not (type_only and (path.name, module) in TYPE_ONLY):
                found.add((path.name, module))
    assert found == set(), "core modules importing cdc modules outside cdc.core"


def test_the_type_only_imports_listed_are_still_there() -> None:
    """TYPE_ONLY names no import that is gone (take it out of the list)."""
    left = {(path.name, module) for path in CORE.glob("*.py")
            for module, type_only in _imports(ast.parse(path.read_text())) if type_only and _outside(module)}
    assert left == TYPE_ONLY


def test_importing_the_whole_core_loads_nothing_else_of_cdc() -> None:
    script = ("import importlib, json, pkgutil, sys\n"
              "import cdc.core\n"
              "for m in pkgutil.iter_modules(cdc.core.__path__):\n"
              "    importlib.import_module('cdc.core.' + m.name)\n"
              "print(json.dumps(sorted(n for n in sys.modules if n.startswith('cdc.'))))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    assert len(loaded) > 40  # every core module was imported
    assert [n for n in loaded if not n.startswith("cdc.core")] == []


def test_cdc_config_is_the_core_model_re_exported() -> None:
    """Plugins import ``cdc.config.Option`` (docs/plugins.md): the same objects as the core's."""
    import cdc.config
    import cdc.core.config
    import cdc.core.options

    assert cdc.config.Option is cdc.core.config.Option and cdc.config.Config is cdc.core.config.Config
    assert cdc.config.CORE_OPTIONS is cdc.core.options.CORE_OPTIONS
    source = Path(cdc.config.__file__).read_text()
    assert "def " not in source and "class " not in source  # nothing declared there any more
