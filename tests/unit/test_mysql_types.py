"""MySQL/MariaDB columns -> Connect schemas, binlog values -> payloads, against Debezium's output
for MariaDB (shared/reference/debezium/mariadb-types.*), with no server.

The values below are what python-mysql-replication 1.0.17 returned for the reference workload
on MariaDB 10.11 (recorded here from a live binlog; tests/integration/test_mariadb_schema.py
reads them live again).
"""
from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdc.core.errors import ConfigError
from cdc.core.schema import Column, Table
from cdc.core.topics import TopicNaming
from cdc.sources.mysql.ddl import MySqlSchema
from cdc.sources.mysql.types import TypeModes, field_schema, value_converter

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "debezium"
DEFAULT = TypeModes()

# What MariaDB 10.11 prints for the reference table (SHOW CREATE TABLE): Debezium 3.5 read the
# schema from it (snapshot.mode=no_data), so its JSON column is a LONGTEXT, hence a plain string.
SHOW_CREATE_TABLE = """CREATE TABLE `types` (
  `id` int(11) NOT NULL,
  `c_bool` tinyint(1) DEFAULT NULL,
  `c_int` int(11) DEFAULT NULL,
  `c_ubigint` bigint(20) unsigned DEFAULT NULL,
  `c_decimal` decimal(10,2) DEFAULT NULL,
  `c_float` float DEFAULT NULL,
  `c_double` double DEFAULT NULL,
  `c_varchar` varchar(50) DEFAULT NULL,
  `c_text` text DEFAULT NULL,
  `c_blob` blob DEFAULT NULL,
  `c_date` date DEFAULT NULL,
  `c_time` time(3) DEFAULT NULL,
  `c_datetime` datetime(6) DEFAULT NULL,
  `c_ts` timestamp(6) NULL DEFAULT NULL,
  `c_year` year(4) DEFAULT NULL,
  `c_enum` enum('sad','ok','happy') DEFAULT NULL,
  `c_set` set('a','b','c') DEFAULT NULL,
  `c_json` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`c_json`)),
  `c_bit` bit(8) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"""

ROW_1 = {
    "id": 1, "c_bool": 1, "c_int": 2147483647, "c_ubigint": 18446744073709551615, "c_decimal": Decimal("12345678.90"),
    "c_float": 3.140000104904175, "c_double": 2.718281828459045, "c_varchar": 'héllo "quoted"',
    "c_text": "multi\nline text", "c_blob": b"\xde\xad\xbe\xef\x00", "c_date": dt.date(2024, 2, 29),
    "c_time": dt.timedelta(seconds=49530, microseconds=123000),
    "c_datetime": dt.datetime(2024, 2, 29, 13, 45, 30, 123456), "c_ts": dt.datetime(2024, 2, 29, 13, 45, 30, 123456),
    "c_year": 2024, "c_enum": "happy", "c_set": {"c", "a"}, "c_json": '{"b": [1, 2], "a": 1}', "c_bit": "10100101",
}
ROW_2 = {
    "id": 2, "c_bool": 0, "c_int": -2147483648, "c_ubigint": 0, "c_decimal": Decimal("-0.01"),
    "c_float": -1.4999999853326784e-10, "c_double": -1e308, "c_varchar": "", "c_text": "", "c_blob": "",
    "c_date": dt.date(1000, 1, 1), "c_time": dt.timedelta(days=-35, seconds=3601),
    "c_datetime": dt.datetime(1000, 1, 1, 0, 0), "c_ts": dt.datetime(1970, 1, 1, 0, 0, 1), "c_year": 1901,
    "c_enum": "sad", "c_set": "",  # the binlog reader's None with none_sources "empty set"
    "c_json": "[]", "c_bit": "00000000",
}
ROW_2_UPDATED = {**ROW_2, "c_decimal": Decimal("1.50"), "c_text": "updated",
                 "c_time": dt.timedelta(days=34, seconds=82799, microseconds=999000),
                 "c_datetime": dt.datetime(9999, 12, 31, 23, 59, 59, 999999), "c_enum": "ok", "c_set": {"b"}}
ROW_3 = {"id": 3, **{name: None for name in ROW_1 if name != "id"}}


def _reference() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REFERENCE / "mariadb-types.jsonl").read_text().splitlines()]


def _reference_table(ddl: str) -> Table:
    schema = MySqlSchema()
    schema.apply(ddl, "lab")
    table = schema.table("lab", "types")
    assert table is not None
    return table


