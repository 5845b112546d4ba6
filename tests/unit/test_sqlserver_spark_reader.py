"""The SQL Server source under ``format("cdc")``: the stream reader's offsets, micro-batches and
replays, driven in this process against recorded change-table rows (tests/fixtures/sqlserver).

Spark itself is not started: the reader's methods are called as Spark's driver calls them
(latestOffset, partitions, read, commit), and a replay after a restart is a second reader given
the planned offsets. What runs is the real reader and the real source over the fake query layer.
"""
from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pytest

from cdc.core.errors import ConfigError, SourceError
from cdc.sources.sqlserver import source as sqlserver_source
from tests.fixtures.sqlserver.fake import FakeServer
from tests.fixtures.sqlserver.testdb import RecordedDatabase, customers_and_orders

pytest.importorskip("pyspark")
from cdc.spark.datasource import CdcDataSource, CdcStreamReader  # noqa: E402

OPTIONS = {"source": "sqlserver", "database.names": "testDB", "database.hostname": "fake",
           "poll.interval.ms": "20"}


# transactions handed over two changes at a time, micro-batches of at most two rows
SPLIT = {"max.batch.size": "2", "snapshot.mode": "no_data", "maxRowsPerBatch": "2"}


@pytest.fixture
def db(monkeypatch: pytest.MonkeyPatch) -> RecordedDatabase:
    """customers_and_orders; its recorded changes (A..D) lie before the snapshot point."""
    recorded = customers_and_orders()
    server = FakeServer(recorded)
    monkeypatch.setattr(sqlserver_source, "OdbcConnection", lambda settings, database: server.connect(database))
    return recorded


def reader_for(**options: str) -> CdcStreamReader:
    opts = {**OPTIONS, **options}
    return CdcStreamReader(opts, CdcDataSource(opts).schema())


def advance(reader: CdcStreamReader, start: dict[str, Any], rows: int) -> dict[str, Any]:
    """latestOffset until the micro-batch from ``start`` holds ``rows`` rows (the reading thread
    fills its buffer in the background), as Spark's trigger loop would."""
    deadline = time.monotonic() + 10
    while True:
        end = reader.latestOffset(start, None)
        pending = reader._pending.get(_key(end))
        count = sum(b.num_rows for b in pending.batches) if pending is not None else 0
        if count >= rows or time.monotonic() > deadline:
            assert count == rows, f"{count} rows, not {rows}"
            return end
        reader.partitions(start, end)  # Spark plans it: an empty or partial batch goes through
        start = end
        rows -= count


def _key(offset: dict[str, Any]) -> str:
    import json
    return json.dumps(offset, sort_keys=True)


def rows_of(reader: CdcStreamReader, start: dict[str, Any], end: dict[str, Any]) -> list[dict[str, Any]]:
    batches = [b for p in reader.partitions(start, end) for b in reader.read(p)]
    table = pa.Table.from_batches(batches, schema=reader._arrow_schema) if batches else None
    return [] if table is None else [
        {"op": r["op"], "before": r["before"], "after": r["after"], "table": r["source"]["table"],
         "position": r["_position"]} for r in table.to_pylist()]


