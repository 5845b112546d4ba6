"""Incremental, blocking and resumable snapshots on a real MariaDB, with signals."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest

from tests.conftest import ROOT
from tests.integration.harness import apply_in_order
from tests.integration.test_mysql_stream import pipeline, sql

pytestmark = pytest.mark.mysql

SIGNALS = "CREATE TABLE debezium_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


def signal_props(db: dict[str, str], **extra: str) -> dict[str, str]:
    return {"signal.data.collection": f"{db['db']}.debezium_signal", "incremental.snapshot.chunk.size": "1000", **extra}


def execute_snapshot(server: dict[str, Any], db: str, data: dict[str, Any], id_: str = "ad-hoc-1",
                     type_: str = "execute-snapshot") -> None:
    sql(server, db, f"INSERT INTO debezium_signal VALUES ('{id_}', '{type_}', '{json.dumps(data)}')")


def table(server: dict[str, Any], db: str) -> dict[int, Any]:
    conn = pymysql.connect(**server, database=db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, v FROM t")
            return dict(cur.fetchall())
    finally:
        conn.close()


def test_incremental_snapshot_while_rows_change(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                tmp_path: Path) -> None:
    db = mysql_db["db"]
    topic = f"dbz.{db}.t"
    sql(mysql_server, db, SIGNALS, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO t SELECT seq, 0 FROM seq_1_to_50000")
    stop = threading.Event()

    def writer() -> None:
        conn = pymysql.connect(**mysql_server, database=db, autocommit=True)
        n = 0
        with conn.cursor() as cur:
            while not stop.is_set():
                n += 1
                cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", ((n * 7919) % 50000 + 1,))
                cur.execute("DELETE FROM t WHERE id = %s", ((n * 104729) % 50000 + 1,))
                cur.execute("INSERT INTO t VALUES (%s, -1) ON DUPLICATE KEY UPDATE v = -1", (50000 + n,))
        conn.close()

    with pipeline(mysql_db, tmp_path, **signal_props(mysql_db, **{"snapshot.mode": "no_data"})) as p:
        p.wait_ready()
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            execute_snapshot(mysql_server, db, {"data-collections": [f"{db}\\\\.t"], "type": "incremental"})
            p.wait_for(lambda records: any(r["value"] and r["value"]["payload"].get("op") == "r" for r in records
                                           if r["topic"] == topic), timeout=30)
            deadline = time.monotonic() + 120
            while p.source.incremental.active and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not p.source.incremental.active, "the incremental snapshot did not finish"
        finally:
            stop.set()
            thread.join()
        sql(mysql_server, db, "INSERT INTO t VALUES (0, 42)")  # everything before it has been read
        records = p.wait_for(lambda rs: any(r["value"] and (r["value"]["payload"].get("after") or {}).get("v") == 42
                                            for r in rs if r["topic"] == topic), timeout=60)
    reads = [r["value"]["payload"] for r in records if r["topic"] == topic and r["value"]
             and r["value"]["payload"]["op"] == "r"]
    assert len(reads) > 40000 and {r["source"]["snapshot"] for r in reads} == {"incremental"}
    assert len({r["after"]["id"] for r in reads}) == len(reads)  # no key read twice
    assert apply_in_order(records, topic) == table(mysql_server, db)
    assert not [r for r in records if r["topic"].endswith(".debezium_signal")]  # signals are not events


def test_conditions_stop_and_bad_signals(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    db = mysql_db["db"]
    topic = f"dbz.{db}.t"
    sql(mysql_server, db, SIGNALS, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "CREATE TABLE nokey (v int)", "CREATE TABLE t2 (id int PRIMARY KEY)",
        "INSERT INTO t SELECT seq, seq % 3 FROM seq_1_to_3000", "INSERT INTO t2 VALUES (1)")
    with pipeline(mysql_db, tmp_path, **signal_props(mysql_db, **{"snapshot.mode": "no_data"})) as p:
        p.wait_ready()
        sql(mysql_server, db, "INSERT INTO debezium_signal VALUES ('bad-1', 'execute-snapshot', '{not json')",
            "INSERT INTO debezium_signal VALUES ('bad-2', 'no-such-signal', '{}')")
        execute_snapshot(mysql_server, db, {"data-collections": [f"{db}.nokey", f"{db}.missing"]}, "bad-3")
        execute_snapshot(mysql_server, db, {"data-collections": [f"{db}.t"], "additional-conditions": [
            {"data-collection": f"{db}.t", "filter": "v = 1 AND id <= 1500"}]}, "cond-1")
        execute_snapshot(mysql_server, db, {"data-collections": [f"{db}.t2"], "additional-conditions": [
            {"data-collection": f"{db}.t2", "filter": "no_such_column = 1"}]}, "cond-bad")
        def reads_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [r["value"]["payload"]["after"] for r in records
                    if r["topic"] == topic and r["value"] and r["value"]["payload"]["op"] == "r"]
        # Both snapshots done: t's rows read (500 match), then t2's condition failed. Waited for by what they
        # give, not by the source's "active" flag, which is still False until the source reads the signal.
        p.wait_for(lambda rs: len(reads_of(rs)) >= 500 and "no_such_column" in caplog.text, timeout=60)
        sql(mysql_server, db, "INSERT INTO t VALUES (9999, 9)")
        records = p.wait_for(lambda rs: any((r["value"]["payload"].get("after") or {}).get("id") == 9999
                                            for r in rs if r["topic"] == topic and r["value"]))
    reads = reads_of(records)
    assert not p.source.incremental.active
    assert sorted(r["id"] for r in reads) == [i for i in range(1, 1501) if i % 3 == 1]
    text = caplog.text
    assert "skipping malformed signal 'bad-1'" in text and "skipping malformed signal 'bad-2'" in text
    assert "has no primary key" in text and f"{db}.missing" in text
    assert "no_such_column" in text  # the failing condition is reported, the table skipped, the stream goes on


def test_pause_resume_and_stop(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    db = mysql_db["db"]
    topic = f"dbz.{db}.t"
    sql(mysql_server, db, SIGNALS, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO t SELECT seq, 0 FROM seq_1_to_5000", "CREATE TABLE marker (id int PRIMARY KEY)")
    props = signal_props(mysql_db, **{"snapshot.mode": "no_data", "incremental.snapshot.chunk.size": "100"})
    with pipeline(mysql_db, tmp_path, **props) as p:
        p.wait_ready()
        conn = pymysql.connect(**mysql_server, database=db)  # both in one transaction: no chunk is read
        with conn.cursor() as cur:
            cur.execute("INSERT INTO debezium_signal VALUES ('s1', 'execute-snapshot', %s)",
                        (json.dumps({"data-collections": [f"{db}.t"]}),))
            cur.execute("INSERT INTO debezium_signal VALUES ('s2', 'pause-snapshot', '{}')")
        conn.commit()
        conn.close()
        # a chunk the pause failed to stop would have been read between these two transactions
        for marker in (1, 2):
            sql(mysql_server, db, f"INSERT INTO marker VALUES ({marker})")
            p.wait_for(lambda rs, m=marker: any(r["topic"] == f"dbz.{db}.marker" and r["value"] and
                                                r["value"]["payload"]["after"]["id"] == m for r in rs))
        assert [r for r in p.sink.snapshot() if r["topic"] == topic] == []
        execute_snapshot(mysql_server, db, {}, "s3", "resume-snapshot")
        p.wait_count(1000, topic=topic, timeout=60)
        execute_snapshot(mysql_server, db, {"data-collections": [f"{db}.t"]}, "s4", "stop-snapshot")
        deadline = time.monotonic() + 30
        while p.source.incremental.active and time.monotonic() < deadline:
            time.sleep(0.1)
        count = len([r for r in p.sink.snapshot() if r["topic"] == topic])
        sql(mysql_server, db, "UPDATE t SET v = 5 WHERE id = 1")
        records = p.wait_count(count + 1, topic=topic)
    assert 1000 <= count < 5000
    assert records[-1]["value"]["payload"]["op"] == "u"


def test_blocking_snapshot_from_the_file_channel(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                 tmp_path: Path) -> None:
    db = mysql_db["db"]
    topic = f"dbz.{db}.t"
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO t SELECT seq, 0 FROM seq_1_to_300")
    signals = tmp_path / "signals.jsonl"
    signals.write_text("garbage\n")
    props = {"snapshot.mode": "no_data", "signal.enabled.channels": "file", "signal.file": str(signals)}
    with pipeline(mysql_db, tmp_path, **props) as p:
        p.wait_ready()
        with open(signals, "a") as handle:
            handle.write(json.dumps({"id": "b1", "type": "execute-snapshot", "data": {
                "type": "blocking", "data-collections": [f"{db}.t"],
                "additional-conditions": [{"data-collection": f"{db}.t", "filter": "id <= 100"}]}}) + "\n")
        p.wait_count(100, topic=topic, timeout=30)
        sql(mysql_server, db, "INSERT INTO t VALUES (1000, 1)")
        records = p.wait_count(101, topic=topic)
    assert [r["value"]["payload"]["op"] for r in records] == ["r"] * 100 + ["c"]
    offsets = json.loads((tmp_path / "offsets.json").read_text())["offsets"]["test"]
    assert offsets["signal_file_pos"] == signals.stat().st_size  # a restart does not act on it again


def _cdc(db: dict[str, str], out: Path, chunk: int) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "cdc.cli", "mysql", "--topic-prefix", "dbz", "--output", str(out),
            "--database-hostname", db["database.hostname"], "--database-port", db["database.port"],
            "--database-user", db["database.user"], "--database-include-list", db["db"],
            "--database-server-id", db["database.server.id"], "--set", "offset.flush.interval.ms=100",
            "--set", f"signal.data.collection={db['db']}.debezium_signal", "--set", "snapshot.resumable=true",
            "--set", f"incremental.snapshot.chunk.size={chunk}"]
    env = {**os.environ, "CDC_PASSWORD": db["database.password"]}
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _reads(path: Path) -> list[int]:
    ids = []
    if not path.exists():
        return ids
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines) - 1:
                continue
            raise
        if record["value"] and record["value"]["payload"]["op"] == "r":
            ids.append(record["value"]["payload"]["after"]["id"])
    return ids


def test_kill_9_during_a_resumable_initial_snapshot(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                    tmp_path: Path) -> None:
    """snapshot.resumable: the first snapshot in key chunks; killed halfway, the second run goes on
    after the last chunk stored in the offset and reads nothing before it again."""
    db = mysql_db["db"]
    topic_file = tmp_path / "out" / f"dbz.{db}.t.jsonl"
    sql(mysql_server, db, SIGNALS, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO t SELECT seq, 0 FROM seq_1_to_60000", "CREATE TABLE nokey (v int)", "INSERT INTO nokey VALUES (1)")
    process = _cdc(mysql_db, tmp_path / "out", 500)
    try:
        # killed once the stored offset says the chunks are a good way in (the offset file is small: polling
        # it reacts faster than counting the rows written, which a fast reader may finish first)
        offsets_file = tmp_path / "out" / "offsets.json"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                progress = json.loads(offsets_file.read_text())["offsets"]["cdc"]["incremental"]["tables"][0]
            except (OSError, ValueError, KeyError, IndexError, TypeError):
                progress = None
            if progress is not None and progress["table"] == f"{db}.t" and (progress["last_key"] or [0])[0] >= 8000:
                break
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        offsets = json.loads(offsets_file.read_text())["offsets"]["cdc"]
        assert "incremental" in offsets, f"the snapshot ended before the kill: {offsets}"
        stored = offsets["incremental"]["tables"][0]
        assert stored["table"] == f"{db}.t" and stored["last_key"] is not None
        before = len(_reads(topic_file))
        sql(mysql_server, db, "UPDATE t SET v = 7 WHERE id = 60000")
        process = _cdc(mysql_db, tmp_path / "out", 500)
        deadline = time.monotonic() + 90
        while len(set(_reads(topic_file))) < 60000 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
    ids = _reads(topic_file)
    assert set(ids) == set(range(1, 60001))
    second_run = ids[before:]
    assert min(second_run) > stored["last_key"][0] - 500  # at most the unfinished chunk again
    assert all(i > stored["last_key"][0] for i in second_run)
    nokey = (tmp_path / "out" / f"dbz.{db}.nokey.jsonl").read_text().splitlines()
    assert [json.loads(line)["value"]["payload"]["after"] for line in nokey] == [{"v": 1}]  # read whole


def test_read_only_incremental_snapshot_uses_binlog_positions(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                              tmp_path: Path) -> None:
    """read.only: no signal table, nothing written; the windows are binlog positions read before
    and after each chunk, and the result is as exact as with watermark rows."""
    db = mysql_db["db"]
    topic = f"dbz.{db}.t"
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO t SELECT seq, 0 FROM seq_1_to_20000")
    signals = tmp_path / "signals.jsonl"
    signals.write_text("")
    stop = threading.Event()

    def writer() -> None:
        conn = pymysql.connect(**mysql_server, database=db, autocommit=True)
        n = 0
        with conn.cursor() as cur:
            while not stop.is_set():
                n += 1
                cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", ((n * 7919) % 20000 + 1,))
                cur.execute("DELETE FROM t WHERE id = %s", ((n * 104729) % 20000 + 1,))
        conn.close()

    props = {"snapshot.mode": "no_data", "read.only": "true", "signal.enabled.channels": "file",
             "signal.file": str(signals), "incremental.snapshot.chunk.size": "500"}
    with pipeline(mysql_db, tmp_path, **props) as p:
        p.wait_ready()
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            with open(signals, "a") as handle:
                handle.write(json.dumps({"id": "ro-1", "type": "execute-snapshot",
                                         "data": {"data-collections": [f"{db}.t"]}}) + "\n")
            p.wait_for(lambda rs: any(r["value"] and r["value"]["payload"].get("op") == "r" for r in rs
                                      if r["topic"] == topic), timeout=30)
            deadline = time.monotonic() + 120
            while p.source.incremental.active and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not p.source.incremental.active, "the incremental snapshot did not finish"
        finally:
            stop.set()
            thread.join()
        sql(mysql_server, db, "INSERT INTO t VALUES (0, 42)")
        records = p.wait_for(lambda rs: any(r["value"] and (r["value"]["payload"].get("after") or {}).get("v") == 42
                                            for r in rs if r["topic"] == topic), timeout=60)
    reads = [r["value"]["payload"] for r in records if r["topic"] == topic and r["value"]
             and r["value"]["payload"]["op"] == "r"]
    assert len(reads) > 15000 and len({r["after"]["id"] for r in reads}) == len(reads)
    assert apply_in_order(records, topic) == table(mysql_server, db)
    conn = pymysql.connect(**mysql_server, database=db)
    with conn.cursor() as cur:
        cur.execute("SHOW TABLES")
        assert [r[0] for r in cur.fetchall()] == ["t"]  # nothing was created or written for the snapshot
    conn.close()


def test_read_only_window_drops_a_row_changed_after_its_read(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                             tmp_path: Path) -> None:
    """Deterministic: right after each chunk is read (inside its window), the first row of the chunk
    is updated. That row must come only from the stream, with the new value; no stale read."""
    db = mysql_db["db"]
    topic = f"dbz.{db}.t"
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO t SELECT seq, 0 FROM seq_1_to_1000")
    signals = tmp_path / "signals.jsonl"
    signals.write_text("")
    props = {"snapshot.mode": "no_data", "read.only": "true", "signal.enabled.channels": "file",
             "signal.file": str(signals), "incremental.snapshot.chunk.size": "100"}
    changed: list[int] = []
    with pipeline(mysql_db, tmp_path, **props) as p:
        p.wait_ready()
        reader = p.source.incremental.reader
        original = reader.read

        def read_then_change(task: Any, limit: int) -> Any:
            rows = original(task, limit)
            if rows:
                key = rows[0][0][0]
                sql(mysql_server, db, f"UPDATE t SET v = 7 WHERE id = {key}")
                changed.append(key)
            return rows

        reader.read = read_then_change  # type: ignore[method-assign]
        with open(signals, "a") as handle:
            handle.write(json.dumps({"id": "ro-2", "type": "execute-snapshot",
                                     "data": {"data-collections": [f"{db}.t"]}}) + "\n")
        deadline = time.monotonic() + 60
        while (not changed or p.source.incremental.active) and time.monotonic() < deadline:
            time.sleep(0.1)
        sql(mysql_server, db, "INSERT INTO t VALUES (0, 42)")
        records = p.wait_for(lambda rs: any(r["value"] and (r["value"]["payload"].get("after") or {}).get("v") == 42
                                            for r in rs if r["topic"] == topic), timeout=30)
        dropped = p.source.incremental.rows_dropped
    assert changed == list(range(1, 1001, 100))
    reads = {r["value"]["payload"]["after"]["id"] for r in records if r["topic"] == topic
             and r["value"]["payload"]["op"] == "r"}
    assert reads == set(range(1, 1001)) - set(changed)
    updates = [r["value"]["payload"]["after"] for r in records
               if r["topic"] == topic and r["value"]["payload"]["op"] == "u"]
    assert updates == [{"id": key, "v": 7} for key in changed] and dropped == len(changed)


def test_cdc_signal_writes_to_the_mysql_signal_table(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                     tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, SIGNALS, "CREATE TABLE t (id int PRIMARY KEY)")  # cdc signal refuses a table not captured
    properties = tmp_path / "p.properties"
    properties.write_text("\n".join([
        "connector.class=io.debezium.connector.mariadb.MariaDbConnector", "topic.prefix=dbz",
        f"database.hostname={mysql_db['database.hostname']}", f"database.port={mysql_db['database.port']}",
        f"database.user={mysql_db['database.user']}", f"database.password={mysql_db['database.password']}",
        f"signal.data.collection={db}.debezium_signal",
        f"schema.history.internal.file.filename={tmp_path / 'history.jsonl'}"]) + "\n")
    done = subprocess.run([sys.executable, "-m", "cdc.cli", "signal", str(properties), "execute-snapshot",
                           "--table", f"{db}.t", "--condition", "id > 5"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"signal table {db}.debezium_signal" in done.stdout
    conn = pymysql.connect(**mysql_server, database=db)
    with conn.cursor() as cur:
        cur.execute("SELECT type, data FROM debezium_signal")
        (type_, data), = cur.fetchall()
    conn.close()
    assert type_ == "execute-snapshot"
    assert json.loads(data) == {"data-collections": [f"{db}.t"], "type": "incremental",
                                "additional-conditions": [{"data-collection": f"{db}.t", "filter": "id > 5"}]}
