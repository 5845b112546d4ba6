"""The initial snapshot read by Spark's JDBC reader in the slot's exported snapshot (cdc.spark.jdbc_snapshot,
cdc.sources.postgres.jdbc_chunks): the target equals the one format("cdc")'s own snapshot writes, type for
type and value for value, the stream starts where the snapshot was taken under a concurrent writer, a stop
in the middle is taken up again, and a table the JDBC reader cannot read right is left to format("cdc")."""
from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdc.core.errors import ConfigError
from tests.conftest import LONG
from tests.integration.test_pg_stream import sql
from tests.integration.test_spark_parallel import COLUMNAR_TYPES, ROWS
from tests.integration.test_spark_schema_changes import delta_rows, delta_types, pg_options, pg_rows, wait_equal

pytestmark = pytest.mark.spark

TRIGGER = {"processingTime": "500 milliseconds"}
# Values Spark cannot hold (NULL in it by either way) and NaN, in a row each
OUTSIDE = ["INSERT INTO wide (id, dt, ts, tz, n) VALUES (4, 'infinity', '-infinity', '4713-01-01 00:00:00+00 BC', "
           "'NaN')",
           "INSERT INTO wide (id, dt, ts, tz, r) VALUES (5, '0044-03-15 BC', 'infinity', 'infinity', 'Infinity')",
           "INSERT INTO wide (id, dt, ts, tz) VALUES (6, '1582-10-10', '1000-01-01 00:00:00.000001', "
           "'1900-01-01 00:00:00+01:30')"]


