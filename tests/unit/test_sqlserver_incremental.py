"""Signals and incremental snapshots of the SQL Server source, on recorded change-table rows.

The fake query layer plays the server and its capture job: the source's INSERTs into the
CDC-enabled signal table (watermarks) come back as change rows at a new LSN on the next poll,
chunk queries are answered from ``table_rows``, and ``after_statement`` lets a test commit a
concurrent change at an exact point (after the open watermark, after the chunk read, ...).
Everything between is the real source and the shared core (signals, window de-duplication).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cdc.core.errors import SourceError
from cdc.core.records import Batch, ChangeEvent
from cdc.sources.sqlserver import queries as q
from tests.fixtures.sqlserver.testdb import (
    CUSTOMERS_COLUMNS,
    Instance,
    RecordedDatabase,
    change_table_columns,
    customers_and_orders,
    signal_row,
    with_signal_table,
)
from tests.unit.test_sqlserver_stream import make_source

SIGNAL_TABLE = "testDB.dbo.debezium_signal"
CUSTOMERS = "testDB.dbo.customers"
INSERT_SIGNAL = q.insert_signal("dbo", "debezium_signal")
CHUNK_SQL = q.chunk_rows("testDB", "dbo", "customers", ["id", "first_name", "last_name", "email"], ["id"], None,
                         True, True)
FIRST_CHUNK_SQL = q.chunk_rows("testDB", "dbo", "customers", ["id", "first_name", "last_name", "email"], ["id"],
                               None, False, True)


def customer(n: int, name: str | None = None) -> dict[str, Any]:
    return {"id": n, "first_name": name or f"f{n}", "last_name": "x", "email": f"{n}@example.org"}


def database(rows: int = 5) -> RecordedDatabase:
    db = with_signal_table(customers_and_orders())
    db.table_rows["dbo.customers"] = [customer(n) for n in range(1, rows + 1)]
    db.begin = start(db)  # type: ignore[attr-defined]  # the stream reads only what the test adds after
    return db


def start(db: RecordedDatabase) -> dict[str, Any]:
    """An offset after everything recorded so far: the stream reads only what the test adds."""
    return {"databases": {"testDB": {"commit_lsn": db.max_lsn, "change_lsn": None, "event_serial_no": None,
                                     "snapshot_completed": True}}}


def execute(db: RecordedDatabase, id_: str, tables: list[str], **extra: Any) -> None:
    signal_row(db, id_, "execute-snapshot", json.dumps({"data-collections": tables, "type": "incremental", **extra}))


def source_for(db: RecordedDatabase, chunk: int = 2, **props: Any) -> Any:
    return make_source(db, **{"signal.data.collection": SIGNAL_TABLE, "incremental.snapshot.chunk.size": str(chunk),
                              **props})


def drive(source: Any, offset: dict[str, Any] | None, polls: int,
          between: Callable[[int], None] | None = None) -> tuple[list[ChangeEvent], list[Batch]]:
    """``polls`` rounds of the stream; ``between(n)`` runs after the n-th round."""
    events: list[ChangeEvent] = []
    batches: list[Batch] = []
    stream: Iterator[Batch] = source.stream(offset)
    rounds = 0
    for batch in stream:
        batches.append(batch)
        events.extend(batch.events)
        if batch.caught_up:
            rounds += 1
            if between is not None:
                between(rounds)
            if rounds == polls:
                break
    stream.close()
    return events, batches


def brief(event: ChangeEvent) -> tuple[Any, ...]:
    """(op, id, first_name after the change | None, source.snapshot); a tombstone is ("tombstone", id)."""
    if event.value is None:
        return ("tombstone", event.key["id"])
    value = event.value
    row = value["after"] or value["before"]
    return (value["op"], row["id"], value["after"]["first_name"] if value["after"] else None,
            value["source"]["snapshot"])


def customers_only(events: list[ChangeEvent]) -> list[tuple[Any, ...]]:
    return [brief(e) for e in events if e.table_id == CUSTOMERS]


def on_statement(db: RecordedDatabase,
                 *rules: tuple[Callable[[str, tuple[Any, ...]], bool], Callable[[], None]]) -> None:
    """Run each action once, after the first statement its predicate accepts."""
    pending = list(rules)

    def hook(sql: str, params: tuple[Any, ...]) -> None:
        for rule in list(pending):
            if rule[0](sql, params):
                pending.remove(rule)
                rule[1]()

    db.after_statement = hook


def watermark(kind: str, chunk_no: int) -> Callable[[str, tuple[Any, ...]], bool]:
    return lambda sql, p: sql == INSERT_SIGNAL and p[1] == f"snapshot-window-{kind}" and p[0].startswith(f"{chunk_no}.")


def chunk_read(last_key: int) -> Callable[[str, tuple[Any, ...]], bool]:
    return lambda sql, p: sql == CHUNK_SQL and p[1] == last_key


def watermarks_written(db: RecordedDatabase) -> list[str]:
    return [f"{t[len('snapshot-window-'):]} {i.split('.')[0]}" for i, t, _ in db.signal_inserts]


# ---- the window ----------------------------------------------------------------------------


def test_snapshot_while_changes_stream_in_the_same_window_emits_each_row_once_and_never_stale() -> None:
    db = database(5)
    execute(db, "ad-hoc-1", [CUSTOMERS])
    on_statement(
        db,
        # chunk 1 (ids 1, 2): id 2 changes after the open watermark, before the read: read and stream agree,
        # the stream's update is the one emitted
        (watermark("open", 1), lambda: db.commit("dbo", "customers", ("u", customer(2, "two")))),
        # chunk 2 (ids 3, 4): id 3 changes after the read and before the close watermark: the read is
        # stale and dropped; id 4 changes after the close watermark: its read comes first, then the update
        (chunk_read(2), lambda: db.commit("dbo", "customers", ("u", customer(3, "three")))),
        (watermark("close", 2), lambda: db.commit("dbo", "customers", ("u", customer(4, "four")))),
        # chunk 3 (id 5): deleted inside the window (no read event), and id 6 inserted: past the upper
        # bound read when the table started, it comes from the stream only
        (watermark("open", 3), lambda: db.commit("dbo", "customers", ("d", customer(5)), ("c", customer(6)))),
    )
    source, server = source_for(db)
    events, batches = drive(source, db.begin, polls=5)
    assert customers_only(events) == [
        ("u", 2, "two", "false"),  # streamed inside chunk 1's window: the read of id 2 is dropped
        ("r", 1, "f1", "incremental"),  # chunk 1 closes
        ("u", 3, "three", "false"),  # inside chunk 2's window: the stale read of id 3 is dropped
        ("r", 4, "f4", "incremental"),  # chunk 2 closes ...
        ("u", 4, "four", "false"),  # ... before the change committed after its close watermark
        ("d", 5, None, "false"), ("tombstone", 5), ("c", 6, "f6", "false"),  # chunk 3: nothing left to read
    ]
    assert watermarks_written(db) == ["open 1", "close 1", "open 2", "close 2", "open 3", "close 3"]
    # the signal table's rows are never events, and no snapshot row follows a newer change of its key
    assert all(e.table_id in (CUSTOMERS, "testDB.dbo.orders") for e in events)
    streamed: set[int] = set()
    for op, key, *_ in customers_only(events):
        if op == "r":
            assert key not in streamed, f"stale snapshot row for id {key}"
        elif op != "tombstone":
            streamed.add(key)
    # applying every event in order gives the table exactly
    table: dict[int, dict[str, Any]] = {}
    for event in events:
        if event.table_id != CUSTOMERS or event.value is None:
            continue
        after = event.value["after"]
        if after is None:
            table.pop(event.value["before"]["id"], None)
        else:
            table[after["id"]] = after
    assert table == {r["id"]: r for r in db.table_rows["dbo.customers"]}
    # chunk queries: bounded by the largest key read when the table started, in key order
    reads = [p for _, sql, p in server.log if sql in (CHUNK_SQL, FIRST_CHUNK_SQL)]
    assert reads == [(2, 5), (2, 2, 5), (2, 4, 5)]
    assert "incremental" not in batches[-1].offset  # done: nothing left in the offset


def test_read_events_have_the_streamed_shape_and_the_incremental_source_block() -> None:
    db = database(1)
    execute(db, "ad-hoc-1", [CUSTOMERS])
    source, _ = source_for(db)
    events, _ = drive(source, db.begin, polls=2)
    [read] = events
    assert read.topic == "server1.testDB.dbo.customers" and read.key == {"id": 1}
    assert read.value["op"] == "r" and read.value["before"] is None
    assert read.value["after"] == customer(1)
    source_block = read.value["source"]
    assert (source_block["snapshot"], source_block["db"], source_block["schema"], source_block["table"]) == (
        "incremental", "testDB", "dbo", "customers")
    assert source_block["change_lsn"] is None and source_block["commit_lsn"] is not None
    assert read.value_schema.name == "server1.testDB.dbo.customers.Envelope"


# ---- signals -------------------------------------------------------------------------------


def test_additional_conditions_restrict_the_rows_read() -> None:
    db = database(5)
    db.conditions["([id] > 3)"] = lambda row: row["id"] > 3
    execute(db, "ad-hoc-1", [CUSTOMERS],
            **{"additional-conditions": [{"data-collection": CUSTOMERS, "filter": "[id] > 3"}]})
    source, server = source_for(db)
    events, _ = drive(source, db.begin, polls=3)
    assert customers_only(events) == [("r", 4, "f4", "incremental"), ("r", 5, "f5", "incremental")]
    statements = [(sql, p) for _, sql, p in server.log if "[testDB].[dbo].[customers]" in sql]
    assert statements == [
        (q.chunk_bounds("testDB", "dbo", "customers", ["id"], "([id] > 3)"), ()),
        (q.chunk_rows("testDB", "dbo", "customers", ["id", "first_name", "last_name", "email"], ["id"],
                      "([id] > 3)", False, True), (2, 5)),
        # a full chunk: one more read finds nothing after key 5 and ends the table
        (q.chunk_rows("testDB", "dbo", "customers", ["id", "first_name", "last_name", "email"], ["id"],
                      "([id] > 3)", True, True), (2, 5, 5)),
    ]
    assert "WHERE (([id] > 3)) AND ([id] <= ?)" in statements[1][0]


def test_an_additional_condition_the_server_refuses_skips_the_table_not_the_stream(caplog: Any) -> None:
    db = database(3)
    db.conditions["(no_such_column = 1)"] = None  # the server answers: Invalid column name
    execute(db, "ad-hoc-1", [CUSTOMERS],
            **{"additional-conditions": [{"data-collection": CUSTOMERS, "filter": "no_such_column = 1"}]})
    db.commit("dbo", "customers", ("u", customer(1, "one")))
    source, _ = source_for(db)
    with caplog.at_level(logging.ERROR):
        events, batches = drive(source, db.begin, polls=3)
    assert customers_only(events) == [("u", 1, "one", "false")]
    assert db.signal_inserts == []  # no window was opened
    assert any("incremental snapshot of testDB.dbo.customers skipped" in r.getMessage()
               and "Invalid column name" in r.getMessage() for r in caplog.records)
    assert "incremental" not in batches[-1].offset


@pytest.mark.parametrize("when", ["after chunk 1 closed", "inside chunk 2's window"])
def test_stop_snapshot(when: str) -> None:
    db = database(5)
    execute(db, "ad-hoc-1", [CUSTOMERS])
    stop = json.dumps({"data-collections": [CUSTOMERS], "type": "incremental"})
    point = watermark("close", 1) if when == "after chunk 1 closed" else watermark("open", 2)
    on_statement(db, (point, lambda: signal_row(db, "stop-1", "stop-snapshot", stop)))
    source, _ = source_for(db)
    events, batches = drive(source, db.begin, polls=4)
    # chunk 2's rows are never emitted: a stopped window's close watermark is ignored
    assert customers_only(events) == [("r", 1, "f1", "incremental"), ("r", 2, "f2", "incremental")]
    expected = ["open 1", "close 1"] + (["open 2", "close 2"] if when != "after chunk 1 closed" else [])
    assert watermarks_written(db) == expected
    assert "incremental" not in batches[-1].offset


def test_pause_then_resume_continues_with_the_next_chunk() -> None:
    db = database(5)
    execute(db, "ad-hoc-1", [CUSTOMERS])
    on_statement(db, (watermark("close", 1), lambda: signal_row(db, "pause-1", "pause-snapshot", "{}")))
    source, _ = source_for(db)
    seen: dict[int, Any] = {}

    def between(round_no: int) -> None:
        seen[round_no] = (len(db.signal_inserts), [b for b in customers_only(events_so_far)])
        if round_no == 4:
            signal_row(db, "resume-1", "resume-snapshot", None)

    events_so_far: list[ChangeEvent] = []
    stream = source.stream(db.begin)
    rounds = 0
    offsets = []
    for batch in stream:
        events_so_far.extend(batch.events)
        if batch.offset is not None:
            offsets.append(batch.offset)
        if batch.caught_up:
            rounds += 1
            between(rounds)
            if rounds == 8:
                break
    stream.close()
    # rounds 2-4: paused after chunk 1, no watermark written, the pause is in the offset
    assert seen[2][0] == seen[4][0] == 2
    assert seen[4][1] == [("r", 1, "f1", "incremental"), ("r", 2, "f2", "incremental")]
    paused = [o for o in offsets if o.get("incremental", {}).get("paused")]
    assert paused and paused[-1]["incremental"]["tables"][0]["last_key"] == [2]
    assert customers_only(events_so_far) == [("r", n, f"f{n}", "incremental") for n in range(1, 6)]
    assert watermarks_written(db) == ["open 1", "close 1", "open 2", "close 2", "open 3", "close 3"]


def test_malformed_signals_are_logged_with_the_reason_and_skipped(caplog: Any) -> None:
    db = database(2)
    signal_row(db, "bad-json", "execute-snapshot", "{not json")
    signal_row(db, "bad-type", "make-coffee", "{}")
    signal_row(db, "no-tables", "execute-snapshot", '{"type": "incremental"}')
    signal_row(db, "bad-kind", "execute-snapshot", json.dumps({"data-collections": [CUSTOMERS], "type": "sideways"}))
    signal_row(db, "not-object", "execute-snapshot", "[1, 2]")
    db.commit("dbo", "customers", ("u", customer(1, "one")))
    execute(db, "good", [CUSTOMERS])
    source, _ = source_for(db)
    with caplog.at_level(logging.WARNING):
        events, _ = drive(source, db.begin, polls=3)
    # the stream goes on, and the next good signal is acted on
    assert customers_only(events) == [("u", 1, "one", "false"), ("r", 1, "one", "incremental"),
                                      ("r", 2, "f2", "incremental")]
    warnings = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "'bad-json'" in warnings and "not valid JSON" in warnings
    assert "'bad-type'" in warnings and "unknown signal type 'make-coffee'" in warnings
    assert "'no-tables'" in warnings and "data-collections must be a non-empty list" in warnings
    assert "'bad-kind'" in warnings and "'sideways' is not one of incremental, blocking" in warnings
    assert "'not-object'" in warnings and "must be a JSON object" in warnings


def test_a_table_that_is_not_captured_is_reported_and_nothing_is_read(caplog: Any) -> None:
    db = database(2)
    execute(db, "ad-hoc-1", ["testDB.dbo.no_such_table", "otherDB.dbo.customers"])
    source, server = source_for(db)
    with caplog.at_level(logging.WARNING):
        events, batches = drive(source, db.begin, polls=3)
    assert events == [] and db.signal_inserts == []
    messages = [r.getMessage() for r in caplog.records]
    assert any("'testDB.dbo.no_such_table' matches no captured table" in m for m in messages)
    assert any("'otherDB.dbo.customers' matches no captured table" in m for m in messages)
    assert not any("TOP" in sql for sql in server.statements())
    assert "incremental" not in batches[-1].offset


def keyless(db: RecordedDatabase) -> RecordedDatabase:
    """``dbo.notes``: captured, no primary key (no index columns)."""
    notes = Instance("dbo", "notes", "dbo_notes", "00000020:00000400:0001", 1004, 904,
                     ["id", "first_name", "last_name", "email"], [])
    db.instances.append(notes)
    db.object_columns[904] = CUSTOMERS_COLUMNS
    db.object_columns[1004] = change_table_columns(CUSTOMERS_COLUMNS)
    db.min_lsns[notes.name] = notes.start_lsn
    db.table_rows["dbo.notes"] = [customer(7), customer(8)]
    return db


def test_a_table_without_primary_key_is_refused_unless_the_signal_names_a_surrogate_key(caplog: Any) -> None:
    db = keyless(database(0))
    execute(db, "ad-hoc-1", ["testDB.dbo.notes"])
    source, _ = source_for(db)
    with caplog.at_level(logging.ERROR):
        events, _ = drive(source, db.begin, polls=2)
    assert events == [] and db.signal_inserts == []
    assert any("table testDB.dbo.notes has no primary key" in r.getMessage() and "surrogate-key" in r.getMessage()
               for r in caplog.records)

    execute(db, "ad-hoc-2", ["testDB.dbo.notes"], **{"surrogate-key": "id"})
    source, server = source_for(db)
    events, _ = drive(source, db.begin, polls=3)
    assert [(e.value["op"], e.value["after"]["id"]) for e in events] == [("r", 7), ("r", 8)]
    assert events[0].key is None  # the table's events have no key; the surrogate only orders the chunks
    assert q.chunk_bounds("testDB", "dbo", "notes", ["id"], None) in server.statements()


# ---- offsets -------------------------------------------------------------------------------


def test_restart_from_an_offset_taken_inside_a_window_continues_after_the_last_closed_chunk() -> None:
    db = database(5)
    execute(db, "ad-hoc-1", [CUSTOMERS])
    # a change inside chunk 2's window: with max.batch.size 1 a batch (and an offset) ends right after it
    on_statement(db, (watermark("open", 2), lambda: db.commit("dbo", "orders", ("c", {
        "id": 9, "customer_id": 1, "quantity": 1, "price": None}))))
    db.table_rows.setdefault("dbo.orders", [])
    source, _ = source_for(db, **{"max.batch.size": "1"})
    _, batches = drive(source, db.begin, polls=3)
    crash = next(n for n, b in enumerate(batches) if b.events and b.events[-1].table_id == "testDB.dbo.orders")
    delivered = [e for b in batches[:crash + 1] for e in b.events]
    assert customers_only(delivered) == [("r", 1, "f1", "incremental"), ("r", 2, "f2", "incremental")]
    crash_offset = batches[crash].offset  # the process dies here: chunk 2 is open, its rows not emitted
    assert crash_offset["incremental"]["tables"] == [{
        "table": CUSTOMERS, "condition": None, "surrogate_key": None, "key_columns": ["id"], "max_key": [5],
        "last_key": [2], "started": True}]

    restarted, server = source_for(db)
    db.after_statement = None
    events, batches = drive(restarted, crash_offset, polls=4)
    # chunk 2's old close watermark is ignored; chunk 2 is read again (after key 2), chunk 1 is not
    assert customers_only(events) == [("r", n, f"f{n}", "incremental") for n in (3, 4, 5)]
    assert [p for _, sql, p in server.log if sql in (CHUNK_SQL, FIRST_CHUNK_SQL)] == [(2, 2, 5), (2, 4, 5)]
    assert [e.table_id for e in events].count("testDB.dbo.orders") == 0  # delivered before the crash
    assert "incremental" not in batches[-1].offset


def test_resumable_initial_snapshot_reads_rows_in_chunks_with_the_progress_in_the_offset() -> None:
    db = database(3)
    db.max_lsn = "00000027:00000f00:0001"
    db.table_rows["dbo.orders"] = []
    source, server = source_for(db, **{"snapshot.resumable": "true"})
    events, batches = drive(source, None, polls=4)
    assert q.select_rows("dbo", "customers", ["id", "first_name", "last_name", "email"]) not in server.statements()
    assert customers_only(events) == [("r", n, f"f{n}", "incremental") for n in (1, 2, 3)]
    first = next(b.offset for b in batches if b.offset is not None)
    assert [t["table"] for t in first["incremental"]["tables"]] == [CUSTOMERS, "testDB.dbo.orders"]
    assert "incremental" not in batches[-1].offset
    # killed after the first chunk: the restart reads on after key 2, takes no new snapshot
    after_chunk_1 = next(b.offset for b in batches if b.offset and (b.offset.get("incremental") or {}).get(
        "tables", [{}])[0].get("last_key") == [2])
    restarted, server = source_for(db, **{"snapshot.resumable": "true"})
    events, _ = drive(restarted, after_chunk_1, polls=3)
    assert customers_only(events) == [("r", 3, "f3", "incremental")]
    assert [p for _, sql, p in server.log if sql in (CHUNK_SQL, FIRST_CHUNK_SQL)] == [(2, 2, 3)]
    assert q.MAX_LSN in server.statements() and not any("TABLOCK" in sql for sql in server.statements())


# ---- the signal table and cdc signal ----------------------------------------------------------


def test_send_signal_inserts_into_the_signal_table_through_the_query_layer() -> None:
    db = database(0)
    source, server = source_for(db)
    where = source.send_signal("execute-snapshot", {"data-collections": [CUSTOMERS]}, id_="cli-1")
    assert where == "signal table testDB.dbo.debezium_signal"
    assert db.signal_inserts == [("cli-1", "execute-snapshot", '{"data-collections": ["testDB.dbo.customers"]}')]
    assert server.connections[-1].closed


def test_a_missing_signal_table_is_an_error_that_says_how_to_create_it() -> None:
    db = customers_and_orders()
    source, _ = source_for(db)
    with pytest.raises(SourceError) as caught:
        source.send_signal("log", {"message": "hi"})
    assert "does not exist" in caught.value.message and "sys.sp_cdc_enable_table" in caught.value.fix
    with pytest.raises(SourceError):
        drive(source_for(db)[0], start(db), polls=1)


def test_a_signal_table_without_cdc_stops_the_start_with_the_fix() -> None:
    db = with_signal_table(customers_and_orders(), cdc_enabled=False)
    source, _ = source_for(db)
    with pytest.raises(SourceError) as caught:
        drive(source, start(db), polls=1)
    assert "is not CDC-enabled" in caught.value.message
    assert caught.value.fix == q.enable_table_sql("testDB", "dbo", "debezium_signal")


def test_blocking_snapshot_reads_the_table_whole_between_polls() -> None:
    db = database(3)
    db.conditions["([id] <> 2)"] = lambda row: row["id"] != 2
    execute(db, "blocking-1", [CUSTOMERS], type="blocking",
            **{"additional-conditions": [{"data-collection": CUSTOMERS, "filter": "[id] <> 2"}]})
    db.commit("dbo", "customers", ("u", customer(3, "three")))
    source, server = source_for(db)
    events, batches = drive(source, db.begin, polls=2)
    assert customers_only(events) == [("u", 3, "three", "false"), ("r", 1, "f1", "true"), ("r", 3, "three", "true")]
    assert q.select_where("dbo", "customers", ["id", "first_name", "last_name", "email"], "([id] <> 2)") \
        in server.statements()
    assert db.signal_inserts == []  # no watermarks: streaming waits while the table is read
    assert "blocking" not in batches[-1].offset
