"""SQL Server types by the reference's tables, from the values pyodbc returns (table-driven)."""
from __future__ import annotations

import uuid
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from cdc.config import Config
from cdc.sources.sqlserver.source import SqlServerSource
from cdc.sources.sqlserver.types import SqlColumn, TypeModes, converter, field_schema, table_column
from tests.fixtures.sqlserver.fake import FakeServer
from tests.fixtures.sqlserver.testdb import Instance, RecordedDatabase, change_table_columns, ct_row, sys_column


def col(type_name: str, max_length: int = 0, precision: int = 0, scale: int = 0) -> SqlColumn:
    return SqlColumn("c", type_name, 1, max_length, precision, scale)


DEC = "org.apache.kafka.connect.data.Decimal"
# (column, driver value, schema (type, name, parameters), value) with the default modes
CASES: list[tuple[SqlColumn, Any, tuple[str, str | None, dict[str, str] | None], Any]] = [
    (col("bit", 1, 1), True, ("boolean", None, None), True),
    (col("tinyint", 1, 3), 255, ("int16", None, None), 255),
    (col("smallint", 2, 5), -32768, ("int16", None, None), -32768),
    (col("int", 4, 10), 2147483647, ("int32", None, None), 2147483647),
    (col("bigint", 8, 19), -9223372036854775808, ("int64", None, None), -9223372036854775808),
    (col("real", 4, 24), 1.100000023841858, ("float", None, None), 1.1),
    (col("float", 8, 53), 3.141592653589793, ("double", None, None), 3.141592653589793),
    (col("char", 3), "ab ", ("string", None, None), "ab "),
    (col("varchar", 255), "hello", ("string", None, None), "hello"),
    (col("text", 16), "long text", ("string", None, None), "long text"),
    (col("nchar", 6), "żół", ("string", None, None), "żół"),
    (col("nvarchar", -1), "żółw 🐢", ("string", None, None), "żółw 🐢"),
    (col("ntext", 16), "ntext", ("string", None, None), "ntext"),
    (col("xml", -1), "<a>1</a>", ("string", "io.debezium.data.Xml", None), "<a>1</a>"),
    (col("datetimeoffset", 10, 34, 7), "2019-01-01 12:34:56.1234567 +02:00",
     ("string", "io.debezium.time.ZonedTimestamp", None), "2019-01-01T10:34:56.1234567Z"),
    (col("datetimeoffset", 8, 26, 0), "2019-01-01 00:30:00 -01:30",
     ("string", "io.debezium.time.ZonedTimestamp", None), "2019-01-01T02:00:00Z"),
    (col("datetimeoffset", 10, 30, 3), datetime(2019, 1, 1, 12, 0, 0, 5000, tzinfo=timezone(timedelta(hours=1))),
     ("string", "io.debezium.time.ZonedTimestamp", None), "2019-01-01T11:00:00.005Z"),
    (col("date", 3, 10), date(2018, 6, 20), ("int32", "io.debezium.time.Date", None), 17702),
    (col("date", 3, 10), date(1900, 1, 1), ("int32", "io.debezium.time.Date", None), -25567),
    (col("time", 5, 12, 3), time(15, 13, 16, 945000), ("int32", "io.debezium.time.Time", None), 54796945),
    (col("time", 5, 15, 6), time(15, 13, 16, 945104), ("int64", "io.debezium.time.MicroTime", None), 54796945104),
    (col("time", 5, 16, 7), time(15, 13, 16, 945104), ("int64", "io.debezium.time.NanoTime", None), 54796945104000),
    (col("time", 5, 16, 7), "15:13:16.9451041", ("int64", "io.debezium.time.NanoTime", None), 54796945104100),
    (col("datetime", 8, 23, 3), datetime(2018, 6, 20, 15, 13, 16, 947000),
     ("int64", "io.debezium.time.Timestamp", None), 1529507596947),
    (col("smalldatetime", 4, 16, 0), datetime(2018, 6, 20, 15, 13),
     ("int64", "io.debezium.time.Timestamp", None), 1529507580000),
    (col("datetime2", 7, 23, 3), datetime(2018, 6, 20, 15, 13, 16, 945000),
     ("int64", "io.debezium.time.Timestamp", None), 1529507596945),
    # the reference's example: DATETIME2 "2018-06-20 15:13:16.945104" as MicroTimestamp
    (col("datetime2", 8, 26, 6), datetime(2018, 6, 20, 15, 13, 16, 945104),
     ("int64", "io.debezium.time.MicroTimestamp", None), 1529507596945104),
    (col("datetime2", 8, 27, 7), "2018-06-20 15:13:16.9451041",
     ("int64", "io.debezium.time.NanoTimestamp", None), 1529507596945104100),
    (col("datetime2", 8, 27, 7), datetime(1969, 12, 31, 23, 59, 59, 999999),
     ("int64", "io.debezium.time.NanoTimestamp", None), -1000),
    (col("decimal", 9, 10, 2), Decimal("-12.34"), ("bytes", DEC, {"scale": "2", "connect.decimal.precision": "10"}),
     "+y4="),
    (col("numeric", 5, 5, 0), Decimal("255"), ("bytes", DEC, {"scale": "0", "connect.decimal.precision": "5"}), "AP8="),
    (col("money", 8, 19, 4), Decimal("12.3400"), ("bytes", DEC, {"scale": "4", "connect.decimal.precision": "19"}),
     "AeII"),
    (col("smallmoney", 4, 10, 4), Decimal("-0.0001"),
     ("bytes", DEC, {"scale": "4", "connect.decimal.precision": "10"}), "/w=="),
    (col("uniqueidentifier", 16), "6F9619FF-8B86-D011-B42D-00C04FC964FF", ("string", None, None),
     "6F9619FF-8B86-D011-B42D-00C04FC964FF"),
    (col("uniqueidentifier", 16), uuid.UUID("6f9619ff-8b86-d011-b42d-00c04fc964ff"), ("string", None, None),
     "6F9619FF-8B86-D011-B42D-00C04FC964FF"),
    (col("binary", 2), b"\x01\x02", ("bytes", None, None), "AQI="),
    (col("varbinary", -1), b"\xff" * 3, ("bytes", None, None), "////"),
]


