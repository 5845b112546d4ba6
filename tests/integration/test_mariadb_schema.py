"""The DDL model against a real server: every statement runs on MariaDB (or the MySQL given in
CDC_TEST_MYSQL_DSN) too, which proves it valid, and the parsed schema must agree with
``information_schema`` (names, order, nullability, types, lengths, charsets, defaults, keys).
The SHOW CREATE TABLE text of every table (what a snapshot reads) must agree as well. Last, the
reference workload's binlog, read with python-mysql-replication, must convert to exactly what
Debezium emitted for it.
"""
from __future__ import annotations

import json
import re
import uuid
import warnings
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdc.core.schema import Table
from cdc.sources.mysql.ddl import JDBC, MySqlSchema, enum_options
from cdc.sources.mysql.types import TypeModes, value_converter

pymysql = pytest.importorskip("pymysql")

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "fixtures" / "reference" / "debezium"


@pytest.fixture()
def databases(mysql_server: dict[str, Any]) -> Iterator[tuple[Any, str, str]]:
    """A connection and two fresh databases, dropped afterwards."""
    conn = pymysql.connect(**mysql_server, autocommit=True)
    names = [f"cdc_{uuid.uuid4().hex[:8]}", f"cdc_{uuid.uuid4().hex[:8]}"]
    with conn.cursor() as cur:
        for name in names:
            cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        cur.execute(f"USE `{names[0]}`")
    yield conn, names[0], names[1]
    with conn.cursor() as cur:
        for name in names:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    conn.close()


def _is_mariadb(conn: Any) -> bool:
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        return "mariadb" in cur.fetchone()[0].lower()


# ---- what information_schema says, in the model's terms ------------------------------------------

_DATA_TYPES = {
    "INTEGER": "int", "INT4": "int", "INT1": "tinyint", "INT2": "smallint", "INT3": "mediumint",
    "MIDDLEINT": "mediumint", "INT8": "bigint", "BOOL": "tinyint", "BOOLEAN": "tinyint", "DEC": "decimal",
    "FIXED": "decimal", "NUMERIC": "decimal", "REAL": "double", "FLOAT4": "float", "FLOAT8": "double",
    "DOUBLE PRECISION": "double", "CHARACTER": "char", "CHAR VARYING": "varchar", "CHARACTER VARYING": "varchar",
    "NCHAR": "char", "NATIONAL CHAR": "char", "NATIONAL CHARACTER": "char", "NVARCHAR": "varchar",
    "NATIONAL VARCHAR": "varchar", "NCHAR VARCHAR": "varchar", "NCHAR VARYING": "varchar",
    "NATIONAL CHAR VARYING": "varchar", "NATIONAL CHARACTER VARYING": "varchar", "LONG": "mediumtext",
    "LONG VARCHAR": "mediumtext", "LONG VARBINARY": "mediumblob",
}


def _data_type(type_name: str, length: int | None, mariadb: bool) -> str:
    base = type_name.upper()
    for suffix in (" UNSIGNED", " ZEROFILL", " SIGNED", " BINARY"):
        base = base.replace(suffix, "")
    if base == "JSON":
        return "longtext" if mariadb else "json"
    if base in ("FLOAT", "FLOAT4") and length is not None and length > 24:
        return "double"
    return _DATA_TYPES.get(base, base.lower())


def _charset(name: str | None) -> str | None:
    return "utf8mb3" if name == "utf8" else name


def _expected_default(column_default: str | None, extra: str, nullable: bool, mariadb: bool) -> tuple[bool, Any]:
    """(hasDefaultValue, defaultValueExpression) as Debezium records the server's default."""
    if column_default is None:
        return nullable, None  # MySQL writes NULL for "DEFAULT NULL"; MariaDB then has no default at all
    if mariadb and column_default == "NULL":
        return True, None
    lowered = column_default.lower()
    if lowered.startswith(("current_timestamp", "now(")):
        return True, "1970-01-01 00:00:00"
    if mariadb:
        if column_default.startswith("'"):
            return True, column_default[1:-1].replace("''", "'").replace("\\\\", "\\")
        if column_default.startswith("b'"):
            return True, column_default[2:-1]
        if re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?", lowered):
            return True, column_default
        return True, None  # an expression
    if "DEFAULT_GENERATED" in extra:
        return True, None
    return True, column_default


