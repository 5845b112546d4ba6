"""MySQL/MariaDB DDL -> Debezium tableChanges (no server).

The first cases are the schema history records of shared/reference/001_*: the same DDL must
give the same JSON, with the change Debezium 3 made to the shape since those records were
written (a column without a default expression has no ``defaultValueExpression`` key). The rest are
table-driven: statements in, a projection of the resulting changes out.
"""
from __future__ import annotations

import logging
from typing import Any

import pytest

from cdc.core.errors import SchemaHistoryError
from cdc.sources.mysql import ddl_types
from cdc.sources.mysql.ddl import (
    MySqlSchema,
    UnparseableDdlError,
    enum_options,
    history_record,
    ignored_by_debezium,
)


def _col(name: str, jdbc: int, type_name: str, position: int, *, charset: str | None = None,
         length: int | None = None, optional: bool = True, auto: bool = False, has_default: bool = True,
         default: str | None = None) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "jdbcType": jdbc, "typeName": type_name, "typeExpression": type_name,
                              "charsetName": charset}
    if length is not None:
        column["length"] = length
    column.update({"position": position, "optional": optional, "autoIncremented": auto, "generated": auto,
                   "comment": None, "hasDefaultValue": has_default})
    if default is not None:
        column["defaultValueExpression"] = default
    column["enumValues"] = []
    return column


REFERENCE_CUSTOMERS_DDL = (
    "CREATE TABLE `customers` (\n `id` int NOT NULL AUTO_INCREMENT,\n `first_name` varchar(255) NOT NULL,\n"
    " `last_name` varchar(255) NOT NULL,\n `email` varchar(255) NOT NULL,\n PRIMARY KEY (`id`),\n"
    " UNIQUE KEY `email` (`email`),\n KEY `ix_id` (`id`)\n) ENGINE=InnoDB AUTO_INCREMENT=1041 DEFAULT CHARSET=utf8"
)


def test_reference_create_table() -> None:
    schema = MySqlSchema()
    assert schema.apply("CREATE DATABASE `dip_test` CHARSET utf8mb4 COLLATE utf8mb4_0900_ai_ci", "dip_test") == []
    changes = schema.apply(REFERENCE_CUSTOMERS_DDL, "dip_test")
    assert changes == [{
        "type": "CREATE", "id": '"dip_test"."customers"',
        "table": {
            "defaultCharsetName": "utf8", "primaryKeyColumnNames": ["id"],
            "columns": [
                _col("id", 4, "INT", 1, optional=False, auto=True, has_default=False),
                _col("first_name", 12, "VARCHAR", 2, charset="utf8", length=255, optional=False, has_default=False),
                _col("last_name", 12, "VARCHAR", 3, charset="utf8", length=255, optional=False, has_default=False),
                _col("email", 12, "VARCHAR", 4, charset="utf8", length=255, optional=False, has_default=False),
            ],
        },
        "comment": None,
    }]
    # column JSON keys in Debezium's order
    assert list(changes[0]["table"]["columns"][1]) == [
        "name", "jdbcType", "typeName", "typeExpression", "charsetName", "length", "position", "optional",
        "autoIncremented", "generated", "comment", "hasDefaultValue", "enumValues"]


def test_reference_alter_add_column_with_current_timestamp() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE `user` (`name` char(20) DEFAULT '', `age` int DEFAULT NULL) DEFAULT CHARSET=utf8",
                 "test")
    changes = schema.apply("ALTER TABLE `user` ADD COLUMN `createtime` datetime NULL DEFAULT CURRENT_TIMESTAMP", "test")
    assert changes == [{
        "type": "ALTER", "id": '"test"."user"',
        "table": {
            "defaultCharsetName": "utf8", "primaryKeyColumnNames": [],
            "columns": [
                _col("name", 1, "CHAR", 1, charset="utf8", length=20, default=""),
                _col("age", 4, "INT", 2),
                _col("createtime", 93, "DATETIME", 3, default="1970-01-01 00:00:00"),
            ],
        },
        "comment": None,
    }]


def test_reference_drop_and_rename() -> None:
    schema = MySqlSchema()
    # DROP of a table the schema does not have: no change (the reference's snapshot record)
    assert schema.apply("DROP TABLE IF EXISTS `dip_test`.`customers`", "dip_test") == []
    schema.apply("CREATE TABLE test (id bigint(20) NOT NULL AUTO_INCREMENT PRIMARY KEY, name varchar(20))"
                 " DEFAULT CHARSET=utf8", "testDB")
    [change] = schema.apply("rename table test to t_test", "testDB")
    assert (change["type"], change["id"], change["previousId"]) == ("ALTER", '"testDB"."t_test"', '"testDB"."test"')
    assert change["table"]["columns"][0] == {
        "name": "id", "jdbcType": -5, "typeName": "BIGINT", "typeExpression": "BIGINT", "charsetName": None,
        "length": 20, "position": 1, "optional": False, "autoIncremented": True, "generated": True,
        "comment": None, "hasDefaultValue": False, "enumValues": []}
    assert schema.apply("DROP TABLE t_test", "testDB") == [{"type": "DROP", "id": '"testDB"."t_test"'}]
    assert schema.tables() == []


