"""kill -9 again and again during an initial (not resumable) snapshot, under a concurrent writer: each
run takes the snapshot again, first telling consumers to drop what they applied of the attempt
before (a truncate per table, cdc.core.snapshot_restart). A consumer that applies the events in
order ends with exactly the source's table: rows deleted between two attempts are gone too."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_pg_incremental_kill import lines, start, stored, table, write_config, writer
from tests.integration.test_pg_stream import sql


def size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def fold(records: list[dict[str, Any]]) -> dict[int, int]:
    """The table a consumer holds after applying the events in order (a truncate empties it)."""
    state: dict[int, int] = {}
    for r in records:
        v = r["value"]
        if v is None:
            continue
        if v["op"] == "t":
            state.clear()
        elif v["op"] in ("r", "c", "u"):
            state[v["after"]["id"]] = v["after"]["v"]
        elif v["op"] == "d":
            state.pop(v["before"]["id"], None)
    return state


@pytest.mark.postgres
def test_repeated_kills_during_the_initial_snapshot(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO big SELECT g, 0 FROM generate_series(1, 200000) g")
    config = write_config(tmp_path / "c.properties", pg_db, tmp_path, **{
        "snapshot.mode": "initial", "snapshot.fetch.size": "500"})
    topic = tmp_path / "out" / "k.public.big.jsonl"
    stop = threading.Event()
    thread = threading.Thread(target=writer, args=(pg_db, stop))
    thread.start()
    try:
        for attempt in range(1, 4):  # three runs killed a little way into their snapshot
            # as soon as its first rows are written: the codec snapshots the table in about a second
            before = size(topic)
            proc = start(config, tmp_path / f"log{attempt}.txt")
            deadline = time.monotonic() + 60
            while size(topic) <= before and time.monotonic() < deadline:
                assert proc.poll() is None, (tmp_path / f"log{attempt}.txt").read_text()[-2000:]
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            offset = stored(tmp_path)
            assert offset is not None and offset.get("snapshot_attempt") == attempt, offset
        # Rows the killed attempts delivered, deleted before the last one's snapshot (the writer's deletes
        # alone may miss the few thousand low ids they got to): only the truncates take them out again.
        delivered = [r["value"]["after"]["id"] for r in lines(topic) if r["value"] and r["value"]["op"] == "r"]
        assert delivered, "the killed attempts delivered no row"
        sql(pg_db, f"DELETE FROM big WHERE id IN ({', '.join(str(i) for i in delivered[:5])})")
        time.sleep(0.5)  # rows deleted and updated after the last attempt's snapshot was taken
        proc = start(config, tmp_path / "log-final.txt")
        deadline = time.monotonic() + 60
        while "lsn" not in (stored(tmp_path) or {}) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join()
    expected = table(pg_db)
    try:
        deadline = time.monotonic() + 40
        while fold(lines(topic)) != expected:
            assert proc.poll() is None and time.monotonic() < deadline, "the events do not rebuild the table"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    records = lines(topic)
    truncates = [i for i, r in enumerate(records) if r["value"] and r["value"]["op"] == "t"]
    assert len(truncates) == 3  # one before each snapshot that started over
    assert all(records[i]["value"]["source"]["snapshot"] == "true" for i in truncates)
    # without the truncates, the rows of the first attempts that were deleted since would remain
    kept_without_markers: dict[int, int] = {}
    for r in records:
        v = r["value"]
        if v and v["op"] in ("r", "c", "u"):
            kept_without_markers[v["after"]["id"]] = v["after"]["v"]
        elif v and v["op"] == "d":
            kept_without_markers.pop(v["before"]["id"], None)
    assert set(kept_without_markers) - set(expected), "the writer deleted nothing between the attempts"
