"""Debezium's source.snapshot marks (cdc.core.snapshot_marks), the one rule every snapshot uses."""
from __future__ import annotations

import pytest

from cdc.core import connect
from cdc.core.envelope import TableEnvelope
from cdc.core.records import ChangeEvent
from cdc.core.snapshot_marks import SnapshotMarks, snapshot_flag
from cdc.sources.postgres.source_info import SOURCE_SCHEMA

ID = connect.field("id", {"type": "int32", "optional": False})


def envelope(table: str) -> TableEnvelope:
    return TableEnvelope(topic=f"dbz.{table}", table_id=table, schema_name_prefix=f"dbz.{table}",
                         key_fields=[ID], value_fields=[ID], source_schema=SOURCE_SCHEMA)


def run(tables: dict[str, int]) -> list[tuple[str, int, str]]:
    """(table, id, mark) of every event of a snapshot of ``tables`` (name -> row count), in order."""
    marks = SnapshotMarks()
    out: list[ChangeEvent] = []
    for name, count in tables.items():
        env = envelope(name)
        marks.start_table()
        for i in range(count):
            marks.hold(env.event("r", None, {"id": i}, marks.source({"snapshot": "true"})), out)
        marks.end_table(name)
    last = marks.finish()
    if last is not None:
        out.append(last)
    return [(e.table_id, e.value["after"]["id"], e.value["source"]["snapshot"]) for e in out]


def test_three_tables_of_several_rows() -> None:
    assert run({"a": 3, "b": 2, "c": 2}) == [
        ("a", 0, "first"), ("a", 1, "true"), ("a", 2, "last_in_data_collection"),
        ("b", 0, "first_in_data_collection"), ("b", 1, "last_in_data_collection"),
        ("c", 0, "first_in_data_collection"), ("c", 1, "last"),
    ]


def test_one_row_tables_in_the_middle_and_at_the_end() -> None:
    # a one-row table in the middle is its table's last (SQL Server used to say first_in_data_collection)
    assert run({"a": 2, "b": 1, "c": 1}) == [
        ("a", 0, "first"), ("a", 1, "last_in_data_collection"),
        ("b", 0, "last_in_data_collection"),
        ("c", 0, "last"),
    ]


def test_empty_tables_and_a_single_row() -> None:
    assert run({"a": 0, "b": 1, "c": 0}) == [("b", 0, "last")]
    assert run({"a": 0}) == []


@pytest.mark.parametrize("first, first_in_table, last_in_table, last, flag", [
    (True, True, True, True, "last"),
    (True, True, True, False, "first"),
    (False, True, True, False, "last_in_data_collection"),
    (False, True, False, False, "first_in_data_collection"),
    (False, False, False, False, "true"),
])
def test_precedence(first: bool, first_in_table: bool, last_in_table: bool, last: bool, flag: str) -> None:
    assert snapshot_flag(first=first, first_in_table=first_in_table, last_in_table=last_in_table, last=last) == flag