# ---- table-driven: statements -> (change types and ids, columns of the last change) -------------

def _columns(change: dict[str, Any]) -> list[tuple]:
    """name, typeName, jdbcType, length, scale, position, optional, hasDefault, default, charset, enums"""
    return [(c["name"], c["typeName"], c["jdbcType"], c.get("length"), c.get("scale"), c["position"], c["optional"],
             c["hasDefaultValue"], c.get("defaultValueExpression"), c["charsetName"], c["enumValues"])
            for c in change["table"]["columns"]]


BASE = "CREATE TABLE t (id int PRIMARY KEY, a varchar(10), b int NOT NULL DEFAULT 0) CHARSET latin1"

CASES: list[tuple[str, list[str], list[tuple], list[str]]] = [
    # (name, statements (all but the last are set-up), expected columns of the last change, its key)
    ("types and their Debezium names", [
        "CREATE TABLE t (c1 tinyint(1), c2 smallint unsigned, c3 mediumint, c4 int(11) unsigned zerofill,"
        " c5 bigint, c6 integer, c7 int8, c8 decimal(10,2), c9 numeric, c10 float, c11 float(7,3),"
        " c12 double precision,"
        " c13 real, c14 bit, c15 bit(12), c16 bool, c17 serial) CHARSET utf8mb4"],
     [("c1", "TINYINT", 5, 1, None, 1, True, True, None, None, []),
      ("c2", "SMALLINT UNSIGNED", 5, None, None, 2, True, True, None, None, []),
      ("c3", "MEDIUMINT", 4, None, None, 3, True, True, None, None, []),
      ("c4", "INT UNSIGNED ZEROFILL", 4, 11, None, 4, True, True, None, None, []),
      ("c5", "BIGINT", -5, None, None, 5, True, True, None, None, []),
      ("c6", "INTEGER", 4, None, None, 6, True, True, None, None, []),
      ("c7", "INT8", -5, None, None, 7, True, True, None, None, []),
      ("c8", "DECIMAL", 3, 10, 2, 8, True, True, None, None, []),
      ("c9", "NUMERIC", 2, 10, 0, 9, True, True, None, None, []),
      ("c10", "FLOAT", 6, None, None, 10, True, True, None, None, []),
      ("c11", "FLOAT", 6, 7, 3, 11, True, True, None, None, []),
      ("c12", "DOUBLE PRECISION", 8, None, None, 12, True, True, None, None, []),
      ("c13", "REAL", 7, None, None, 13, True, True, None, None, []),
      ("c14", "BIT", -7, 1, None, 14, True, True, None, None, []),
      ("c15", "BIT", -7, 12, None, 15, True, True, None, None, []),
      ("c16", "BOOL", 16, None, None, 16, True, True, None, None, []),
      ("c17", "BIGINT UNSIGNED", -5, None, None, 17, False, False, None, None, [])],
     ["c17"]),
    ("strings, temporal types, enum and set", [
        "CREATE TABLE t (s1 char(3), s2 varchar(10) CHARACTER SET latin1 COLLATE latin1_bin, s3 text, s4 longtext"
        " COLLATE utf8mb4_bin, s5 nchar(2), s6 national varchar(4), s7 long varchar, s8 varbinary(8), s9 binary(4),"
        " s10 mediumblob, d1 date, d2 time(3), d3 datetime(6), d4 timestamp NULL, d5 year,"
        " e enum('sad','o''k') NOT NULL, st set('a','b','c'), j json, g point) DEFAULT CHARSET=utf8mb4"],
     [("s1", "CHAR", 1, 3, None, 1, True, True, None, "utf8mb4", []),
      ("s2", "VARCHAR", 12, 10, None, 2, True, True, None, "latin1", []),
      ("s3", "TEXT", 12, None, None, 3, True, True, None, "utf8mb4", []),
      ("s4", "LONGTEXT", 12, None, None, 4, True, True, None, "utf8mb4", []),
      ("s5", "NCHAR", -15, 2, None, 5, True, True, None, "utf8", []),
      ("s6", "NATIONAL VARCHAR", -9, 4, None, 6, True, True, None, "utf8", []),
      ("s7", "LONG VARCHAR", 12, None, None, 7, True, True, None, "utf8mb4", []),
      ("s8", "VARBINARY", -3, 8, None, 8, True, True, None, None, []),
      ("s9", "BINARY", -2, 4, None, 9, True, True, None, None, []),
      ("s10", "MEDIUMBLOB", 2004, None, None, 10, True, True, None, None, []),
      ("d1", "DATE", 91, None, None, 11, True, True, None, None, []),
      ("d2", "TIME", 92, 3, None, 12, True, True, None, None, []),
      ("d3", "DATETIME", 93, 6, None, 13, True, True, None, None, []),
      ("d4", "TIMESTAMP", 2014, None, None, 14, True, True, None, None, []),
      ("d5", "YEAR", 4, None, None, 15, True, True, None, None, []),
      ("e", "ENUM", 1, 1, None, 16, False, False, None, "utf8mb4", ["'sad'", "'o''k'"]),
      ("st", "SET", 1, 5, None, 17, True, True, None, "utf8mb4", ["'a'", "'b'", "'c'"]),
      ("j", "JSON", 1111, None, None, 18, True, True, None, None, []),
      ("g", "POINT", 1111, None, None, 19, True, True, None, None, [])],
     []),
    ("defaults", [
        "CREATE TABLE t (a int NOT NULL DEFAULT -5, b varchar(5) DEFAULT 'it''s', c decimal(5,2) DEFAULT 1.50,"
        " d timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),"
        " e datetime DEFAULT now(), f bit(3) DEFAULT b'101', g varchar(36) DEFAULT (uuid()), h int DEFAULT NULL,"
        " i tinyint(1) NOT NULL DEFAULT TRUE, j varchar(3) DEFAULT _utf8mb4'x') CHARSET utf8mb4"],
     [("a", "INT", 4, None, None, 1, False, True, "-5", None, []),
      ("b", "VARCHAR", 12, 5, None, 2, True, True, "it's", "utf8mb4", []),
      ("c", "DECIMAL", 3, 5, 2, 3, True, True, "1.50", None, []),
      ("d", "TIMESTAMP", 2014, 6, None, 4, False, True, "1970-01-01 00:00:00", None, []),
      ("e", "DATETIME", 93, None, None, 5, True, True, "1970-01-01 00:00:00", None, []),
      ("f", "BIT", -7, 3, None, 6, True, True, "101", None, []),
      ("g", "VARCHAR", 12, 36, None, 7, True, True, None, "utf8mb4", []),
      ("h", "INT", 4, None, None, 8, True, True, None, None, []),
      ("i", "TINYINT", 5, 1, None, 9, False, True, "TRUE", None, []),
      ("j", "VARCHAR", 12, 3, None, 10, True, True, "x", "utf8mb4", [])],
     []),
    ("ADD COLUMN FIRST and AFTER, several clauses", [
        BASE, "ALTER TABLE t ADD COLUMN x int FIRST, ADD y char(2) AFTER id, ADD COLUMN (z1 int, z2 int NOT NULL)"],
     [("x", "INT", 4, None, None, 1, True, True, None, None, []),
      ("id", "INT", 4, None, None, 2, False, False, None, None, []),
      ("y", "CHAR", 1, 2, None, 3, True, True, None, "latin1", []),
      ("a", "VARCHAR", 12, 10, None, 4, True, True, None, "latin1", []),
      ("b", "INT", 4, None, None, 5, False, True, "0", None, []),
      ("z1", "INT", 4, None, None, 6, True, True, None, None, []),
      ("z2", "INT", 4, None, None, 7, False, False, None, None, [])],
     ["id"]),
    ("MODIFY, CHANGE, RENAME COLUMN, DROP", [
        BASE, "ALTER TABLE t MODIFY a varchar(20) NOT NULL FIRST, CHANGE COLUMN b bee bigint AFTER id,"
              " RENAME COLUMN id TO ident, DROP COLUMN IF EXISTS nope"],
     [("a", "VARCHAR", 12, 20, None, 1, False, False, None, "latin1", []),
      ("ident", "INT", 4, None, None, 2, False, False, None, None, []),
      ("bee", "BIGINT", -5, None, None, 3, True, True, None, None, [])],
     ["ident"]),
    ("primary key dropped and added", [
        BASE, "ALTER TABLE t DROP PRIMARY KEY, ADD CONSTRAINT pk PRIMARY KEY (b, id)"],
     [("id", "INT", 4, None, None, 1, False, False, None, None, []),
      ("a", "VARCHAR", 12, 10, None, 2, True, True, None, "latin1", []),
      ("b", "INT", 4, None, None, 3, False, True, "0", None, [])],
     ["b", "id"]),
    ("ALTER COLUMN SET/DROP DEFAULT", [
        BASE, "ALTER TABLE t ALTER COLUMN a SET DEFAULT 'x', ALTER b DROP DEFAULT"],
     [("id", "INT", 4, None, None, 1, False, False, None, None, []),
      ("a", "VARCHAR", 12, 10, None, 2, True, True, "x", "latin1", []),
      ("b", "INT", 4, None, None, 3, False, False, None, None, [])],
     ["id"]),
    ("CONVERT TO CHARACTER SET", [
        BASE, "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"],
     [("id", "INT", 4, None, None, 1, False, False, None, None, []),
      ("a", "VARCHAR", 12, 10, None, 2, True, True, None, "utf8mb4", []),
      ("b", "INT", 4, None, None, 3, False, True, "0", None, [])],
     ["id"]),
    ("a table without a charset takes its database's", [
        "CREATE DATABASE IF NOT EXISTS d2 DEFAULT CHARACTER SET = cp1251", "USE d2",
        "CREATE TABLE d2.t (s varchar(3), n nvarchar(3))"],
     [("s", "VARCHAR", 12, 3, None, 1, True, True, None, "cp1251", []),
      ("n", "NVARCHAR", -9, 3, None, 2, True, True, None, "utf8", [])],
     []),
    ("UNIQUE NOT NULL becomes the key of a key-less table", [
        "CREATE TABLE t (a int NOT NULL, b int, UNIQUE KEY ub (b), UNIQUE KEY ua (a))"],
     [("a", "INT", 4, None, None, 1, False, False, None, None, []),
      ("b", "INT", 4, None, None, 2, True, True, None, None, [])],
     ["a"]),
    ("CREATE UNIQUE INDEX on a key-less table", [
        "CREATE TABLE t (a int NOT NULL, b int NOT NULL)", "CREATE UNIQUE INDEX u ON t (b, a)"],
     [("a", "INT", 4, None, None, 1, False, False, None, None, []),
      ("b", "INT", 4, None, None, 2, False, False, None, None, [])],
     ["b", "a"]),
    ("CREATE TABLE LIKE", [BASE, "CREATE TABLE t2 LIKE t"],
     [("id", "INT", 4, None, None, 1, False, False, None, None, []),
      ("a", "VARCHAR", 12, 10, None, 2, True, True, None, "latin1", []),
      ("b", "INT", 4, None, None, 3, False, True, "0", None, [])],
     ["id"]),
    ("SHOW CREATE TABLE of MariaDB", [
        "CREATE TABLE `types` (\n  `id` int(11) NOT NULL,\n  `c_ts` timestamp(6) NULL DEFAULT NULL,\n"
        "  `c_json` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`c_json`)),\n"
        "  `c_upd` datetime NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),\n"
        "  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci"],
     [("id", "INT", 4, 11, None, 1, False, False, None, None, []),
      ("c_ts", "TIMESTAMP", 2014, 6, None, 2, True, True, None, None, []),
      ("c_json", "LONGTEXT", 12, None, None, 3, True, True, None, "utf8mb4", []),
      ("c_upd", "DATETIME", 93, None, None, 4, False, True, "1970-01-01 00:00:00", None, [])],
     ["id"]),
    ("SHOW CREATE TABLE of MySQL 8", [
        "CREATE TABLE `t` (\n  `id` int NOT NULL AUTO_INCREMENT,\n"
        "  `v` varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci DEFAULT NULL,\n"
        "  `g` int GENERATED ALWAYS AS ((`id` + 1)) VIRTUAL,\n  `p` point NOT NULL /*!80003 SRID 4326 */,\n"
        "  `i` int DEFAULT NULL /*!80023 INVISIBLE */,\n  `j` json DEFAULT (json_array()),\n"
        "  `ts` timestamp NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n  PRIMARY KEY (`id`),\n"
        "  CONSTRAINT `c1` CHECK ((`id` > 0)) /*!80016 NOT ENFORCED */\n"
        ") ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci"],
     [("id", "INT", 4, None, None, 1, False, False, None, None, []),
      ("v", "VARCHAR", 12, 10, None, 2, True, True, None, "utf8mb4", []),
      ("g", "INT", 4, None, None, 3, True, True, None, None, []),
      ("p", "POINT", 1111, None, None, 4, False, False, None, None, []),
      ("i", "INT", 4, None, None, 5, True, True, None, None, []),
      ("j", "JSON", 1111, None, None, 6, True, True, None, None, []),
      ("ts", "TIMESTAMP", 2014, None, None, 7, True, True, "1970-01-01 00:00:00", None, [])],
     ["id"]),
    # found by the DDL corpus (tests/unit/test_ddl_corpus.py)
    ("names that start with a digit", [
        "CREATE TABLE 1t (1c int, 2d int)", "ALTER TABLE 1t ADD CONSTRAINT pk PRIMARY KEY (1c)"],
     [("1c", "INT", 4, None, None, 1, False, False, None, None, []),
      ("2d", "INT", 4, None, None, 2, True, True, None, None, [])],
     ["1c"]),
    ("qualified column names in CREATE TABLE", [
        "CREATE TABLE t (t.a bigint, .b int, db.t.c int, PRIMARY KEY (a))"],
     [("a", "BIGINT", -5, None, None, 1, False, False, None, None, []),
      ("b", "INT", 4, None, None, 2, True, True, None, None, []),
      ("c", "INT", 4, None, None, 3, True, True, None, None, [])],
     ["a"]),
    ("NOT SECONDARY (HeatWave)", [
        "CREATE TABLE t (id int NOT SECONDARY, s set('a','b') CHARACTER SET utf8mb4 NOT SECONDARY)",
        "ALTER TABLE t ADD COLUMN j json NOT SECONDARY"],
     [("id", "INT", 4, None, None, 1, True, True, None, None, []),
      ("s", "SET", 1, 3, None, 2, True, True, None, "utf8mb4", ["'a'", "'b'"]),
      ("j", "JSON", 1111, None, None, 3, True, True, None, None, [])],
     []),
    ("MariaDB RENAME COLUMN IF EXISTS", [
        BASE, "ALTER TABLE t RENAME COLUMN IF EXISTS nope TO x, RENAME COLUMN IF EXISTS a TO a2"],
     [("id", "INT", 4, None, None, 1, False, False, None, None, []),
      ("a2", "VARCHAR", 12, 10, None, 2, True, True, None, "latin1", []),
      ("b", "INT", 4, None, None, 3, False, True, "0", None, [])],
     ["id"]),
    ("executable comments are code", [
        "/*!40101 CREATE TABLE t (a int) */ /*!50100 PARTITION BY HASH (a) PARTITIONS 2 */"],
     [("a", "INT", 4, None, None, 1, True, True, None, None, [])],
     []),
]


