"""Streaming from MariaDB 11.4 LTS (CDC_TEST_MARIADB11_DSN, else ``CDC_MARIADB_VERSION=11.4
scripts/mariadb.sh``, which fetches it from Maven Central): savepoints, XA, DDL inside a
transaction, plain DDL, and the query-event status variables 11.4 writes that
python-mysql-replication 1.0.17 does not know (cdc/sources/mysql/binlog_compat.py)."""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pymysql
import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import QueryEvent

import cdc.sources.mysql.binlog  # noqa: F401 - the patched QueryEvent, as the source streams with it
from tests.integration.test_mysql_stream import payloads, pipeline, sql
from tests.servers import start_by_script

pytestmark = pytest.mark.mysql


@pytest.fixture(scope="module")
def mariadb11() -> dict[str, Any]:
    dsn, why = os.environ.get("CDC_TEST_MARIADB11_DSN"), ""
    if not dsn:
        dsn, why = start_by_script("mariadb.sh", {"CDC_MARIADB_VERSION": "11.4", "CDC_MARIADB_DEFAULTS": "0"})
    if not dsn:
        pytest.skip("no MariaDB 11.4: set CDC_TEST_MARIADB11_DSN=mysql://user:pass@host:port/, or let "
                    "CDC_MARIADB_VERSION=11.4 scripts/mariadb.sh fetch it from Maven Central (needs root and "
                    f"Maven); {why}")
    url = urlparse(dsn)
    args: dict[str, Any] = {"host": url.hostname or "127.0.0.1", "port": url.port or 3306,
                            "user": unquote(url.username or "root"), "password": unquote(url.password or "")}
    with pymysql.connect(**args) as conn, conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = str(cur.fetchone()[0])
    if "MariaDB" not in version or int(version.split(".")[0]) < 11:
        pytest.skip(f"CDC_TEST_MARIADB11_DSN is not a MariaDB 11: {version}")
    return args