def test_snapshot_then_changes_in_micro_batches_and_a_replay_reads_the_same_rows(db: RecordedDatabase) -> None:
    """The snapshot read on the driver (parallelSnapshot false), then the stream."""
    reader = reader_for(table="testDB.dbo.customers", parallelSnapshot="false")
    try:
        start = reader.initialOffset()
        after_snapshot = advance(reader, start, 2)
        snapshot = rows_of(reader, start, after_snapshot)
        assert [(r["op"], r["after"]["id"], r["position"]) for r in snapshot] == [("r", 1001, 1), ("r", 1002, 2)]
        assert list(after_snapshot["databases"]) == ["testDB"]

        db.commit("dbo", "customers", ("c", {"id": 1010, "first_name": "Ann", "last_name": "Lee",
                                                     "email": "ann@example.org"}))
        db.commit("dbo", "orders", ("c", {"id": 20, "customer_id": 1010, "quantity": 1, "price": None}))
        db.commit("dbo", "customers",
                  ("u", {"id": 1001, "first_name": "Sally", "last_name": "Thomas", "email": "sally@new.example"}),
                  ("d", {"id": 1002, "first_name": "George", "last_name": "Bailey", "email": "gbailey@foobar.com"}))
        reader.commit(after_snapshot)
        end = advance(reader, after_snapshot, 3)
        changes = rows_of(reader, after_snapshot, end)
        assert [(r["op"], (r["before"] or {}).get("email"), (r["after"] or {}).get("email"), r["position"])
                for r in changes] == [
            ("c", None, "ann@example.org", 3),
            ("u", "sally.thomas@acme.com", "sally@new.example", 4),
            ("d", "gbailey@foobar.com", None, 5),
        ]
        assert {r["table"] for r in changes} == {"customers"}
        reader.commit(end)
    finally:
        reader.stop()

    # A restarted query plans the last micro-batch again from its checkpoint: the source reads the
    # change tables between the two offsets and gives the same rows, with the same positions.
    again = reader_for(table="testDB.dbo.customers", parallelSnapshot="false")
    try:
        assert rows_of(again, after_snapshot, end) == changes
        db.commit("dbo", "customers", ("c", {"id": 1011, "first_name": "Bo", "last_name": "Ek", "email": "bo@ek.se"}))
        later = advance(again, end, 1)
        assert [(r["op"], r["after"]["id"], r["position"]) for r in rows_of(again, end, later)] == [("c", 1011, 6)]
    finally:
        again.stop()


def test_a_micro_batch_ends_after_a_whole_change_of_a_split_transaction(db: RecordedDatabase) -> None:
    """max.batch.size splits a large transaction: each part ends a micro-batch at its last change,
    and a replay of a middle one gives exactly its rows."""
    reader = reader_for(table="testDB.dbo.customers", **SPLIT)
    try:
        start = reader.initialOffset()
        idle = advance(reader, start, 0)
        db.commit("dbo", "customers", *[("c", {"id": 3000 + n, "first_name": "n", "last_name": str(n),
                                               "email": f"{n}@example.org"}) for n in range(5)])
        ends = [idle]
        batches: list[list[int]] = []
        deadline = time.monotonic() + 10
        while sum(map(len, batches)) < 5 and time.monotonic() < deadline:
            end = reader.latestOffset(ends[-1], None)
            if end != ends[-1]:
                batches.append([r["after"]["id"] for r in rows_of(reader, ends[-1], end)])
                ends.append(end)
    finally:
        reader.stop()
    assert [i for b in batches for i in b] == [3000, 3001, 3002, 3003, 3004]
    assert len(batches) >= 2 and all(batches)  # the transaction came in more than one micro-batch
    replay = reader_for(table="testDB.dbo.customers", **SPLIT)
    try:
        for n, batch in enumerate(batches):
            assert [r["after"]["id"] for r in rows_of(replay, ends[n], ends[n + 1])] == batch
    finally:
        replay.stop()


def test_rows_as_json_strings_without_a_table(db: RecordedDatabase) -> None:
    reader = reader_for()
    try:
        start = reader.initialOffset()
        end = reader.latestOffset(start, None)  # the snapshot's plan: a chunk per table
        rows = rows_of(reader, start, end)
    finally:
        reader.stop()
    import json
    assert [(r["op"], json.loads(r["after"])["id"]) for r in rows] == [("r", 1001), ("r", 1002), ("r", 10001)]


def test_several_databases_are_refused_at_load(db: RecordedDatabase) -> None:
    with pytest.raises(ConfigError, match="one SQL Server database per query") as caught:
        CdcDataSource({**OPTIONS, "database.names": "testDB,otherDB"}).schema()
    assert "one streaming query per database" in str(caught.value.fix)


def test_a_table_not_captured_is_named_at_load(db: RecordedDatabase) -> None:
    with pytest.raises(SourceError, match="testDB.dbo.missing"):
        CdcDataSource({**OPTIONS, "table": "testDB.dbo.missing"}).schema()


