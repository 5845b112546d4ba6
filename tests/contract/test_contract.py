"""Every built-in source keeps the contract of cdc.testing.contract: PostgreSQL and MariaDB on their
real servers, SQL Server on change-table rows recorded in its shape."""
from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.core.records import Batch
from cdc.sources.postgres.source import PostgresSource
from cdc.testing.contract import check_source
from tests.conftest import ROOT
from tests.contract.runners import drain
from tests.integration.test_pg_stream import sql as pg_sql

WORKLOAD = [
    ["INSERT INTO contract VALUES (1, 'a')", "INSERT INTO contract VALUES (2, 'b')"],
    ["UPDATE contract SET v = 'a2' WHERE id = 1", "UPDATE contract SET id = 3 WHERE id = 2"],
    ["DELETE FROM contract WHERE id = 1"],
]


SCHEMA_WORKLOAD = [  # cdc.testing.contract's SCHEMA workload, in a table of its own
    ["INSERT INTO contract_ddl VALUES (1, 'a')"],
    ["ALTER TABLE contract_ddl ADD COLUMN w int"],
    ["INSERT INTO contract_ddl VALUES (2, 'b', 20)", "UPDATE contract_ddl SET w = 10 WHERE id = 1"],
]


@pytest.mark.postgres
def test_postgres_keeps_the_contract(pg_db: dict[str, str]) -> None:
    # the SCHEMA workload first, with a publication and a slot of its own
    pg_sql(pg_db, "CREATE TABLE contract_ddl (id int PRIMARY KEY, v text)",
           "CREATE PUBLICATION contract_ddl_pub FOR TABLE contract_ddl",
           "SELECT pg_create_logical_replication_slot('contract_ddl_slot', 'pgoutput')")
    for transaction in SCHEMA_WORKLOAD:
        pg_sql(pg_db, "BEGIN; " + "; ".join(transaction) + "; COMMIT")
    pg_sql(pg_db, "CREATE TABLE contract (id int PRIMARY KEY, v text)",
           "CREATE PUBLICATION contract_pub FOR TABLE contract",
           "SELECT pg_create_logical_replication_slot('contract_slot', 'pgoutput')")
    for transaction in WORKLOAD:
        pg_sql(pg_db, "BEGIN; " + "; ".join(transaction) + "; COMMIT")
    props = {**{k: v for k, v in pg_db.items() if k != "dsn"}, "topic.prefix": "dbz", "slot.name": "contract_slot",
             "publication.name": "contract_pub", "publication.autocreate.mode": "disabled",
             "table.include.list": r"public\.contract", "snapshot.mode": "no_data",
             "slot.takeover": "true"}  # the slots made above, before the workloads

    def run(extra: dict[str, str], offset: dict[str, Any] | None) -> list[Batch]:
        if extra.get("snapshot.mode") == "initial":  # the snapshot takes a slot of its own, at its own point
            extra = {**extra, "slot.name": "contract_snap", "slot.takeover": "false"}
        return drain(PostgresSource, {**props, **extra}, offset)

    def make(extra: dict[str, str]) -> PostgresSource:
        return PostgresSource(Config({**props, **extra}).declare(CORE_OPTIONS))

    def schema(extra: dict[str, str], offset: dict[str, Any] | None) -> list[Batch]:
        return drain(PostgresSource, {**props, "slot.name": "contract_ddl_slot", "publication.name": "contract_ddl_pub",
                                      "table.include.list": r"public\.contract_ddl", **extra}, offset)
    check_source(run, "dbz.public.contract", make=make, schema=schema, schema_topic="dbz.public.contract_ddl")


