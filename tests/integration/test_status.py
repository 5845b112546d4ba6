"""`cdc status` and `cdc slots` against real servers, and what cdc says about a slot PostgreSQL
invalidated under max_slot_wal_keep_size (on a PostgreSQL of this test's own, whose settings it may change)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest

from cdc import cli
from cdc.core.errors import SourceError
from cdc.core.offsets import FileOffsetStore
from cdc.metrics import Monitoring
from tests.conftest import ROOT
from tests.integration.harness import Pipeline


def sql(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def write_config(path: Path, props: dict[str, Any]) -> Path:
    path.write_text("\n".join(f"{k}={v}" for k, v in props.items()) + "\n")
    return path


def pg_config(db: dict[str, str], tmp_path: Path, **extra: Any) -> Path:
    props = {"source": "postgres", "name": "test", "topic.prefix": "dbz", "slot.name": "cdc_test",
             "publication.name": "cdc_test_pub", "offset.storage.file.filename": tmp_path / "o.json",
             **{k: v for k, v in db.items() if k != "dsn"}, **extra}
    return write_config(tmp_path / "pipeline.properties", props)


def cdc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def status_json(capsys: pytest.CaptureFixture[str], config: Path) -> tuple[int, dict[str, Any]]:
    code, out = cdc(capsys, "status", str(config), "--json")
    return code, json.loads(out)


@pytest.mark.postgres
def test_postgres_status_running_stopped_and_slots(pg_db: dict[str, str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    sql(pg_db["dsn"], "CREATE TABLE t (id serial PRIMARY KEY, pad text)")
    config = pg_config(pg_db, tmp_path)
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db["dsn"], "INSERT INTO t (pad) VALUES ('a')")
        p.wait_count(1)
        deadline = time.monotonic() + 30
        # the first offset is the slot_pending marker, stored before the slot is made; then a position
        while "lsn" not in (FileOffsetStore(tmp_path / "o.json", "test").load() or {}) and time.monotonic() < deadline:
            time.sleep(0.05)
        code, report = status_json(capsys, config)
        assert (code, report["status"], report["findings"]) == (0, "ok", [])
        assert report["stored_offset"]["lsn"] and report["state"]["active"] is True
        assert report["lag_bytes"] is not None and report["lag_bytes"] < 1 << 20
        code, out = cdc(capsys, "slots", str(config))
        assert code == 0 and "cdc_test" in out and "yes (pid" in out
        assert cli.main(["slots", str(config), "--drop", "cdc_test"]) == 1  # refused: it is active
        err = capsys.readouterr().err
        assert "replication slot 'cdc_test' is active" in err and "stop the pipeline that reads it first" in err
    # stopped: the slot keeps WAL for nobody
    code, out = cdc(capsys, "status", str(config))
    assert code == 1, out
    assert "status          WARNING" in out and "is inactive" in out and "fix: start the pipeline" in out
    code, report = status_json(capsys, pg_config(pg_db, tmp_path, **{"slot.max.retained.wal.bytes": 1}))
    assert code == 1 and {f["code"] for f in report["findings"]} == {"slot_inactive", "wal_retained"}
    code, out = cdc(capsys, "slots", str(config), "--drop", "cdc_test")
    assert code == 0 and "dropped replication slot cdc_test" in out
    code, report = status_json(capsys, config)
    assert code == 2 and [f["code"] for f in report["findings"]] == ["slot_missing"]


def test_status_of_an_unreachable_server_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "p.properties", {
        "source": "postgres", "topic.prefix": "x", "database.hostname": "127.0.0.1", "database.port": _free_port(),
        "offset.storage.file.filename": tmp_path / "o.json"})
    code, report = status_json(capsys, config)
    assert code == 2 and report["findings"][0]["code"] == "unreachable" and report["findings"][0]["fix"]


# ---- a slot the server invalidates ------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[str]:
    """A PostgreSQL of its own (scripts/postgres.sh on another port and folder): this test lowers
    max_slot_wal_keep_size, which would invalidate the slots of other pipelines on a shared server."""
    folder = tempfile.mkdtemp(prefix="cdc-pg-lossy-")
    os.chmod(folder, 0o755)  # the postgres user runs the server
    env = {**os.environ, "CDC_PG_PORT": str(_free_port()), "CDC_PG_DIR": folder}
    script = str(ROOT / "scripts" / "postgres.sh")
    try:
        subprocess.run(["bash", script, "start"], env=env, check=True, capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"no PostgreSQL: scripts/postgres.sh could not start one ({exc})")
    try:
        yield subprocess.run(["bash", script, "dsn"], env=env, check=True, capture_output=True,
                             text=True).stdout.strip()
    finally:
        subprocess.run(["bash", script, "stop"], env=env, capture_output=True, timeout=120)
        subprocess.run(["rm", "-rf", folder])


def invalidate(dsn: str, slot: str) -> None:
    """Generate WAL while the slot is not read, under a 1 MB max_slot_wal_keep_size, then CHECKPOINT."""
    sql(dsn, "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'", "SELECT pg_reload_conf()")
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for _ in range(30):
                for _ in range(4):
                    conn.execute("INSERT INTO t (pad) SELECT repeat('x', 1000) FROM generate_series(1, 100)")
                    conn.execute("SELECT pg_switch_wal()")
                conn.execute("CHECKPOINT")
                row = conn.execute("SELECT wal_status FROM pg_replication_slots WHERE slot_name = %s",
                                   (slot,)).fetchone()
                if row and row[0] == "lost":
                    return
        raise AssertionError("the server did not invalidate the slot")
    finally:
        sql(dsn, "ALTER SYSTEM RESET max_slot_wal_keep_size", "SELECT pg_reload_conf()")


@pytest.mark.postgres
def test_slot_invalidated_by_max_slot_wal_keep_size(own_postgres: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(own_postgres)
    db = {"database.hostname": str(params["host"]), "database.port": str(params["port"]),
          "database.user": str(params.get("user", "postgres")), "database.dbname": "postgres"}
    sql(own_postgres, "CREATE TABLE t (id serial PRIMARY KEY, pad text)")
    props = {**db, "snapshot.mode": "no_data", "slot.name": "lossy", "errors.max.retries": "0"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(own_postgres, "INSERT INTO t (pad) VALUES ('a')")
        p.wait_count(1)
    invalidate(own_postgres, "lossy")

    config = pg_config(db, tmp_path, **{"slot.name": "lossy"})
    code, report = status_json(capsys, config)
    assert code == 2 and report["state"]["wal_status"] == "lost"
    [finding] = report["findings"]
    assert finding["code"] == "slot_lost" and "max_slot_wal_keep_size" in finding["message"]
    assert "cdc slots CONFIG --drop lossy" in finding["fix"] and "snapshot.mode=when_needed" in finding["fix"]

    # the pipeline started again says so too: through the CLI (its error explained) ...
    run = subprocess.run([sys.executable, "-m", "cdc.cli", "--log-format", "json", "run", str(config),
                          "--set", "errors.max.retries=0"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    lines = [json.loads(line) for line in run.stderr.splitlines() if line.strip()]
    assert lines and all({"time", "level", "logger", "message", "pipeline"} <= set(e) for e in lines), run.stderr
    assert lines[-1]["level"] == "ERROR" and lines[-1]["pipeline"] == "test"
    assert "PostgreSQL invalidated replication slot 'lossy'" in lines[-1]["message"]
    assert "fix: take a new snapshot" in lines[-1]["message"]

    # ... and with monitoring on, whose own connection sees wal_status = 'lost'
    p = Pipeline({**props, "errors.max.retries": "3"}, tmp_path / "o.json")
    p.config.properties["metrics.lag.interval.ms"] = "100"
    monitoring = Monitoring(p.engine, p.config, "postgres", port=0)
    try:
        with p:
            p.thread.join(60)
    finally:
        monitoring.close()
    assert isinstance(p.error, SourceError) and "PostgreSQL invalidated replication slot 'lossy'" in str(p.error)
    assert monitoring.metrics.registry.get_sample_value("cdc_postgres_slot_lost") == 1


# ---- MySQL / MariaDB --------------------------------------------------------------------------------

@pytest.mark.mysql
def test_mysql_status(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    from cdc.sources.mysql.source import MySqlSource

    db = mysql_db["db"]
    props = {**mysql_db, "topic.prefix": "dbz", "snapshot.mode": "no_data",
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")}
    conn = pymysql.connect(**mysql_server, database=db, autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE items (id int PRIMARY KEY)")
    with Pipeline(props, tmp_path / "o.json", source_cls=MySqlSource) as p:
        p.wait_ready()
        cur.execute("INSERT INTO items VALUES (1)")
        p.wait_count(1, topic=f"dbz.{db}.items")
    offsets = FileOffsetStore(tmp_path / "o.json", "test")
    stored = offsets.load()
    assert stored is not None
    base = {"source": "mysql", **{k: v for k, v in props.items() if k not in ("db", "name")}, "name": "test",
            "offset.storage.file.filename": tmp_path / "o.json"}
    config = write_config(tmp_path / "m.properties", base)
    cur.execute("SHOW GLOBAL VARIABLES LIKE 'binlog_expire_logs_seconds'")
    expire_before = int(cur.fetchone()[1])
    code, report = status_json(capsys, config)
    if expire_before == 0:  # this server never purges by age
        assert (code, report["findings"]) == (0, [])
    assert report["stored_offset"]["file"] == stored["file"] and report["lag_bytes"] is not None

    cur.execute("SHOW BINARY LOGS")
    files = [row[0] for row in cur.fetchall()]
    if len(files) == 1:
        cur.execute("FLUSH BINARY LOGS")  # the file being written is never purged: have an older one
        files.append("")
    # the oldest file, last read 30 days minus 20 minutes ago, under a 30 day expiry: purged within the hour
    month = 30 * 86400
    offsets.save({**stored, "file": files[0], "pos": 4, "ts_sec": int(time.time()) - month + 1200})
    cur.execute(f"SET GLOBAL binlog_expire_logs_seconds = {month}")
    try:
        code, report = status_json(capsys, config)
    finally:
        cur.execute(f"SET GLOBAL binlog_expire_logs_seconds = {expire_before}")
    assert code == 1 and [f["code"] for f in report["findings"]] == ["binlog_purge_soon"], report
    assert 0 < report["state"]["purge_in_seconds"] < 1200

    offsets.save({**stored, "file": "mariadb-bin.000000", "pos": 4})  # older than the oldest binlog
    code, out = cdc(capsys, "status", str(config))
    assert code == 2 and "which the server no longer has" in out and "snapshot.mode=when_needed" in out
    conn.close()
