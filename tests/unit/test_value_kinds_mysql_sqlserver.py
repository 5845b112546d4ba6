"""One type choice per MySQL/MariaDB and SQL Server column (issue 28 item 4), as for PostgreSQL
(test_pg_value_kinds.py): ``value_kind`` maps a column and the type modes to a core value kind
(cdc.core.type_rules.ValueKind); the Python converter and, for the binlog, the compiled codec's writer
(``native_rows.binlog_kind``) are derived from it. Here: the kinds in every mode, the schemas' time
units agreeing with the converters' values, the codec's writer following the kind, and native_rows
needing no private name of types."""
from __future__ import annotations

import ast
import itertools
from datetime import datetime, time, timedelta
from types import SimpleNamespace

import pytest

from cdc.core.schema import Column
from cdc.core.type_rules import ValueKind
from cdc.sources.mysql import native_rows, rows
from cdc.sources.mysql import types as my_types
from cdc.sources.mysql.ddl import MySqlSchema
from cdc.sources.sqlserver import types as ss_types
from cdc.sources.sqlserver.types import SqlColumn
from tests.conftest import ROOT

TIME_MODES = my_types.TypeModes.ALLOWED["time_precision_mode"]
SCHEMA_UNITS = {"Time": "ms", "Timestamp": "ms", "MicroTime": "us", "MicroTimestamp": "us", "NanoTime": "ns",
                "NanoTimestamp": "ns"}
# a time of day and a timestamp, and what each unit makes of them
CLOCK = {"ms": 45_296_123, "us": 45_296_123_456, "ns": 45_296_123_456_000}
STAMP = {"ms": 1_700_000_000_123, "us": 1_700_000_000_123_456, "ns": 1_700_000_000_123_456_000}


def my_column(ddl_type: str, suffix: str = "") -> Column:
    schema = MySqlSchema(server_charset="utf8mb4")
    schema.apply(f"CREATE TABLE t (c {ddl_type}){suffix}", "d")
    table = schema.table("d", "t")
    assert table is not None
    return table.columns[0]


def my_kind(ddl_type: str, suffix: str = "", **modes: str) -> ValueKind:
    return my_types.value_kind(my_column(ddl_type, suffix), my_types.TypeModes(**modes))


# ---- MySQL / MariaDB --------------------------------------------------------------------------

def test_mysql_kinds() -> None:
    assert my_kind("INT") == ValueKind("int")
    assert my_kind("BOOLEAN") == ValueKind("bool")
    assert my_kind("INT UNSIGNED") == ValueKind("unsigned", 32)
    assert my_kind("MEDIUMINT UNSIGNED") == ValueKind("unsigned", 24)
    assert my_kind("BIGINT UNSIGNED") == ValueKind("ubigint", "long")
    assert my_kind("BIGINT UNSIGNED", bigint_unsigned_handling_mode="precise") == ValueKind("ubigint", "precise")
    assert my_kind("FLOAT") == ValueKind("float32")
    assert my_kind("DOUBLE") == ValueKind("float64")
    assert my_kind("DECIMAL(10,2)") == ValueKind("decimal", 2)
    assert my_kind("DECIMAL(10,2)", decimal_handling_mode="double") == ValueKind("decimal_double")
    assert my_kind("DECIMAL(10,2)", decimal_handling_mode="string") == ValueKind("decimal_string")
    assert my_kind("VARCHAR(5)") == ValueKind("text", "utf-8")
    assert my_kind("VARCHAR(5)", " DEFAULT CHARSET=latin1") == ValueKind("text", "cp1252")
    assert my_kind("VARBINARY(5)", binary_handling_mode="hex") == ValueKind("binary", "hex")
    assert my_kind("BIT(1)") == ValueKind("bit")
    assert my_kind("BIT(12)") == ValueKind("bits", 12)
    assert my_kind("ENUM('a','b')") == ValueKind("enum", ("a", "b"))
    assert my_kind("SET('x','y')") == ValueKind("set", ("x", "y"))
    assert my_kind("JSON") == ValueKind("json")
    assert my_kind("YEAR") == ValueKind("year")
    assert my_kind("DATE") == ValueKind("date", "days")
    assert my_kind("TIMESTAMP(3)") == ValueKind("zoned_timestamp", 3)
    assert my_kind("POINT") == ValueKind("point")


@pytest.mark.parametrize("mode", TIME_MODES)
def test_mysql_schemas_unit_is_the_converters(mode: str) -> None:
    modes = my_types.TypeModes(time_precision_mode=mode)
    clock, stamp = timedelta(hours=12, minutes=34, seconds=56, microseconds=123_456), \
        datetime(2023, 11, 14, 22, 13, 20, 123_456)
    for ddl_type, value, expected in itertools.chain(
            ((f"TIME({p})", clock, CLOCK) for p in (0, 3, 6)), ((f"DATETIME({p})", stamp, STAMP) for p in (0, 3, 6))):
        column = my_column(ddl_type)
        schema = my_types.field_schema(column, modes)
        assert schema is not None
        unit = SCHEMA_UNITS[schema["name"].rsplit(".", 1)[1]]
        kind = my_types.value_kind(column, modes)
        assert kind.param in (unit, None), (ddl_type, mode, kind)  # connect_time: Connect's Time, in ms
        assert my_types.value_converter(column, modes)(value) == expected[unit], (ddl_type, mode)


