"""What the SQL Server source captures and snapshots, against recorded rows (the fake query layer):
schema.include.list / schema.exclude.list beside table.include.list, snapshot.include.collection.list
(matched against Debezium's name of the table, database.schema.table) and snapshot.select.statement.overrides
(the table read with the given SELECT, its columns by name), where they cannot apply a clear refusal, and the
waits snapshot.delay.ms / streaming.delay.ms cut short by a stop."""
from __future__ import annotations

from typing import Any

import pytest

from cdc.core import delays
from cdc.core.errors import ConfigError
from cdc.sources.sqlserver.catalog import CdcNotEnabledError
from tests.fixtures.sqlserver.testdb import RecordedDatabase, customers_and_orders, with_signal_table
from tests.unit.test_sqlserver_stream import make_source, run, summary

CUST, ORD = "server1.testDB.dbo.customers", "server1.testDB.dbo.orders"
OVERRIDE = "SELECT email, id FROM dbo.customers WHERE id > 1001 ORDER BY id DESC"


def database() -> RecordedDatabase:
    db = customers_and_orders()
    db.max_lsn = "00000027:00000f00:0001"  # the snapshot's LSN: every recorded change is before it
    db.table_rows["dbo.customers"].append({"id": 1003, "first_name": "Edward", "last_name": "Walker",
                                           "email": "ed@walker.com"})
    return db


def snapshot(db: RecordedDatabase, **props: Any) -> list[tuple[Any, ...]]:
    """(topic, op or schema change, key id, row) of each event of the snapshot."""
    events, _ = run(make_source(db, **props)[0], None)
    return [(e.topic, summary(e)[1], (e.key or {}).get("id") if isinstance(e.key, dict) else None,
             e.value["after"] if e.value and "after" in e.value else None) for e in events]


def rows(events: list[tuple[Any, ...]]) -> list[tuple[str, dict[str, Any]]]:
    return [(topic, after) for topic, op, _, after in events if op == "r"]


def test_the_schema_lists_select_the_captured_tables_with_the_table_lists() -> None:
    got = snapshot(database(), **{"schema.include.list": "dbo", "table.include.list": r"dbo\.orders"})
    assert [(t, op) for t, op, *_ in got] == [("server1", "CREATE"), (ORD, "r")]
    with pytest.raises(CdcNotEnabledError, match="CDC is not enabled on any included table"):
        snapshot(database(), **{"schema.exclude.list": "dbo"})
    with pytest.raises(ConfigError, match="schema.include.list and schema.exclude.list are both set"):
        make_source(database(), **{"schema.include.list": "dbo", "schema.exclude.list": "sales"})


def test_the_snapshot_reads_the_tables_of_the_collection_list_and_the_structure_of_every_captured_one() -> None:
    got = snapshot(database(), **{"snapshot.include.collection.list": r"testDB\.dbo\.cust.*"})
    assert [op for _, op, *_ in got] == ["CREATE", "CREATE", "r", "r", "r"]
    assert {t for t, op, *_ in got if op == "r"} == {CUST}
    # Debezium's name of a SQL Server table has its database: schema.table matches none
    got = snapshot(database(), **{"snapshot.include.collection.list": r"dbo\.customers"})
    assert [op for _, op, *_ in got] == ["CREATE", "CREATE"]


def test_an_override_reads_the_table_with_its_select_and_its_columns_by_name() -> None:
    db = database()
    db.queries[OVERRIDE] = [{"EMAIL": "ed@walker.com", "id": 1003}, {"EMAIL": "gbailey@foobar.com", "id": 1002}]
    got = snapshot(db, **{"snapshot.select.statement.overrides": "testDB.dbo.customers",
                          "snapshot.select.statement.overrides.testDB.dbo.customers": OVERRIDE})
    assert rows(got) == [
        (CUST, {"id": 1003, "first_name": None, "last_name": None, "email": "ed@walker.com"}),
        (CUST, {"id": 1002, "first_name": None, "last_name": None, "email": "gbailey@foobar.com"}),
        (ORD, {"id": 10001, "customer_id": 1001, "quantity": 1, "price": pytest.approx(rows(got)[2][1]["price"])}),
    ]
    # schema.table names the table too, as Debezium looks it up without the database
    again = snapshot(db, **{"snapshot.select.statement.overrides": "dbo.customers",
                            "snapshot.select.statement.overrides.dbo.customers": OVERRIDE})
    assert rows(again) == rows(got)


