"""The driver's stream rows parsed column by column from their JSON (cdc/spark/json_columns.py)
give the values of the per-value converters (cdc/spark/schema.py), for every common PostgreSQL
type, from the compiled codec's rows and from Python's; a batch the columnar path cannot read
(a float column holding NaN) is converted value by value, with the same result."""
from __future__ import annotations

import math
import time
from typing import Any

import psycopg
import pytest

from cdc.core.records import ChangeEvent
from tests.integration.test_pg_stream import sql
from tests.integration.test_spark_parallel import COLUMNAR_TYPES, ROWS, _source

pytestmark = pytest.mark.spark


def _transactions(db: dict[str, str], native: bool, statements: list[str], rows: int,
                  tables: str = "wide") -> list[list[ChangeEvent]]:
    """The row events of ``statements`` (each its own transaction) as streamed, one list per transaction."""
    with psycopg.connect(db["dsn"], autocommit=True) as conn:
        conn.execute(f"CREATE PUBLICATION cols_pub FOR TABLE {tables}")
        conn.execute("SELECT pg_create_logical_replication_slot('cols_slot', 'pgoutput')")
        for statement in statements:
            conn.execute(statement)
    source = _source(db, **{"slot.name": "cols_slot", "publication.name": "cols_pub", "snapshot.mode": "no_data",
                            "slot.takeover": "true"})  # the slot made above, before the workload
    source.native_rows = native
    by_tx: dict[Any, list[ChangeEvent]] = {}
    deadline = time.monotonic() + 60
    try:
        for batch in source.stream(None):
            for event in batch.events:
                if event.value is not None and event.table_id and "op" in event.value:
                    by_tx.setdefault(event.value["source"]["txId"], []).append(event)
            if sum(len(events) for events in by_tx.values()) >= rows:
                break
            assert time.monotonic() < deadline, f"{rows} row events expected, these came: {by_tx}"
    finally:
        source.stop()
        source.close()
    return list(by_tx.values())


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, float) and math.isnan(theirs):
        return isinstance(ours, float) and math.isnan(ours)
    if isinstance(theirs, dict):
        return (isinstance(ours, dict) and ours.keys() == theirs.keys()
                and all(_same(ours[k], v) for k, v in theirs.items()))
    return type(ours) is type(theirs) and ours == theirs


