"""The size limit on cdc/'s functions (ruff C901 and PLR0915, pyproject.toml): ruff can only exempt a
whole file, so this holds every exempted file to exactly the functions its comment names."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT

PYPROJECT = ROOT / "pyproject.toml"
RULES = {"C901", "PLR0915"}
NAMED = re.compile(r"^#\s+(\w+) \(((?:C901|PLR0915) \d+(?:, (?:C901|PLR0915) \d+)*)\): \S")


def exemptions() -> dict[str, dict[str, set[str]]]:
    """{file: {function: rules}} from the comments above each cdc/ entry of the per-file ignores."""
    lines = PYPROJECT.read_text().splitlines()
    start = lines.index("[tool.ruff.lint.per-file-ignores]")
    found: dict[str, dict[str, set[str]]] = {}
    named: dict[str, set[str]] = {}
    for line in lines[start + 1:]:
        if line.startswith("["):
            break
        if match := NAMED.match(line):
            named[match.group(1)] = {part.split()[0] for part in match.group(2).split(", ")}
        elif entry := re.match(r'"([^"]+)" = ', line):
            if entry.group(1).startswith("cdc/"):
                found[entry.group(1)] = named
            named = {}
    return found


def over_the_limit() -> dict[str, dict[str, set[str]]]:
    """{file: {function: rules}} that ruff finds in cdc/ with no file exempted."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "cdc", "--no-cache",
                           "--select", ",".join(sorted(RULES)), "--config", "lint.per-file-ignores = {}",
                           "--output-format", "json", "--exit-zero"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    found: dict[str, dict[str, set[str]]] = {}
    for finding in json.loads(done.stdout):
        path = Path(finding["filename"])
        line = path.read_text().splitlines()[finding["location"]["row"] - 1]
        name = re.search(r"def (\w+)", line)
        assert name, (finding, line)
        rel = path.relative_to(ROOT).as_posix()
        found.setdefault(rel, {}).setdefault(name.group(1), set()).add(finding["code"])
    return found


def _flat(functions: dict[str, dict[str, set[str]]]) -> set[tuple[str, str, str]]:
    return {(path, name, rule) for path, names in functions.items() for name, rules in names.items() for rule in rules}


def test_every_function_over_the_limit_is_named_and_every_named_one_is_over() -> None:
    over, named = _flat(over_the_limit()), _flat(exemptions())
    assert not over - named, (f"over the size limit and not named in pyproject.toml's per-file ignores: "
                              f"{sorted(over - named)}; make them smaller (or name each there with why)")
    assert not named - over, (f"named in pyproject.toml's per-file ignores but no longer over the limit: "
                              f"{sorted(named - over)}; take them out of the list (and the rule, if none is left)")


def test_each_file_ignores_exactly_the_rules_of_its_named_functions() -> None:
    ignores = tomllib.loads(PYPROJECT.read_text())["tool"]["ruff"]["lint"]["per-file-ignores"]
    for path, functions in exemptions().items():
        assert set(ignores[path]) == set().union(*functions.values()), path
    cdc_entries = {path for path, rules in ignores.items() if path.startswith("cdc") and RULES & set(rules)}
    assert cdc_entries == set(exemptions())  # no cdc/ entry, glob or file, outside the named list
