"""The plugin contract is documented whole (as datasette checks its hooks against its docs): every
protocol a plugin implements or calls, each of its public members, and every entry-point group cdc
reads, appear in docs/plugins.md. A protocol added to the core without a word there fails here."""
from __future__ import annotations

import ast
import re
import tomllib

import pytest

from tests.conftest import ROOT

DOC = (ROOT / "docs" / "plugins.md").read_text()
# The core modules whose protocols make the plugin contract.
CONTRACT = ("source.py", "sink.py", "offsets.py", "schema_history.py", "signals.py", "custom_converters.py",
            "post_processors.py")


def _protocols() -> list[tuple[str, str, list[str]]]:
    """(module, protocol, public members) of each protocol class in the contract's modules."""
    found = []
    for module in CONTRACT:
        tree = ast.parse((ROOT / "cdc" / "core" / module).read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("Protocol") for b in node.bases):
                members = [n.name for n in node.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
                members += [n.target.id for n in node.body
                            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
                found.append((module, node.name, members))
    return found


def _mentioned(name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", DOC) is not None


def test_the_contract_has_protocols() -> None:
    assert len(_protocols()) >= 20  # the walk above finds them (Source, Sink, the capabilities...)


@pytest.mark.parametrize(("module", "protocol", "members"), _protocols(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_protocol_and_member_is_in_plugins_md(module: str, protocol: str, members: list[str]) -> None:
    assert _mentioned(protocol), f"cdc/core/{module}: {protocol} is not described in docs/plugins.md"
    missing = [m for m in members if not _mentioned(m)]
    assert missing == [], f"cdc/core/{module}: {protocol}'s {missing} not described in docs/plugins.md"


def test_every_entry_point_group_is_in_plugins_md() -> None:
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert [g for g in groups if g not in DOC] == []