def _comparable(rows: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {k: {c: "NaN" if isinstance(v, float) and math.isnan(v) else v for c, v in row.items()}
            for k, row in rows.items()}


def _texts(db: dict[str, str]) -> dict[int, str]:
    with psycopg.connect(db["dsn"]) as conn:
        return dict(conn.execute("SELECT id, t FROM wide").fetchall())


def _writer(db: dict[str, str], rows: int, stop: threading.Event) -> threading.Thread:
    """A thread that, until ``stop``, inserts a row after the table's ``rows``, updates one of them and deletes
    another, 100 times a second (each statement its own transaction)."""
    def write() -> None:
        with psycopg.connect(db["dsn"], autocommit=True) as conn:
            i = 0
            while not stop.is_set():
                i += 1
                conn.execute("INSERT INTO items VALUES (%s, 'w', 0)", (rows + i,))
                conn.execute("UPDATE items SET n = n + 1 WHERE id = %s", (i * 7919 % rows + 1,))
                conn.execute("DELETE FROM items WHERE id = %s", (i * 104729 % rows + 1,))
                stop.wait(0.01)
    return threading.Thread(target=write, daemon=True)


def _options(db: dict[str, str], table: str, slot: str, **extra: str) -> dict[str, str]:
    return {**pg_options(db, table, slot), "snapshotChunkRows": "2", **extra}


@pytest.mark.parametrize("extra, text_timestamps", [
    ({}, False),
    ({"database.initial.statements": "SET extra_float_digits = -3;SET DateStyle = 'SQL, DMY'"}, False),
    ({}, True),
], ids=["defaults", "initial statements", "timestamptz as text, as before PostgreSQL 14"])
def test_the_jdbc_snapshot_writes_the_target_format_cdc_writes(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                                                supervised: list[Any], extra: dict[str, str],
                                                                text_timestamps: bool,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Every columnar type, NULLs, extremes, dates before the Gregorian reform, infinities and NaN: read in three
    chunks by the JDBC reader, the target has format("cdc")'s types and values (also when
    database.initial.statements change how the session writes floats and dates, and with the text form of
    timestamptz a server before 14 gets)."""
    from cdc.sources.postgres import jdbc_chunks
    from cdc.spark.jdbc_snapshot import MARKER
    from cdc.spark.supervisor import run_changes

    if text_timestamps:
        monkeypatch.setattr(jdbc_chunks, "_EXACT_EXTRACT", 10**9)

    sql(pg_db, COLUMNAR_TYPES, ROWS, *OUTSIDE)
    theirs, ours = tmp_path / "stream", tmp_path / "jdbc"
    supervised.append(run_changes(delta, _options(pg_db, "public.wide", "by_stream", **extra), str(theirs), ["id"],
                                  checkpoint=str(tmp_path / "ck_stream"), trigger=TRIGGER, snapshot="stream"))
    supervised.append(run_changes(delta, _options(pg_db, "public.wide", "by_jdbc", **extra), str(ours), ["id"],
                                  checkpoint=str(tmp_path / "ck_jdbc"), trigger=TRIGGER, snapshot="jdbc"))
    assert (tmp_path / "ck_jdbc" / MARKER).exists() and not (tmp_path / "ck_stream" / MARKER).exists()
    assert len(delta_rows(delta, ours)) == 6, "the snapshot is in the target when run_changes returns"
    wait_equal(lambda: _comparable(delta_rows(delta, theirs)), lambda: _comparable(delta_rows(delta, ours)),
               supervised[0])
    assert delta_types(delta, ours) == delta_types(delta, theirs)
    row = delta_rows(delta, ours)[6]
    assert (str(row["dt"]), str(row["ts"])) == ("1582-10-10", "1000-01-01 00:00:00.000001")
    assert delta_rows(delta, ours)[4]["dt"] is None  # infinity: NULL, as format("cdc") gives it
    sql(pg_db, "UPDATE wide SET t = 'after' WHERE id = 1", "DELETE FROM wide WHERE id = 2")
    wait_equal(lambda: {k: r["t"] for k, r in delta_rows(delta, ours).items()},
               lambda: _texts(pg_db), supervised[1])


@pytest.mark.parametrize("scd_type", [1, 2])
def test_the_stream_starts_where_the_jdbc_snapshot_was_taken(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                                            supervised: list[Any], scd_type: int) -> None:
    """A writer inserts, updates and deletes while the snapshot is read and after: every change after the
    exported snapshot arrives once, none before it twice (the target ends equal to the table)."""
    from cdc.spark.supervisor import run_changes

    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text, n int)",
        "INSERT INTO items SELECT g, 'r' || g, g FROM generate_series(1, 20000) g")
    stop = threading.Event()
    writer = _writer(pg_db, 20000, stop)
    writer.start()
    try:
        query = run_changes(delta, _options(pg_db, "public.items", "concurrent", snapshotChunkRows="5000"),
                            str(tmp_path / "t"), ["id"], checkpoint=str(tmp_path / "ck"), trigger=TRIGGER,
                            snapshot="jdbc", scd_type=scd_type)
        supervised.append(query)
        stop.wait(2)  # changes after the snapshot too
    finally:
        stop.set()
        writer.join()

    def target() -> dict[int, dict[str, Any]]:
        rows = delta_rows(delta, tmp_path / "t")
        if scd_type == 2:  # each key's current version
            current = delta.read.format("delta").load(str(tmp_path / "t")).where("is_current").collect()
            rows = {r["id"]: {c: r[c] for c in ("id", "name", "n")} for r in current}
        return rows
    wait_equal(target, lambda: pg_rows(pg_db), query)
    if scd_type == 2:  # the snapshot's versions start at 0, the stream's after them
        versions = delta.read.format("delta").load(str(tmp_path / "t"))
        assert versions.where("valid_from = 0").count() >= 19000
        assert versions.where("valid_to IS NOT NULL AND valid_to <= valid_from").count() == 0


def test_the_jdbc_reader_reads_the_exported_snapshot(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                                    supervised: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Changes committed after the plan and before the JDBC reader runs are not in the snapshot (each task
    joined the exported snapshot): they arrive by the stream, once."""
    from cdc.spark import jdbc_snapshot
    from cdc.spark.supervisor import run_changes

    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text, n int)",
        "INSERT INTO items SELECT g, 'r' || g, g FROM generate_series(1, 10) g")
    read = jdbc_snapshot._read

    def changed_first(*args: Any) -> Any:
        sql(pg_db, "UPDATE items SET name = 'after the plan' WHERE id = 1", "DELETE FROM items WHERE id = 2",
            "INSERT INTO items VALUES (11, 'new', 11)")
        return read(*args)
    monkeypatch.setattr(jdbc_snapshot, "_read", changed_first)
    target = tmp_path / "t"
    options = jdbc_snapshot.snapshot_into(delta, _options(pg_db, "public.items", "exported"), str(target), ["id"],
                                          checkpoint=str(tmp_path / "ck"), mode="jdbc")
    snapshot = delta_rows(delta, target)
    assert sorted(snapshot) == list(range(1, 11)) and snapshot[1]["name"] == "r1"
    query = run_changes(delta, options, str(target), ["id"], checkpoint=str(tmp_path / "ck"), trigger=TRIGGER)
    supervised.append(query)
    wait_equal(lambda: delta_rows(delta, target), lambda: pg_rows(pg_db), query)