def _workload_create_table() -> str:
    setup = (REFERENCE / "mariadb-types.sql").read_text().split("-- @@CAPTURE")[0]
    return setup[setup.index("CREATE TABLE"):].strip().rstrip(";")


def _row_schema(table: Table, modes: TypeModes = DEFAULT) -> list[dict[str, Any]]:
    return [{**field_schema(c, modes), "field": c.name} for c in table.columns]


def test_schemas_from_show_create_table_equal_debezium() -> None:
    expected = _reference()[0]["value"]["schema"]["fields"][1]["fields"]
    assert _row_schema(_reference_table(SHOW_CREATE_TABLE)) == expected


def test_schemas_from_the_workload_ddl_equal_debezium_but_json() -> None:
    expected = _reference()[0]["value"]["schema"]["fields"][1]["fields"]
    got = _row_schema(_reference_table(_workload_create_table()))
    assert [f for f in got if f["field"] != "c_json"] == [f for f in expected if f["field"] != "c_json"]
    # a column declared JSON is Debezium's Json string (the reference read MariaDB's LONGTEXT alias)
    assert [f for f in got if f["field"] == "c_json"] == [
        {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1, "field": "c_json"}]


def test_key_schema() -> None:
    table = _reference_table(_workload_create_table())
    assert [{**field_schema(table.columns[0], DEFAULT), "field": "id"}] == \
        _reference()[0]["key"]["schema"]["fields"]


@pytest.mark.parametrize("ddl", [SHOW_CREATE_TABLE, _workload_create_table()], ids=["show-create", "workload"])
def test_values_equal_debezium(ddl: str) -> None:
    table = _reference_table(ddl)
    converters = {c.name: value_converter(c, DEFAULT) for c in table.columns}

    def payload(row: dict[str, Any]) -> dict[str, Any]:
        return {name: converters[name](value) for name, value in row.items()}

    events = [r["value"]["payload"] for r in _reference() if r["value"] is not None]
    rows = [(None, ROW_1), (None, ROW_2), (None, ROW_3), (ROW_2, ROW_2_UPDATED), (ROW_3, None)]
    assert len(events) == len(rows)
    for event, (before, after) in zip(events, rows, strict=True):
        assert (payload(before) if before else None) == event["before"]
        assert (payload(after) if after else None) == event["after"]


# ---- modes and the types the reference does not cover -------------------------------------------

def _column(ddl_type: str, *, table_suffix: str = "", name: str = "c") -> Column:
    schema = MySqlSchema(server_charset="utf8mb4")
    schema.apply(f"CREATE TABLE t ({name} {ddl_type}){table_suffix}", "d")
    table = schema.table("d", "t")
    assert table is not None
    return table.columns[0]


def convert(ddl_type: str, value: Any, modes: TypeModes = DEFAULT) -> Any:
    return value_converter(_column(ddl_type), modes)(value)


def schema_of(ddl_type: str, modes: TypeModes = DEFAULT) -> dict[str, Any] | None:
    return field_schema(_column(ddl_type), modes)


def unscaled(b64: str) -> int:
    return int.from_bytes(base64.b64decode(b64), "big", signed=True)


@pytest.mark.parametrize("mode, value", [("precise", 1234567890), ("double", 12345678.9), ("string", "12345678.90")])
def test_decimal_modes(mode: str, value: Any) -> None:
    modes = TypeModes(decimal_handling_mode=mode)
    got = convert("decimal(10,2)", Decimal("12345678.90"), modes)
    assert (unscaled(got) if mode == "precise" else got) == value
    assert schema_of("decimal(10,2)", modes)["type"] == \
        {"precise": "bytes", "double": "double", "string": "string"}[mode]


def test_unsigned_integers() -> None:
    assert schema_of("tinyint unsigned")["type"] == "int16" and convert("tinyint unsigned", -1) == 255
    assert schema_of("smallint unsigned")["type"] == "int32" and convert("smallint unsigned", 65535) == 65535
    assert schema_of("mediumint unsigned")["type"] == "int32" and convert("mediumint unsigned", -1) == 16777215
    assert schema_of("int unsigned")["type"] == "int64" and convert("int unsigned", -1) == 4294967295
    assert schema_of("int(10) unsigned zerofill")["type"] == "int64"
    assert convert("bigint unsigned", 2**64 - 2) == -2  # long mode wraps, as Debezium does
    precise = TypeModes(bigint_unsigned_handling_mode="precise")
    assert schema_of("bigint unsigned", precise) == {
        "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
        "parameters": {"scale": "0", "connect.decimal.precision": "20"}}
    assert unscaled(convert("bigint unsigned", 2**64 - 1, precise)) == 2**64 - 1
    assert unscaled(convert("bigint unsigned", -1, precise)) == 2**64 - 1  # a signed read


