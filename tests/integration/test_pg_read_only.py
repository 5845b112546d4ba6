"""Read-only incremental snapshots on a real PostgreSQL: no signal table, nothing written; each
chunk's window is its REPEATABLE READ snapshot and the WAL position just after it."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from tests.integration.harness import Pipeline, apply_in_order
from tests.integration.test_pg_incremental import values
from tests.integration.test_pg_stream import sql


def read_only(db: dict[str, str], signals: Path, **extra: str) -> dict[str, str]:
    return {**db, "snapshot.mode": "no_data", "read.only": "true", "signal.enabled.channels": "file",
            "signal.file": str(signals), **extra}


def request(signals: Path, table: str) -> None:
    with open(signals, "a") as handle:
        handle.write(json.dumps({"id": f"ro-{time.monotonic_ns()}", "type": "execute-snapshot",
                                 "data": {"data-collections": [table]}}) + "\n")


def test_read_only_incremental_snapshot_under_concurrent_writes(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO t SELECT g, 0 FROM generate_series(1, 20000) g")
    signals = tmp_path / "signals.jsonl"
    signals.write_text("")
    stop = threading.Event()

    def writer() -> None:
        n = 0
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            while not stop.is_set():
                n += 1
                conn.execute("UPDATE t SET v = v + 1 WHERE id = %s", ((n * 7919) % 20000 + 1,))
                conn.execute("DELETE FROM t WHERE id = %s", ((n * 104729) % 20000 + 1,))

    with Pipeline(read_only(pg_db, signals, **{"incremental.snapshot.chunk.size": "500"}), tmp_path / "o.json") as p:
        p.wait_ready()
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            request(signals, "public.t")
            deadline = time.monotonic() + 120
            incremental = p.source.incremental
            while (not incremental.active or incremental.rows_emitted == 0) and time.monotonic() < deadline:
                time.sleep(0.1)
            while p.source.incremental.active and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not p.source.incremental.active, "the incremental snapshot did not finish"
        finally:
            stop.set()
            thread.join()
        sql(pg_db, "INSERT INTO t VALUES (0, 42)")
        records = p.wait_for(lambda rs: any((v.get("after") or {}).get("v") == 42 for v in values(rs)), timeout=60)
    with psycopg.connect(pg_db["dsn"]) as conn:
        expected = dict(conn.execute("SELECT id, v FROM t").fetchall())
    reads = [v for v in values(records) if v["op"] == "r"]
    assert len(reads) > 15000 and len({r["after"]["id"] for r in reads}) == len(reads)
    assert {r["source"]["snapshot"] for r in reads} == {"incremental"}
    assert apply_in_order(records, "dbz.public.t") == expected
    with psycopg.connect(pg_db["dsn"]) as conn:  # nothing was created for the snapshot
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 1


def test_read_only_read_comes_before_a_change_made_after_it(pg_db: dict[str, str], tmp_path: Path) -> None:
    """Right after each chunk is read, its first row is updated: that update commits after the
    chunk's WAL position, so the chunk is emitted first and the update follows it."""
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO t SELECT g, 0 FROM generate_series(1, 1000) g")
    signals = tmp_path / "signals.jsonl"
    signals.write_text("")
    changed: list[int] = []
    with Pipeline(read_only(pg_db, signals, **{"incremental.snapshot.chunk.size": "100"}), tmp_path / "o.json") as p:
        p.wait_ready()
        reader = p.source.incremental.reader
        original = reader.read

        def read_then_change(task: Any, limit: int) -> Any:
            rows = original(task, limit)
            if rows:
                key = int(rows[0][0][0])
                sql(pg_db, f"UPDATE t SET v = 7 WHERE id = {key}")
                changed.append(key)
            return rows

        reader.read = read_then_change  # type: ignore[method-assign]
        request(signals, "public.t")
        deadline = time.monotonic() + 60
        while (not changed or p.source.incremental.active) and time.monotonic() < deadline:
            time.sleep(0.1)
        sql(pg_db, "INSERT INTO t VALUES (0, 42)")
        records = p.wait_for(lambda rs: any((v.get("after") or {}).get("v") == 42 for v in values(rs)), timeout=30)
    assert changed == list(range(1, 1001, 100))
    ops = [(v["op"], v["after"]["id"], v["after"]["v"]) for v in values(records) if v["after"]["id"] in changed]
    for key in changed:
        assert [op for op in ops if op[1] == key] == [("r", key, 0), ("u", key, 7)]
    assert len([v for v in values(records) if v["op"] == "r"]) == 1000