@pytest.mark.mysql
def test_mariadb_keeps_the_contract(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    import pymysql

    from cdc.sources.mysql.source import MySqlSource

    db = mysql_db["db"]
    history = tmp_path / "history.jsonl"
    # no fixed database.server.id: each of the many short runs draws its own, as Debezium does, so a run
    # never meets the replica connection of the one before it that the server has not yet closed
    props = {k: v for k, v in mysql_db.items() if k not in ("db", "name", "dsn", "database.server.id")}
    props.update({"topic.prefix": "dbz", "snapshot.mode": "no_data", "table.include.list": rf"{db}\.contract",
                  "schema.history.internal.file.filename": str(history)})
    with pymysql.connect(**mysql_server, database=db, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE contract (id int PRIMARY KEY, v varchar(10)) CHARACTER SET utf8mb4")
        cur.execute("CREATE TABLE contract_ddl (id int PRIMARY KEY, v varchar(10)) CHARACTER SET utf8mb4")
    ddl = {**props, "table.include.list": rf"{db}\.contract_ddl"}

    def last_offset(batches: list[Batch]) -> dict[str, Any]:
        return next(b.offset for b in reversed(batches) if b.offset)

    def execute(workload: list[list[str]]) -> None:
        with pymysql.connect(**mysql_server, database=db) as conn, conn.cursor() as cur:
            for transaction in workload:
                for statement in transaction:
                    cur.execute(statement)
                conn.commit()

    # a first run records the schema and says where the log stands before the SCHEMA workload; a second
    # reads it (its ALTER into the history) and says where the log stands before the workload
    schema_start = last_offset(drain(MySqlSource, ddl, None, quiet_s=0.2))
    execute(SCHEMA_WORKLOAD)
    start = last_offset(drain(MySqlSource, ddl, schema_start, quiet_s=0.2))
    recorded = history.read_bytes()
    execute(WORKLOAD)

    def run(extra: dict[str, str], offset: dict[str, Any] | None) -> list[Batch]:
        if extra.get("snapshot.mode") == "initial":  # a snapshot records the schema anew, in a history of its own
            snapshot_history = tmp_path / "snapshot-history.jsonl"
            if offset is None:
                snapshot_history.unlink(missing_ok=True)
            return drain(MySqlSource, {**props, **extra, "schema.history.internal.file.filename":
                                       str(snapshot_history)}, offset)
        history.write_bytes(recorded)  # every run starts from the same history
        return drain(MySqlSource, {**props, **extra}, offset or start)

    def make(extra: dict[str, str]) -> MySqlSource:
        return MySqlSource(Config({**props, **extra}).declare(CORE_OPTIONS))

    def schema(extra: dict[str, str], offset: dict[str, Any] | None) -> list[Batch]:
        history.write_bytes(recorded)
        return drain(MySqlSource, {**ddl, **extra}, offset or schema_start)
    check_source(run, f"dbz.{db}.contract", make=make, schema=schema, schema_topic=f"dbz.{db}.contract_ddl")


def test_sqlserver_keeps_the_contract() -> None:
    from cdc.sources.sqlserver.source import SqlServerSource
    from tests.fixtures.sqlserver.fake import FakeServer
    from tests.fixtures.sqlserver.testdb import (
        Instance,
        RecordedDatabase,
        change_table_columns,
        ct_row,
        sys_column,
    )

    a, b, c = "00000027:00000100:0003", "00000027:00000200:0003", "00000027:00000300:0002"
    when = "2024-01-01 00:00:00.0000000 +00:00"
    table = Instance("dbo", "contract", "dbo_contract", "00000020:00000100:0001", 1001, 901, ["id", "v"], ["id"])
    table.rows = [
        ct_row(a, "00000027:00000100:0001", 2, b"\x03", 1, when, id=1, v="a"),
        ct_row(a, "00000027:00000100:0002", 2, b"\x03", 2, when, id=2, v="b"),
        ct_row(b, "00000027:00000200:0001", 3, b"\x02", 1, when, id=1, v="a"),
        ct_row(b, "00000027:00000200:0001", 4, b"\x02", 1, when, id=1, v="a2"),
        ct_row(b, "00000027:00000200:0002", 1, b"\x03", 2, when, id=2, v="b"),  # the key change: 1/2 at one seqval
        ct_row(b, "00000027:00000200:0002", 2, b"\x03", 2, when, id=3, v="b"),
        ct_row(c, "00000027:00000300:0001", 1, b"\x03", 1, when, id=1, v="a2"),
    ]
    columns = [sys_column("id", 1, "int", 4, 10, 0, False), sys_column("v", 2, "varchar", 10, 0, 0, True)]
    db = RecordedDatabase(max_lsn="00000027:00000400:0001", instances=[table],
                          object_columns={901: columns, 1001: change_table_columns(columns)},
                          min_lsns={"dbo_contract": table.start_lsn},
                          table_rows={"dbo.contract": [{"id": 3, "v": "b"}]})  # as the workload left it
    before = {"databases": {"testDB": {"commit_lsn": "00000027:00000050:0001", "change_lsn": None,
                                       "event_serial_no": None, "snapshot_completed": True}}}
    props = {"topic.prefix": "server1", "database.names": "testDB", "transaction.end.idle.ms": "1"}

    ticks = itertools.count(1_700_000_000_000_000_000, 1_000_000)  # a clock a millisecond on per look

    def build(config: Config) -> SqlServerSource:
        return SqlServerSource(config, connect=FakeServer(db).connect, clock=lambda: next(ticks), sleep=lambda s: None)

    def run(extra: dict[str, str], offset: dict[str, Any] | None) -> list[Batch]:
        initial = extra.get("snapshot.mode") == "initial"  # from no offset: a snapshot at the newest LSN
        return drain(build, {**props, **extra}, offset or (None if initial else before), quiet_s=0)

    def make(extra: dict[str, str]) -> SqlServerSource:
        return build(Config({**props, **extra}).declare(CORE_OPTIONS))
    check_source(run, "server1.testDB.dbo.contract", make=make)


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """tests/fixtures/plugin_dist installed as a separate distribution (its own pyproject), apart from cdc:
    the environment of a process that finds it through its entry point."""
    import os
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("plugin")
    project = folder / "cdc-memory"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "plugin_dist", project)
    target = folder / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(project)], check=True, capture_output=True)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}


