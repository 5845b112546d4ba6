"""Every built-in source keeps the contract of cdc.testing.contract: PostgreSQL and MariaDB on their
real servers, SQL Server on change-table rows recorded in its shape."""
from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest

from cdc.config import Config
from cdc.core.records import Batch
from cdc.sources.postgres.source import PostgresSource
from cdc.testing.contract import check_source
from tests.contract.runners import drain
from tests.integration.test_pg_stream import sql as pg_sql

WORKLOAD = [
    ["INSERT INTO contract VALUES (1, 'a')", "INSERT INTO contract VALUES (2, 'b')"],
    ["UPDATE contract SET v = 'a2' WHERE id = 1", "UPDATE contract SET id = 3 WHERE id = 2"],
    ["DELETE FROM contract WHERE id = 1"],
]


@pytest.mark.postgres
def test_postgres_keeps_the_contract(pg_db: dict[str, str]) -> None:
    pg_sql(pg_db, "CREATE TABLE contract (id int PRIMARY KEY, v text)",
           "CREATE PUBLICATION contract_pub FOR TABLE contract",
           "SELECT pg_create_logical_replication_slot('contract_slot', 'pgoutput')")
    for transaction in WORKLOAD:
        pg_sql(pg_db, "BEGIN; " + "; ".join(transaction) + "; COMMIT")
    props = {**{k: v for k, v in pg_db.items() if k != "dsn"}, "topic.prefix": "dbz", "slot.name": "contract_slot",
             "publication.name": "contract_pub", "publication.autocreate.mode": "disabled",
             "snapshot.mode": "no_data", "slot.takeover": "true"}  # the slot made above, before the workload

    def run(extra: dict[str, str], offset: dict[str, Any] | None) -> list[Batch]:
        return drain(PostgresSource, {**props, **extra}, offset)
    check_source(run, "dbz.public.contract")


@pytest.mark.mysql
def test_mariadb_keeps_the_contract(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    import pymysql

    from cdc.sources.mysql.source import MySqlSource

    db = mysql_db["db"]
    props = {k: v for k, v in mysql_db.items() if k not in ("db", "name", "dsn")}
    props.update({"topic.prefix": "dbz", "snapshot.mode": "no_data",
                  "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")})
    with pymysql.connect(**mysql_server, database=db, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE contract (id int PRIMARY KEY, v varchar(10)) CHARACTER SET utf8mb4")
    # a first run records the schema and says where the log stands before the workload
    start = next(b.offset for b in reversed(drain(MySqlSource, props, None, quiet_s=0.2)) if b.offset)
    history = (tmp_path / "history.jsonl").read_bytes()
    with pymysql.connect(**mysql_server, database=db) as conn, conn.cursor() as cur:
        for transaction in WORKLOAD:
            for statement in transaction:
                cur.execute(statement)
            conn.commit()

    def run(extra: dict[str, str], offset: dict[str, Any] | None) -> list[Batch]:
        (tmp_path / "history.jsonl").write_bytes(history)  # every run starts from the same history
        return drain(MySqlSource, {**props, **extra}, offset or start)
    check_source(run, f"dbz.{db}.contract")


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
                          min_lsns={"dbo_contract": table.start_lsn}, table_rows={"dbo.contract": []})
    before = {"databases": {"testDB": {"commit_lsn": "00000027:00000050:0001", "change_lsn": None,
                                       "event_serial_no": None, "snapshot_completed": True}}}
    props = {"topic.prefix": "server1", "database.names": "testDB", "transaction.end.idle.ms": "1"}

    def run(extra: dict[str, str], offset: dict[str, Any] | None) -> list[Batch]:
        ticks = itertools.count(1_700_000_000_000_000_000, 1_000_000)  # a clock a millisecond on per look

        def make(config: Config) -> SqlServerSource:
            return SqlServerSource(config, connect=FakeServer(db).connect, clock=lambda: next(ticks),
                                   sleep=lambda s: None)
        return drain(make, {**props, **extra}, offset or before, quiet_s=0)
    check_source(run, "server1.testDB.dbo.contract")


def test_a_plugin_from_another_package_runs_the_kit(tmp_path: Path) -> None:
    """tests/fixtures/plugin_dist is a separate distribution (its own pyproject): installed apart from
    cdc, its in-memory source is found through the entry point and passes the same checks."""
    import os
    import subprocess
    import sys

    project = tmp_path / "cdc-memory"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "plugin_dist", project)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(project)], check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "cdc_memory.check"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "contract kept" in out.stdout