def test_tables_mode_names_tables_by_database_schema_and_table(db: RecordedDatabase) -> None:
    schema = CdcDataSource({**OPTIONS, "tables": r"dbo\..*"}).schema()
    assert schema["after"].dataType.fieldNames() == ["testDB.dbo.customers", "testDB.dbo.orders"]


def test_an_incremental_snapshot_in_micro_batches_replays_its_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal through the signal table: the chunks' rows come between changes, no micro-batch
    ends inside a chunk's window, and each micro-batch replayed gives the same rows again."""
    from tests.unit.test_sqlserver_incremental import CUSTOMERS, SIGNAL_TABLE, database, execute

    recorded = database(rows=5)
    server = FakeServer(recorded)
    monkeypatch.setattr(sqlserver_source, "OdbcConnection", lambda settings, name: server.connect(name))
    options = {"table": CUSTOMERS, "snapshot.mode": "no_data", "signal.data.collection": SIGNAL_TABLE,
               "incremental.snapshot.chunk.size": "2"}
    reader = reader_for(**options)
    planned: list[tuple[dict[str, Any], dict[str, Any], list[tuple[str, int]]]] = []
    try:
        at = advance(reader, reader.initialOffset(), 0)
        execute(recorded, "sig-1", [CUSTOMERS])
        deadline = time.monotonic() + 10
        while sum(len(rows) for *_, rows in planned) < 5 and time.monotonic() < deadline:
            end = reader.latestOffset(at, None)
            if end != at:
                rows = [(r["op"], r["after"]["id"]) for r in rows_of(reader, at, end)]
                planned.append((at, end, rows))
                reader.commit(end)
                at = end
    finally:
        reader.stop()
    assert sorted(row for *_, rows in planned for row in rows) == [("r", n) for n in range(1, 6)]
    assert all(not (end.get("incremental") or {}).get("window") for _, end, _ in planned)
    replay = reader_for(**options)
    try:
        for start, end, rows in planned:
            assert [(r["op"], r["after"]["id"]) for r in rows_of(replay, start, end)] == rows
    finally:
        replay.stop()


def test_snapshot_in_parallel_chunks_under_a_writer_then_the_stream_from_its_lsn(db: RecordedDatabase) -> None:
    """The driver plans key chunks at the capture job's maximum LSN; each chunk is read on its own
    connection as the table is then, while a writer commits between chunk reads; the stream from
    the LSN brings those changes after the snapshot rows: applied in order, the target is the table."""
    from cdc.sources.sqlserver import queries as q

    db.table_rows["dbo.customers"] = [{"id": n, "first_name": f"f{n}", "last_name": "x", "email": f"{n}@example.org"}
                                      for n in range(1, 8)]
    page_sql = q.chunk_rows("testDB", "dbo", "customers", ["id", "first_name", "last_name", "email"], ["id"], None,
                            True, True)
    writes = iter([
        lambda: db.commit("dbo", "customers", ("u", {**db.table_rows["dbo.customers"][4], "email": "five@new"})),
        lambda: db.commit("dbo", "customers", ("d", db.table_rows["dbo.customers"][0]),
                          ("c", {"id": 8, "first_name": "f8", "last_name": "x", "email": "8@example.org"})),
    ])

    def writer(sql: str, params: tuple[Any, ...]) -> None:  # after a page read with both bounds
        if sql == page_sql:
            next(writes, lambda: None)()

    reader = reader_for(table="testDB.dbo.customers", snapshotChunkRows="3", **{"snapshot.fetch.size": "2"})
    try:
        start = reader.initialOffset()
        planned = reader.latestOffset(start, None)
        chunks = planned["plan"]["chunks"]
        assert [(c["lower"], c["upper"]) for c in chunks] == [(None, [3]), ([3], [6]), ([6], None)]
        assert [c["table"] for c in chunks] == ["testDB.dbo.customers"] * 3  # the include list: this table
        db.after_statement = writer
        snapshot = rows_of(reader, start, planned)
        db.after_statement = None
        # the update of 5 came between the first chunk's pages, the delete of 1 and the insert of 8
        # after the middle chunk's first: the chunks hold the rows as they were when read
        assert [r["after"]["id"] for r in snapshot] == [1, 2, 3, 4, 5, 6, 7, 8]
        assert snapshot[4]["after"]["email"] == "five@new"
        assert {(r["op"], r["position"]) for r in snapshot} == {("r", 0)}
        reader.commit(planned)
        end = advance(reader, planned, 3)
        changes = rows_of(reader, planned, end)
        assert [(r["op"], (r["after"] or r["before"])["id"]) for r in changes] == [("u", 5), ("d", 1), ("c", 8)]
    finally:
        reader.stop()
    target: dict[int, dict[str, Any]] = {}
    for row in sorted(snapshot + changes, key=lambda r: r["position"]):
        if row["op"] == "d":
            target.pop(row["before"]["id"], None)
        else:
            target[row["after"]["id"]] = row["after"]
    assert sorted(target.values(), key=lambda r: r["id"]) == sorted(db.table_rows["dbo.customers"],
                                                                    key=lambda r: r["id"])


