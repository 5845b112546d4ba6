"""event.converting.failure.handling.mode: a value its column's converter cannot convert is null with a
warning (warn, Debezium's default), null (skip), or stops the pipeline naming the column (fail); the other
columns of the row are converted as usual, and rows that convert cost nothing more."""
from __future__ import annotations

import logging

import pytest

from cdc.core.columns import ColumnStage
from cdc.core.conversion_failures import ConversionFailures
from cdc.core.errors import SourceError
from cdc.core.topics import TopicNaming
from cdc.sources.postgres.catalog import CatalogColumn, CatalogTable
from cdc.sources.postgres.tables import TableState
from cdc.sources.postgres.types import TypeModes, TypeRegistry


def _no_server() -> None:
    raise AssertionError("built-in types only")


def state(mode: str) -> TableState:
    columns = (CatalogColumn("id", 1, 23, -1, True, None, "int4", 0), CatalogColumn("d", 2, 1082, -1, False, None,
                                                                                    "date", 0),
               CatalogColumn("n", 3, 23, -1, False, None, "int4", 0))
    return TableState(CatalogTable(1, "public", "t", "d", columns, ("id",)), columns, topics=TopicNaming("p"),
                      types=TypeRegistry(_no_server), modes=TypeModes(),
                      columns_stage=ColumnStage({}, failures=ConversionFailures(mode)), key_spec={},
                      unavailable_placeholder="x")


def test_warn_writes_null_for_that_column_and_says_which(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        row = state("warn").row(["1", "not a date", "7"])
    assert row == {"id": 1, "d": None, "n": 7}
    assert "the value 'not a date' of column public.t.d cannot be converted" in caplog.text
    assert state("warn").row(["2", "2024-01-02", "8"]) == {"id": 2, "d": 19724, "n": 8}


def test_skip_writes_null_silently(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert state("skip").row(["1", "not a date", "7"]) == {"id": 1, "d": None, "n": 7}
    assert caplog.text == ""


def test_fail_stops_with_the_column_and_the_fix() -> None:
    with pytest.raises(SourceError, match=r"'not a date' of column public\.t\.d cannot be converted") as raised:
        state("fail").row(["1", "not a date", "7"])
    assert "event.converting.failure.handling.mode=warn" in raised.value.fix
