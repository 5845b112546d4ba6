"""Bad input gets a clear error naming the cause and the fix, and loses no data."""
from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdc.core.errors import CdcError, OffsetStoreError, SinkError, SourceError
from tests.integration.harness import CollectingSink, Pipeline
from tests.integration.test_pg_stream import sql


def run_until_error(props: dict[str, str], tmp_path: Path, timeout: float = 60) -> CdcError:
    p = Pipeline(props, tmp_path / "o.json")
    p.thread.start()
    p.thread.join(timeout)
    assert not p.thread.is_alive(), "expected the pipeline to fail"
    assert isinstance(p.error, CdcError), p.error
    return p.error


def test_wrong_password(pg_db: dict[str, str], pg_admin_dsn: str, tmp_path: Path) -> None:
    role = "r_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN REPLICATION PASSWORD 'right'")
    try:
        error = run_until_error({**pg_db, "database.user": role, "database.password": "wrong"}, tmp_path)
        text = str(error)
        assert "refused the login" in text and "database.password" in text
        assert "wrong" not in text.replace("wrong password", "")  # the password itself is never shown
    finally:
        with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")


def test_missing_replication_privilege(pg_db: dict[str, str], pg_admin_dsn: str, tmp_path: Path) -> None:
    role = "r_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    try:
        error = run_until_error({**pg_db, "database.user": role, "database.password": "pw"}, tmp_path)
        assert "REPLICATION" in str(error) and f"ALTER ROLE \"{role}\" WITH REPLICATION" in str(error)
    finally:
        with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")


def test_host_down_retries_then_fails(pg_db: dict[str, str], tmp_path: Path) -> None:
    started = time.monotonic()
    error = run_until_error({**pg_db, "database.port": "1", "errors.max.retries": "2",
                             "retriable.restart.connector.wait.ms": "100"}, tmp_path)
    assert "gave up" in str(error) and "after 3 attempts" in str(error)
    assert "cannot reach PostgreSQL" in str(error) and "database.port" in str(error)
    assert time.monotonic() - started < 30


def test_publication_missing_with_autocreate_disabled(pg_db: dict[str, str], tmp_path: Path) -> None:
    error = run_until_error({**pg_db, "publication.autocreate.mode": "disabled"}, tmp_path)
    assert "publication 'cdc_test_pub' does not exist" in str(error) and "CREATE PUBLICATION" in str(error)


def test_slot_in_use_by_another_pipeline(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE x (id int PRIMARY KEY)")
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "a.json") as first:
        first.wait_ready()
        # a second pipeline without an offset: the slot is not its own
        error = run_until_error({**pg_db, "snapshot.mode": "no_data"}, tmp_path)
        assert "replication slot 'cdc_test' exists" in str(error) and "active for PID" in str(error)
        assert "slot.name" in (error.fix or "") and "pg_drop_replication_slot('cdc_test')" in (error.fix or "")
        # a copy of the first pipeline (its offset): its own slot, held by the first
        while not (tmp_path / "a.json").exists():
            time.sleep(0.05)
        shutil.copy(tmp_path / "a.json", tmp_path / "o.json")
        error = run_until_error({**pg_db, "snapshot.mode": "no_data", "slot.max.retries": "1",
                                 "slot.retry.delay.ms": "100"}, tmp_path)
    assert "in use by another process" in str(error) and "slot.name" in str(error)


def _slots(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute("SELECT slot_name FROM pg_replication_slots")]


class FailingSink(CollectingSink):
    """Takes records until it is told to refuse them."""

    refuse = False

    def write(self, records: Any) -> None:
        if self.refuse:
            raise SinkError("the sink refuses records", fix="none: this is a test")
        super().write(records)