def test_floats() -> None:
    single = struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert convert("float", single) == 0.1
    assert schema_of("float(30)")["type"] == "double" and schema_of("float(7,3)")["type"] == "double"
    assert schema_of("real")["type"] == "float" and schema_of("double precision")["type"] == "double"


@pytest.mark.parametrize("mode, expected", [
    ("bytes", "3q2+7w=="), ("base64", "3q2+7w=="), ("base64-url-safe", "3q2-7w=="), ("hex", "deadbeef")])
def test_binary_modes(mode: str, expected: str) -> None:
    modes = TypeModes(binary_handling_mode=mode)
    assert convert("varbinary(8)", b"\xde\xad\xbe\xef", modes) == expected
    assert schema_of("blob", modes)["type"] == ("bytes" if mode == "bytes" else "string")


def test_binary_is_padded_to_its_length() -> None:
    assert base64.b64decode(convert("binary(4)", b"ab")) == b"ab\0\0"


def test_bits() -> None:
    assert schema_of("bit") == {"type": "boolean", "optional": True}
    assert convert("bit", "1") is True and convert("bit(1)", b"\x00") is False
    assert schema_of("bit(12)") == {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1,
                                    "parameters": {"length": "12"}}
    assert base64.b64decode(convert("bit(12)", "000100000010")) == b"\x02\x01"  # little-endian
    assert base64.b64decode(convert("bit(12)", b"\x01\x02")) == b"\x02\x01"  # pymysql's big-endian bytes


def test_enum_and_set_forms() -> None:
    assert convert("enum('a','b''c')", 2) == "b'c" and convert("enum('a')", 0) == ""
    assert schema_of("enum('a','b''c')")["parameters"] == {"allowed": "a,b'c"}
    assert convert("set('a','b','c')", {"c", "b"}) == "b,c"
    assert convert("set('a','b','c')", 5) == "a,c" and convert("set('a','b','c')", "a,b") == "a,b"


def test_json_from_the_mysql_binary_format() -> None:
    parsed = {b"a": 1, b"b": [1.5, None, True, "x\"y"], b"c": {b"d": Decimal("1.10")}}
    assert convert("json", parsed) == '{"a":1,"b":[1.5,null,true,"x\\"y"],"c":{"d":1.10}}'
    assert convert("json", '{"a": 1}') == '{"a": 1}'


@pytest.mark.parametrize("mode, time_schema, time_value, dt_schema, dt_value", [
    ("adaptive_time_microseconds", ("int64", "io.debezium.time.MicroTime"), -3020399000000,
     ("int64", "io.debezium.time.Timestamp"), 1709214330123),
    ("adaptive", ("int32", "io.debezium.time.Time"), -3020399000,
     ("int64", "io.debezium.time.Timestamp"), 1709214330123),
    ("connect", ("int32", "org.apache.kafka.connect.data.Time"), None,  # past Connect's Time range
     ("int64", "org.apache.kafka.connect.data.Timestamp"), 1709214330123),
])
def test_time_precision_modes(mode: str, time_schema: tuple, time_value: int, dt_schema: tuple, dt_value: int) -> None:
    modes = TypeModes(time_precision_mode=mode)
    schema = schema_of("time", modes)
    assert (schema["type"], schema["name"]) == time_schema
    assert convert("time", dt.timedelta(days=-35, seconds=3601), modes) == time_value
    schema = schema_of("datetime(3)", modes)
    assert (schema["type"], schema["name"]) == dt_schema
    assert convert("datetime(3)", dt.datetime(2024, 2, 29, 13, 45, 30, 123456), modes) == dt_value
    date_name = "org.apache.kafka.connect.data.Date" if mode == "connect" else "io.debezium.time.Date"
    assert schema_of("date", modes)["name"] == date_name and convert("date", dt.date(1969, 12, 31), modes) == -1


@pytest.mark.parametrize(("value", "millis"), [
    ("00:00:00", 0), ("23:59:59.999999", 86399999), ("24:00:00", 86400000), ("24:00:00.000001", None),
    ("-00:00:00.000001", None), ("838:59:59", None), ("-838:59:59", None)])