def _same_value(default: tuple[bool, Any]) -> tuple[bool, Any]:
    """Numbers compare as numbers (``1.50``, ``TRUE`` and the server's ``1``)."""
    has_default, value = default
    if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?", value.lower()):
        return has_default, Decimal(value)
    if isinstance(value, str) and value.upper() in ("TRUE", "FALSE"):
        return has_default, Decimal(value.upper() == "TRUE")
    return has_default, value


def _assert_matches_server(conn: Any, table: Table) -> None:
    mariadb = _is_mariadb(conn)
    db, name = table.id.catalog, table.id.table
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME, IS_NULLABLE, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE,"
            " DATETIME_PRECISION, CHARACTER_SET_NAME, COLUMN_TYPE, COLUMN_DEFAULT, EXTRA"
            " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (db, name))
        server_columns = cur.fetchall()
        cur.execute("SELECT INDEX_NAME, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS"
                    " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY INDEX_NAME = 'PRIMARY' DESC, SEQ_IN_INDEX",
                    (db, name))
        indexes = cur.fetchall()
        cur.execute("SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                    (db, name))
        collation = cur.fetchone()[0]
    where = f"{db}.{name}"
    assert [c.name for c in table.columns] == [r[0] for r in server_columns], where
    assert [c.position for c in table.columns] == list(range(1, len(server_columns) + 1)), where
    assert _charset(table.default_charset) == collation.split("_")[0], where
    for column, row in zip(table.columns, server_columns, strict=True):
        (col, nullable, data_type, char_length, precision, scale, dt_precision, charset, column_type,
         column_default, extra) = row
        here = f"{where}.{col}"
        assert column.optional == (nullable == "YES"), here
        assert _data_type(column.type_name, column.length, mariadb) == data_type, here
        assert ("UNSIGNED" in column.type_name or "ZEROFILL" in column.type_name) == ("unsigned" in column_type), here
        assert column.auto_incremented == ("auto_increment" in extra), here
        if column.enum_values is not None:
            assert column_type == f"{data_type}({','.join(column.enum_values)})", here
        elif column.jdbc_type in (JDBC.CHAR, JDBC.VARCHAR, JDBC.NCHAR, JDBC.NVARCHAR, JDBC.BINARY, JDBC.VARBINARY) \
                and column.length is not None:
            assert column.length == char_length, here
        elif column.jdbc_type in (JDBC.DECIMAL, JDBC.NUMERIC):
            assert (column.length, column.scale) == (precision, scale), here
        elif column.jdbc_type in (JDBC.TIME, JDBC.TIMESTAMP, JDBC.TIMESTAMP_WITH_TIMEZONE):
            assert (column.length or 0) == dt_precision, here
        elif column.jdbc_type == JDBC.BIT:
            assert column.length == precision, here
        if column.type_name != "JSON":  # MariaDB's JSON is a utf8mb4 LONGTEXT; Debezium gives it no charset
            assert _charset(column.charset) == charset, here
        expected_default = _expected_default(column_default, extra, nullable == "YES", mariadb)
        assert _same_value((column.has_default, column.default_expression)) == _same_value(expected_default), here
    primary = [r[1] for r in indexes if r[0] == "PRIMARY"]
    if primary:
        assert list(table.primary_key) == primary, where
    else:  # a key-less table's key is a UNIQUE index over NOT NULL columns, or nothing
        not_null = {r[0] for r in server_columns if r[1] == "NO"}
        unique: dict[str, list[str]] = {}
        for index_name, column_name, non_unique in indexes:
            if not non_unique:
                unique.setdefault(index_name, []).append(column_name)
        candidates = [cols for cols in unique.values() if set(cols) <= not_null]
        # (after DROP PRIMARY KEY Debezium keeps no key even where such an index exists)
        assert table.primary_key == () or list(table.primary_key) in candidates, where


def _assert_all_match(conn: Any, schema: MySqlSchema, dbs: tuple[str, ...]) -> None:
    with conn.cursor() as cur:
        cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA IN %s"
                    " AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1, 2", (dbs,))
        server_tables = [f"{d}.{t}" for d, t in cur.fetchall()]
    model_tables = sorted(str(t.id) for t in schema.tables() if t.id.catalog in dbs)
    assert model_tables == server_tables
    for table in schema.tables():
        if table.id.catalog in dbs:
            _assert_matches_server(conn, table)
            # what a snapshot reads must say the same
            with conn.cursor() as cur:
                cur.execute(f"SHOW CREATE TABLE `{table.id.catalog}`.`{table.id.table}`")
                create = cur.fetchone()[1]
            snapshot = MySqlSchema()
            snapshot.apply(create, table.id.catalog)
            snapshot_table = snapshot.table(table.id.catalog or "", table.id.table)
            assert snapshot_table is not None, create
            _assert_matches_server(conn, snapshot_table)


