"""Incremental snapshots under Spark: micro-batches replayed after a crash hold the same chunks.

The reader is driven as Spark drives it (latestOffset, partitions, read) against a real
PostgreSQL, without committing, so that every planned micro-batch can be replayed by a second
reader: what Spark does with the last planned micro-batch when a query restarts.
"""
from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from tests.integration.test_pg_incremental import SIGNALS, signal
from tests.integration.test_pg_stream import sql


@dataclass
class Database:
    """What the replay check needs of one source's database (the table is ``items (id, v)``)."""

    options: dict[str, str]  # the reader's options
    execute: Callable[[str], None]  # one statement, autocommitted
    query: Callable[[str], list[tuple[Any, ...]]]


def reader(db: Database) -> Any:
    from cdc.spark.datasource import CdcDataSource

    source = CdcDataSource({"snapshot.mode": "no_data", "maxRowsPerBatch": "25",
                            "incremental.snapshot.chunk.size": "1000", **db.options})
    return source.streamReader(source.schema())


def batch_rows(r: Any, start: dict[str, Any], end: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for partition in r.partitions(start, end):
        for batch in r.read(partition):
            rows.extend(batch.to_pylist())
    return rows


def watermarks(db: Database) -> int:
    return int(db.query("SELECT count(*) FROM debezium_signal WHERE type LIKE 'snapshot-window-%'")[0][0])


def check_replays(db: Database, table: str, rows: int = 6000) -> None:
    """Drive a reader as Spark does through an incremental snapshot of ``rows`` rows under a writer,
    never committing; then replay every micro-batch that holds snapshot rows with a fresh reader."""
    first = reader(db)
    batches: list[tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]] = []
    start = first.initialOffset()
    stop = threading.Event()

    def writer() -> None:  # updates while the chunks are read: some fall inside their windows
        rng = random.Random(5)
        while not stop.is_set():
            db.execute(f"UPDATE items SET v = v + 1 WHERE id = {rng.randint(1, rows)}")
            time.sleep(0.001)

    thread = threading.Thread(target=writer)
    try:
        while start.get("initial"):  # the stream has started: the signal comes after it
            db.execute("UPDATE items SET v = 0 WHERE id = 1")
            end = first.latestOffset(start)
            batches.append((start, end, batch_rows(first, start, end)))
            start = end
        db.execute(f"INSERT INTO debezium_signal VALUES ('s-1', 'execute-snapshot', "
                   f"'{{\"data-collections\": [\"{table}\"]}}')")
        thread.start()
        deadline = time.monotonic() + 60
        snapshot_rows = 0
        while snapshot_rows == 0 or "incremental" in start:
            assert time.monotonic() < deadline, f"{snapshot_rows} snapshot rows after 60 s"
            end = first.latestOffset(start)
            if end == start:
                continue  # nothing new: Spark plans no micro-batch
            got = batch_rows(first, start, end)
            assert "window" not in (end.get("incremental") or {})  # never inside a chunk's window
            snapshot_rows += sum(1 for row in got if row["op"] == "r")
            batches.append((start, end, got))
            start = end
            if snapshot_rows >= rows * 2 // 3:
                stop.set()  # the last chunks without concurrent writes
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
        first.stop()

    read_keys = [row["after"]["id"] for _, _, got in batches for row in got if row["op"] == "r"]
    changed = {row["after"]["id"] for _, _, got in batches for row in got if row["op"] == "u"}
    # each row read once, or left out because a change streamed inside its window carries it
    assert len(read_keys) == len(set(read_keys)) and set(read_keys) | changed == set(range(1, rows + 1))
    assert all(len(end.get("chunk_run", "")) == 8 for _, end, _ in batches[1:])

    now = dict(db.query("SELECT id, v FROM items"))
    marks = watermarks(db)
    replays = [(s, e, got) for s, e, got in batches if any(row["op"] == "r" for row in got)]
    assert len(replays) >= 4
    for s, e, got in replays:
        second = reader(db)  # a restarted query: the micro-batch was planned, not committed
        try:
            again = batch_rows(second, s, e)
        finally:
            second.stop()
        assert [(r["op"], r["after"]["id"]) for r in again] == [(r["op"], r["after"]["id"]) for r in got]
        assert [r["_position"] for r in again] == [r["_position"] for r in got]
        for old, new in zip(got, again, strict=True):
            if old["op"] == "r":  # read again: the value now
                assert new["after"]["v"] == now[new["after"]["id"]]
            else:  # from the log: as the first time
                assert new["after"] == old["after"] and new["source"] == old["source"]
    assert watermarks(db) == marks  # replays start no chunk