def test_a_table_left_out_of_the_snapshot_starts_empty(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                                      supervised: list[Any]) -> None:
    """snapshot.include.collection.list without the table: its target starts empty, with its columns, and
    takes the changes after the plan, as format("cdc") gives them."""
    from cdc.spark.supervisor import run_changes

    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text, at date)",
        "INSERT INTO items VALUES (1, 'before', '2024-01-01')")
    options = _options(pg_db, "public.items", "left_out", **{"snapshot.include.collection.list": "public.other"})
    target = tmp_path / "t"
    query = run_changes(delta, options, str(target), ["id"], checkpoint=str(tmp_path / "ck"), trigger=TRIGGER,
                        snapshot="jdbc")
    supervised.append(query)
    assert delta_rows(delta, target) == {} and delta_types(delta, target) == {"id": "int", "name": "string",
                                                                              "at": "date"}
    sql(pg_db, "INSERT INTO items VALUES (2, 'after', '2024-01-02')")
    wait_equal(lambda: {k: r["name"] for k, r in delta_rows(delta, target).items()}, lambda: {2: "after"}, query)


def test_a_stop_in_the_middle_of_the_jdbc_snapshot_is_taken_up_again(delta: Any, pg_db: dict[str, str],
                                                                     tmp_path: Path, supervised: list[Any],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The first try dies after the slot was made and before the target was written: started again, it takes
    over its own slot (refused otherwise as another consumer's), reads a new snapshot and streams from it;
    a target written in full is kept and not read again."""
    from cdc.spark import jdbc_snapshot
    from cdc.spark.supervisor import run_changes

    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text, n int)",
        "INSERT INTO items SELECT g, 'r' || g, g FROM generate_series(1, 50) g")
    target, checkpoint = tmp_path / "t", tmp_path / "ck"
    options = _options(pg_db, "public.items", "retried")

    def dies(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("killed while writing")
    with monkeypatch.context() as patched:
        patched.setattr(jdbc_snapshot, "create_delta", dies)
        with pytest.raises(RuntimeError, match="killed while writing"):
            run_changes(delta, options, str(target), ["id"], checkpoint=str(checkpoint), snapshot="jdbc")
    assert not target.exists() or not delta_rows(delta, target)
    sql(pg_db, "UPDATE items SET name = 'between' WHERE id = 1", "DELETE FROM items WHERE id = 2")

    written = jdbc_snapshot.snapshot_into(delta, options, str(target), ["id"], checkpoint=str(checkpoint), mode="jdbc")
    assert len(delta_rows(delta, target)) == 49 and delta_rows(delta, target)[1]["name"] == "between"
    sql(pg_db, "UPDATE items SET name = 'later' WHERE id = 3")
    # the query never started (a stop after the target was written): started again, the target is kept
    query = run_changes(delta, options, str(target), ["id"], checkpoint=str(checkpoint), trigger=TRIGGER,
                        snapshot="jdbc")
    supervised.append(query)
    wait_equal(lambda: delta_rows(delta, target), lambda: pg_rows(pg_db), query)
    history = [r["operation"] for r in delta.sql(f"DESCRIBE HISTORY delta.`{target}`").orderBy("version").collect()]
    assert history[0] == "WRITE" and "WRITE" not in history[1:], history
    assert written[jdbc_snapshot.reader.STARTING_OFFSET.name]


def test_a_failed_jdbc_read_says_why_and_is_taken_up_again(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                                           supervised: list[Any], monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """pgjdbc cannot connect from the executors (here: a port nothing listens on): an error naming pgjdbc's cause
    and the ways on, not a JVM stack; started again, the query reads its snapshot."""
    import dataclasses

    from cdc.core.errors import SourceError
    from cdc.spark import jdbc_snapshot
    from cdc.spark.supervisor import run_changes

    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text, n int)", "INSERT INTO items VALUES (1, 'a', 1)")
    read = jdbc_snapshot._read
    monkeypatch.setattr(jdbc_snapshot, "_read", lambda spark, chunks, fetch: read(
        spark, dataclasses.replace(chunks, url=chunks.url.replace(f":{pg_db['database.port']}/", ":1/")), fetch))
    options = _options(pg_db, "public.items", "failed")
    with pytest.raises(SourceError) as failed:
        run_changes(delta, options, str(tmp_path / "t"), ["id"], checkpoint=str(tmp_path / "ck"), snapshot="jdbc")
    message = str(failed.value)
    assert "Connection to 127.0.0.1:1 refused" in message and "snapshot='stream'" in message, message
    assert "\tat " not in message and len(message) < 1500, message
    monkeypatch.setattr(jdbc_snapshot, "_read", read)
    query = run_changes(delta, options, str(tmp_path / "t"), ["id"], checkpoint=str(tmp_path / "ck"),
                        trigger=TRIGGER, snapshot="jdbc")
    supervised.append(query)
    assert delta_rows(delta, tmp_path / "t") == pg_rows(pg_db)


@LONG
@pytest.mark.timeout(600)
def test_kill_9_of_the_driver_during_the_jdbc_snapshot(delta: Any, pg_db: dict[str, str], tmp_path: Path) -> None:
    """The driver is killed (kill -9 of its process group: Python, JVM, workers) while Spark's JDBC reader reads
    300,000 rows, a writer changing the table all along: started again, it takes over its slot, reads a new
    snapshot and streams from it, and the target ends equal to the table."""
    import os
    import signal
    import subprocess
    import sys

    from cdc.spark.jdbc_snapshot import MARKER
    from tests.waits import wait_until

    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text, n int)",
        "INSERT INTO items SELECT g, repeat(md5(g::text), 4), g FROM generate_series(1, 300000) g")
    target, checkpoint = tmp_path / "t", tmp_path / "ck"
    args = [sys.executable, "-m", "tests.integration.spark_pipeline", "--run-changes", str(target), str(checkpoint),
            *(f"{k}={v}" for k, v in _options(pg_db, "public.items", "killed", snapshotChunkRows="20000").items())]
    root = Path(__file__).resolve().parents[2]
    stop = threading.Event()
    writer = _writer(pg_db, 300000, stop)
    first = subprocess.Popen(args, cwd=root, start_new_session=True)
    second = None
    try:
        writer.start()
        wait_until(lambda: (checkpoint / MARKER).exists(), 180, "the first driver to plan its snapshot", interval=0.05)
        time.sleep(1)  # into the JDBC read
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        assert not (target / "_delta_log").exists(), "killed before the target was written"
        second = subprocess.Popen(args, cwd=root, start_new_session=True)
        # (its first commit: a table Delta was asked about while it had none stays unknown to this session)
        wait_until(lambda: (target / "_delta_log" / f"{0:020}.json").exists(), 300,
                   "the second driver to write the snapshot", interval=1)
        stop.wait(3)
        stop.set()
        writer.join()
        # 300,000 rows: compared by their sums each second, then once row by row
        wait_equal(lambda: _sums_in_delta(delta, target), lambda: _sums_in_pg(pg_db), _as_query(second),
                   timeout=240)
        assert delta_rows(delta, target) == pg_rows(pg_db)
    finally:
        stop.set()
        for process in (first, second):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _sums_in_delta(spark: Any, target: Path) -> dict[int, Any]:
    from cdc.spark.apply import delta_exists

    if not delta_exists(spark, str(target)):
        return {}
    row = spark.read.format("delta").load(str(target)).selectExpr(
        "count(*)", "sum(id)", "sum(n)", "sum(length(name))").first()
    return {0: tuple(row)}


def _sums_in_pg(db: dict[str, str]) -> dict[int, Any]:
    with psycopg.connect(db["dsn"]) as conn:
        row = conn.execute("SELECT count(*), sum(id), sum(n), sum(length(name)) FROM items").fetchone()
    assert row is not None
    return {0: tuple(int(v) for v in row)}


def _as_query(process: Any) -> Any:
    """A stand-in for a query, for wait_equal: active while the process runs."""
    class Running:
        isActive = property(lambda self: process.poll() is None)

        def exception(self) -> Any:
            return None if process.poll() is None else f"the driver exited with {process.returncode}"
    return Running()


@pytest.mark.parametrize("create, options, reason", [
    ("CREATE TABLE items (id int PRIMARY KEY, name text, took interval)", {}, "needs the source's own converters"),
    ("CREATE TABLE items (id int PRIMARY KEY, name text, took int)", {"column.mask.with.4.chars": "public.items.name"},
     "an option changes its values"),
    ("CREATE TABLE items (id int PRIMARY KEY, name text, took int)", {"transforms": "f", "transforms.f.type":
     "io.debezium.transforms.ExtractNewRecordState"}, "transforms apply to events"),
], ids=["interval column", "masked column", "transforms"])
def test_a_table_the_jdbc_reader_cannot_read_right_is_left_to_format_cdc(
        delta: Any, pg_db: dict[str, str], tmp_path: Path, supervised: list[Any], create: str,
        options: dict[str, str], reason: str) -> None:
    """snapshot='jdbc' refuses, naming why; 'auto' lets format("cdc") read the snapshot (a masked column stays
    masked in the target)."""
    from cdc.spark.jdbc_snapshot import MARKER, snapshot_into

    sql(pg_db, create, "INSERT INTO items VALUES (1, 'secret', NULL), (2, 'other', NULL)")
    opts = _options(pg_db, "public.items", "refused", **options)
    with pytest.raises(ConfigError, match=reason):
        snapshot_into(delta, opts, str(tmp_path / "t"), ["id"], checkpoint=str(tmp_path / "ck"), mode="jdbc")
    assert snapshot_into(delta, opts, str(tmp_path / "t"), ["id"], checkpoint=str(tmp_path / "ck")) == opts
    assert not (tmp_path / "ck" / MARKER).exists() and not (tmp_path / "t").exists()
    if "column.mask.with.4.chars" in options:
        from cdc.spark.supervisor import run_changes

        supervised.append(run_changes(delta, opts, str(tmp_path / "t"), ["id"], checkpoint=str(tmp_path / "ck"),
                                      trigger=TRIGGER))
        wait_equal(lambda: {k: r["name"] for k, r in delta_rows(delta, tmp_path / "t").items()},
                   lambda: {1: "****", 2: "****"}, supervised[0])


def test_a_torn_note_in_the_checkpoint_is_a_clear_error(delta: Any, pg_db: dict[str, str], tmp_path: Path) -> None:
    from cdc.core.errors import SourceError
    from cdc.spark.jdbc_snapshot import MARKER, snapshot_into

    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text, n int)")
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / MARKER).write_text('{"table": "public.it')
    with pytest.raises(SourceError, match="is not a note of a snapshot plan cdc wrote"):
        snapshot_into(delta, _options(pg_db, "public.items", "torn"), str(tmp_path / "t"), ["id"],
                      checkpoint=str(tmp_path / "ck"), mode="jdbc")