def test_a_plugin_from_another_package_runs_the_kit(plugin_env: dict[str, str]) -> None:
    """Its in-memory source is found through the entry point and passes every check of the kit: streaming,
    restarts, the initial snapshot, a schema change and an execute-snapshot signal."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "cdc_memory.check"], env=plugin_env, capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "contract kept" in out.stdout


def test_the_example_plugin_in_cdc_status_and_on_the_status_page(plugin_env: dict[str, str], tmp_path: Path) -> None:
    """A fourth database gets cdc status, its lag on /metrics and the status page's headline lag by
    implementing cdc.core.source's protocols (ReportsStatus, ReportsLag): nothing names it in cdc."""
    import json
    import signal
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    flags = ["--topic-prefix", "mem", "--snapshot-mode", "no_data", "--offsets", str(tmp_path / "offsets.json")]

    def status() -> tuple[int, dict[str, Any]]:
        done = subprocess.run([sys.executable, "-m", "cdc.cli", "status", "memory", *flags, "--json"], env=plugin_env,
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        return done.returncode, json.loads(done.stdout)

    code, report = status()  # nothing stored yet
    assert (code, report["source"], report["position"]) == (1, "memory", "transaction 3"), report
    assert [f["code"] for f in report["findings"]] == ["no_offset"]

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pipeline = subprocess.Popen([sys.executable, "-m", "cdc.cli", "memory", *flags, "--output", str(tmp_path / "out"),
                                 "--metrics-port", str(port), "--metrics-lag-interval-ms", "100"], env=plugin_env,
                                cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        page = metrics = ""
        while time.monotonic() < deadline:
            try:
                metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read().decode()
            except OSError:
                pass
            if "cdc_memory_transactions_behind 0.0" in metrics and '<b class="lag">0 ms</b>' in page:
                break
            time.sleep(0.1)
        assert "cdc_memory_transactions_behind 0.0" in metrics, metrics
        assert '<b class="lag">0 ms</b>' in page, page
        assert "memory source, topic prefix mem" in page and "transactions_behind" in page
        assert 'plugin="memory"' in metrics and "cdc_postgres_" not in metrics and "cdc_mysql_" not in metrics
        deadline = time.monotonic() + 30
        while not (tmp_path / "offsets.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        pipeline.send_signal(signal.SIGINT)
        _, err = pipeline.communicate(timeout=60)
    assert pipeline.returncode == 0, err

    code, report = status()  # the pipeline stored the head of the log: all read
    assert (code, report["findings"], report["lag_seconds"]) == (0, [], 0.0), report
    assert report["details"] == {"transactions": "0 not read"}


def test_the_example_plugin_through_the_cloudevents_converter(plugin_env: dict[str, str], tmp_path: Path) -> None:
    """Debezium's CloudEvents converter takes a plugin's events as the built-in sources' ones: the source says
    what their id and data are made of (cdc.core.source.MakesCloudEvents), nothing in cdc names it."""
    import json
    import subprocess
    import sys

    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "cdc.cli", "memory", "--topic-prefix", "mem", "--snapshot-mode",
                           "initial_only", "--output", str(out), "--offsets", str(tmp_path / "offsets.json"),
                           "--set", "value.converter=io.debezium.converters.CloudEventsConverter"],
                          env=plugin_env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    values = [json.loads(line)["value"] for line in (out / "mem.contract.jsonl").read_text().splitlines()]
    assert [v["data"]["payload"]["after"] for v in values] == [{"id": 3, "v": "b"}]  # the table as the log left it
    event = values[0]
    assert (event["id"], event["source"], event["type"]) == \
        ("name:mem;txId:null", "/debezium/memory/mem", "io.debezium.connector.memory.DataChangeEvent")
    assert event["iodebeziumop"] == "r" and event["data"]["schema"]["name"] == "io.debezium.connector.memory.Data"
