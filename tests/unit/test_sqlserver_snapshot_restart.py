"""An interrupted snapshot of the SQL Server source, on recorded rows: before its first row the database's
offset is the restart marker (cdc.core.snapshot_restart, ``{"snapshot_attempt": n}``); a run that finds it
takes the snapshot again from the start, as Debezium does, and first emits a truncate per table so that a
consumer applying the events in order holds exactly the second attempt. Nothing is lost: every row, then
the changes after the snapshot's LSN. And the snapshot's progress shows each table's size.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from cdc.core.errors import SourceError
from cdc.core.records import Batch, ChangeEvent
from cdc.sources.sqlserver.source import SqlServerSource
from tests.fixtures.sqlserver.testdb import RecordedDatabase, customers_and_orders, with_signal_table
from tests.unit.test_sqlserver_stream import CUST, ORD, A, make_source, summary

MARKER = {"snapshot_attempt": 1}
END = "00000027:00000f00:0001"  # the capture job's LSN after B, C and D


def database(name: str = "testDB") -> RecordedDatabase:
    """Five customers and three orders at A, the snapshot's LSN; B, C and D change them after it."""
    db = customers_and_orders()
    db.name = name
    db.max_lsn = A
    db.table_rows["dbo.customers"] = [{"id": n, "first_name": f"f{n}", "last_name": "x", "email": f"{n}@x.org"}
                                      for n in (1, 2, 3, 1005, 1006)]
    db.table_rows["dbo.orders"] = [{"id": n, "customer_id": 1, "quantity": n, "price": None} for n in (1, 2, 3)]
    return db


def source_for(*dbs: RecordedDatabase, **props: Any) -> SqlServerSource:
    return make_source(*dbs, **{"snapshot.fetch.size": "2", **props})[0]


class Engine:
    """What the engine keeps of a run: the events handed over and the last offset stored."""

    def __init__(self) -> None:
        self.events: list[ChangeEvent] = []
        self.stored: dict[str, Any] | None = None

    def run(self, source: SqlServerSource, *, rows: int | None = None, polls: int = 1,
            later: RecordedDatabase | None = None) -> None:
        """From the stored offset until ``polls`` caught-up batches, or killed after ``rows`` read events;
        ``later``: once caught up, the capture job writes B, C and D (after the snapshot's LSN), read next."""
        stream: Iterator[Batch] = source.stream(self.stored)
        try:
            for batch in stream:
                self.events.extend(batch.events)
                if batch.offset is not None:
                    self.stored = batch.offset
                if rows is not None and sum(1 for e in self.events if _op(e) == "r") >= rows:
                    return  # killed here: nothing more is delivered or stored
                if batch.caught_up:
                    polls -= 1
                    if later is not None and later.max_lsn == A:
                        later.max_lsn, polls = END, polls + 1
                    if polls == 0:
                        return
        finally:
            stream.close()


def _op(event: ChangeEvent) -> str | None:
    return (event.value or {}).get("op")


def applied(events: list[ChangeEvent]) -> dict[str, dict[Any, dict[str, Any]]]:
    """The tables a consumer holds after applying the events in order (cdc.spark.apply_changes' rules)."""
    tables: dict[str, dict[Any, dict[str, Any]]] = {}
    for event in events:
        op = _op(event)
        table = tables.setdefault(event.topic, {})
        if op == "t":
            table.clear()
        elif op in ("r", "c", "u"):
            table[event.key["id"]] = event.value["after"]
        elif op == "d":
            table.pop(event.key["id"], None)
    return tables


def test_a_snapshot_killed_mid_way_is_taken_again_from_the_start_after_a_truncate_per_table() -> None:
    db = database()
    engine = Engine()
    engine.run(source_for(db), rows=3)  # killed after the first three customers
    assert engine.stored == {"databases": {"testDB": MARKER}}  # stored before the first row went out

    second = len(engine.events)
    engine.run(source_for(db), later=db)
    again = engine.events[second:]
    assert [summary(e)[:2] for e in again[:4]] == [("server1", "CREATE"), ("server1", "CREATE"), (CUST, "t"),
                                                   (ORD, "t")]
    truncates = again[2:4]
    assert [e.value["source"]["snapshot"] for e in truncates] == ["true", "true"]
    assert all(e.value["source"]["commit_lsn"] == A and e.key is None for e in truncates)
    reads = [e for e in again if _op(e) == "r"]
    assert [(e.topic, e.key["id"]) for e in reads] == [(CUST, n) for n in (1, 2, 3, 1005, 1006)] + \
        [(ORD, n) for n in (1, 2, 3)]  # every row once more, from the start
    assert [e.value["source"]["snapshot"] for e in reads] == [
        "first", "true", "true", "true", "last_in_data_collection", "first_in_data_collection", "true", "last"]
    # nothing lost: the rows as of A, then the changes after it (B, C, D), whatever the first attempt delivered
    assert [summary(e)[1:3] for e in again if e.topic == CUST and _op(e) != "r"][1:] == [
        ("u", {"id": 1005}), ("d", {"id": 1005}), (None, {"id": 1005}), ("d", {"id": 1006}), (None, {"id": 1006}),
        ("c", {"id": 2006})]
    held = applied(engine.events)
    assert sorted(held[CUST]) == [1, 2, 3, 2006] and sorted(held[ORD]) == [2, 3]
    assert engine.stored["databases"]["testDB"]["commit_lsn"] == END