STATEMENTS = [
    "CREATE TABLE `customers` (`id` int NOT NULL AUTO_INCREMENT, `first_name` varchar(255) NOT NULL,"
    " `email` varchar(255) NOT NULL, PRIMARY KEY (`id`), UNIQUE KEY `email` (`email`), KEY `ix_id` (`id`))"
    " ENGINE=InnoDB AUTO_INCREMENT=1041 DEFAULT CHARSET=utf8",
    "CREATE TABLE numbers (c1 tinyint(1), c2 smallint unsigned, c3 mediumint, c4 int(11) unsigned zerofill, c5 bigint,"
    " c6 integer NOT NULL DEFAULT -5, c7 int8, c8 decimal(10,2) DEFAULT 1.50, c9 numeric, c10 float, c11 float(7,3),"
    " c12 double precision, c13 real, c14 bit, c15 bit(12) DEFAULT b'101', c16 bool NOT NULL DEFAULT TRUE,"
    " c17 serial, c18 year) CHARSET latin1",
    "CREATE TABLE strings (s1 char(4) DEFAULT 'it''s', s2 varchar(10) CHARACTER SET latin1 COLLATE latin1_bin,"
    " s3 text, s4 longtext COLLATE utf8mb4_bin, s5 nchar(2), s6 national varchar(4), s7 long varchar,"
    " s8 varbinary(8), s9 binary(4), s10 mediumblob, e enum('sad','o''k') NOT NULL DEFAULT 'sad',"
    " st set('a','b','c') DEFAULT 'a,c', j json, g point) DEFAULT CHARSET=utf8mb4",
    "CREATE TABLE temporal (id int, d1 date NOT NULL DEFAULT '2024-02-29', d2 time(3), d3 datetime(6) DEFAULT now(6),"
    " d4 timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), d5 timestamp NULL,"
    " g varchar(36) DEFAULT (uuid()), UNIQUE KEY u (id))",
    "ALTER TABLE customers ADD COLUMN x int FIRST, ADD y char(2) AFTER id, ADD COLUMN (z1 int, z2 int NOT NULL)",
    "ALTER TABLE customers MODIFY first_name varchar(20) NOT NULL FIRST, CHANGE COLUMN email mail varchar(100)"
    " AFTER x, RENAME COLUMN id TO ident, DROP COLUMN IF EXISTS nope, DROP z1",
    "ALTER TABLE numbers ADD PRIMARY KEY (c6, c17), ALTER COLUMN c5 SET DEFAULT 7, ALTER c6 DROP DEFAULT",
    "ALTER TABLE numbers DROP PRIMARY KEY",
    "ALTER TABLE strings CONVERT TO CHARACTER SET latin1",
    "ALTER TABLE strings DEFAULT CHARSET utf8mb4, ADD COLUMN s11 varchar(3)",
    "CREATE TABLE keyless (a int NOT NULL, b int NOT NULL, c int)",
    "CREATE UNIQUE INDEX ub ON keyless (b, a)",
    "CREATE INDEX ic ON keyless (c)",
    "DROP INDEX ic ON keyless",
    "CREATE TABLE copy LIKE temporal",
    "CREATE TABLE IF NOT EXISTS copy (nope int)",
    "RENAME TABLE copy TO tmp, keyless TO copy, tmp TO keyless",
    "RENAME TABLE copy TO {other}.moved",
    "ALTER TABLE temporal RENAME TO {other}.temporal2, ADD COLUMN extra int",
    "TRUNCATE TABLE numbers",
    "DROP TABLE IF EXISTS keyless, nope",
]


