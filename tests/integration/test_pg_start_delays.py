"""snapshot.delay.ms and streaming.delay.ms on a real PostgreSQL: the pipeline waits before the snapshot
(nothing is read, not even the slot made) and before streaming (the snapshot's offset is stored meanwhile),
and a stop during either wait ends the pipeline at once."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import psycopg
import pytest

from tests.integration.harness import Pipeline
from tests.integration.test_pg_stream import sql

PROMPT_STOP_S = 5  # far below the waits: a stop ends them at once


def waiting(caplog: pytest.LogCaptureFixture, before: str, timeout: float = 30) -> None:
    """Until the pipeline logs that it waits before ``before``."""
    deadline = time.monotonic() + timeout
    while f"before {before} (" not in caplog.text:
        assert time.monotonic() < deadline, f"no wait before {before}"
        time.sleep(0.05)


def stop_promptly(pipeline: Pipeline) -> None:
    started = time.monotonic()
    pipeline.stop()
    assert time.monotonic() - started < PROMPT_STOP_S


def slots(pg_db: dict[str, str]) -> list[str]:
    with psycopg.connect(pg_db["dsn"]) as conn:
        return [r[0] for r in conn.execute("SELECT slot_name FROM pg_replication_slots WHERE database = "
                                           "current_database()")]


def test_snapshot_delay_waits_before_anything_and_a_stop_ends_it(pg_db: dict[str, str], tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cdc.core.delays")
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)")
    with Pipeline({**pg_db, "snapshot.mode": "initial", "snapshot.delay.ms": "600000"}, tmp_path / "o.json") as p:
        waiting(caplog, "the snapshot")
        assert p.sink.snapshot() == [] and not p.source.streaming and slots(pg_db) == []
        stop_promptly(p)
    assert p.error is None and p.sink.snapshot() == [] and slots(pg_db) == []


def test_the_snapshot_comes_after_its_delay(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)")
    started = time.monotonic()
    with Pipeline({**pg_db, "snapshot.mode": "initial", "snapshot.delay.ms": "1500"}, tmp_path / "o.json") as p:
        p.wait_count(2)
        assert time.monotonic() - started >= 1.5
        p.wait_ready()


def test_streaming_delay_stores_the_snapshot_then_waits_and_a_stop_ends_it(pg_db: dict[str, str], tmp_path: Path,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cdc.core.delays")
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)")
    offsets = tmp_path / "o.json"
    with Pipeline({**pg_db, "snapshot.mode": "initial", "streaming.delay.ms": "600000"}, offsets) as p:
        assert [r["value"]["payload"]["op"] for r in p.wait_count(2)] == ["r", "r"]
        waiting(caplog, "streaming")
        deadline = time.monotonic() + 30  # the snapshot's offset, stored during the wait
        while not (offsets.exists() and "snapshot_completed" in offsets.read_text()):
            assert time.monotonic() < deadline, "the snapshot's offset was not stored during the wait"
            time.sleep(0.05)
        sql(pg_db, "INSERT INTO t VALUES (3)")
        assert not p.source.streaming
        stop_promptly(p)
    assert p.error is None and len(p.sink.snapshot()) == 2
    assert json.loads(offsets.read_text())  # a stored offset: the next start streams, no snapshot again
    with Pipeline({**pg_db, "snapshot.mode": "initial"}, offsets) as again:
        records = again.wait_count(1)
        assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]["id"]) for r in records] == [("c", 3)]