def test_connect_time_range(value: str, millis: int | None, caplog: pytest.LogCaptureFixture) -> None:
    """Connect's Time holds 00:00 to 24:00 (inclusive), as Debezium's Time.toMilliOfDay checks."""
    modes = TypeModes(time_precision_mode="connect")
    assert convert("time(6)", value, modes) == millis
    assert convert("time(6) NOT NULL DEFAULT '01:00:00'", value, modes) == (3600000 if millis is None else millis)
    assert ("outside Kafka Connect's Time range" in caplog.text) is (millis is None)


@pytest.mark.parametrize(("ddl_type", "value", "adjusted", "kept"), [
    ("date", dt.date(1, 1, 1), "2001-01-01", "0001-01-01"),
    ("date", dt.date(69, 12, 31), "2069-12-31", "0069-12-31"),
    ("date", dt.date(70, 1, 1), "1970-01-01", "0070-01-01"),
    ("date", dt.date(99, 12, 31), "1999-12-31", "0099-12-31"),
    ("date", dt.date(100, 1, 1), "0100-01-01", "0100-01-01"),
    ("date", "0000-01-01", "2000-01-01", "0000-01-01"),  # pymysql's text: Python has no year 0
    ("date", "0000-00-00", None, None), ("date", "2024-00-10", None, None),
    ("datetime(6)", dt.datetime(24, 2, 29, 12, 0, 0, 5), "2024-02-29T12:00:00.000005", "0024-02-29T12:00:00.000005"),
    ("datetime(3)", dt.datetime(85, 8, 5, 8, 5, 0, 250000), "1985-08-05T08:05:00.250", "0085-08-05T08:05:00.250"),
    ("datetime", "0000-06-30 10:00:00", "2000-06-30T10:00:00.000", "0000-06-30T10:00:00.000"),
    ("datetime", "0000-00-00 00:00:00", None, None),
])
def test_time_adjuster(ddl_type: str, value: Any, adjusted: str | None, kept: str | None) -> None:
    """enable.time.adjuster (default): DATE/DATETIME years 0-99 are two-digit years."""
    def expected(text: str | None) -> int | None:
        if text is None:
            return None
        if ddl_type == "date":
            return _days(text)
        day, _, clock = text.partition("T")
        hours, minutes, seconds = clock.split(":")
        micros = round(((int(hours) * 60 + int(minutes)) * 60 + float(seconds)) * 1_000_000)
        return (_days(day) * 86_400_000_000 + micros) // (1 if ddl_type == "datetime(6)" else 1000)
    assert convert(ddl_type, value) == expected(adjusted)
    assert convert(ddl_type, value, TypeModes(enable_time_adjuster=False)) == expected(kept)


def _days(text: str) -> int:
    year, month, day = (int(x) for x in text.split("-"))
    if year == 0:  # proleptic Gregorian: a year before year 1, with a 29 February
        return (dt.date(1, month, day) - dt.date(1970, 1, 1)).days - (366 if month <= 2 else 365)
    return (dt.date(year, month, day) - dt.date(1970, 1, 1)).days


def test_zoned_timestamps() -> None:
    value = dt.datetime(2024, 2, 29, 13, 45, 30, 120000)
    assert convert("timestamp", dt.datetime(2024, 2, 29, 13, 45, 30)) == "2024-02-29T13:45:30Z"
    assert convert("timestamp(3)", value) == "2024-02-29T13:45:30.120Z"
    assert convert("timestamp", value.replace(tzinfo=dt.timezone(dt.timedelta(hours=2)))) == "2024-02-29T11:45:30.12Z"


def test_mariadb_types() -> None:
    assert schema_of("uuid")["name"] == "io.debezium.data.Uuid"
    assert convert("uuid", bytes(range(16))) == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert convert("inet6", b"\0" * 15 + b"\1") == "::1" and convert("inet4", b"\x7f\0\0\x01") == "127.0.0.1"


def test_geometry() -> None:
    wkb = struct.pack("<BIdd", 1, 1, 1.5, -2.0)
    value = struct.pack("<I", 4326) + wkb
    assert convert("point", value) == {"x": 1.5, "y": -2.0, "wkb": base64.b64encode(wkb).decode(), "srid": 4326}
    assert convert("geometry", value) == {"wkb": base64.b64encode(wkb).decode(), "srid": 4326}
    assert schema_of("geometry") == {
        "type": "struct", "fields": [{"type": "bytes", "optional": False, "field": "wkb"},
                                     {"type": "int32", "optional": True, "field": "srid"}],
        "optional": True, "name": "io.debezium.data.geometry.Geometry", "version": 1, "doc": "Geometry"}