@pytest.mark.parametrize("slot", ["drop_on_stop_clean", "drop_on_stop_failed"])
def test_slot_drop_on_stop_drops_on_a_clean_stop_only(pg_db: dict[str, str], pg_admin_dsn: str, tmp_path: Path,
                                                      slot: str) -> None:
    """slot.drop.on.stop=true: a stop asked for (Ctrl-C, engine.stop()) drops the slot; a run that
    fails downstream (here the sink) keeps it, so the changes it did not deliver are read again."""
    sql(pg_db, "CREATE TABLE x (id int PRIMARY KEY)")
    sink = FailingSink()
    p = Pipeline({**pg_db, "snapshot.mode": "no_data", "slot.name": slot, "slot.drop.on.stop": "true"},
                 tmp_path / "o.json", sink=sink)
    with p:
        p.wait_ready()
        assert slot in _slots(pg_admin_dsn)
        if slot.endswith("failed"):
            sink.refuse = True
            sql(pg_db, "INSERT INTO x VALUES (1)")
            p.thread.join(30)
            assert isinstance(p.error, SinkError), p.error
    if slot.endswith("clean"):
        assert p.error is None and slot not in _slots(pg_admin_dsn)
    else:
        assert slot in _slots(pg_admin_dsn)
        with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))


def test_slot_dropped_while_running(pg_db: dict[str, str], pg_admin_dsn: str, tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE x (id int PRIMARY KEY)")
    p = Pipeline({**pg_db, "snapshot.mode": "no_data", "retriable.restart.connector.wait.ms": "100"},
                 tmp_path / "o.json")
    with p:
        p.wait_ready()
        with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
            for _ in range(100):  # the pipeline retries (0.1 s) and may take the slot back: terminated each time
                conn.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                             "WHERE slot_name = 'cdc_test' AND active_pid IS NOT NULL")
                try:
                    conn.execute("SELECT pg_drop_replication_slot('cdc_test')")
                    break
                except psycopg.errors.ObjectInUse:
                    time.sleep(0.05)
            else:
                raise AssertionError("the slot could not be dropped")
        p.thread.join(60)
    assert isinstance(p.error, SourceError)
    assert "does not exist" in str(p.error) and "snapshot.mode=when_needed" in str(p.error)


