"""Rows of another table version than the query's schema (EventRows, the driver's stream):
after a restart, Spark's schema is the table's as it is now, and the rows written before an ALTER
still come first."""
from __future__ import annotations

import logging
from typing import Any

import pytest

from cdc.core import connect
from cdc.core.envelope import TableEnvelope
from cdc.core.errors import SourceError
from cdc.core.records import ChangeEvent

pytest.importorskip("pyspark")
from cdc.spark.arrow_events import EventRows, arrow_schema  # noqa: E402
from cdc.spark.schema import event_schema, struct_type_of  # noqa: E402

SOURCE = connect.struct([connect.field("table", connect.OPTIONAL_STRING)], optional=False, name="source")
TYPES = {"id": connect.INT32, "name": connect.OPTIONAL_STRING, "note": connect.OPTIONAL_STRING,
         "score": connect.OPTIONAL_INT64}


def envelope(*columns: str) -> TableEnvelope:
    return TableEnvelope(topic="t", table_id="public.t", schema_name_prefix="p.public.t",
                         key_fields=[connect.field("id", TYPES["id"])],
                         value_fields=[connect.field(c, TYPES[c]) for c in columns], source_schema=SOURCE)


def insert(env: TableEnvelope, **row: Any) -> ChangeEvent:
    return env.event("c", None, row, {"table": "t"}, position=(row["id"],))


def spark_rows(rows: EventRows, events: list[ChangeEvent], columns: tuple[str, ...]) -> list[Any]:
    row_type, _ = struct_type_of(envelope(*columns).row_schema)
    batch = rows.batch(events, lambda: 0, arrow_schema(event_schema(row_type)))
    assert batch is not None
    return [r["after"] for r in batch.to_pylist()]


def test_rows_from_before_a_column_was_added_have_it_null(caplog: pytest.LogCaptureFixture) -> None:
    now = ("id", "name", "note")
    rows = EventRows("public.t", list(now), columns_now=lambda table: list(now))
    old, new = envelope("id", "name"), envelope(*now)
    with caplog.at_level(logging.WARNING):
        got = spark_rows(rows, [insert(old, id=1, name="a")], now) + \
            spark_rows(rows, [insert(new, id=2, name="b", note="n")], now)
    assert got == [{"id": 1, "name": "a", "note": None}, {"id": 2, "name": "b", "note": "n"}]
    assert "note added since: NULL" in caplog.text


def test_rows_from_before_a_column_was_dropped_leave_it_out() -> None:
    now = ("id", "name")
    asked: list[str] = []
    rows = EventRows("public.t", list(now), columns_now=lambda table: asked.append(table) or list(now))
    got = spark_rows(rows, [insert(envelope("id", "name", "score"), id=1, name="a", score=7)], now)
    assert got == [{"id": 1, "name": "a"}]
    assert asked == ["public.t"]


def test_a_column_added_after_the_query_started_stops_it_for_a_restart() -> None:
    started = ("id", "name")
    rows = EventRows("public.t", list(started), columns_now=lambda table: ["id", "name", "note"])
    with pytest.raises(SourceError, match=r"columns of public.t changed") as caught:
        spark_rows(rows, [insert(envelope("id", "name", "note"), id=1, name="a", note="n")], started)
    assert "restart the streaming query" in str(caught.value.fix)