@pytest.mark.parametrize("statements, columns, key", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_statements(statements: list[str], columns: list[tuple], key: list[str]) -> None:
    schema = MySqlSchema(server_charset="utf8mb4")
    for statement in statements[:-1]:
        schema.apply(statement, "db")
    changes = schema.apply(statements[-1], "db")
    assert changes, "the last statement must change a table"
    assert _columns(changes[-1]) == columns
    assert changes[-1]["table"]["primaryKeyColumnNames"] == key


@pytest.mark.parametrize("statement", [
    "GRANT SELECT ON *.* TO 'x'@'%'", "CREATE USER 'x'@'%' IDENTIFIED BY 'y'", "SET NAMES utf8mb4",
    "FLUSH PRIVILEGES", "CREATE PROCEDURE p() BEGIN SELECT 1; ALTER TABLE t ADD COLUMN z int; DROP TABLE t; END",
    "CREATE DEFINER=`root`@`localhost` TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.id = 1",
    "CREATE OR REPLACE VIEW v AS SELECT * FROM t", "CREATE FUNCTION f() RETURNS int RETURN 1", "ANALYZE TABLE t",
    "BEGIN", "COMMIT", "INSERT INTO t VALUES (1, 'x', 2)", "TRUNCATE TABLE t", "TRUNCATE t",
    "CREATE INDEX i ON t (a)", "DROP INDEX i ON t", "ALTER TABLE nope ADD COLUMN z int",
    "CREATE TEMPORARY TABLE tmp (x int)", "DROP TEMPORARY TABLE IF EXISTS tmp", "CREATE TABLE IF NOT EXISTS t (z int)",
    "CREATE DATABASE other", "DROP DATABASE IF EXISTS other", "-- a comment only\n",
])
def test_statements_that_change_no_table(statement: str) -> None:
    schema = MySqlSchema()
    schema.apply(BASE, "db")
    before = schema.tables()
    assert schema.apply(statement, "db") == []
    assert schema.tables() == before


def test_rename_table_pairs_across_databases() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE a (x int)", "d1")
    schema.apply("CREATE TABLE b (y int)", "d1")
    changes = schema.apply("RENAME TABLE a TO tmp, b TO a, d1.tmp TO d2.b", "d1")
    assert [(c["type"], c["id"], c["previousId"]) for c in changes] == [
        ("ALTER", '"d1"."tmp"', '"d1"."a"'), ("ALTER", '"d1"."a"', '"d1"."b"'), ("ALTER", '"d2"."b"', '"d1"."tmp"')]
    assert [str(t.id) for t in schema.tables()] == ["d1.a", "d2.b"]
    assert schema.table("d1", "a").columns[0].name == "y"
    assert schema.table("d2", "b").columns[0].name == "x"


def test_alter_table_rename_to_carries_previous_id() -> None:
    schema = MySqlSchema()
    schema.apply(BASE, "db")
    [change] = schema.apply("ALTER TABLE t RENAME AS other.t3, ADD COLUMN c int", "db")
    assert (change["id"], change["previousId"]) == ('"other"."t3"', '"db"."t"')
    assert [c["name"] for c in change["table"]["columns"]] == ["id", "a", "b", "c"]
    assert schema.table("db", "t") is None


def test_drop_several_tables_and_database() -> None:
    schema = MySqlSchema()
    for name in ("a", "b", "c"):
        schema.apply(f"CREATE TABLE {name} (x int)", "d1")
    assert schema.apply("DROP TABLE IF EXISTS a, d1.b, nope", "d1") == [
        {"type": "DROP", "id": '"d1"."a"'}, {"type": "DROP", "id": '"d1"."b"'}]
    assert schema.apply("DROP TABLE `c` /* generated by server */", "d1") == [{"type": "DROP", "id": '"d1"."c"'}]
    schema.apply("CREATE TABLE c (x int)", "d1")
    assert schema.apply("DROP DATABASE d1", None) == []  # Debezium: a database event, no tableChanges
    assert schema.tables() == []


def test_several_statements_and_use() -> None:
    schema = MySqlSchema()
    changes = schema.apply("CREATE DATABASE x CHARACTER SET latin1; USE x; CREATE TABLE t (s char(1));"
                           " CREATE TABLE y.t (s char(1))", None)
    assert [(c["id"], c["table"]["columns"][0]["charsetName"]) for c in changes] == [
        ('"x"."t"', "latin1"), ('"y"."t"', None)]


def test_create_or_replace_and_if_not_exists() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE t (a int)", "d")
    assert schema.apply("CREATE TABLE IF NOT EXISTS t (b int)", "d") == []
    [change] = schema.apply("CREATE OR REPLACE TABLE t (b int)", "d")
    assert change["type"] == "CREATE" and [c["name"] for c in change["table"]["columns"]] == ["b"]


def test_comments_kept_only_when_asked() -> None:
    ddl = "CREATE TABLE t (a int COMMENT 'the a') COMMENT='the table'"
    [plain] = MySqlSchema().apply(ddl, "d")
    assert plain["comment"] is None and plain["table"]["columns"][0]["comment"] is None
    [kept] = MySqlSchema(include_comments=True).apply(ddl, "d")
    assert kept["comment"] == "the table" and kept["table"]["columns"][0]["comment"] == "the a"


def test_column_names_are_case_insensitive_table_names_are_not() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE T (Id int)", "d")
    [change] = schema.apply("ALTER TABLE T MODIFY ID bigint", "d")
    assert change["table"]["columns"][0]["name"] == "ID"
    assert schema.apply("ALTER TABLE t ADD COLUMN x int", "d") == []  # `t` is another table
    folded = MySqlSchema(lower_case_table_names=1)
    folded.apply("CREATE TABLE T (a int)", "D")
    assert folded.apply("ALTER TABLE t ADD COLUMN x int", "d")[0]["id"] == '"d"."t"'


def test_enum_options_unquoted_for_converters() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE t (e enum('a','b''c','d\\'e'))", "d")
    assert enum_options(schema.table("d", "t").columns[0].enum_values) == ["a", "b'c", "d'e"]


# ---- the unparseable-statement policy ------------------------------------------------------------

@pytest.mark.parametrize("statement", [
    "CREATE TABLE t2 AS SELECT * FROM t",
    "CREATE TABLE t2 (x int) SELECT 1 AS x",
    "CREATE TABLE t3 (a frobnicate(3))",
    "ALTER TABLE t MODIFY nope int",
    "ALTER TABLE t ADD COLUMN c int AFTER nope",
    "CREATE TABLE t4 (a int NOT NULL FOO)",
    "CREATE TABLE t5 (a varchar(3) DEFAULT 'unterminated)",
])
def test_unparseable_raises_with_the_statement(statement: str) -> None:
    schema = MySqlSchema()
    schema.apply(BASE, "db")
    before = schema.tables()
    with pytest.raises(UnparseableDdlError) as info:
        schema.apply(statement, "db")
    assert isinstance(info.value, SchemaHistoryError)
    assert statement in str(info.value)  # the message quotes the statement
    assert schema.tables() == before  # nothing applied


def test_skip_unparseable_logs_and_applies_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    schema = MySqlSchema(skip_unparseable=True)
    schema.apply(BASE, "db")
    with caplog.at_level(logging.WARNING, logger="cdc.sources.mysql.ddl"):
        assert schema.apply("CREATE TABLE t2 AS SELECT * FROM t", "db") == []
        changes = schema.apply("ALTER TABLE t MODIFY nope int; ALTER TABLE t ADD COLUMN c int", "db")
    assert "CREATE TABLE t2 AS SELECT * FROM t" in caplog.text and "ALTER TABLE t MODIFY nope int" in caplog.text
    assert [c["name"] for c in changes[0]["table"]["columns"]] == ["id", "a", "b", "c"]


def test_a_failed_text_applies_nothing() -> None:
    schema = MySqlSchema()
    with pytest.raises(UnparseableDdlError):
        schema.apply("CREATE TABLE ok (a int); CREATE TABLE bad AS SELECT 1", "db")
    assert schema.tables() == []


# ---- history -------------------------------------------------------------------------------------

def test_history_record_shape() -> None:
    record = history_record({"server": "dip_source"}, {"file": "mysql-bin.000006", "pos": 26063}, "dip_test",
                            "CREATE DATABASE `dip_test`", [])
    assert list(record) == ["source", "position", "databaseName", "ddl", "tableChanges"]
    assert list(history_record({}, {}, None, "x", [], ts_ms=5)) == \
        ["source", "position", "ts_ms", "ddl", "tableChanges"]


def _history(statements: list[tuple[int, str, str | None]], schema: MySqlSchema) -> list[dict[str, Any]]:
    return [history_record({"server": "s"}, {"pos": pos}, db, ddl, schema.apply(ddl, db))
            for pos, ddl, db in statements]


def test_from_history_up_to_a_position() -> None:
    live = MySqlSchema(server_charset="latin1")
    records = _history([
        (1, "CREATE DATABASE d CHARACTER SET utf8mb4", None),
        (2, "CREATE TABLE t (id int PRIMARY KEY, e enum('x','y'), s varchar(3))", "d"),
        (3, "CREATE TABLE gone (x int)", "d"),
        (4, "ALTER TABLE t ADD COLUMN c int FIRST, RENAME TO t2", "d"),
        (5, "DROP TABLE gone", "d"),
        (6, "CREATE DATABASE other; CREATE TABLE other.o (x int)", None),
        (7, "DROP DATABASE other", None),
        (8, "ALTER TABLE t2 DROP COLUMN s", "d"),
    ], live)
    rebuilt = MySqlSchema.from_history(records, server_charset="latin1")
    assert rebuilt.tables() == live.tables()
    assert rebuilt.databases() == live.databases()
    # a table created after the replay stops takes the replayed database's charset
    assert rebuilt.apply("CREATE TABLE n (s char(1))", "d")[0]["table"]["defaultCharsetName"] == "utf8mb4"

    until_7 = MySqlSchema.from_history(records, lambda position: position["pos"] <= 7, server_charset="latin1")
    assert [c.name for c in until_7.table("d", "t2").columns] == ["c", "id", "e", "s"]
    until_6 = MySqlSchema.from_history(records, lambda position: position["pos"] <= 6)
    assert until_6.table("other", "o") is not None and until_6.table("d", "gone") is None


def test_snapshot_round_trip() -> None:
    live = MySqlSchema(server_charset="utf8mb4")
    live.apply("CREATE DATABASE d CHARACTER SET latin1; CREATE TABLE d.t (a int PRIMARY KEY, b enum('x'));"
               " CREATE TABLE d2.u (s varchar(4) COLLATE utf8mb4_bin)", None)
    items = live.to_snapshot()
    records = [history_record({}, {"snapshot": True}, i["databaseName"], i["ddl"], i["tableChanges"]) for i in items]
    rebuilt = MySqlSchema.from_history(records)
    assert rebuilt.tables() == live.tables()
    assert rebuilt.databases() == live.databases()
    assert rebuilt.server_charset == "utf8mb4"


def _events(schema: MySqlSchema, ddl: str, db: str) -> list[tuple[str | None, str | None, str, str | None]]:
    return [(e.database, e.table.table if e.table else None, e.ddl, e.change["type"] if e.change else None)
            for e in schema.apply_events(ddl, db)]


def test_events_belong_to_the_database_of_their_table() -> None:
    """Debezium keys a schema change by the database of the table it changes, not the session's."""
    schema = MySqlSchema()
    schema.apply("CREATE TABLE t (x int)", "lab")
    assert _events(schema, "CREATE TABLE lab2.x (id int)", "lab") == [
        ("lab2", "x", "CREATE TABLE lab2.x (id int)", "CREATE")]
    assert _events(schema, "ALTER TABLE lab2.x ADD COLUMN y int", "lab") == [
        ("lab2", "x", "ALTER TABLE lab2.x ADD COLUMN y int", "ALTER")]
    assert _events(schema, "ALTER TABLE lab2.x RENAME TO x2", "lab") == [
        ("lab", "x2", "ALTER TABLE lab2.x RENAME TO x2", "ALTER")]
    assert _events(schema, "CREATE DATABASE IF NOT EXISTS lab3", "lab") == [
        ("lab3", None, "CREATE DATABASE IF NOT EXISTS lab3", None)]


def test_rename_and_drop_events_per_table() -> None:
    """RENAME TABLE: one event per pair, the statement's words before the first pair kept as
    written; DROP TABLE: one per table, qualified, also for a table the model does not have."""
    schema = MySqlSchema()
    for name in ("a", "c", "e"):
        schema.apply(f"CREATE TABLE {name} (x int)", "lab")
    assert _events(schema, "rename  table a TO b, c to d ,e TO lab2.f", "lab") == [
        ("lab", "b", "rename  table a TO b", "ALTER"), ("lab", "d", "rename  table c to d", "ALTER"),
        ("lab2", "f", "rename  table e TO lab2.f", "ALTER")]
    events = schema.apply_events("DROP TABLE IF EXISTS `b`,`lab2`.`f`,`nope` /* generated by server */", "lab")
    assert [(e.database, e.ddl, e.applied) for e in events] == [
        ("lab", "DROP TABLE IF EXISTS `lab`.`b`", True), ("lab2", "DROP TABLE IF EXISTS `lab2`.`f`", True),
        ("lab", "DROP TABLE IF EXISTS `lab`.`nope`", False)]
    assert events[2].change == {"type": "DROP", "id": '"lab"."nope"'}
    assert _events(schema, "drop table d cascade", "lab") == [("lab", "d", "drop table `lab`.`d` cascade", "DROP")]


def test_event_text_leaves_out_surrounding_comments() -> None:
    schema = MySqlSchema()
    assert _events(schema, "/* lead */ CREATE TABLE t (id int) /* trail */", "lab")[0][2] == "CREATE TABLE t (id int)"
    assert _events(schema, "# line\nALTER TABLE t /* kept */ ADD COLUMN a int", "lab")[0][2] == \
        "ALTER TABLE t /* kept */ ADD COLUMN a int"
    ddl = "CREATE TABLE p (id int) /*!40100 ENGINE=InnoDB */ ROW_FORMAT=DYNAMIC /*!50100 PARTITION BY HASH (id) */"
    [(_, _, text, _)] = _events(schema, ddl, "lab")
    assert text == "CREATE TABLE p (id int) /*!40100 ENGINE=InnoDB */ ROW_FORMAT=DYNAMIC"


@pytest.mark.parametrize("ddl", ["CREATE INDEX i ON t (a)", "DROP INDEX i ON t", "ALTER DATABASE lab CHARSET utf8",
                                 "CREATE SEQUENCE s", "CREATE VIEW v AS SELECT 1", "CREATE TEMPORARY TABLE t2 (x int)"])
def test_statements_without_parser_events(ddl: str) -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE t (id int PRIMARY KEY, a int)", "lab")
    assert schema.apply_events(ddl, "lab") == []


def test_unique_index_that_becomes_the_key_is_an_event() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE lab2.k (a int NOT NULL, b int)", "lab")
    assert _events(schema, "CREATE UNIQUE INDEX u ON lab2.k (a)", "lab") == [
        ("lab2", "k", "CREATE UNIQUE INDEX u ON lab2.k (a)", "ALTER")]


@pytest.mark.parametrize(("ddl", "ignored"), [
    ("CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 1", True),
    ("CREATE DEFINER=`root`@`localhost` PROCEDURE `p`()\nSELECT 1", True),
    ("DROP TRIGGER tr", True), ("GRANT SELECT ON lab.* TO 'u'@'h'", True), ("CREATE USER IF NOT EXISTS 'u'@'h'", True),
    ("DROP TEMPORARY TABLE IF EXISTS `t` /* generated by server */", True), ("OPTIMIZE TABLE t", True),
    ("DROP TABLE IF EXISTS `t` /* generated by server */", False), ("CREATE SEQUENCE s", False),
    ("CREATE TABLE v (id int)", False),
])
def test_debezium_ddl_filter(ddl: str, ignored: bool) -> None:
    assert ignored_by_debezium(ddl) is ignored


# ---- the grammar's tables ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ddl_types._TYPES))
def test_every_type_of_the_types_table_is_read(name: str) -> None:
    """Each name of the column types table, one word or several, gives its JDBC type and keeps its
    spelling as typeName (SERIAL: BIGINT UNSIGNED)."""
    values = "('a','b')" if name in ("ENUM", "SET") else ""
    [change] = MySqlSchema().apply(f"CREATE TABLE t (c {name}{values})", "db")
    column = change["table"]["columns"][0]
    assert (column["typeName"], column["jdbcType"]) == (
        "BIGINT UNSIGNED" if name == "SERIAL" else name, ddl_types._TYPES[name])


@pytest.mark.parametrize(("ddl", "events"), [
    # the optional words between a statement's keywords, in the grammar's order only
    ("ALTER ONLINE IGNORE TABLE k ADD COLUMN z int", [("k", "ALTER")]),
    ("ALTER OFFLINE TABLE k ADD COLUMN z int", [("k", "ALTER")]),
    ("ALTER IGNORE ONLINE TABLE k ADD COLUMN z int", []),
    ("ALTER ONLINE DATABASE db CHARSET utf8", []),
    ("CREATE OR REPLACE TEMPORARY TABLE tmp (x int)", []),
    ("CREATE OR REPLACE TABLE k (x int)", [("k", "CREATE")]),
    ("CREATE OR REPLACE DATABASE other", [(None, None)]),
    ("CREATE OR REPLACE UNIQUE INDEX u ON k (a)", [("k", "ALTER")]),
    ("CREATE FULLTEXT INDEX f ON k (a)", []),
    ("DROP TEMPORARY TABLE k", []),
    ("DROP SCHEMA IF EXISTS nope", [(None, None)]),
    ("RENAME TABLES k TO k2", [("k2", "ALTER")]),
])
def test_statement_keywords_and_modifiers(ddl: str, events: list[tuple[str | None, str | None]]) -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE k (a int NOT NULL, b int)", "db")
    assert [(table, change) for _, table, _, change in _events(schema, ddl, "db")] == events


def test_replay_applies_only_database_statements_where_the_record_has_changes() -> None:
    """A record with tableChanges: its DDL is read again for databases and charsets only."""
    schema = MySqlSchema()
    schema.replay({"databaseName": "db", "ddl": "CREATE DATABASE d2 CHARSET latin1; CREATE TABLE d2.x (a int)",
                   "tableChanges": [{"type": "DROP", "id": '"db"."gone"'}]})
    assert schema.databases() == {"d2": "latin1"} and schema.table_ids() == []


@pytest.mark.parametrize(("ddl", "message"), [
    ("CREATE TABLE t (c NATIONAL TEXT)", "expected CHAR or VARCHAR after NATIONAL at 'TEXT'"),
    ("CREATE TABLE t (c NUMBERS)", "unknown data type NUMBERS at 'NUMBERS'"),
    ("CREATE TABLE t (c int NOT VISIBLE)", "unexpected token in the definition of column 'c' at 'NOT'"),
    ("CREATE TABLE t (c int GENERATED AS (1))", "unexpected token in the definition of column 'c' at 'GENERATED'"),
    ("CREATE TABLE t (c int FIRST)", "unexpected token in the definition of column 'c' at 'FIRST'"),
])
def test_what_the_tables_do_not_know_is_refused_where_it_starts(ddl: str, message: str) -> None:
    with pytest.raises(UnparseableDdlError) as caught:
        MySqlSchema().apply(ddl, "db")
    assert caught.value.message.endswith(message)