def test_table_without_primary_key_is_named_in_a_warning(pg_db: dict[str, str], tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    sql(pg_db, "CREATE TABLE nokey (v text)")
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO nokey VALUES ('a')")
        got = p.wait_count(1)
    assert got[0]["key"] is None and got[0]["value"]["payload"]["after"] == {"v": "a"}
    assert "public.nokey has no primary key" in caplog.text and "REPLICA IDENTITY FULL" in caplog.text


def _file_ids(out: Path) -> list[int]:
    path = out / "dbz.public.seq.jsonl"
    if not path.exists():
        return []
    ids = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a torn last line from kill -9 was never acknowledged
            continue
        if record["value"] is not None:
            ids.append(record["value"]["payload"]["after"]["id"])
    return ids


def test_kill_9_mid_stream_then_restart_loses_nothing(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE seq (id int PRIMARY KEY, pad text)")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "cdc.cli", "postgres",
               "--database-hostname", pg_db["database.hostname"], "--database-port", pg_db["database.port"],
               "--database-user", pg_db["database.user"], "--database-dbname", pg_db["database.dbname"],
               "--topic-prefix", "dbz", "--slot-name", "kill9", "--publication-name", "kill9",
               "--snapshot-mode", "no_data", "--output", str(out), "--offsets", str(tmp_path / "offsets.json"),
               "--set", "offset.flush.interval.ms=50"]
    committed: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            n = 0
            while not stop.is_set() and n < 4000:
                with conn.transaction():
                    for _ in range(10):
                        n += 1
                        conn.execute("INSERT INTO seq VALUES (%s, repeat('x', 100))", (n,))
                committed.extend(range(n - 9, n + 1))
                time.sleep(0.005)

    first = subprocess.Popen(command, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            active = "SELECT count(*) FROM pg_replication_slots WHERE slot_name='kill9' AND active"
            while not conn.execute(active).fetchone()[0]:
                assert time.monotonic() < deadline and first.poll() is None, \
                    first.stderr.read().decode() if first.poll() is not None else "slot never active"
                time.sleep(0.1)
        thread = threading.Thread(target=writer)
        thread.start()
        deadline = time.monotonic() + 60
        while len(_file_ids(out)) < 500:
            assert first.poll() is None, first.stderr.read().decode()
            assert time.monotonic() < deadline, "the first run delivered too little"
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        before_restart = len(_file_ids(out))
        thread.join()
    finally:
        stop.set()
        if first.poll() is None:
            first.kill()
    assert before_restart < 4000, "the kill should land mid-stream"
    second = subprocess.Popen(command, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while set(_file_ids(out)) != set(committed):
            assert time.monotonic() < deadline, f"missing {sorted(set(committed) - set(_file_ids(out)))[:10]}"
            assert second.poll() is None, second.stderr.read().decode()
            time.sleep(0.1)
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(30)
    ids = _file_ids(out)
    assert set(ids) == set(committed) and len(committed) == 4000
    # order is kept: ids only go back where the unacknowledged tail was delivered again
    assert sum(1 for a, b in itertools.pairwise(ids) if b < a) <= 1


def test_a_foreign_slot_is_never_dropped_nor_advanced(pg_db: dict[str, str], tmp_path: Path) -> None:
    """Another consumer's slot (a paused Debezium connector's, say) and no offset of ours: refused with its
    state and the ways on; the slot keeps its position. slot.takeover=true takes it over."""
    sql(pg_db, "CREATE TABLE x (id int PRIMARY KEY)", "SELECT pg_create_logical_replication_slot('theirs', 'pgoutput')",
        "INSERT INTO x VALUES (1), (2)")
    def position() -> tuple[str, str]:
        with psycopg.connect(pg_db["dsn"]) as conn:
            return conn.execute("SELECT confirmed_flush_lsn::text, restart_lsn::text FROM pg_replication_slots "
                                "WHERE slot_name = 'theirs'").fetchone()
    before = position()
    for mode in ("initial", "no_data", "when_needed"):
        error = run_until_error({**pg_db, "slot.name": "theirs", "snapshot.mode": mode}, tmp_path / mode)
        assert isinstance(error, SourceError)
        assert "replication slot 'theirs' exists (plugin pgoutput" in str(error) and "no stored offset" in str(error)
        assert "SELECT pg_drop_replication_slot('theirs');" in (error.fix or "")
        assert "slot.takeover=true" in (error.fix or "") and position() == before
    sink = CollectingSink()
    with Pipeline({**pg_db, "slot.name": "theirs", "slot.takeover": "true"}, tmp_path / "t.json", sink=sink) as p:
        got = p.wait_count(2, topic="dbz.public.x")
    assert [r["value"]["payload"]["after"]["id"] for r in got] == [1, 2]


def test_a_foreign_publication_is_never_changed(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE x (id int PRIMARY KEY)", "CREATE TABLE y (id int PRIMARY KEY)",
        "CREATE TABLE z (id int PRIMARY KEY)", "CREATE PUBLICATION theirs FOR TABLE y")

    def published() -> set[str]:
        with psycopg.connect(pg_db["dsn"]) as conn:
            return {r[0] for r in conn.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'theirs'")}
    props = {**pg_db, "publication.name": "theirs", "publication.autocreate.mode": "filtered",
             "table.include.list": "public.x"}
    error = run_until_error(props, tmp_path)
    assert "publication 'theirs' exists" in str(error) and "lacks ['public.x']" in str(error)
    assert 'ALTER PUBLICATION "theirs" ADD TABLE "public"."x"' in (error.fix or "") and published() == {"y"}
    # holding every captured table, it is used as it is (never narrowed to them)
    sql(pg_db, "ALTER PUBLICATION theirs ADD TABLE x, z", "INSERT INTO x VALUES (1)")
    with Pipeline(props, tmp_path / "ok.json") as p:
        assert [r["value"]["payload"]["after"]["id"] for r in p.wait_count(1, topic="dbz.public.x")] == [1]
    assert published() == {"x", "y", "z"}


def test_fix_lines_quote_every_identifier(pg_db: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
                                          ) -> None:
    """A keyless table whose name is SQL: the suggested ALTER TABLE stays one statement on that table."""
    sql(pg_db, 'CREATE TABLE "t; drop table victim; --" (v int)', "CREATE TABLE victim (id int PRIMARY KEY)")
    with caplog.at_level("WARNING"), Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as p:
        p.wait_ready()
    assert 'ALTER TABLE "public"."t; drop table victim; --" REPLICA IDENTITY FULL;' in caplog.text


def test_an_offset_of_another_server_is_refused(pg_db: dict[str, str], tmp_path: Path) -> None:
    """Offsets carry the cluster's system identifier and the database: an LSN of another server means nothing."""
    sql(pg_db, "CREATE TABLE x (id int PRIMARY KEY)", "INSERT INTO x VALUES (1)")
    with Pipeline(pg_db, tmp_path / "o.json") as p:
        p.wait_count(1, topic="dbz.public.x")
    stored = json.loads((tmp_path / "o.json").read_text())
    offset = stored["offsets"]["test"]
    with psycopg.connect(pg_db["dsn"]) as conn:
        system = conn.execute("SELECT system_identifier::text FROM pg_control_system()").fetchone()[0]
    assert offset["server_identity"] == f"postgres:{system}:{pg_db['database.dbname']}"
    offset["server_identity"] = f"postgres:7000000000000000001:{pg_db['database.dbname']}"
    (tmp_path / "o.json").write_text(json.dumps(stored))
    error = run_until_error(pg_db, tmp_path)
    assert isinstance(error, OffsetStoreError)
    assert "written on another server (postgres:7000000000000000001" in str(error)


def test_an_offset_of_another_branch_of_the_cluster_is_refused(pg_db: dict[str, str], tmp_path: Path) -> None:
    """Offsets carry the primary's timeline too: one of a timeline this server's history does not hold (the old
    primary after a failover, another promoted standby) is refused, although the system identifier is the same."""
    sql(pg_db, "CREATE TABLE x (id int PRIMARY KEY)", "INSERT INTO x VALUES (1)")
    with Pipeline(pg_db, tmp_path / "o.json") as p:
        p.wait_count(1, topic="dbz.public.x")
    stored = json.loads((tmp_path / "o.json").read_text())
    offset = stored["offsets"]["test"]
    with psycopg.connect(pg_db["dsn"]) as conn:
        timeline = conn.execute("SELECT timeline_id FROM pg_control_checkpoint()").fetchone()[0]
    assert offset["server_timeline"] == timeline
    offset["server_timeline"] = timeline + 5
    (tmp_path / "o.json").write_text(json.dumps(stored))
    error = run_until_error(pg_db, tmp_path)
    assert isinstance(error, OffsetStoreError)
    assert f"written on timeline {timeline + 5} of this cluster, which is not in the history" in str(error)
    assert "point database.hostname at the server that was promoted" in str(error)


def test_a_failover_slot_needs_postgres_17(pg_db: dict[str, str], tmp_path: Path) -> None:
    with psycopg.connect(pg_db["dsn"]) as conn:
        version = conn.info.server_version
    if version >= 170000:
        return  # this server has failover slots: tests/faults/test_pg_failover.py uses them
    sql(pg_db, "CREATE TABLE x (id int PRIMARY KEY)")
    error = run_until_error({**pg_db, "slot.failover": "true"}, tmp_path)
    assert isinstance(error, SourceError)
    assert "slot.failover=true needs PostgreSQL 17 or later" in str(error) and "fix: set slot.failover=false" \
        in str(error)