def test_defaults_in_schemas() -> None:
    assert schema_of("int NOT NULL DEFAULT -5") == {"type": "int32", "optional": False, "default": -5}
    assert schema_of("tinyint(1) NOT NULL DEFAULT TRUE") == {"type": "int16", "optional": False, "default": 1}
    assert unscaled(schema_of("decimal(5,2) DEFAULT 1.5")["default"]) == 150
    assert schema_of("varchar(3) NOT NULL DEFAULT 'x'")["default"] == "x"
    assert schema_of("enum('a','b') NOT NULL DEFAULT 'b'") == {
        "type": "string", "optional": False, "name": "io.debezium.data.Enum", "version": 1,
        "parameters": {"allowed": "a,b"}, "default": "b"}
    assert schema_of("datetime(6) NOT NULL DEFAULT '2024-02-29 13:45:30.5'")["default"] == 1709214330500000
    assert schema_of("datetime NOT NULL DEFAULT CURRENT_TIMESTAMP")["default"] == 0
    assert schema_of("datetime DEFAULT CURRENT_TIMESTAMP")["default"] == 0
    assert "default" not in schema_of("timestamp NULL DEFAULT CURRENT_TIMESTAMP")  # nullable TIMESTAMP: none
    assert schema_of("timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)")["default"] == "1970-01-01T00:00:00Z"
    assert schema_of("timestamp NOT NULL DEFAULT '2024-01-02 03:04:05'")["default"] == "2024-01-02T03:04:05Z"
    assert schema_of("date NOT NULL DEFAULT '0000-00-00'")["default"] == 0
    assert schema_of("time NOT NULL DEFAULT '-01:00:00'")["default"] == -3600000000
    assert schema_of("bit(8) NOT NULL DEFAULT b'101'")["default"] == "BQ=="
    assert "default" not in schema_of("varchar(36) NOT NULL DEFAULT (uuid())")


def test_not_null_columns_never_give_null() -> None:
    assert convert("date NOT NULL", None) == 0  # a zero date, read as None
    assert convert("int NOT NULL DEFAULT 7", None) == 7
    assert convert("int", None) is None


def test_comment_is_the_doc() -> None:
    schema = MySqlSchema(include_comments=True)
    schema.apply("CREATE TABLE t (e enum('a') COMMENT 'pick one')", "d")
    column = schema.table("d", "t").columns[0]
    assert list(field_schema(column, DEFAULT)) == ["type", "optional", "name", "version", "doc", "parameters"]


def test_unsupported_modes_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        TypeModes(time_precision_mode="isostring")
    assert schema_of("vector(3)") is None  # Debezium leaves such columns out


def test_rows_by_column_equal_rows_one_at_a_time() -> None:
    """TableState.rows (a snapshot batch converted column by column) gives exactly the structs
    TableState.row gives, NULLs, NOT NULL zero dates, integers, decimals and text included."""
    from cdc.core.columns import ColumnStage
    from cdc.sources.mysql.source_info import source_schema
    from cdc.sources.mysql.tables import TableState

    schema = MySqlSchema(server_charset="utf8mb4")
    schema.apply("CREATE DATABASE d")
    schema.apply("CREATE TABLE t (id bigint PRIMARY KEY, i int, u int unsigned, b tinyint(1), "
                 "m decimal(6,2), w decimal(65,30), f double, s varchar(8), dt datetime(3) NOT NULL, "
                 "d date, e enum('x','y'), y year)", "d")
    table = schema.table("d", "t")
    assert table is not None
    state = TableState(table, topics=TopicNaming("p", by_schema=False), source_schema=source_schema("mariadb"),
                       modes=DEFAULT, columns_stage=ColumnStage({}), key_spec={})
    images = [
        (1, -5, 7, 1, Decimal("12.34"), Decimal("1." + "0" * 29 + "1"), 1.5, "héllo",
         dt.datetime(2024, 2, 29, 13, 45, 30, 123000), dt.date(2024, 2, 29), "y", 2024),
        (2, None, None, None, None, None, None, None, "0000-00-00 00:00:00", None, None, None),
        (3, 2**31 - 1, 2**32 - 1, 0, Decimal("-0.01"), Decimal("-" + "9" * 35 + "." + "9" * 30), -0.0, "",
         dt.datetime(1970, 1, 1), dt.date(1, 1, 1), "x", 1901),
    ]
    assert state.rows(images) == [state.row(values) for values in images]
    assert state.rows(images[:1]) == [state.row(images[0])]
    assert state.rows([]) == []
