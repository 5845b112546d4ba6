"""Snapshot, hand-over to streaming, and snapshot modes on a real PostgreSQL."""
from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from tests.integration.harness import Pipeline
from tests.integration.test_pg_stream import sql


def fold(records: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The table state the events describe: latest image per key, deletes remove."""
    state: dict[int, dict[str, Any]] = {}
    for r in records:
        if r["value"] is None:
            continue
        p = r["value"]["payload"]
        if p["op"] in ("r", "c", "u"):
            state[p["after"]["id"]] = p["after"]
        elif p["op"] == "d":
            state.pop(p["before"]["id"], None)
    return state


def test_snapshot_then_stream_with_concurrent_writes(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE acc (id int PRIMARY KEY, balance int NOT NULL)",
        "INSERT INTO acc SELECT g, 0 FROM generate_series(1, 30000) g")
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        rng = random.Random(7)
        next_id = 30001
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            while not stop.is_set():
                with conn.transaction():
                    conn.execute("INSERT INTO acc VALUES (%s, 1)", (next_id,))
                    conn.execute("UPDATE acc SET balance = balance + 1 WHERE id = %s", (rng.randint(1, next_id),))
                    if rng.random() < 0.3:
                        conn.execute("DELETE FROM acc WHERE id = %s", (rng.randint(1, next_id),))
                written.append(next_id)
                next_id += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(0.3)  # writes before, during and after the snapshot
        with Pipeline({**pg_db, "snapshot.mode": "initial", "snapshot.fetch.size": "2000"}, tmp_path / "o.json") as p:
            # streamed: a hundred inserts after the snapshot, the writer still going
            p.wait_for(lambda rs: sum(1 for r in rs if r["value"] and r["value"]["payload"].get("op") == "c") >= 100,
                       timeout=60)
            stop.set()
            thread.join()
            with psycopg.connect(pg_db["dsn"]) as conn:
                expected = {i: {"id": i, "balance": b} for i, b in conn.execute("SELECT id, balance FROM acc")}
            records = p.wait_for(lambda rs: fold(rs) == expected, timeout=60)
    finally:
        stop.set()
        thread.join()
    assert len(written) > 5
    ops_by_key: dict[int, list[str]] = {}
    for r in records:
        if r["value"] is not None and r["value"]["payload"]["op"] in ("r", "c"):
            row = r["value"]["payload"]["after"]
            ops_by_key.setdefault(row["id"], []).append(r["value"]["payload"]["op"])
    # every row is read once: by the snapshot or by the stream, never both
    assert all(len(ops) == 1 for ops in ops_by_key.values()), [k for k, v in ops_by_key.items() if len(v) > 1][:5]
    snapshot = [r for r in records if r["value"] and r["value"]["payload"]["op"] == "r"]
    flags = [r["value"]["payload"]["source"]["snapshot"] for r in snapshot]
    assert flags[0] == "first" and flags[-1] == "last" and set(flags[1:-1]) == {"true"}
    assert fold(records) == expected


def test_snapshot_modes(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE s (id int PRIMARY KEY)", "INSERT INTO s VALUES (1), (2)",
        "CREATE TABLE u (id int PRIMARY KEY)", "INSERT INTO u VALUES (9)")
    # initial_only: the rows, then the pipeline ends by itself, and a rerun reads nothing new
    p = Pipeline({**pg_db, "snapshot.mode": "initial_only", "slot.name": "only"}, tmp_path / "o1.json")
    p.engine.run()
    got = p.sink.snapshot()
    assert sorted((r["topic"], r["value"]["payload"]["after"]["id"]) for r in got) == [
        ("dbz.public.s", 1), ("dbz.public.s", 2), ("dbz.public.u", 9)]
    assert [r["value"]["payload"]["source"]["snapshot"] for r in got] == ["first", "last_in_data_collection", "last"]
    with psycopg.connect(pg_db["dsn"]) as conn:  # a temporary slot: nothing left behind
        assert conn.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'only'").fetchone()[0] == 0
    # no_data: nothing of what exists, only what comes next
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o2.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO s VALUES (3)")
        got = p.wait_count(1)
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]["id"]) for r in got] == [("c", 3)]


def test_when_needed_resnapshots_after_the_slot_is_lost(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE w (id int PRIMARY KEY)", "INSERT INTO w VALUES (1)")
    offsets = tmp_path / "o.json"
    with Pipeline({**pg_db, "snapshot.mode": "initial"}, offsets) as p:
        p.wait_count(1)
    sql(pg_db, "SELECT pg_drop_replication_slot('cdc_test')", "INSERT INTO w VALUES (2)")
    with Pipeline({**pg_db, "snapshot.mode": "when_needed"}, offsets) as p:
        got = p.wait_count(2)
    assert sorted(r["value"]["payload"]["after"]["id"] for r in got) == [1, 2]
    assert {r["value"]["payload"]["op"] for r in got} == {"r"}


def test_resumable_snapshot_marks_one_row_tables(pg_db: dict[str, str], tmp_path: Path) -> None:
    """The marks of a resumable (chunked) snapshot follow the one rule (cdc.core.snapshot_marks): a
    one-row table in the middle is its table's last, a one-row last table the snapshot's last."""
    sql(pg_db, "CREATE TABLE a (id int PRIMARY KEY)", "INSERT INTO a VALUES (1), (2), (3)",
        "CREATE TABLE b (id int PRIMARY KEY)", "INSERT INTO b VALUES (1)",
        "CREATE TABLE c (x int)", "INSERT INTO c VALUES (1)",
        "CREATE TABLE d (id int PRIMARY KEY)", "INSERT INTO d VALUES (1)")
    props = {**pg_db, "snapshot.mode": "initial", "snapshot.resumable": "true", "snapshot.fetch.size": "2"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
        got = p.wait_count(6)
    marks = [(r["topic"].split(".")[-1], r["value"]["payload"]["source"]["snapshot"]) for r in got
             if r["value"] is not None and r["value"]["payload"]["op"] == "r"]
    assert marks == [("a", "first"), ("a", "true"), ("a", "last_in_data_collection"),
                     ("b", "last_in_data_collection"), ("c", "last_in_data_collection"), ("d", "last")]


def test_row_estimates_for_tables_never_analysed(pg_db: dict[str, str]) -> None:
    """reltuples is -1 before the first ANALYZE: the progress still gets a size (counted, or past 100,000
    rows extrapolated from where the count stopped), never '?'."""
    from cdc.sources.postgres import catalog as cat

    sql(pg_db, "CREATE TABLE small (id int PRIMARY KEY)", "INSERT INTO small SELECT generate_series(1, 5000)",
        "CREATE TABLE large (id int PRIMARY KEY, pad text)",
        "INSERT INTO large SELECT g, repeat('x', 40) FROM generate_series(1, 250000) g",
        "CREATE TABLE empty (id int PRIMARY KEY)")
    with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        conn.execute("SELECT pg_stat_reset()")  # no live-row statistics either: as on a server just restarted
        tables = {t.name: t for t in cat.read_tables(conn)}
        estimates = cat.row_estimates(conn, list(tables.values()))
    assert estimates[tables["small"].oid] == 5000 and estimates[tables["empty"].oid] == 0
    assert 200_000 <= estimates[tables["large"].oid] <= 300_000
