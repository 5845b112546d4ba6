"""Bad input against a real MariaDB: every failure names its cause and fix, and loses nothing."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc.core.errors import CdcError, SchemaHistoryError, SourceError
from cdc.core.records import SinkRecord
from cdc.sources.mysql.source import MySqlSource
from tests.conftest import ROOT
from tests.integration.harness import CollectingSink, Pipeline
from tests.integration.test_mysql_stream import pipeline, sql

pytestmark = pytest.mark.mysql


def run_until_error(db: dict[str, str], tmp_path: Path, **props: str) -> BaseException:
    p = pipeline(db, tmp_path, **props)
    p.thread.start()
    p.thread.join(60)
    assert not p.thread.is_alive(), "the pipeline should have stopped with an error"
    assert p.error is not None
    return p.error


def test_wrong_password(mysql_db: dict[str, str], tmp_path: Path) -> None:
    error = run_until_error({**mysql_db, "database.password": "not-the-password"}, tmp_path)
    assert isinstance(error, SourceError)
    assert "login" in str(error) and "database.password" in str(error)


def test_missing_replication_grants(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    user = f"u{uuid.uuid4().hex[:8]}"
    sql(mysql_server, mysql_db["db"], f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'pw'",
        f"GRANT SELECT ON *.* TO '{user}'@'127.0.0.1'")
    try:
        error = run_until_error({**mysql_db, "database.user": user, "database.password": "pw"}, tmp_path)
    finally:
        sql(mysql_server, mysql_db["db"], f"DROP USER '{user}'@'127.0.0.1'")
    assert "REPLICATION SLAVE" in str(error)
    assert f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'" in str(error)


def test_binlog_not_in_row_format(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    sql(mysql_server, mysql_db["db"], "SET GLOBAL binlog_format = 'STATEMENT'")
    try:
        error = run_until_error(mysql_db, tmp_path)
    finally:
        sql(mysql_server, mysql_db["db"], "SET GLOBAL binlog_format = 'ROW'")
    assert "binlog_format is 'STATEMENT'" in str(error) and "SET GLOBAL binlog_format = 'ROW'" in str(error)


def test_purged_binlog_is_an_error_or_a_new_snapshot(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                     tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    with pipeline(mysql_db, tmp_path) as p:
        p.wait_count(1, topic=f"dbz.{db}.t")
    offset = json.loads((tmp_path / "offsets.json").read_text())
    sql(mysql_server, db, "INSERT INTO t VALUES (2)", "FLUSH BINARY LOGS")
    conn = pymysql.connect(**mysql_server, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        current = cur.fetchone()[0]
        deadline = time.monotonic() + 20
        while True:  # a file still read by a replica connection that is closing is kept: try again
            try:
                cur.execute(f"PURGE BINARY LOGS TO '{current}'")
            except pymysql.MySQLError:
                pass
            cur.execute("SHOW BINARY LOGS")
            if offset["offsets"]["test"]["file"] not in [r[0] for r in cur.fetchall()] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    conn.close()
    error = run_until_error(mysql_db, tmp_path)
    assert isinstance(error, SourceError)
    assert offset["offsets"]["test"]["file"] in str(error) and "purged" in str(error)
    assert "snapshot.mode=when_needed" in str(error)
    assert json.loads((tmp_path / "offsets.json").read_text()) == offset  # nothing moved
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "when_needed"}) as p:
        got = p.wait_count(2, topic=f"dbz.{db}.t")
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]) for r in got] == \
        [("r", {"id": 1}), ("r", {"id": 2})]


def test_unparseable_ddl_stops_or_is_skipped(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                             tmp_path: Path) -> None:
    """MariaDB's Oracle mode accepts types our parser does not know: the statement is quoted in the
    error and the offset stays before it; with skip.unparseable.ddl it is skipped with a warning."""
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data"}) as p:
        p.wait_ready()
        sql(mysql_server, db, "INSERT INTO t VALUES (1)")
        p.wait_count(1, topic=f"dbz.{db}.t")
        sql(mysql_server, db, "SET SESSION sql_mode = 'ORACLE'", "CREATE TABLE o (id int PRIMARY KEY, b VARCHAR2(10))",
            "SET SESSION sql_mode = DEFAULT")
        p.thread.join(30)
    assert isinstance(p.error, CdcError)
    assert "VARCHAR2(10)" in str(p.error) and "schema.history.internal.skip.unparseable.ddl=true" in str(p.error)
    sql(mysql_server, db, "INSERT INTO t VALUES (2)")
    with pipeline(mysql_db, tmp_path, **{"schema.history.internal.skip.unparseable.ddl": "true",
                                         "table.include.list": f"{db}.t"}) as p:
        got = p.wait_count(1, topic=f"dbz.{db}.t")
    assert [r["value"]["payload"]["after"] for r in got] == [{"id": 2}]


def test_missing_or_corrupt_history_with_offsets_refuses_to_start(mysql_server: dict[str, Any],
                                                                  mysql_db: dict[str, str], tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data"}) as p:
        p.wait_ready()
        time.sleep(0.3)
    history = tmp_path / "history.jsonl"
    lines = history.read_text().splitlines()
    history.write_text(lines[0] + "\n{not json\n" + "\n".join(lines[1:]) + "\n")
    error = run_until_error(mysql_db, tmp_path)
    assert isinstance(error, SchemaHistoryError) and str(history) in str(error) and "line 2" in str(error)
    history.unlink()
    error = run_until_error(mysql_db, tmp_path)
    assert isinstance(error, SchemaHistoryError)
    assert str(history) in str(error) and "snapshot.mode=recovery" in str(error)
    # recovery rebuilds the history from the tables as they are, and streams on from the offset
    sql(mysql_server, db, "INSERT INTO t VALUES (7)")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "recovery"}) as p:
        got = p.wait_count(1, topic=f"dbz.{db}.t")
    assert got[0]["value"]["payload"]["after"] == {"id": 7}
    assert history.exists()


def _cdc(db: dict[str, str], out: Path) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "cdc.cli", "mysql", "--topic-prefix", "dbz", "--output", str(out),
            "--database-hostname", db["database.hostname"], "--database-port", db["database.port"],
            "--database-user", db["database.user"], "--database-include-list", db["db"],
            "--database-server-id", db["database.server.id"], "--set", "offset.flush.interval.ms=100",
            "--set", "max.batch.size=50"]
    env = {**os.environ, "CDC_PASSWORD": db["database.password"]}
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _ids(out: Path, topic: str) -> list[int]:
    ids = []
    path = out / f"{topic}.jsonl"
    if not path.exists():
        return ids
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number >= len(lines) - 1:
                continue  # the last line, being written (or cut by the kill)
            raise
        value = record.get("value")
        if value is not None and value["payload"]["op"] in ("c", "r"):
            ids.append(value["payload"]["after"]["id"])
    return ids


def test_kill_9_mid_stream_then_restart_loses_nothing(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                      tmp_path: Path) -> None:
    db = mysql_db["db"]
    topic = f"dbz.{db}.t"
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, pad varchar(100))")
    out = tmp_path / "out"
    process = _cdc(mysql_db, out)
    conn = pymysql.connect(**mysql_server, database=db, autocommit=False)
    written = 0
    try:
        deadline = time.monotonic() + 30
        while not (out / "offsets.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        with conn.cursor() as cur:
            for batch in range(40):  # 40 transactions of 100 rows, the process killed halfway
                cur.executemany("INSERT INTO t VALUES (%s, REPEAT('x', 100))",
                                [(written + i,) for i in range(1, 101)])
                conn.commit()
                written += 100
                if batch == 20:
                    while len(_ids(out, topic)) < 500 and time.monotonic() < deadline:
                        time.sleep(0.05)
                    process.send_signal(signal.SIGKILL)
                    process.wait(10)
        process = _cdc(mysql_db, out)
        deadline = time.monotonic() + 60
        while len(set(_ids(out, topic))) < written and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        conn.close()
    ids = _ids(out, topic)
    assert set(ids) == set(range(1, written + 1))
    # duplicates only from the unacknowledged tail, and the order kept: ids only go up, except
    # where the second run starts again somewhat before the kill
    restarts = [i for i in range(1, len(ids)) if ids[i] <= ids[i - 1]]
    assert len(restarts) <= 1


def test_server_restart_mid_stream_reconnects_and_resumes(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                          tmp_path: Path) -> None:
    if os.environ.get("CDC_TEST_MYSQL_DSN"):
        pytest.skip("restarts only the local server of scripts/mariadb.sh")
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)")
    script = ROOT / "scripts" / "mariadb.sh"
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data", "errors.max.retries": "20",
                                         "retriable.restart.connector.wait.ms": "250"}) as p:
        p.wait_ready()
        sql(mysql_server, db, "INSERT INTO t VALUES (1)")
        p.wait_count(1, topic=f"dbz.{db}.t")
        subprocess.run(["bash", str(script), "stop"], check=True, capture_output=True, timeout=120)
        subprocess.run(["bash", str(script), "start"], check=True, capture_output=True, timeout=300)
        sql(mysql_server, db, "INSERT INTO t VALUES (2)")
        got = p.wait_count(2, topic=f"dbz.{db}.t", timeout=90)
    assert [r["value"]["payload"]["after"]["id"] for r in got] == [1, 2]


def test_two_readers_with_one_server_id(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    """The server keeps one binlog reader per server id: the one pushed off says why and what to do; by
    default each start draws its own id (5400-6400, as Debezium), so two pipelines run side by side."""
    sql(mysql_server, mysql_db["db"], "CREATE TABLE t (id int PRIMARY KEY)")
    fixed = {**mysql_db, "database.server.id": "5999", "snapshot.mode": "no_data"}
    first = pipeline(fixed, tmp_path / "a")
    with first:
        first.wait_ready()
        with pipeline(fixed, tmp_path / "b") as second:
            second.wait_ready()
            sql(mysql_server, mysql_db["db"], "INSERT INTO t VALUES (1)")
            second.wait_count(1, topic=f"dbz.{mysql_db['db']}.t")
            first.thread.join(60)
    assert isinstance(first.error, SourceError), first.error
    assert "another one registered with the same server id" in str(first.error)
    assert "database.server.id" in (first.error.fix or "")
    unset = {k: v for k, v in mysql_db.items() if k != "database.server.id"}
    with pipeline({**unset, "snapshot.mode": "no_data"}, tmp_path / "c") as one, \
            pipeline({**unset, "snapshot.mode": "no_data"}, tmp_path / "d") as two:
        one.wait_ready()
        two.wait_ready()
        assert 5400 <= one.source.client_server_id <= 6400 and 5400 <= two.source.client_server_id <= 6400
        if one.source.client_server_id != two.source.client_server_id:  # 1 chance in 1001 to draw the same
            sql(mysql_server, mysql_db["db"], "INSERT INTO t VALUES (2)")
            topic = f"dbz.{mysql_db['db']}.t"
            assert one.wait_count(1, topic=topic) and two.wait_count(1, topic=topic)


def test_passwords_in_ddl_never_reach_history_events_or_logs(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                             tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = mysql_db["db"]
    user = f"u{uuid.uuid4().hex[:8]}"
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)")
    try:
        with caplog.at_level("DEBUG"), pipeline({**mysql_db, "snapshot.mode": "no_data", "include.query": "true"},
                                                tmp_path) as p:
            p.wait_ready()
            sql(mysql_server, db, f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'LeakMe_123'",
                f"ALTER USER '{user}'@'127.0.0.1' IDENTIFIED BY 'LeakMe_456'",
                f"SET PASSWORD FOR '{user}'@'127.0.0.1' = PASSWORD('LeakMe_789')",
                "INSERT INTO t VALUES (1)")
            got = p.wait_count(1, topic=f"dbz.{db}.t")
            everything = json.dumps(p.sink.snapshot())
    finally:
        sql(mysql_server, db, f"DROP USER IF EXISTS '{user}'@'127.0.0.1'")
    assert got and "LeakMe" not in everything and "LeakMe" not in caplog.text
    history = (tmp_path / "history.jsonl").read_text()
    assert "LeakMe" not in history and f"'{user}'@'127.0.0.1' IDENTIFIED BY '***'" in history


class _HoldsTheFirstRows(CollectingSink):
    """Once the first rows of a table have reached it, waits until ``released`` is set: the snapshot's
    SELECT stays open on the server (it cannot send more) so it can be killed mid-table, after the first
    attempt has delivered rows, however fast the machine."""

    def __init__(self, topic: str, released: threading.Event) -> None:
        super().__init__()
        self.topic, self.released = topic, released

    def write(self, records: Sequence[SinkRecord]) -> None:
        super().write(records)
        if not self.released.is_set() and any(r["topic"] == self.topic for r in self.snapshot()):
            self.released.wait(60)


def test_connection_killed_mid_snapshot_restarts_it(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                    tmp_path: Path) -> None:
    """KILL of the snapshot's connection after the first rows were delivered: no traceback, the source
    restarts from the stored offset under the retry policy and takes the snapshot again, starting the table
    with a truncate; every row arrives."""
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE big (id int PRIMARY KEY, v varchar(100))",
        "SET SESSION max_recursive_iterations = 100000",
        "INSERT INTO big WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 60000) "
        "SELECT n, REPEAT('x', 90) FROM s")
    killed = threading.Event()
    topic = f"dbz.{db}.big"

    def kill_the_snapshot() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed.is_set():
            with pymysql.connect(**mysql_server) as conn, conn.cursor() as cur:
                cur.execute("SELECT id FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT * FROM %%big%%'")
                row = cur.fetchone()
                if row:
                    cur.execute(f"KILL {row[0]}")
                    killed.set()
                    return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_snapshot, daemon=True)
    killer.start()
    props = {**mysql_db, "topic.prefix": "dbz", "schema.history.internal.file.filename": str(tmp_path / "h.jsonl"),
             "snapshot.fetch.size": "500", "retriable.restart.connector.wait.ms": "100"}
    with Pipeline(props, tmp_path / "offsets.json", sink=_HoldsTheFirstRows(topic, killed),
                  source_cls=MySqlSource) as p:
        def rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [r for r in records if r["topic"] == topic and r["value"] and r["value"]["payload"]["op"] == "r"]
        got = p.wait_for(lambda records: len(rows(records)) >= 60000 and
                         rows(records)[-1]["value"]["payload"]["source"]["snapshot"] == "last", timeout=120)
    killer.join(5)
    assert killed.is_set() and p.error is None
    events = [r for r in got if r["topic"] == topic and r["value"]]
    ops = [r["value"]["payload"]["op"] for r in events]
    restart = ops.index("t")  # the second attempt starts the table with a truncate: drop the first one's rows
    assert ops.count("t") == 1 and 0 < restart < 60000
    assert sorted(r["key"]["payload"]["id"] for r in rows(events[restart:])) == list(range(1, 60001))


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _other_server() -> dict[str, Any]:
    """The second MariaDB of the suite (scripts/mariadb.sh with CDC_MARIADB_DEFAULTS=1): another server."""
    from urllib.parse import urlparse

    from tests.conformance.workloads import mariadb_dsn

    url = urlparse(mariadb_dsn())
    return {"host": url.hostname, "port": url.port, "user": url.username or "root", "password": url.password or ""}


def test_history_and_offsets_of_another_server_are_refused(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                           tmp_path: Path) -> None:
    other = _other_server()
    db = mysql_db["db"]
    with pymysql.connect(**other, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{db}`")
        cur.execute(f"CREATE TABLE `{db}`.m1 (id int PRIMARY KEY, v int, w varchar(10))")
    sql(mysql_server, db, "CREATE TABLE m1 (id int PRIMARY KEY, v varchar(10), w varchar(10))")
    try:
        on_b = {**mysql_db, "database.hostname": str(other["host"]), "database.port": str(other["port"])}
        for props, where in ((mysql_db, tmp_path / "a"), (on_b, tmp_path / "b")):
            with pipeline(props, where) as p:
                p.wait_count(1, topic="dbz")  # its snapshot's schema, recorded
                # and a binlog position stored: before it, the offset is the snapshot's attempt marker, which
                # names no server (another server takes it as an interrupted snapshot, and takes its own)
                deadline = time.monotonic() + 30
                while '"pos"' not in _text(where / "offsets.json") and time.monotonic() < deadline:
                    time.sleep(0.05)
        # b's offsets with a's history (same topic.prefix, same server_id 1): refused, not decoded into garbage
        shutil.copy(tmp_path / "b" / "history.jsonl", tmp_path / "b" / "history.bak")
        shutil.copy(tmp_path / "a" / "history.jsonl", tmp_path / "b" / "history.jsonl")
        error = run_until_error(on_b, tmp_path / "b")
        assert isinstance(error, SchemaHistoryError) and "was written on another server" in str(error)
        # a history written before servers were named, whose m1 has a's columns at b's positions: the
        # TABLE_MAP's types tell the tables apart
        theirs = [json.loads(line) for line in (tmp_path / "a" / "history.jsonl").read_text().splitlines()]
        m1_of_a = next(r for r in theirs if "CREATE TABLE `m1`" in r.get("ddl", ""))
        records = [json.loads(line) for line in (tmp_path / "b" / "history.bak").read_text().splitlines()]
        for record in records:
            record["source"].pop("server_identity")
            if "CREATE TABLE `m1`" in record.get("ddl", ""):
                record["ddl"], record["tableChanges"] = m1_of_a["ddl"], m1_of_a["tableChanges"]
        (tmp_path / "b" / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        with pymysql.connect(**other, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{db}`.m1 VALUES (3, 30771, 'zz3')")
        error = run_until_error(on_b, tmp_path / "b")
        assert isinstance(error, SourceError) and "they are not the same table" in str(error)
        assert "(LONG, LONG, VARCHAR)" in str(error) and "(id INT, v VARCHAR, w VARCHAR)" in str(error)
        # a's offsets given to b: refused as well
        shutil.copy(tmp_path / "a" / "offsets.json", tmp_path / "b" / "offsets.json")
        error = run_until_error(on_b, tmp_path / "b")
        assert "stored offset was written on another server" in str(error) and "snapshot" in (error.fix or "")
    finally:
        with pymysql.connect(**other, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{db}`")


def test_a_torn_history_record_the_offset_has_passed_is_an_error(mysql_server: dict[str, Any],
                                                                 mysql_db: dict[str, str], tmp_path: Path) -> None:
    """The DDL of the cut-off record was acknowledged: leaving it out would decode rows with the old columns."""
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE r1 (id int PRIMARY KEY, a int)")
    with pipeline({**mysql_db, "snapshot.mode": "no_data"}, tmp_path) as p:
        p.wait_ready()
        sql(mysql_server, db, "ALTER TABLE r1 RENAME COLUMN a TO b", "INSERT INTO r1 VALUES (1, 1)")
        p.wait_count(1, topic=f"dbz.{db}.r1")
    history = tmp_path / "history.jsonl"
    lines = history.read_bytes().splitlines(keepends=True)
    assert b"RENAME COLUMN" in lines[-1]
    before_alter = json.loads(lines[-2])["position"]  # the record before: a position between two events
    history.write_bytes(b"".join(lines[:-1]) + lines[-1][:len(lines[-1]) // 2])
    error = run_until_error(mysql_db, tmp_path)
    assert isinstance(error, SchemaHistoryError) and "is cut off, at mariadb-bin" in str(error)
    assert "not after the stored offset" in str(error) and "snapshot.mode=recovery" in (error.fix or "")
    # a cut-off record after the stored offset is left out, and its DDL read from the binlog again
    offsets = json.loads((tmp_path / "offsets.json").read_text())
    # stored before the ALTER (its GTIDs too: a resume by GTID orders the history by them)
    offsets["offsets"]["test"].update(file=before_alter["file"], pos=before_alter["pos"], gtids=before_alter["gtids"])
    (tmp_path / "offsets.json").write_text(json.dumps(offsets))
    with pipeline({**mysql_db, "snapshot.mode": "no_data"}, tmp_path) as p:
        p.wait_ready()
        sql(mysql_server, db, "INSERT INTO r1 VALUES (2, 2)")
        got = p.wait_for(lambda records: any(r["value"] and r["value"]["payload"].get("after", {}) and
                                             r["value"]["payload"]["after"].get("id") == 2 for r in records))
    assert all("a" not in (r["value"]["payload"].get("after") or {}) for r in got
               if r["topic"] == f"dbz.{db}.r1" and r["value"])