def test_each_interrupted_attempt_counts_and_a_completed_one_leaves_no_marker() -> None:
    db = database()
    engine = Engine()
    engine.run(source_for(db), rows=1)
    engine.run(source_for(db), rows=2)  # the second attempt killed too
    assert engine.stored == {"databases": {"testDB": {"snapshot_attempt": 2}}}
    third = len(engine.events)
    engine.run(source_for(db))
    assert [_op(e) for e in engine.events[third:]][:4] == [None, None, "t", "t"]
    assert "snapshot_attempt" not in engine.stored["databases"]["testDB"]
    engine.run(source_for(db))  # from the completed snapshot: streaming, no truncate, no snapshot
    assert [_op(e) for e in engine.events[third:]].count("t") == 2


def test_stopped_during_the_snapshot_it_starts_again_next_run() -> None:
    db = database()
    source, server = make_source(db, **{"snapshot.fetch.size": "2"})
    engine = Engine()
    stream = source.stream(None)
    with pytest.raises(SourceError, match="stopped during the snapshot; it starts again on the next run"):
        for batch in stream:
            engine.events.extend(batch.events)
            engine.stored = batch.offset or engine.stored
            if any(_op(e) == "r" for e in batch.events):
                source.stop()
    assert engine.stored == {"databases": {"testDB": MARKER}}
    assert server.statements()[-1] == "ROLLBACK"  # the snapshot's transaction ends with it
    restarted = len(engine.events)
    engine.run(source_for(db))
    assert [_op(e) for e in engine.events[restarted:]][2:4] == ["t", "t"]


def test_the_database_interrupted_starts_again_the_others_stream_on() -> None:
    first, second = database(), database("salesDB")
    engine = Engine()
    engine.run(source_for(first, second), rows=9)  # testDB's 8 rows done, salesDB's first read
    assert engine.stored["databases"]["testDB"]["commit_lsn"] == A
    assert engine.stored["databases"]["salesDB"] == MARKER
    again = len(engine.events)
    engine.run(source_for(first, second), later=first)
    events = engine.events[again:]
    assert [e.topic for e in events if _op(e) == "t"] == ["server1.salesDB.dbo.customers",
                                                          "server1.salesDB.dbo.orders"]
    assert not [e for e in events if _op(e) == "r" and e.value["source"]["db"] == "testDB"]
    assert len([e for e in events if _op(e) == "r"]) == 8  # salesDB's rows, all of them
    assert [summary(e)[1:3] for e in events if e.topic == CUST][:2] == [("u", {"id": 1005}), ("d", {"id": 1005})]


@pytest.mark.parametrize("props", [
    {"snapshot.mode": "no_data"},  # the structure only
    {"snapshot.resumable": "true", "signal.data.collection": "testDB.dbo.debezium_signal"},  # rows in chunks
])
def test_no_marker_when_the_snapshot_reads_no_row_in_one_go(props: dict[str, str]) -> None:
    offsets = [b.offset for b in _batches(source_for(with_signal_table(database()), **props))]
    assert offsets[-1] is not None
    assert not [o for o in offsets if o is not None and "snapshot_attempt" in o["databases"]["testDB"]]


def _batches(source: SqlServerSource) -> list[Batch]:
    out = []
    for batch in source.stream(None):
        out.append(batch)
        if batch.caught_up:
            break
    return out


def test_spark_ends_no_micro_batch_at_the_marker() -> None:
    assert SqlServerSource.committed_key({"databases": {"testDB": MARKER}}) is None
    assert SqlServerSource.committed_key({"databases": {"testDB": {"commit_lsn": A, "change_lsn": None}}}) \
        is not None


def test_the_progress_shows_each_tables_size(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="cdc.snapshot"):
        _batches(source_for(database(), **{"snapshot.progress": "log"}))
    assert "snapshot of testDB.dbo.customers started (about 5 rows)" in caplog.text
    assert "snapshot of testDB.dbo.orders started (about 3 rows)" in caplog.text
    assert "snapshot of testDB.dbo.customers done: 5 rows" in caplog.text


def test_without_the_servers_row_counts_the_progress_says_the_size_is_unknown(
        caplog: pytest.LogCaptureFixture) -> None:
    db = database()
    db.row_counts_refused = True
    with caplog.at_level(logging.INFO):
        events = [e for b in _batches(source_for(db, **{"snapshot.progress": "log"})) for e in b.events]
    assert len([e for e in events if _op(e) == "r"]) == 8
    assert "snapshot of testDB.dbo.customers started (its size is unknown)" in caplog.text
    assert "no row counts for the snapshot's progress in database testDB" in caplog.text