@pytest.mark.parametrize("column, value, schema, expected", CASES,
                         ids=[f"{c[0].type_name}-{i}" for i, c in enumerate(CASES)])
def test_default_modes(column: SqlColumn, value: Any, schema: tuple[str, str | None, dict[str, str] | None],
                       expected: Any) -> None:
    modes = TypeModes()
    got = field_schema(column, modes)
    type_, name, parameters = schema
    assert got["type"] == type_ and got["optional"] is True
    assert got.get("name") == name
    assert got.get("parameters") == parameters
    if name is not None:
        assert got["version"] == 1
    assert converter(column, modes)(value) == expected


@pytest.mark.parametrize("mode, column, value, schema_type, expected", [
    ("double", col("decimal", 9, 10, 2), Decimal("-12.34"), "double", -12.34),
    ("double", col("money", 8, 19, 4), Decimal("12.3400"), "double", 12.34),
    ("double", col("smallmoney", 4, 10, 4), Decimal("1.5"), "double", 1.5),
    ("string", col("numeric", 9, 10, 3), Decimal("-12.3"), "string", "-12.300"),
    ("string", col("money", 8, 19, 4), Decimal("12.34"), "string", "12.3400"),
])
def test_decimal_handling_modes(mode: str, column: SqlColumn, value: Decimal, schema_type: str, expected: Any) -> None:
    modes = TypeModes(decimal_handling_mode=mode)
    assert field_schema(column, modes) == {"type": schema_type, "optional": True}
    assert converter(column, modes)(value) == expected


@pytest.mark.parametrize("column, value, schema, expected", [
    (col("date", 3, 10), date(2018, 6, 20), ("int32", "org.apache.kafka.connect.data.Date"), 17702),
    (col("time", 5, 16, 7), "15:13:16.9451041", ("int32", "org.apache.kafka.connect.data.Time"), 54796945),
    (col("datetime", 8, 23, 3), datetime(2018, 6, 20, 15, 13, 16, 947000),
     ("int64", "org.apache.kafka.connect.data.Timestamp"), 1529507596947),
    (col("smalldatetime", 4, 16, 0), datetime(2018, 6, 20, 15, 13),
     ("int64", "org.apache.kafka.connect.data.Timestamp"), 1529507580000),
    (col("datetime2", 8, 27, 7), "2018-06-20 15:13:16.9451041",
     ("int64", "org.apache.kafka.connect.data.Timestamp"), 1529507596945),
    (col("datetimeoffset", 10, 34, 7), "2019-01-01 12:34:56.1234567 +02:00",
     ("string", "io.debezium.time.ZonedTimestamp"), "2019-01-01T10:34:56.1234567Z"),
])
def test_time_precision_mode_connect(column: SqlColumn, value: Any, schema: tuple[str, str], expected: Any) -> None:
    modes = TypeModes(time_precision_mode="connect")
    got = field_schema(column, modes)
    assert (got["type"], got["name"]) == schema
    assert converter(column, modes)(value) == expected


@pytest.mark.parametrize("mode, expected", [("hex", "0102ff"), ("base64-url-safe", "AQL_"), ("base64", "AQL/")])
def test_binary_handling_modes(mode: str, expected: str) -> None:
    modes = TypeModes(binary_handling_mode=mode)
    assert field_schema(col("varbinary", 10), modes)["type"] == "string"
    assert converter(col("varbinary", 10), modes)(b"\x01\x02\xff") == expected