@pytest.mark.postgres
def test_replayed_micro_batches_read_the_same_chunks(pg_db: dict[str, str]) -> None:
    sql(pg_db, SIGNALS, "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO items SELECT g, 0 FROM generate_series(1, 6000) g")
    with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:  # psycopg's connections are thread-safe

        def execute(statement: str) -> None:
            conn.execute(statement.encode())

        def query(statement: str) -> list[tuple[Any, ...]]:
            return conn.execute(statement.encode()).fetchall()

        check_replays(Database(
            {"source": "postgres", "table": "public.items", "slot.name": "incr_slot", "publication.name": "incr_pub",
             "signal.data.collection": "public.debezium_signal",
             **{k: pg_db[k] for k in ("database.hostname", "database.port", "database.user", "database.dbname")}},
            execute, query), "public.items")


@pytest.mark.mysql
def test_mariadb_replayed_micro_batches_read_the_same_chunks(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                             tmp_path: Any) -> None:
    import pymysql

    from tests.integration.test_mysql_incremental import SIGNALS as MYSQL_SIGNALS
    from tests.integration.test_mysql_stream import sql as mysql_sql

    name = mysql_db["db"]
    mysql_sql(mysql_server, name, MYSQL_SIGNALS, "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)",
              "INSERT INTO items SELECT seq, 0 FROM seq_1_to_6000")
    conn = pymysql.connect(**mysql_server, database=name, autocommit=True)
    lock = threading.Lock()

    def execute(statement: str) -> None:
        with lock, conn.cursor() as cur:
            cur.execute(statement)

    def query(statement: str) -> list[tuple[Any, ...]]:
        with lock, conn.cursor() as cur:
            cur.execute(statement)
            return list(cur.fetchall())

    try:
        check_replays(Database(
            {"source": "mysql", "table": f"{name}.items", "signal.data.collection": f"{name}.debezium_signal",
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl"),
             **{k: mysql_db[k] for k in ("database.hostname", "database.port", "database.user", "database.password",
                                         "database.server.id", "database.include.list")}},
            execute, query), f"{name}.items")
    finally:
        conn.close()


@pytest.mark.spark
@pytest.mark.postgres
def test_an_incremental_snapshot_fills_the_target_of_a_running_query(spark: Any, pg_db: dict[str, str],
                                                                   tmp_path: Any) -> None:
    """snapshot.mode=no_data, then an execute-snapshot signal while rows change: the target ends
    equal to the table."""
    from tests.integration.test_spark import source_rows, start_query, target_rows, wait_equal

    sql(pg_db, SIGNALS, "CREATE TABLE accounts (id int PRIMARY KEY, name text, amount numeric(10,2))",
        "INSERT INTO accounts SELECT g, 'n' || g, g FROM generate_series(1, 3000) g")
    target, checkpoint = tmp_path / "target", tmp_path / "checkpoint"
    query = start_query(spark, pg_db, target, checkpoint, "parquet", **{
        "snapshot.mode": "no_data", "signal.data.collection": "public.debezium_signal",
        "incremental.snapshot.chunk.size": "500"})
    try:
        with psycopg.connect(pg_db["dsn"]) as conn:  # no_data: changes count from the slot's creation
            while not conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'spark_slot' AND "
                                   "database = current_database()").fetchone():
                assert query.isActive, query.exception()
                time.sleep(0.2)
        sql(pg_db, "INSERT INTO accounts VALUES (5000, 'streamed', 1)")
        wait_equal(lambda: target_rows(spark, target, "parquet"), lambda: [(5000, "streamed", 1)])
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.accounts"]})
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            for n in range(200):  # changes while the chunks are read
                conn.execute("UPDATE accounts SET amount = amount + 1 WHERE id = %s", (n * 13 % 3000 + 1,))
                if n % 20 == 0:
                    conn.execute("DELETE FROM accounts WHERE id = %s", (n * 7 + 2,))
                time.sleep(0.005)
        wait_equal(lambda: target_rows(spark, target, "parquet"), lambda: source_rows(pg_db), timeout=120)
    finally:
        query.stop()