@pytest.fixture()
def db11(mariadb11: dict[str, Any]) -> Iterator[dict[str, str]]:
    name = f"cdc_{uuid.uuid4().hex[:10]}"
    with pymysql.connect(**mariadb11, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield {
        "database.hostname": str(mariadb11["host"]), "database.port": str(mariadb11["port"]),
        "database.user": str(mariadb11["user"]), "database.password": str(mariadb11["password"]),
        "database.include.list": name, "database.server.id": str(5400 + uuid.uuid4().int % 1000),
        "name": name, "db": name,
    }
    with pymysql.connect(**mariadb11, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


def binlog_end(server: dict[str, Any]) -> tuple[str, int]:
    with pymysql.connect(**server) as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    return str(row[0]), int(row[1])


def query_events(server: dict[str, Any], start: tuple[str, int], db: str) -> list[Any]:
    """The query events of ``db`` from ``start`` to the end of the binlog, read by the library."""
    stream = BinLogStreamReader(connection_settings=server, server_id=5399, log_file=start[0], log_pos=start[1],
                                resume_stream=True, blocking=False, only_events=[QueryEvent])
    try:
        return [e for e in stream if e.schema == db.encode()]
    finally:
        stream.close()


def test_savepoints_xa_and_ddl_stream_to_the_end(mariadb11: dict[str, Any], db11: dict[str, str],
                                                 tmp_path: Path) -> None:
    db = db11["db"]
    sql(mariadb11, db, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20) NOT NULL)")
    start = binlog_end(mariadb11)
    with pipeline(db11, tmp_path, **{"snapshot.mode": "no_data"}) as p:
        p.wait_ready()
        sql(mariadb11, db,
            # a savepoint rolled back inside a committed transaction
            "BEGIN", "INSERT INTO t VALUES (1, 'kept')", "SAVEPOINT s1", "INSERT INTO t VALUES (2, 'undone')",
            "ROLLBACK TO SAVEPOINT s1", "UPDATE t SET v = 'kept, updated' WHERE id = 1", "RELEASE SAVEPOINT s1",
            "COMMIT",
            # XA: prepared then committed, and one phase
            "XA START 'x1'", "INSERT INTO t VALUES (3, 'xa')", "XA END 'x1'", "XA PREPARE 'x1'", "XA COMMIT 'x1'",
            "XA START 'x2'", "INSERT INTO t VALUES (4, 'xa one phase')", "XA END 'x2'", "XA COMMIT 'x2' ONE PHASE",
            # DDL inside a transaction commits it first
            "BEGIN", "INSERT INTO t VALUES (5, 'before the DDL')", "CREATE TABLE t2 (id int PRIMARY KEY)",
            "INSERT INTO t2 VALUES (1)", "COMMIT",
            # plain DDL
            "ALTER TABLE t ADD COLUMN w int", "INSERT INTO t VALUES (6, 'after the ALTER', 1)",
            # 11.4 writes Q_CHARACTER_SET_COLLATIONS (131) for a statement that resolves a character set
            # through @@character_set_collations: the library 1.0.17 alone dies on it
            "SET SESSION character_set_collations = 'utf8mb4=utf8mb4_uca1400_ai_ci'",
            "CREATE TABLE t3 (id int PRIMARY KEY, s varchar(10)) CHARACTER SET utf8mb4",
            "INSERT INTO t3 VALUES (1, 'grüße')",
            "SET SESSION character_set_collations = ''",
            "DELETE FROM t WHERE id = 3",
            "INSERT INTO t VALUES (7, 'the end', NULL)")
        p.wait_for(lambda rs: any(r["topic"] == f"dbz.{db}.t" and r["value"] is not None
                                  and (r["value"]["payload"]["after"] or {}).get("id") == 7 for r in rs), timeout=60)
        records = p.sink.snapshot()
        assert p.error is None

    def topic(table: str) -> list[tuple[Any, ...]]:
        return payloads([r for r in records if r["topic"] == f"dbz.{db}.{table}"])

    assert topic("t") == [
        ("c", {"id": 1}, None, {"id": 1, "v": "kept"}),
        ("u", {"id": 1}, {"id": 1, "v": "kept"}, {"id": 1, "v": "kept, updated"}),
        ("c", {"id": 3}, None, {"id": 3, "v": "xa"}),
        ("c", {"id": 4}, None, {"id": 4, "v": "xa one phase"}),
        ("c", {"id": 5}, None, {"id": 5, "v": "before the DDL"}),
        ("c", {"id": 6}, None, {"id": 6, "v": "after the ALTER", "w": 1}),
        ("d", {"id": 3}, {"id": 3, "v": "xa", "w": None}, None),
        ("tombstone", {"id": 3}, None, None),
        ("c", {"id": 7}, None, {"id": 7, "v": "the end", "w": None}),
    ]
    assert topic("t2") == [("c", {"id": 1}, None, {"id": 1})]
    assert topic("t3") == [("c", {"id": 1}, None, {"id": 1, "s": "grüße"})]
    ddl = [r["value"]["payload"]["ddl"] for r in records
           if r["topic"] == "dbz" and r["value"]["payload"]["source"]["snapshot"] == "false"]
    assert ddl == ["CREATE TABLE t2 (id int PRIMARY KEY)", "ALTER TABLE t ADD COLUMN w int",
                   "CREATE TABLE t3 (id int PRIMARY KEY, s varchar(10)) CHARACTER SET utf8mb4"]
    # the stream above did cross a status variable the library does not know
    created = [e for e in query_events(mariadb11, start, db) if e.query.startswith("CREATE TABLE t3")]
    assert [e.character_set_collations for e in created] == [[(45, 2304)]]  # utf8mb4_uca1400_ai_ci


def test_two_phase_alter(mariadb11: dict[str, Any], db11: dict[str, str], tmp_path: Path) -> None:
    db = db11["db"]
    sql(mariadb11, db, "CREATE TABLE t (id int PRIMARY KEY)")
    with pipeline(db11, tmp_path, **{"snapshot.mode": "no_data"}) as p:
        p.wait_ready()
        sql(mariadb11, db, "SET SESSION binlog_alter_two_phase = ON", "ALTER TABLE t ADD COLUMN w int",
            "INSERT INTO t VALUES (1, 2)")
        got = p.wait_count(1, topic=f"dbz.{db}.t", timeout=30)
    # binlog_alter_two_phase logs START ALTER and COMMIT ALTER with the same text: applied once, at the commit
    assert payloads(got) == [("c", {"id": 1}, None, {"id": 1, "w": 2})]
