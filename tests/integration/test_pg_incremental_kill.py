"""kill -9 in the middle of an incremental snapshot and of a resumable initial snapshot (`cdc run`
in a subprocess, file sink), then a restart: every row is there, and the restart reads from the
chunk after the last one whose progress was stored, not from the start."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from tests.integration.test_pg_stream import sql


def write_config(path: Path, db: dict[str, str], tmp: Path, **extra: str) -> Path:
    props = {
        "source": "postgres",
        "database.hostname": db["database.hostname"], "database.port": db["database.port"],
        "database.user": db["database.user"], "database.dbname": db["database.dbname"],
        "topic.prefix": "k", "slot.name": "kill_slot", "publication.name": "kill_pub",
        "value.converter.schemas.enable": "false", "key.converter.schemas.enable": "false",
        "sink.files.directory": str(tmp / "out"), "offset.storage.file.filename": str(tmp / "offsets.json"),
        "offset.flush.interval.ms": "100", "status.update.interval.ms": "500", **extra,
    }
    if db.get("database.password"):
        props["database.password"] = db["database.password"]
    path.write_text("\n".join(f"{k}={v}" for k, v in props.items()) + "\n")
    return path


def start(config: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "cdc.cli", "-v", "run", str(config)],
                            stdout=subprocess.DEVNULL, stderr=log.open("ab"))


def stored(tmp: Path) -> dict[str, Any] | None:
    try:
        return json.loads((tmp / "offsets.json").read_text())["offsets"]["cdc"]
    except (OSError, ValueError, KeyError):
        return None


def wait_offset(tmp: Path, proc: subprocess.Popen[bytes], predicate: Callable[[dict[str, Any]], bool],
                timeout: float = 40) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "cdc exited early"
        offset = stored(tmp)
        if offset is not None and predicate(offset):
            return offset
        time.sleep(0.005)
    raise AssertionError(f"timed out; stored offset {stored(tmp)}")


def lines(path: Path) -> list[dict[str, Any]]:
    """The file's complete lines. A kill -9 during a write can leave the last one torn (Linux cuts a
    write short at a page when the process is killed): never acknowledged, it is cut off when the
    file sink opens the file again, and its record comes again from the stored offset."""
    if not path.exists():
        return []
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def fold(records: list[dict[str, Any]]) -> dict[int, int]:
    state: dict[int, int] = {}
    for r in records:
        v = r["value"]
        if v is None:
            continue
        if v["op"] in ("r", "c", "u"):
            state[v["after"]["id"]] = v["after"]["v"]
        elif v["op"] == "d":
            state.pop(v["before"]["id"], None)
    return state


def table(db: dict[str, str]) -> dict[int, int]:
    with psycopg.connect(db["dsn"]) as conn:
        return dict(conn.execute("SELECT id, v FROM big").fetchall())


def writer(db: dict[str, str], stop: threading.Event) -> None:
    """A few changes a millisecond-ish: updates, deletes and inserts all over the key range."""
    import random

    rng = random.Random(3)
    next_id = 1_000_000
    with psycopg.connect(db["dsn"], autocommit=True) as conn:
        while not stop.is_set():
            conn.execute("UPDATE big SET v = v + 1 WHERE id = %s", (rng.randint(1, 50_000),))
            if rng.random() < 0.2:
                conn.execute("DELETE FROM big WHERE id = %s", (rng.randint(1, 50_000),))
            if rng.random() < 0.2:
                conn.execute("INSERT INTO big VALUES (%s, 0)", (next_id,))
                next_id += 1
            time.sleep(0.003)


def finish(db: dict[str, str], tmp: Path, proc: subprocess.Popen[bytes], topic: Path, stop: threading.Event,
           thread: threading.Thread) -> list[dict[str, Any]]:
    """Stop the writer, wait until the restarted pipeline has delivered the table, stop it cleanly."""
    stop.set()
    thread.join()
    expected = table(db)
    deadline = time.monotonic() + 40
    try:
        while (got := fold(lines(topic))) != expected:
            diff = {k: (got.get(k), expected.get(k)) for k in set(got) | set(expected) if got.get(k) != expected.get(k)}
            assert proc.poll() is None and time.monotonic() < deadline, \
                f"the restart did not converge: {list(diff.items())[:10]}"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    return lines(topic)


def incremental_key(offset: dict[str, Any]) -> int:
    tables = (offset.get("incremental") or {}).get("tables") or [{}]
    return int((tables[0].get("last_key") or [0])[0])


def test_kill_during_incremental_snapshot_resumes_at_the_stored_chunk(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32), data text)",
        "CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO big SELECT g, 0 FROM generate_series(1, 50000) g")
    config = write_config(tmp_path / "c.properties", pg_db, tmp_path, **{
        "snapshot.mode": "no_data", "signal.data.collection": "public.debezium_signal",
        "incremental.snapshot.chunk.size": "500"})
    topic = tmp_path / "out" / "k.public.big.jsonl"
    stop = threading.Event()
    thread = threading.Thread(target=writer, args=(pg_db, stop))
    proc = start(config, tmp_path / "log1.txt")
    try:
        wait_offset(tmp_path, proc, lambda o: o.get("lsn", 0) > 0)
        thread.start()
        sql(pg_db, "INSERT INTO debezium_signal VALUES "
                   "('go', 'execute-snapshot', '{\"data-collections\": [\"public.big\"]}')")
        wait_offset(tmp_path, proc, lambda o: incremental_key(o) >= 10_000)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    except BaseException:
        proc.kill()
        stop.set()
        raise
    at_kill = stored(tmp_path)
    assert at_kill is not None
    last_key = int(at_kill["incremental"]["tables"][0]["last_key"][0])
    first_run = len(lines(topic))
    proc = start(config, tmp_path / "log2.txt")
    try:
        wait_offset(tmp_path, proc, lambda o: "incremental" not in o)
    except BaseException:
        proc.kill()
        stop.set()
        raise
    records = finish(pg_db, tmp_path, proc, topic, stop, thread)
    assert fold(records) == table(pg_db)
    again = sorted(r["value"]["after"]["id"] for r in records[first_run:]
                   if r["value"] and r["value"]["op"] == "r")
    assert again, "the restart read nothing"
    # the restart starts right after the last stored chunk: nothing before it is read again
    assert again[0] > last_key and again[0] <= last_key + 10, (again[0], last_key)
    assert all(k > last_key for k in again)
    log = (tmp_path / "log2.txt").read_text()
    assert f"after key ['{last_key}']" in log


def test_kill_during_resumable_initial_snapshot(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO big SELECT g, 0 FROM generate_series(1, 50000) g",
        "CREATE TABLE nokey (x int)", "INSERT INTO nokey VALUES (1), (2)")
    config = write_config(tmp_path / "c.properties", pg_db, tmp_path, **{
        "snapshot.mode": "initial", "snapshot.resumable": "true", "snapshot.fetch.size": "250"})
    topic = tmp_path / "out" / "k.public.big.jsonl"
    stop = threading.Event()
    thread = threading.Thread(target=writer, args=(pg_db, stop))
    proc = start(config, tmp_path / "log1.txt")
    try:
        at_kill = wait_offset(tmp_path, proc, lambda o: "snapshot_progress" in o
                              and (o["snapshot_progress"]["tables"] or [""])[0] == "public.big"
                              and int((o["snapshot_progress"]["last_key"] or [0])[0]) >= 5000)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    except BaseException:
        proc.kill()
        raise
    at_kill = stored(tmp_path)
    assert at_kill is not None and "snapshot_progress" in at_kill, at_kill
    last_key = int(at_kill["snapshot_progress"]["last_key"][0])
    assert last_key < 50_000
    first_run = len(lines(topic))
    thread.start()  # changes between the two runs, and during the second
    time.sleep(0.5)
    proc = start(config, tmp_path / "log2.txt")
    try:
        wait_offset(tmp_path, proc, lambda o: "snapshot_progress" not in o)
    except BaseException:
        proc.kill()
        stop.set()
        raise
    records = finish(pg_db, tmp_path, proc, topic, stop, thread)
    assert fold(records) == table(pg_db)
    second = [r["value"]["after"]["id"] for r in records[first_run:] if r["value"] and r["value"]["op"] == "r"]
    assert second and min(second) > last_key and min(second) <= last_key + 10, (min(second), last_key)
    assert second == sorted(second)  # key order, each read once
    log1 = (tmp_path / "log1.txt").read_text() + (tmp_path / "log2.txt").read_text()
    assert "table public.nokey has no primary key: its snapshot is not chunked" in log1
    assert len(lines(tmp_path / "out" / "k.public.nokey.jsonl")) >= 2
