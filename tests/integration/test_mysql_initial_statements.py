"""database.initial.statements on MySQL/MariaDB: run on each new query connection (the snapshot's among
them), not on the binlog reader's; a statement the server refuses is a clear error."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc.core.errors import SourceError
from tests.integration.test_mysql_stream import pipeline, sql

pytestmark = pytest.mark.mysql


def test_session_settings_reach_the_snapshot(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                             tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, v varchar(40), ts timestamp NULL)",
        "INSERT INTO t VALUES (1, 'x', '2024-02-29 12:00:00')")
    props = {"snapshot.mode": "initial",
             # ';;' is a semicolon inside a statement; a time_zone set here does not shift TIMESTAMP values
             "database.initial.statements": "SET @greeting = 'hello;;world'; SET time_zone = '+05:00'",
             "snapshot.select.statement.overrides": f"{db}.t",
             f"snapshot.select.statement.overrides.{db}.t": f"SELECT id, @greeting AS v, ts FROM {db}.t"}
    with pipeline(mysql_db, tmp_path, **props) as p:
        p.wait_ready()
        [read] = p.wait_count(1, topic=f"dbz.{db}.t")
        sql(mysql_server, db, "INSERT INTO t VALUES (2, 'y', '2024-03-01 00:30:00')")
        created = p.wait_count(2, topic=f"dbz.{db}.t")[1]
    assert read["value"]["payload"]["after"] == {"id": 1, "v": "hello;world", "ts": "2024-02-29T12:00:00Z"}
    assert created["value"]["payload"]["after"] == {"id": 2, "v": "y", "ts": "2024-03-01T00:30:00Z"}


def test_the_statements_run_on_query_connections(mysql_db: dict[str, str], tmp_path: Path) -> None:
    from cdc.config import Config
    from cdc.sources.mysql.config import MYSQL_OPTIONS
    from cdc.sources.mysql.connection import ConnectionSettings

    config = Config({**mysql_db, "database.initial.statements": "SET @a = 1;SET @b = 'x;;y';"}).declare(MYSQL_OPTIONS)
    conn: pymysql.connections.Connection = ConnectionSettings.from_config(config).connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @a, @b, @@session.time_zone")
            assert cur.fetchone() == (1, "x;y", "+00:00")
    finally:
        conn.close()


def test_a_statement_the_server_refuses_is_a_clear_error(mysql_db: dict[str, str], tmp_path: Path) -> None:
    p = pipeline(mysql_db, tmp_path, **{"database.initial.statements": "SET @a = 1; SELEC 1"})
    with p:
        p.thread.join(30)
    assert isinstance(p.error, SourceError) and not p.error.retriable
    assert "database.initial.statements: statement 2 ('SELEC 1') failed" in p.error.message
    assert "SQL syntax" in p.error.message and "';;'" in str(p.error)
