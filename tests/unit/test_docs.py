"""The documentation says what the code has: every option and every `cdc` command is documented,
docs/options.md is what the declarations say today, every page is in the README's map, and every
relative link points at a file (and heading) that exists."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import cdc
from cdc.config import Option
from cdc.docs import anchor, option_groups, render
from tests.conftest import ROOT

DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.glob("*.md"))
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _documentation() -> str:
    """README.md and every page of docs/, as one text."""
    return "\n".join(_text(p) for p in [README, *PAGES])


def test_every_option_has_a_description() -> None:
    undocumented = [o.name for _, options in option_groups() for o in options if len(o.doc.strip()) < 10]
    assert undocumented == []


def test_options_reference_is_up_to_date() -> None:
    assert (DOCS / "options.md").read_text() == render() + "\n", "run: python -m cdc.docs > docs/options.md"


def _declared_options() -> tuple[dict[str, set[str]], list[str]]:
    """Every Option a module of cdc declares (alone, in a module-level tuple or list, or as a class's
    ``options``), by name, with where; and the modules that cannot be imported for want of a library
    outside cdc (an extra that is not installed)."""
    found: dict[str, set[str]] = {}
    missing: list[str] = []
    for info in pkgutil.walk_packages(cdc.__path__, "cdc."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] != "cdc":
                missing.append(f"{info.name} (no {exc.name})")
                continue
            raise
        for attr, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module.__name__:
                value = vars(value).get("options")
            if isinstance(value, Option):
                value = (value,)
            if isinstance(value, (tuple, list)) and value and all(isinstance(v, Option) for v in value):
                for option in value:
                    found.setdefault(option.name, set()).add(f"{info.name}.{attr}")
    return found, missing


def test_every_declared_option_is_in_the_reference() -> None:
    """An Option declared anywhere in cdc, not only in the groups cdc.docs knows of, is in docs/options.md."""
    reference = _text(DOCS / "options.md")
    found, missing = _declared_options()
    assert found, "no Option declaration found"
    absent = {name: sorted(where) for name, where in found.items() if f"| `{name}` |" not in reference}
    assert absent == {}, "declared but not in docs/options.md (add the group to cdc.docs, then regenerate)"
    if missing:
        pytest.skip(f"modules not checked, a library is missing: {', '.join(missing)}")


def _commands() -> dict[str, argparse.ArgumentParser]:
    from cdc.cli import build_parser, declare_all

    parser = declare_all(build_parser())
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(subparsers) == 1
    return {"": parser, **subparsers[0].choices}


def test_every_cdc_command_is_documented() -> None:
    """Every sub-command `python -m cdc.cli --help` lists is named as `cdc <command>` in README.md or a page."""
    text = _documentation()
    commands = [name for name in _commands() if name]
    assert {"run", "status", "slots", "signal", "sources", "postgres"} <= set(commands)
    undocumented = [name for name in commands if not re.search(rf"\bcdc {re.escape(name)}\b", text)]
    assert undocumented == []


def test_every_flag_of_the_cdc_command_is_documented() -> None:
    """Every flag that is not an option's own (those are in docs/options.md, as --a-b-c or a shortcut listed
    there), and every choice of a positional argument (the signals), appears in README.md or a page."""
    text = _documentation()
    undocumented = []
    for command, parser in _commands().items():
        for action in parser._actions:
            if action.dest.startswith("prop:") or isinstance(action, (argparse._HelpAction,
                                                                       argparse._SubParsersAction)):
                continue
            words = [s for s in action.option_strings if s.startswith("--")]
            if not action.option_strings:
                words = [str(c) for c in action.choices or ()]
            for word in words:
                if not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text):
                    undocumented.append(f"cdc {command} {word}".replace("  ", " "))
    assert undocumented == []


def test_spark_reader_options_are_documented() -> None:
    """format("cdc")'s own options (cdc.spark.options, importable without pyspark) are in the generated
    docs/options.md, with their defaults, and the reader passes none of them to the source."""
    from cdc.spark.options import READER_NAMES, READER_OPTIONS

    text = _text(DOCS / "options.md")
    assert "source" in READER_NAMES and "path" in READER_NAMES
    undocumented = [o.name for o in READER_OPTIONS if f"| `{o.name}` |" not in text]
    assert undocumented == []
    assert "| `maxRowsPerBatch` | int | `300000` |" in text


def test_every_page_is_in_the_readme_map() -> None:
    linked = {target.split("#")[0] for target in LINK.findall(CODE_SPAN.sub("", FENCE.sub("", _text(README))))}
    unlisted = [f"docs/{p.name}" for p in PAGES if f"docs/{p.name}" not in linked]
    assert unlisted == []


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a page (a repeated one gets -1, -2...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", _text(path)).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            slug = anchor(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1)))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            out.add(slug if count == 0 else f"{slug}-{count}")
    return out


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(CODE_SPAN.sub("", FENCE.sub("", _text(page)))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved):
            broken.append(f"{target}: no such heading in {resolved.relative_to(ROOT)}")
    assert broken == []


def test_readme_starts_with_the_commands_ci_runs() -> None:
    """The README opens with the demo and the test command, and CI (.ci/run) runs that same test command."""
    first_block = re.search(r"```bash\n(.*?)```", _text(README), re.S)
    assert first_block is not None
    lines = first_block.group(1).splitlines()
    assert [line.split("#")[0].strip() for line in lines] == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert all("#" in line for line in lines), "each command keeps its one-line comment"
    assert re.search(r"^bash scripts/test\.sh\b", _text(ROOT / ".ci" / "run"), re.M)