def test_no_plan_without_a_snapshot_to_take(db: RecordedDatabase) -> None:
    for options in ({"snapshot.mode": "no_data"}, {"snapshot.mode": "initial_only"}):
        reader = reader_for(**options)
        try:
            assert "plan" not in reader.latestOffset(reader.initialOffset(), None)
        finally:
            reader.stop()


def test_a_table_without_a_key_is_one_chunk(db: RecordedDatabase) -> None:
    db.instance("dbo", "orders").key = []
    db.table_rows["dbo.orders"].append({"id": 10002, "customer_id": 1002, "quantity": 2, "price": None})
    reader = reader_for(table="testDB.dbo.orders", snapshotChunkRows="1")
    try:
        start = reader.initialOffset()
        planned = reader.latestOffset(start, None)
        assert planned["plan"]["chunks"] == [{"table": "testDB.dbo.orders", "key": [], "lower": None, "upper": None}]
        assert [r["after"]["id"] for r in rows_of(reader, start, planned)] == [10001, 10002]
    finally:
        reader.stop()


def test_min_rows_per_batch_waits_for_more_up_to_max_trigger_delay(db: RecordedDatabase) -> None:
    """minRowsPerBatch / maxTriggerDelay, as Spark's Kafka source: a trigger with fewer rows gives
    no micro-batch until enough came, or until the delay since the last micro-batch with rows."""
    def customer(n: int) -> tuple[str, dict[str, Any]]:
        return ("c", {"id": n, "first_name": "n", "last_name": str(n), "email": f"{n}@example.org"})

    reader = reader_for(table="testDB.dbo.customers", minRowsPerBatch="3", maxTriggerDelay="2s",
                        **{"snapshot.mode": "no_data"})
    try:
        idle = reader.latestOffset(reader.initialOffset(), None)  # the stream opens at the log's end
        db.commit("dbo", "customers", customer(4000))
        db.commit("dbo", "customers", customer(4001))
        time.sleep(0.5)  # the reading thread has both
        assert reader.latestOffset(idle, None) == idle  # two rows: no micro-batch yet
        db.commit("dbo", "customers", customer(4002))
        end = advance(reader, idle, 3)
        assert [r["after"]["id"] for r in rows_of(reader, idle, end)] == [4000, 4001, 4002]
        db.commit("dbo", "customers", customer(4003))
        time.sleep(0.5)
        assert reader.latestOffset(end, None) == end  # one row, within the delay
        time.sleep(2)  # maxTriggerDelay (2s) passes: a fixed time on purpose
        later = reader.latestOffset(end, None)  # past the delay: what there is
        assert [r["after"]["id"] for r in rows_of(reader, end, later)] == [4003]
    finally:
        reader.stop()


def test_min_rows_above_max_rows_is_refused(db: RecordedDatabase) -> None:
    with pytest.raises(ConfigError, match="minRowsPerBatch=10 must lie between 0 and maxRowsPerBatch=5"):
        reader_for(minRowsPerBatch="10", maxRowsPerBatch="5")
    with pytest.raises(ConfigError, match="maxTriggerDelay='soon' is not a duration"):
        reader_for(maxTriggerDelay="soon")