def test_statements_agree_with_information_schema(databases: tuple[Any, str, str]) -> None:
    conn, db, other = databases
    schema = MySqlSchema(server_charset="utf8mb4")
    schema.apply(f"CREATE DATABASE IF NOT EXISTS `{db}` CHARACTER SET utf8mb4", None)
    schema.apply(f"CREATE DATABASE IF NOT EXISTS `{other}` CHARACTER SET utf8mb4", None)
    for statement in STATEMENTS:
        statement = statement.format(other=other)
        with conn.cursor() as cur:
            cur.execute(statement)  # the server accepts it ...
        schema.apply(statement, db)  # ... and the model follows
        _assert_all_match(conn, schema, (db, other))


def test_create_or_replace_on_mariadb(databases: tuple[Any, str, str]) -> None:
    conn, db, other = databases
    if not _is_mariadb(conn):
        pytest.skip("CREATE OR REPLACE TABLE is MariaDB's")
    schema = MySqlSchema(server_charset="utf8mb4")
    for statement in ("CREATE TABLE t (a int)", "CREATE OR REPLACE TABLE t (b varchar(3) PRIMARY KEY)"):
        with conn.cursor() as cur:
            cur.execute(statement)
        schema.apply(statement, db)
    _assert_all_match(conn, schema, (db, other))


def test_reference_binlog_converts_like_debezium(mysql_server: dict[str, Any], databases: tuple[Any, str, str]) -> None:
    """The reference workload on this server, read back from the binlog, gives Debezium's payloads."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    conn, db, _ = databases
    if not _is_mariadb(conn):
        pytest.skip("the reference output is MariaDB's")
    setup, capture = (REFERENCE / "mariadb-types.sql").read_text().split("-- @@CAPTURE")
    create = setup[setup.index("CREATE TABLE"):].strip().rstrip(";")
    with conn.cursor() as cur:
        # this reader (the library's own row decoding) needs the column metadata scripts/mariadb.sh
        # configures; one full run saw it off here, cause not found: say so rather than fail obscurely
        cur.execute("SELECT @@GLOBAL.binlog_row_metadata")
        metadata = cur.fetchone()[0]
        if metadata != "FULL":
            warnings.warn(f"binlog_row_metadata was {metadata} on the tuned server: set back to FULL", stacklevel=1)
            cur.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
        cur.execute("SHOW MASTER STATUS")
        log_file, log_pos = cur.fetchone()[:2]
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(create)
        for statement in capture.strip().split(";\n"):
            if statement.strip():
                cur.execute(statement.strip().rstrip(";"))
        cur.execute("SHOW CREATE TABLE types")
        show_create = cur.fetchone()[1]
    schema = MySqlSchema()
    schema.apply(show_create, db)  # what Debezium's snapshot (no_data) read
    table = schema.table(db, "types")
    converters = {c.name: value_converter(c, TypeModes()) for c in table.columns}

    def payload(values: dict[str, Any] | None, none_sources: dict[str, str]) -> dict[str, Any] | None:
        if values is None:
            return None
        return {k: converters[k]("" if none_sources.get(k) == "empty set" else v) for k, v in values.items()}

    stream = BinLogStreamReader(
        connection_settings={"host": mysql_server["host"], "port": mysql_server["port"],
                             "user": mysql_server["user"], "password": mysql_server["password"]},
        server_id=4242, log_file=log_file, log_pos=log_pos, resume_stream=True, blocking=False,
        only_schemas=[db], only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    got = []
    try:
        for event in stream:
            for row in event.rows:
                if isinstance(event, UpdateRowsEvent):
                    got.append((payload(row["before_values"], row.get("before_none_sources", {})),
                                payload(row["after_values"], row.get("after_none_sources", {}))))
                elif isinstance(event, WriteRowsEvent):
                    got.append((None, payload(row["values"], row.get("none_sources", {}))))
                else:
                    got.append((payload(row["values"], row.get("none_sources", {})), None))
    finally:
        stream.close()
    expected = [json.loads(line)["value"]["payload"] for line in (REFERENCE / "mariadb-types.jsonl").read_text()
                .splitlines() if json.loads(line)["value"] is not None]
    assert got == [(e["before"], e["after"]) for e in expected]
    assert enum_options(table.column("c_set").enum_values) == ["a", "b", "c"]
