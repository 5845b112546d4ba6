"""Every option is documented, and docs/options.md is what the declarations say today."""
from __future__ import annotations

from cdc.docs import option_groups, render
from tests.conftest import ROOT


def test_every_option_has_a_description() -> None:
    undocumented = [o.name for _, options in option_groups() for o in options if len(o.doc.strip()) < 10]
    assert undocumented == []


def test_options_reference_is_up_to_date() -> None:
    assert (ROOT / "docs" / "options.md").read_text() == render() + "\n", "run: python -m cdc.docs > docs/options.md"