def test_an_override_returning_a_column_the_table_has_not_stops_the_snapshot() -> None:
    db = database()
    db.queries["SELECT id, total FROM dbo.orders"] = [{"id": 10001, "total": 5}]
    with pytest.raises(Exception, match="returns the column.s. id, total: the table has no column total"):
        snapshot(db, **{"snapshot.select.statement.overrides": "testDB.dbo.orders",
                        "snapshot.select.statement.overrides.testDB.dbo.orders": "SELECT id, total FROM dbo.orders"})


def test_a_resumable_snapshot_queues_only_the_collection_list_and_refuses_overrides() -> None:
    db = with_signal_table(database())
    props = {"signal.data.collection": "testDB.dbo.debezium_signal", "snapshot.resumable": "true"}
    _, batches = run(make_source(db, **props, **{"snapshot.include.collection.list": r"testDB\.dbo\.orders"})[0],
                     None)
    queued = next(b.offset["incremental"] for b in batches if b.offset and b.offset.get("incremental"))
    assert [t["table"] for t in queued["tables"]] == ["testDB.dbo.orders"]
    with pytest.raises(ConfigError, match="is not applied by snapshot.resumable"):
        run(make_source(db, **props, **{"snapshot.select.statement.overrides": "dbo.orders",
                                        "snapshot.select.statement.overrides.dbo.orders": "SELECT 1"})[0], None)


def test_spark_plans_the_collection_list_and_refuses_overrides() -> None:
    source, _ = make_source(database(), **{"snapshot.include.collection.list": r"testDB\.dbo\.orders"})
    plan = source.plan_parallel_snapshot(100)
    assert plan is not None and {c["table"] for c in plan["chunks"]} == {"testDB.dbo.orders"}
    source, _ = make_source(database(), **{"snapshot.select.statement.overrides": "dbo.orders",
                                           "snapshot.select.statement.overrides.dbo.orders": "SELECT 1"})
    with pytest.raises(ConfigError) as caught:
        source.plan_parallel_snapshot(100)
    assert "is not applied by Spark's parallel snapshot" in caught.value.message and "Spark query" in caught.value.fix


def test_the_waits_come_before_the_snapshot_and_before_streaming_and_a_stop_ends_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Time moves only when a wait sleeps; the source is stopped after a few ticks of each wait."""
    now = [0.0]

    def pause(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr(delays, "clock", lambda: now[0])
    monkeypatch.setattr(delays, "pause", pause)
    db = database()
    source, server = make_source(db, **{"snapshot.delay.ms": "60000", "streaming.delay.ms": "2000"})
    stream = source.stream(None)
    for _ in range(3):  # waiting: empty batches, nothing read
        assert next(stream).events == []
    assert not any("SELECT" in s and "dbo.customers" in s for s in server.statements())
    source.stop()
    assert list(stream) == []  # the wait ends at once, and the stream with it: no snapshot
    assert now[0] < 1

    source, _ = make_source(db, **{"snapshot.delay.ms": "300", "streaming.delay.ms": "60000"})
    now[0] = 0.0
    batches = []
    for batch in source.stream(None):
        batches.append(batch)
        if sum(len(b.events) for b in batches) == 6 and now[0] > 0.3 + 0.5:
            source.stop()  # half a second into the streaming wait
    ops = [summary(e)[1] for b in batches for e in b.events]
    assert ops == ["CREATE", "CREATE", "r", "r", "r", "r"]  # the snapshot after its wait, no stream
    assert 0.8 < now[0] < 1.0
    assert batches[-1].events == [] and source.streamer.streams  # the stream was ready when the wait ended