def test_mysql_binlog_writer_follows_the_kind() -> None:
    def writer(ddl_type: str, storage: int, **mapped: int) -> str | None:
        return native_rows.binlog_kind(storage, SimpleNamespace(**mapped), my_kind(ddl_type))

    assert writer("INT", rows.LONG) == "int:s"
    assert writer("INT UNSIGNED", rows.LONG) == "int:u"
    assert writer("BIGINT UNSIGNED", rows.LONGLONG) is None  # past the codec's signed 64 bits
    assert writer("BOOLEAN", rows.TINY) == "bool"
    assert writer("VARCHAR(5)", rows.VARCHAR) == "text"
    assert my_kind("VARCHAR(5)", " DEFAULT CHARSET=latin1").param == "cp1252"
    assert native_rows.binlog_kind(rows.VARCHAR, None, my_kind("VARCHAR(5)", " DEFAULT CHARSET=latin1")) is None
    assert writer("DECIMAL(10,2)", rows.NEWDECIMAL, precision=10, decimals=2) == "decimal:10:2"
    assert native_rows.binlog_kind(rows.NEWDECIMAL, SimpleNamespace(precision=10, decimals=2),
                                   my_kind("DECIMAL(10,2)", decimal_handling_mode="string")) is None
    assert writer("DATE", rows.DATE) == "date"
    assert writer("DATETIME(3)", rows.DATETIME2, fsp=3) == "datetime2:3:ms"
    assert writer("DATETIME(6)", rows.DATETIME2, fsp=6) == "datetime2:6:us"
    assert writer("TIMESTAMP(6)", rows.TIMESTAMP2, fsp=6) == "timestamp2:6:6"
    assert writer("JSON", rows.JSON) is None


def test_mysql_native_rows_needs_no_private_name_of_types() -> None:
    tree = ast.parse((ROOT / "cdc" / "sources" / "mysql" / "native_rows.py").read_text())
    private = [node.attr for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
               and node.value.id == "my_types" and node.attr.startswith("_")]
    assert not private


# ---- SQL Server -------------------------------------------------------------------------------

def ss_kind(type_name: str, scale: int = 0, **modes: str) -> ValueKind:
    return ss_types.value_kind(SqlColumn("c", type_name, 1, 8, 10, scale), ss_types.TypeModes(**modes))


def test_sqlserver_kinds() -> None:
    assert ss_kind("bit") == ValueKind("bool")
    assert ss_kind("bigint") == ValueKind("int")
    assert ss_kind("real") == ValueKind("float32")
    assert ss_kind("money") == ValueKind("decimal", 4)
    assert ss_kind("decimal", 3, decimal_handling_mode="string") == ValueKind("decimal_string")
    assert ss_kind("datetimeoffset", 7) == ValueKind("zoned_timestamp", 7)
    assert ss_kind("date") == ValueKind("date", "days")
    assert ss_kind("time", 7) == ValueKind("time", "ns")
    assert ss_kind("time", 7, time_precision_mode="connect") == ValueKind("time", "ms")
    assert ss_kind("datetime") == ValueKind("timestamp", "ms")
    assert ss_kind("datetime2", 6) == ValueKind("timestamp", "us")
    assert ss_kind("varbinary", binary_handling_mode="hex") == ValueKind("binary", "hex")
    assert ss_kind("uniqueidentifier") == ValueKind("uuid")
    assert ss_kind("nvarchar") == ValueKind("text")


@pytest.mark.parametrize("mode", TIME_MODES)
def test_sqlserver_schemas_unit_is_the_converters(mode: str) -> None:
    modes = ss_types.TypeModes(time_precision_mode=mode)
    clock, stamp = time(12, 34, 56, 123_456), datetime(2023, 11, 14, 22, 13, 20, 123_456)
    cases = [("time", p, clock, CLOCK) for p in (0, 3, 6)] + \
            [(t, p, stamp, STAMP) for t, p in (("datetime2", 3), ("datetime2", 6), ("datetime", 3))]
    for type_name, scale, value, expected in cases:
        column = SqlColumn("c", type_name, 1, 8, 0, scale)
        unit = SCHEMA_UNITS[ss_types.field_schema(column, modes)["name"].rsplit(".", 1)[1]]
        assert ss_types.value_kind(column, modes).param == unit, (type_name, scale, mode)
        assert ss_types.converter(column, modes)(value) == expected[unit], (type_name, scale, mode)