@pytest.mark.parametrize("native", [True, False], ids=["codec rows", "python rows"])
def test_stream_rows_parsed_as_columns_equal_the_per_value_path(pg_db: dict[str, str], native: bool,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from cdc.spark import arrow_events
    from cdc.spark.arrow_events import EventRows, arrow_schema
    from cdc.spark.schema import event_schema, struct_type_of

    sql(pg_db, COLUMNAR_TYPES, "ALTER TABLE wide REPLICA IDENTITY FULL")
    first, second, third = ROWS.split("),\n")  # one transaction per row of ROWS
    statements = [first + ")", "INSERT INTO wide VALUES " + second.strip() + ")",
                  "INSERT INTO wide VALUES " + third.strip(),
                  "UPDATE wide SET t = 'changed', n = n + 1 WHERE id <> 3",  # before and after rows
                  "DELETE FROM wide WHERE id = 2"]
    transactions = _transactions(pg_db, native, statements, rows=6)
    assert [len(events) for events in transactions] == [1, 1, 1, 2, 1]

    source = _source(pg_db)
    try:
        row_type, _ = struct_type_of(source.table_schema("public.wide"))
    finally:
        source.close()
    schema = arrow_schema(event_schema(row_type))
    outcomes: list[str] = []
    real_reader_for = arrow_events.reader_for

    def spied(*args: Any) -> Any:
        read = real_reader_for(*args)
        assert read is not None, "every column of this table has a columnar reading"

        def reading(texts: list[bytes | None]) -> Any:
            try:
                result = read(texts)
            except arrow_events.ColumnarUnfit:
                outcomes.append("value by value")
                raise
            outcomes.append("columnar")
            return result
        return reading

    per_value = EventRows("public.wide", row_type.fieldNames())
    columnar = EventRows("public.wide", row_type.fieldNames())
    for events in transactions:
        monkeypatch.setattr(arrow_events, "reader_for", lambda *args: None)
        want = per_value.batch(events, lambda: 0, schema)
        monkeypatch.setattr(arrow_events, "reader_for", spied)
        got = columnar.batch(events, lambda: 0, schema)
        assert want is not None and got is not None
        assert got.schema == want.schema
        for ours, theirs in zip(got.to_pylist(), want.to_pylist(), strict=True):
            assert _same(ours, theirs), (ours, theirs)
    # before and after of each transaction: the row with NaN and -Infinity (id 3, an insert: no
    # before) is read value by value
    assert outcomes == ["columnar"] * 5 + ["value by value"] + ["columnar"] * 4, outcomes


def test_rows_of_several_tables_parsed_as_columns_equal_the_per_value_path(pg_db: dict[str, str],
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A query over several tables (``tables``): each table's rows of a mixed batch are parsed as
    that table's columns, then spread into the struct of structs, null where another table's row is."""
    from cdc.spark import arrow_events
    from cdc.spark.arrow_events import EventRows, arrow_schema
    from cdc.spark.schema import event_schema, struct_type_of

    sql(pg_db, COLUMNAR_TYPES, "CREATE TABLE small (id int PRIMARY KEY, name text)")
    first = ROWS.split("),\n")[0] + ")"
    statements = [f"BEGIN; {first}; INSERT INTO small VALUES (1, 'one'), (2, 'two'); "
                  "UPDATE wide SET t = 'changed' WHERE id = 1; DELETE FROM small WHERE id = 1; COMMIT"]
    events = [e for tx in _transactions(pg_db, True, statements, rows=5, tables="wide, small") for e in tx]
    assert [e.table_id for e in events] == ["public.wide", "public.small", "public.small", "public.wide",
                                            "public.small"]
    source = _source(pg_db)
    try:
        types = {name: struct_type_of(source.table_schema(name))[0] for name in ("public.small", "public.wide")}
    finally:
        source.close()
    from pyspark.sql import types as T

    row_type = T.StructType([T.StructField(name, t, True) for name, t in types.items()])
    schema = arrow_schema(event_schema(row_type))
    tables = {name: t.fieldNames() for name, t in types.items()}
    outcomes: list[str] = []
    real_reader_for = arrow_events.reader_for

    def spied(*args: Any) -> Any:
        read = real_reader_for(*args)
        assert read is not None

        def reading(texts: list[bytes | None]) -> Any:
            outcomes.append("columnar")
            return read(texts)
        return reading

    monkeypatch.setattr(arrow_events, "reader_for", lambda *args: None)
    want = EventRows(None, None, tables).batch(events, lambda: 0, schema)
    monkeypatch.setattr(arrow_events, "reader_for", spied)
    got = EventRows(None, None, tables).batch(events, lambda: 0, schema)
    assert want is not None and got is not None
    assert outcomes == ["columnar"] * 4  # before and after, of each table
    for ours, theirs in zip(got.to_pylist(), want.to_pylist(), strict=True):
        assert _same(ours, theirs), (ours, theirs)
    rows = want.to_pylist()
    assert [(r["after"] or {}).get("public.small") for r in rows] == [
        None, {"id": 1, "name": "one"}, {"id": 2, "name": "two"}, None, None]
    assert [r["before"] for r in rows][:3] == [None, None, None]
    assert rows[3]["after"]["public.wide"]["t"] == "changed" and rows[3]["after"]["public.small"] is None
    assert rows[4]["before"]["public.small"]["id"] == 1 and rows[4]["after"] is None


def _batches(db: dict[str, str], slot: str, encoded: bool, rows: int) -> list[Any]:
    """The stream's batches from ``slot`` (made before the workload) until ``rows`` row changes came,
    with the codec's rows; ``encoded``: runs of them in encoded batches, as Spark's reader asks."""
    source = _source(db, **{"slot.name": slot, "publication.name": "enc_pub", "snapshot.mode": "no_data",
                            "slot.takeover": "true"})
    source.native_rows = True
    source.encoded_batches = encoded
    batches, seen = [], 0
    deadline = time.monotonic() + 60
    try:
        for batch in source.stream(None):
            batches.append(batch)
            seen += sum(1 for e in batch.events if e.value is not None and e.table_id and "op" in e.value)
            seen += len(batch.encoded.rows) if batch.encoded is not None else 0
            if seen >= rows:
                return batches
            assert time.monotonic() < deadline, f"{rows} row changes expected, {seen} came"
    finally:
        source.stop()
        source.close()
    return batches


@pytest.mark.parametrize("query", ["table", "tables"])
def test_encoded_runs_give_the_rows_of_the_event_path(pg_db: dict[str, str], query: str) -> None:
    """Runs of rows the codec encoded in one call (a transaction's inserts, its updates without an old
    tuple) go into Spark's columns as the same rows, in the same order, with each row's own source.lsn
    and _position, as the events of the same changes one by one; rows of another table are left out
    of a one-table query."""
    from pyspark.sql import types as T

    from cdc.spark.arrow_events import EventRows, arrow_schema
    from cdc.spark.schema import event_schema, struct_type_of

    sql(pg_db, COLUMNAR_TYPES, "CREATE TABLE small (id int PRIMARY KEY, name text)")
    first, second, third = ROWS.split("),\n")
    with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        conn.execute("CREATE PUBLICATION enc_pub FOR TABLE wide, small")
        for slot in ("enc_runs", "enc_events"):
            conn.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')")
        conn.execute(f"BEGIN; {first}), {second.strip()}); INSERT INTO small SELECT g, 'n' || g FROM "
                     "generate_series(1, 5) g; UPDATE wide SET t = 'changed', n = n + 1; "
                     f"INSERT INTO wide VALUES {third.strip()}; DELETE FROM small WHERE id = 2; "
                     "UPDATE small SET name = 'again' WHERE id > 2; COMMIT")
        conn.execute("INSERT INTO small VALUES (10, 'ten'), (11, 'eleven')")
    changes = 2 + 5 + 2 + 1 + 1 + 3 + 2
    runs = _batches(pg_db, "enc_runs", True, changes)
    events = _batches(pg_db, "enc_events", False, changes)
    assert sum(len(b.encoded.rows) for b in runs if b.encoded is not None) >= 10, "the runs went encoded"
    assert all(b.encoded is None for b in events)

    source = _source(pg_db)
    try:
        types = {name: struct_type_of(source.table_schema(name))[0] for name in ("public.small", "public.wide")}
    finally:
        source.close()
    if query == "table":
        row_type: Any = types["public.wide"]
        make = lambda: EventRows("public.wide", row_type.fieldNames())  # noqa: E731
    else:
        row_type = T.StructType([T.StructField(name, t, True) for name, t in types.items()])
        make = lambda: EventRows(None, None, {n: t.fieldNames() for n, t in types.items()})  # noqa: E731
    schema = arrow_schema(event_schema(row_type))

    def rows_of(batches: list[Any]) -> list[dict[str, Any]]:
        reader, numbers = make(), iter(range(1, 1000))
        parts = [c for b in batches if (c := reader.collect(b.events, lambda: next(numbers), b.encoded)) is not None]
        return [{k: v for k, v in row.items() if k != "ts_ms"} for row in reader.arrow(parts, schema).to_pylist()]

    want, got = rows_of(events), rows_of(runs)
    assert len(want) == (5 if query == "table" else changes)
    assert len({r["source"]["lsn"] for r in want}) == len(want)  # each row its own lsn
    for ours, theirs in zip(got, want, strict=True):
        assert _same(ours, theirs), (ours, theirs)