@pytest.mark.parametrize("column, json", [
    (SqlColumn("id", "int", 1, 4, 10, 0, nullable=False, identity=True),
     {"jdbcType": 4, "typeName": "int identity", "typeExpression": "int identity", "length": 10, "scale": 0,
      "optional": False, "autoIncremented": False}),
    (SqlColumn("first_name", "varchar", 2, 255, 0, 0, nullable=False),
     {"jdbcType": 12, "typeName": "varchar", "length": 255, "optional": False}),
    (SqlColumn("price", "decimal", 3, 9, 10, 2), {"jdbcType": 3, "length": 10, "scale": 2}),
    (SqlColumn("note", "nvarchar", 4, -1, 0, 0), {"jdbcType": -9, "length": 1073741823}),
    (SqlColumn("name", "nchar", 5, 20, 0, 0), {"jdbcType": -15, "length": 10}),
    (SqlColumn("at", "datetime2", 6, 8, 27, 7), {"jdbcType": 93, "length": 27, "scale": 7}),
    (SqlColumn("at", "datetimeoffset", 7, 10, 34, 7), {"jdbcType": -155, "length": 34, "scale": 7}),
    (SqlColumn("t", "time", 8, 3, 8, 0), {"jdbcType": 92, "length": 8, "scale": 0}),
    (SqlColumn("d", "date", 9, 3, 10, 0, default="(getdate())"),
     {"jdbcType": 91, "length": 10, "defaultValueExpression": "(getdate())", "hasDefaultValue": True}),
    (SqlColumn("m", "money", 10, 8, 19, 4), {"jdbcType": 3, "length": 19, "scale": 4}),
])
def test_table_changes_column(column: SqlColumn, json: dict[str, Any]) -> None:
    out = table_column(column).to_json()
    for key, value in json.items():
        assert out[key] == value, key
    if "scale" not in json and column.type_name in ("varchar", "nvarchar", "nchar"):
        assert "scale" not in out  # unset: left out of the history JSON


ALL_TYPES = [  # (sys.columns row, driver value, expected event value)
    (sys_column("id", 1, "int", 4, 10, 0, False), 1, 1),
    (sys_column("b", 2, "bit", 1, 1, 0, True), False, False),
    (sys_column("ti", 3, "tinyint", 1, 3, 0, True), 7, 7),
    (sys_column("r", 4, "real", 4, 24, 0, True), 0.30000001192092896, 0.3),
    (sys_column("dec", 5, "decimal", 9, 18, 4, True), Decimal("1.5000"), "Opg="),
    (sys_column("nv", 6, "nvarchar", 100, 0, 0, True), "zß", "zß"),
    (sys_column("x", 7, "xml", -1, 0, 0, True), "<x/>", "<x/>"),
    (sys_column("dto", 8, "datetimeoffset", 10, 34, 7, True), "2024-02-29 23:59:59.9999999 -05:00",
     "2024-03-01T04:59:59.9999999Z"),
    (sys_column("d", 9, "date", 3, 10, 0, True), date(2024, 2, 29), 19782),
    (sys_column("t", 10, "time", 5, 16, 7, True), "23:59:59.9999999", 86399999999900),
    (sys_column("dt2", 11, "datetime2", 8, 27, 7, True), "2024-02-29 23:59:59.9999999", 1709251199999999900),
    (sys_column("g", 12, "uniqueidentifier", 16, 0, 0, True), "0E984725-C51C-4BF4-9960-E1C80E27ABA0",
     "0E984725-C51C-4BF4-9960-E1C80E27ABA0"),
    (sys_column("vb", 13, "varbinary", 8, 0, 0, True), b"\x00\x01", "AAE="),
    (sys_column("n", 14, "int", 4, 10, 0, True), None, None),
]


def test_every_type_through_a_change_table_row() -> None:
    columns = [c for c, _, _ in ALL_TYPES]
    instance = Instance("dbo", "all_types", "dbo_all_types", "00000020:00000100:0001", 1001, 901,
                        [c["name"] for c in columns], ["id"])
    instance.rows = [ct_row("00000030:00000010:0003", "00000030:00000010:0002", 2, b"\xff\x3f", 1,
                            "2024-03-01 00:00:00.0000000 +00:00", **{c["name"]: v for c, v, _ in ALL_TYPES})]
    db = RecordedDatabase(max_lsn="00000030:00000020:0001", instances=[instance],
                          object_columns={901: columns, 1001: change_table_columns(columns)},
                          min_lsns={"dbo_all_types": instance.start_lsn})
    server = FakeServer(db)
    source = SqlServerSource(Config({"topic.prefix": "s", "database.names": "testDB"}), connect=server.connect,
                             clock=lambda: 0, sleep=lambda s: None)
    offset = {"databases": {"testDB": {"commit_lsn": "00000030:00000000:0001"}}}
    for batch in source.stream(offset):
        if batch.events:
            event = batch.events[0]
            break
    assert event.value["after"] == {c["name"]: expected for c, _, expected in ALL_TYPES}
    assert event.value["source"]["ts_ms"] == 1709251200000
    fields = {f["field"]: f for f in event.value_schema.fields[1]["fields"]}
    assert fields["id"]["optional"] is False and fields["n"]["optional"] is True
    assert fields["dto"]["name"] == "io.debezium.time.ZonedTimestamp"
    assert fields["t"]["name"] == "io.debezium.time.NanoTime"
