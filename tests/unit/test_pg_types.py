"""PostgreSQL text values -> Debezium schemas and values, without a server.

The first part replays Debezium 3.6's own output (shared/reference/debezium/pg-types.jsonl):
every column schema must print as the same JSON text, and every value of the three inserts and
the update must come out equal (and of the same JSON type). The text inputs are what the server
(PostgreSQL 15, TimeZone UTC, and again Asia/Kolkata) printed for pg-types.sql.
The rest covers the other handling modes and the text forms the reference does not reach.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cdc.core.errors import ConfigError
from cdc.sources.postgres.types import (
    PgType,
    TypeModes,
    TypeRegistry,
    builtin_type,
    field_schema,
    parse_array,
    text_converter,
)

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "debezium" / "pg-types.jsonl"
PRECISE = TypeModes()
MOOD = PgType(21035, "mood", "E", "e", ("sad", "ok", "happy"), schema="public")


def numeric_typmod(precision: int, scale: int) -> int:
    return ((precision << 16) | (scale & 0x7FF)) + 4


NUMERIC_10_2 = numeric_typmod(10, 2)

# Columns of pg-types.sql: (name, type, atttypmod) as the server reports them.
COLUMNS: list[tuple[str, PgType, int]] = [
    (name, MOOD if oid == 0 else builtin_type(oid), typmod)  # type: ignore[misc]
    for name, oid, typmod in [
        ("id", 23, -1), ("c_bool", 16, -1), ("c_int2", 21, -1), ("c_int4", 23, -1), ("c_int8", 20, -1),
        ("c_float4", 700, -1), ("c_float8", 701, -1), ("c_numeric", 1700, 655366), ("c_numeric_u", 1700, -1),
        ("c_varchar", 1043, 54), ("c_text", 25, -1), ("c_bytea", 17, -1), ("c_date", 1082, -1),
        ("c_time", 1083, -1), ("c_timetz", 1266, -1), ("c_timestamp", 1114, -1), ("c_timestamptz", 1184, -1),
        ("c_interval", 1186, -1), ("c_uuid", 2950, -1), ("c_json", 114, -1), ("c_jsonb", 3802, -1),
        ("c_inet", 869, -1), ("c_money", 790, -1), ("c_enum", 0, -1), ("c_int_arr", 1007, -1),
    ]
]

# COPY ... TO STDOUT of the table after the inserts and after the update, COPY-unescaped
# (DateStyle ISO, IntervalStyle postgres, TimeZone UTC, bytea_output hex, extra_float_digits 1).
ROW_1 = [
    "1", "t", "32767", "2147483647", "9223372036854775807", "3.14", "2.718281828459045", "12345678.90",
    "3.14159265358979323846264338327950288", 'héllo "quoted"', "multi\nline text", "\\xdeadbeef00", "2024-02-29",
    "13:45:30.123456", "13:45:30.5+05:30", "2024-02-29 13:45:30.123456", "2024-02-29 11:45:30.123456+00",
    "1 year 2 mons 3 days 04:05:06.789", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", '{"a": 1, "b": [1, 2]}',
    '{"a": 1, "b": [1, 2]}', "192.168.1.0/24", "$1,234.56", "happy", "{1,2,3}",
]
ROW_2 = [
    "2", "f", "-32768", "-2147483648", "-9223372036854775808", "-1.5e-10", "-1e+308", "-0.01",
    "-123456789012345678901234567890.123456789", "", "", "\\x", "1970-01-01", "00:00:00", "00:00:00+00",
    "1970-01-01 00:00:00", "1970-01-01 00:00:00+00", "-1 days -00:00:01", "00000000-0000-0000-0000-000000000000",
    "[]", "{}", "::1", "-$0.99", "sad", "{}",
]
ROW_3 = ["3"] + [None] * 24
ROW_2_UPDATED = [
    "2", "f", "-32768", "-2147483648", "-9223372036854775808", "-1.5e-10", "Infinity", "1.50", "NaN", "",
    "updated", "\\x", "1970-01-01", "00:00:00", "00:00:00+00", "1970-01-01 00:00:00",
    "9999-12-31 23:59:59.999999+00", "-1 days -00:00:01", "00000000-0000-0000-0000-000000000000", "[]", "{}",
    "::1", "-$0.99", "ok", "{4,NULL,6}",
]
# The same timestamptz values as a server with TimeZone=Asia/Kolkata prints them.
KOLKATA = {
    "2024-02-29 11:45:30.123456+00": "2024-02-29 17:15:30.123456+05:30",
    "1970-01-01 00:00:00+00": "1970-01-01 05:30:00+05:30",
    "9999-12-31 23:59:59.999999+00": "10000-01-01 05:29:59.999999+05:30",
}


def reference_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REFERENCE.read_text().splitlines()]


def unscaled(b64: str) -> int:
    return int.from_bytes(base64.b64decode(b64), "big", signed=True)


def convert(oid: int, text: str, typmod: int = -1, modes: TypeModes = PRECISE) -> Any:
    pg_type = builtin_type(oid)
    assert pg_type is not None
    return text_converter(pg_type, typmod, modes)(text)


def schema(oid: int, typmod: int = -1, modes: TypeModes = PRECISE) -> dict[str, Any]:
    pg_type = builtin_type(oid)
    assert pg_type is not None
    return field_schema(pg_type, typmod, True, modes)


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: no True == 1, no 1 == 1.0 for ints."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# ---- the reference ----------------------------------------------------------------------------

@pytest.mark.skipif(not REFERENCE.exists(), reason=f"reference records not found at {REFERENCE}")
class TestReference:
    def test_every_field_schema_prints_as_debezium_does(self) -> None:
        records = reference_records()
        value_schema = records[0]["value"]["schema"]
        before, after = value_schema["fields"][0]["fields"], value_schema["fields"][1]["fields"]
        assert before == after
        assert [f["field"] for f in after] == [name for name, _, _ in COLUMNS]
        for (name, pg_type, typmod), expected in zip(COLUMNS, after, strict=True):
            got = {**field_schema(pg_type, typmod, name != "id", PRECISE), "field": name}
            assert got == expected, name
            assert list(got) == list(expected), name  # key order, as the converter prints it
            assert json.dumps(got) == json.dumps(expected), name  # nested key order too
        key_field = records[0]["key"]["schema"]["fields"][0]
        assert {**field_schema(COLUMNS[0][1], -1, False, PRECISE), "field": "id"} == key_field

    @pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
    def test_every_value_of_every_row(self, zone: str) -> None:
        records = reference_records()
        expected_rows = [r["value"]["payload"]["after"] for r in records[:4]]
        assert [r["value"]["payload"]["op"] for r in records[:4]] == ["c", "c", "c", "u"]
        converters = [text_converter(t, typmod, PRECISE) for _, t, typmod in COLUMNS]
        for texts, expected in zip([ROW_1, ROW_2, ROW_3, ROW_2_UPDATED], expected_rows, strict=True):
            if zone != "UTC":
                texts = [KOLKATA.get(t, t) if name == "c_timestamptz" else t
                         for (name, _, _), t in zip(COLUMNS, texts, strict=True)]
            got = {name: None if text is None else convert_(text)
                   for (name, _, _), convert_, text in zip(COLUMNS, converters, texts, strict=True)}
            for name in expected:
                assert same_json(got[name], expected[name]), (name, got[name], expected[name])
            assert list(got) == list(expected)

    def test_delete_before_is_the_null_row(self) -> None:
        delete = reference_records()[4]["value"]["payload"]
        assert delete["op"] == "d" and delete["before"] == {"id": 3, **{n: None for n, _, _ in COLUMNS[1:]}}


# ---- numbers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, expected", [("precise", 1234567890), ("double", 12345678.9), ("string", "12345678.90")])
def test_numeric_modes(mode: str, expected: object) -> None:
    value = convert(1700, "12345678.90", NUMERIC_10_2, TypeModes(decimal_handling_mode=mode))
    assert (unscaled(value) if mode == "precise" else value) == expected
    kind = schema(1700, NUMERIC_10_2, TypeModes(decimal_handling_mode=mode))
    assert kind == {"type": {"precise": "bytes", "double": "double", "string": "string"}[mode], "optional": True,
                    **({"name": "org.apache.kafka.connect.data.Decimal", "version": 1,
                        "parameters": {"scale": "2", "connect.decimal.precision": "10"}} if mode == "precise" else {})}


def test_numeric_unconstrained_modes() -> None:
    double, string = TypeModes(decimal_handling_mode="double"), TypeModes(decimal_handling_mode="string")
    assert schema(1700, modes=double) == {"type": "double", "optional": True}
    assert schema(1700, modes=string) == {"type": "string", "optional": True}
    assert convert(1700, "-123.4500", modes=double) == -123.45
    assert convert(1700, "-123.4500", modes=string) == "-123.4500"  # toPlainString keeps the scale
    # SpecialValueDecimal: Jackson's NaN/Infinity strings in double mode, enum names in string mode
    assert [convert(1700, t, modes=double) for t in ("NaN", "Infinity", "-Infinity")] == \
        ["NaN", "Infinity", "-Infinity"]
    assert [convert(1700, t, modes=string) for t in ("NaN", "Infinity", "-Infinity")] == \
        ["NAN", "POSITIVE_INFINITY", "NEGATIVE_INFINITY"]
    assert convert(1700, "1" + "0" * 400, modes=double) == "Infinity"


def test_numeric_precise_edges() -> None:
    assert unscaled(convert(1700, "-0.01", NUMERIC_10_2)) == -1
    assert unscaled(convert(1700, "0.00", NUMERIC_10_2)) == 0
    assert unscaled(convert(1700, "128.00", NUMERIC_10_2)) == 12800
    assert convert(1700, "-128.00", NUMERIC_10_2) == base64.b64encode(b"\xce\x00").decode()
    assert convert(1700, "1.5", NUMERIC_10_2) == "AJY="  # a value short of the scale is rescaled
    assert convert(1700, "NaN", NUMERIC_10_2) is None  # Debezium: conversion error logged, null
    assert unscaled(convert(1700, "12345", numeric_typmod(5, 0))) == 12345
    assert schema(1700, numeric_typmod(5, -2))["parameters"] == {"scale": "-2", "connect.decimal.precision": "5"}
    assert unscaled(convert(1700, "12300", numeric_typmod(5, -2))) == 123


def test_variable_scale_decimal_strips_trailing_zeros() -> None:
    def variable(text: str) -> tuple[int, int]:
        value = convert(1700, text)
        return value["scale"], unscaled(value["value"])
    assert variable("-123.4500") == (2, -12345)
    assert variable("0.00000000000000000001") == (20, 1)
    assert variable("100") == (0, 100)  # negative scales are set back to 0
    assert variable("0.000") == (0, 0) and convert(1700, "0.000")["value"] == "AA=="
    assert [convert(1700, t) for t in ("NaN", "Infinity", "-Infinity")] == [None, None, None]


@pytest.mark.parametrize("text, fraction_digits, expected", [
    ("$1,234.56", 2, "1234.56"), ("-$0.99", 2, "-0.99"), ("($5.00)", 2, "-5.00"), ("$0.00", 2, "0.00"),
    ("-$92,233,720,368,547,758.08", 2, "-92233720368547758.08"), ("1.234,56 €", 2, "1234.56"),
    ("-1 234,56 zł", 2, "-1234.56"), ("¥1,235", 0, "1235"), ("kr. 12.345,50", 2, "12345.50"),
    ("Fr. 1'234.50", 2, "1234.50"), ("1.234,567 KD", 3, "1234.567"), ("-0,01 €", 2, "-0.01"),
])
def test_money_text_forms(text: str, fraction_digits: int, expected: str) -> None:
    string = TypeModes(decimal_handling_mode="string", money_fraction_digits=fraction_digits)
    assert convert(790, text, modes=string) == expected
    precise = TypeModes(money_fraction_digits=fraction_digits)
    assert unscaled(convert(790, text, modes=precise)) == int(expected.replace(".", ""))
    assert convert(790, text, modes=TypeModes(decimal_handling_mode="double", money_fraction_digits=fraction_digits)) \
        == float(expected)


def test_money_schemas() -> None:
    assert schema(790) == {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
                           "version": 1, "parameters": {"scale": "2"}}
    assert schema(790, modes=TypeModes(money_fraction_digits=0))["parameters"] == {"scale": "0"}
    assert schema(790, modes=TypeModes(decimal_handling_mode="double")) == {"type": "double", "optional": True}
    assert schema(790, modes=TypeModes(decimal_handling_mode="string")) == {"type": "string", "optional": True}
    # more fraction digits than money_fraction_digits: setScale(2, HALF_UP)
    assert unscaled(convert(790, "1,234.565 KD", modes=PRECISE)) == 123457


@pytest.mark.parametrize("text, expected", [
    ("3.14", 3.14), ("3.1400001", 3.14), ("3.14000010490417", 3.14), ("-1.5e-10", -1.5e-10), ("0.1", 0.1),
    ("1.6777216e+07", 16777216.0), ("16777217", 16777216.0), ("3.4028235e+38", 3.4028235e38),
    ("1.2345679e+08", 123456790.0), ("1e-45", 1.4e-45), ("1.4e-45", 1.4e-45), ("1e-40", 1e-40), ("-0", -0.0),
    ("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"),
])
def test_float4_prints_like_java(text: str, expected: Any) -> None:
    got = convert(700, text)
    assert same_json(got, expected) and repr(got) == repr(expected)


def test_float8() -> None:
    assert convert(701, "2.718281828459045") == 2.718281828459045
    assert convert(701, "-1e+308") == -1e308
    assert [convert(701, t) for t in ("NaN", "Infinity", "-Infinity")] == ["NaN", "Infinity", "-Infinity"]
    assert schema(701) == {"type": "double", "optional": True} and schema(700) == {"type": "float", "optional": True}


def test_integers_bool_oid() -> None:
    assert convert(21, "-32768") == -32768 and schema(21) == {"type": "int16", "optional": True}
    assert convert(20, "9223372036854775807") == 2**63 - 1 and schema(20)["type"] == "int64"
    assert convert(26, "4294967295") == 4294967295 and schema(26) == {"type": "int64", "optional": True}
    assert convert(16, "t") is True and convert(16, "f") is False
    assert schema(16) == {"type": "boolean", "optional": True}


# ---- strings and binary -----------------------------------------------------------------------

@pytest.mark.parametrize("mode, expected", [
    ("bytes", "3q2+7wA="), ("base64", "3q2+7wA="), ("hex", "deadbeef00"), ("base64-url-safe", "3q2-7wA="),
])
def test_binary_modes(mode: str, expected: str) -> None:
    modes = TypeModes(binary_handling_mode=mode)
    assert convert(17, "\\xdeadbeef00", modes=modes) == expected
    assert convert(17, "\\336\\255\\276\\357\\000", modes=modes) == expected  # bytea_output=escape
    assert convert(17, "\\x", modes=modes) == ""
    assert schema(17, modes=modes) == {"type": "bytes" if mode == "bytes" else "string", "optional": True}


def test_escape_bytea_backslashes_and_plain_bytes() -> None:
    assert base64.b64decode(convert(17, "a\\\\b\\001")) == b"a\\b\x01"


def test_bits() -> None:
    assert schema(1560, 1) == {"type": "boolean", "optional": True}
    assert convert(1560, "1", 1) is True and convert(1560, "0", 1) is False
    assert schema(1560, 24) == {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1,
                                "parameters": {"length": "24"}}
    assert base64.b64decode(convert(1560, "000000110000001000000001", 24)) == b"\x01\x02\x03"  # little-endian
    assert base64.b64decode(convert(1560, "1" + "0" * 63, 64)) == b"\x00" * 7 + b"\x80"
    assert schema(1562)["parameters"] == {"length": "2147483647"}  # varbit without a length
    assert base64.b64decode(convert(1562, "101")) == b"\x05" and convert(1562, "") == ""


@pytest.mark.parametrize("oid, text, name", [
    (1043, "héllo", None), (1042, "ab   ", None), (18, "a", None), (19, "abc", None), (869, "::1", None),
    (650, "10.0.0.0/8", None), (829, "08:00:2b:01:02:03", None), (774, "08:00:2b:01:02:03:04:05", None),
    (2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "io.debezium.data.Uuid"),
    (114, '{"a": 1}', "io.debezium.data.Json"), (3802, '{"a": 1}', "io.debezium.data.Json"),
    (142, "<a>1</a>", "io.debezium.data.Xml"), (3614, "'a' 'cat' 'fat'", "io.debezium.data.Tsvector"),
])
def test_strings(oid: int, text: str, name: str | None) -> None:
    assert convert(oid, text) == text
    expected: dict[str, Any] = {"type": "string", "optional": True}
    if name:
        expected.update(name=name, version=1)
    assert schema(oid) == expected


def test_enum_domain_and_fallback() -> None:
    assert field_schema(MOOD, -1, False, PRECISE) == {
        "type": "string", "optional": False, "name": "io.debezium.data.Enum", "version": 1,
        "parameters": {"allowed": "sad,ok,happy"}}
    assert text_converter(MOOD, -1, PRECISE)("ok") == "ok"
    numeric = builtin_type(1700)
    price = PgType(901, "price", "N", "d", base=numeric, base_typmod=NUMERIC_10_2, schema="public")
    assert field_schema(price, -1, True, PRECISE)["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert unscaled(text_converter(price, -1, PRECISE)("2.50")) == 250
    discount = PgType(902, "discount", "N", "d", base=price, schema="public")  # a domain over a domain
    assert unscaled(text_converter(discount, -1, PRECISE)("-0.05")) == -5
    assert field_schema(discount, -1, True, TypeModes(decimal_handling_mode="string")) == \
        {"type": "string", "optional": True}
    amount = PgType(903, "amount", "N", "d", base=numeric, schema="public")  # domain over plain numeric
    assert field_schema(amount, -1, True, PRECISE)["name"] == "io.debezium.data.VariableScaleDecimal"
    for as_text in (PgType(3904, "int4range", "R", "r"), PgType(22, "int2vector", "A", "b", element=builtin_type(21)),
                    PgType(70000, "pair", "C", "c", schema="public")):
        assert field_schema(as_text, -1, True, PRECISE) == {"type": "string", "optional": True}
        assert text_converter(as_text, -1, PRECISE)("(1,2)") == "(1,2)"
    # base types Debezium has no mapping for: left out, or (include.unknown.datatypes) their text's bytes
    box = PgType(603, "box", "G", "b")
    assert field_schema(box, -1, True, PRECISE) is None
    with_unknown = TypeModes(include_unknown_datatypes=True)
    assert field_schema(box, -1, True, with_unknown) == {"type": "bytes", "optional": True}
    assert text_converter(box, -1, with_unknown)("(1,1),(0,0)") == base64.b64encode(b"(1.0,1.0),(0.0,0.0)").decode()
    hex_unknown = TypeModes(include_unknown_datatypes=True, binary_handling_mode="hex")
    assert text_converter(PgType(3615, "tsquery", "U", "b"), -1, hex_unknown)("'a'") == "276127"
    point = PgType(600, "point", "G", "b")
    assert field_schema(point, -1, True, PRECISE)["name"] == "io.debezium.data.geometry.Point"
    assert text_converter(point, -1, PRECISE)("(1.5,-2.25)") == {"x": 1.5, "y": -2.25,
                                                               "wkb": "AQEAAAAAAAAAAAD4PwAAAAAAAALA", "srid": None}


# ---- dates and times --------------------------------------------------------------------------

def test_date() -> None:
    assert convert(1082, "2024-02-29") == 19782
    assert convert(1082, "1970-01-01") == 0
    assert convert(1082, "0001-01-01") == -719162
    # proleptic Gregorian, 44 BC = year -43 (PostgreSQL: date - 1970-01-01)
    assert convert(1082, "0044-03-15 BC") == -735160
    assert convert(1082, "5874897-12-31") == 2145042905
    # Debezium's LocalDate for +/-infinity (-5877611-06-21 / -22) in epoch days
    assert (convert(1082, "infinity"), convert(1082, "-infinity")) == (-2147472692, -2147472691)
    assert schema(1082) == {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1}


def test_time_adaptive() -> None:
    assert convert(1083, "13:45:30.123456") == 49530123456
    assert convert(1083, "24:00:00") == 86_400_000_000
    assert convert(1083, "13:45:30.123", typmod=3) == 49530123
    assert convert(1083, "13:45:30", typmod=0) == 49530000
    assert schema(1083, typmod=3) == {"type": "int32", "optional": True, "name": "io.debezium.time.Time", "version": 1}
    assert schema(1083, typmod=4)["name"] == "io.debezium.time.MicroTime"
    assert schema(1083) == {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "version": 1}


def test_timestamp_adaptive() -> None:
    assert convert(1114, "2024-02-29 13:45:30.123456") == 1709214330123456
    assert convert(1114, "2024-02-29 13:45:30.123", typmod=3) == 1709214330123
    assert schema(1114, typmod=3) == {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp",
                                      "version": 1}
    assert convert(1114, "1936-10-25 22:10:12.608") == -1047174587392000
    assert convert(1114, "1969-12-31 23:59:59.9995", typmod=3) == -1  # floor, like Instant.toEpochMilli
    assert convert(1114, "4713-12-31 23:59:59.999999 BC") == -210831897600000001  # Debezium's own test value
    assert convert(1114, "294276-12-31 23:59:59.999999") == 2**63 - 1  # past int64: saturated (Debezium overflows)
    assert convert(1114, "0044-03-15 12:00:00.5 BC") == -63517780799500000  # = extract(epoch) on the server
    # pgjdbc's DATE_POSITIVE/NEGATIVE_INFINITY, in microseconds or milliseconds
    assert (convert(1114, "infinity"), convert(1114, "-infinity")) == (9223372036825200000, -9223372036832400000)
    assert convert(1114, "infinity", typmod=3) == 9223372036825200


@pytest.mark.parametrize("text, expected", [
    ("2024-02-29 11:45:30.123456+00", "2024-02-29T11:45:30.123456Z"),
    ("2024-02-29 13:45:30.5+02", "2024-02-29T11:45:30.500000Z"),
    ("2024-02-29 17:15:30.123456+05:30", "2024-02-29T11:45:30.123456Z"),
    ("2024-02-29 08:15:30.123456-03:30", "2024-02-29T11:45:30.123456Z"),
    ("2024-03-01 01:15:00+05:30", "2024-02-29T19:45:00.000000Z"),
    ("1900-01-01 05:21:10+05:21:10", "1900-01-01T00:00:00.000000Z"),  # LMT offsets carry seconds
    ("10000-01-01 05:29:59.999999+05:30", "9999-12-31T23:59:59.999999Z"),
    ("294276-12-31 23:59:59.999999+00", "+294276-12-31T23:59:59.999999Z"),
    ("21016-11-04 13:51:30+07", "+21016-11-04T06:51:30.000000Z"),
    ("4714-12-31 23:59:59.999999+00 BC", "-4713-12-31T23:59:59.999999Z"),
    ("0001-01-01 00:00:00+00 BC", "0000-01-01T00:00:00.000000Z"),
    ("infinity", "infinity"), ("-infinity", "-infinity"),
])
def test_timestamptz(text: str, expected: str) -> None:
    assert convert(1184, text) == expected


def test_timestamptz_precision() -> None:
    assert convert(1184, "2024-02-29 11:45:30.123+00", typmod=3) == "2024-02-29T11:45:30.123Z"
    assert convert(1184, "2024-02-29 13:45:30.1+02", typmod=3) == "2024-02-29T11:45:30.100Z"
    assert convert(1184, "2024-02-29 11:45:30+00", typmod=0) == "2024-02-29T11:45:30Z"
    assert convert(1184, "2024-02-29 17:15:30+05:30", typmod=0) == "2024-02-29T11:45:30Z"
    assert schema(1184, typmod=3) == {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp",
                                      "version": 1}


@pytest.mark.parametrize("text, expected", [
    ("13:45:30.5+05:30", "08:15:30.5Z"), ("00:00:00+00", "00:00:00Z"), ("23:30:00-02", "01:30:00Z"),
    ("13:51:30.123789+02", "11:51:30.123789Z"), ("13:51:30.120+02:00", "11:51:30.12Z"),
    ("00:00:00.000001+00:00:10", "23:59:50.000001Z"),
])
def test_timetz(text: str, expected: str) -> None:
    assert convert(1266, text) == expected
    assert schema(1266) == {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTime", "version": 1}


def test_connect_mode() -> None:
    connect = TypeModes(time_precision_mode="connect")
    assert schema(1082, modes=connect) == {"type": "int32", "optional": True,
                                           "name": "org.apache.kafka.connect.data.Date", "version": 1}
    assert convert(1082, "2024-02-29", modes=connect) == 19782
    assert schema(1083, modes=connect) == {"type": "int32", "optional": True,
                                           "name": "org.apache.kafka.connect.data.Time", "version": 1}
    assert convert(1083, "13:45:30.123456", modes=connect) == 49530123
    assert schema(1114, modes=connect) == {"type": "int64", "optional": True,
                                           "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}
    assert convert(1114, "1970-01-01 00:00:01.5", modes=connect) == 1500
    assert convert(1114, "2024-02-29 13:45:30.123456", modes=connect) == 1709214330123
    assert schema(1184, modes=connect)["name"] == "io.debezium.time.ZonedTimestamp"
    assert convert(1266, "13:45:30.5+05:30", modes=connect) == "08:15:30.5Z"


def test_adaptive_time_microseconds_mode() -> None:
    micro = TypeModes(time_precision_mode="adaptive_time_microseconds")
    assert convert(1083, "00:00:01.5", typmod=3, modes=micro) == 1500000
    assert schema(1083, typmod=3, modes=micro)["name"] == "io.debezium.time.MicroTime"
    assert schema(1114, typmod=3, modes=micro)["name"] == "io.debezium.time.Timestamp"  # timestamps stay adaptive
    assert convert(1114, "1970-01-01 00:00:01.5", typmod=3, modes=micro) == 1500
    assert convert(1114, "1970-01-01 00:00:01.5", modes=micro) == 1500000


def test_microseconds_nanoseconds_isostring_modes() -> None:
    micros, nanos, iso = (TypeModes(time_precision_mode=m) for m in ("microseconds", "nanoseconds", "isostring"))
    assert schema(1114, typmod=3, modes=micros)["name"] == "io.debezium.time.MicroTimestamp"
    assert convert(1114, "1970-01-01 00:00:01.5", typmod=3, modes=micros) == 1500000
    assert schema(1083, modes=nanos) == {"type": "int64", "optional": True, "name": "io.debezium.time.NanoTime",
                                         "version": 1}
    assert convert(1083, "00:00:01.5", modes=nanos) == 1_500_000_000
    assert convert(1114, "1970-01-01 00:00:01.5", modes=nanos) == 1_500_000_000
    assert convert(1114, "infinity", modes=nanos) == 2**63 - 1
    assert convert(1114, "3000-01-01 00:00:00", modes=nanos) is None  # beyond int64 nanoseconds
    assert schema(1082, modes=iso) == {"type": "string", "optional": True, "name": "io.debezium.time.IsoDate",
                                       "version": 1}
    assert convert(1082, "2024-02-29", modes=iso) == "2024-02-29Z"
    assert convert(1083, "13:45:30.5", modes=iso) == "13:45:30.5Z"
    assert convert(1083, "24:00:00", modes=iso) == "00:00:00Z"
    assert convert(1114, "2024-02-29 13:45:30", modes=iso) == "2024-02-29T13:45:30Z"
    assert convert(1114, "infinity", modes=iso) == "+294247-01-10T04:00:25.2Z"  # Debezium's own test value
    assert convert(1114, "-infinity", modes=iso) == "-290308-12-21T19:59:27.6Z"


# ---- intervals --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("1 year 2 mons 3 days 04:05:06.789", 37091106789000),
    ("-1 days -00:00:01", -86401000000),
    ("-3 mons +2 days -01:00:00", -7720200000000),
    ("11 mons", 28927800000000),
    ("-00:00:00.5", -500000),
    ("100:00:00", 360000000000),
    ("00:00:00", 0),
    ("-1 years -2 mons +3 days -04:05:06.789", -36572706789000),
    ("P1Y2M3DT4H5M6.789S", 37091106789000),  # IntervalStyle iso_8601
    ("P-1DT-1S", -86401000000),
    ("@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs", 37091106789000),  # postgres_verbose
    ("@ 1 day 1 sec ago", -86401000000),
])
def test_interval_numeric(text: str, expected: int) -> None:
    assert convert(1186, text) == expected


@pytest.mark.parametrize("text, expected", [
    ("1 year 2 mons 3 days 04:05:06.789", "P1Y2M3DT4H5M6.789S"),
    ("-1 days -00:00:01", "P0Y0M-1DT0H0M-1S"),
    ("00:00:00", "P0Y0M0DT0H0M0S"),
    ("00:00:01.5", "P0Y0M0DT0H0M1.5S"),
    ("-00:00:00.5", "P0Y0M0DT0H0M-0.5S"),
    ("14 mons", "P0Y14M0DT0H0M0S"),
])
def test_interval_string(text: str, expected: str) -> None:
    string = TypeModes(interval_handling_mode="string")
    assert convert(1186, text, modes=string) == expected
    assert schema(1186, modes=string) == {"type": "string", "optional": True, "name": "io.debezium.time.Interval",
                                          "version": 1}


# ---- arrays -----------------------------------------------------------------------------------

def test_parse_array() -> None:
    assert parse_array('{"a b","c\\"d",NULL,"NULL","",x}') == ["a b", 'c"d', None, "NULL", "", "x"]
    assert parse_array('{"a\\\\b"}') == ["a\\b"]
    assert parse_array("{{1,2},{3,4}}") == [["1", "2"], ["3", "4"]]
    assert parse_array('{{"a",NULL},{"}",","}}') == [["a", None], ["}", ","]]
    assert parse_array("[0:1]={5,6}") == ["5", "6"]
    assert parse_array("{}") == [] and parse_array("{NULL}") == [None]
    assert parse_array("{(1,2);(0,0)}", ";") == ["(1,2)", "(0,0)"]


def test_array_values() -> None:
    assert convert(1007, "{4,NULL,6}") == [4, None, 6]
    assert convert(1007, "{{1,2},{3,4}}") == [[1, 2], [3, 4]]
    assert convert(1007, "[0:1]={5,6}") == [5, 6]
    assert convert(1007, "{}") == []
    assert convert(1009, '{"a b","c\\"d",NULL,"NULL","",x}') == ["a b", 'c"d', None, "NULL", "", "x"]
    assert [None if v is None else unscaled(v) for v in convert(1231, "{1.50,NULL,NaN}", numeric_typmod(4, 2))] \
        == [150, None, None]
    assert convert(1001, '{"\\\\x01ff",NULL}') == ["Af8=", None]
    assert convert(1185, '{"2024-02-29 11:45:30+00",NULL}') == ["2024-02-29T11:45:30.000000Z", None]
    assert convert(1021, "{3.14,NaN}") == [3.14, "NaN"]
    assert convert(1000, "{t,f,NULL}") == [True, False, None]


def test_array_schemas() -> None:
    assert schema(1007) == {"type": "array", "items": {"type": "int32", "optional": True}, "optional": True}
    assert schema(1009) == {"type": "array", "items": {"type": "string", "optional": True}, "optional": True}
    assert schema(1231, numeric_typmod(4, 2))["items"] == {
        "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "4"}}
    assert schema(1115, 3)["items"]["name"] == "io.debezium.time.Timestamp"
    moods = PgType(21034, "_mood", "A", "b", element=MOOD, schema="public")
    # Debezium builds enum element schemas without .optional()
    assert field_schema(moods, -1, True, PRECISE) == {"type": "array", "items": {
        "type": "string", "optional": False, "name": "io.debezium.data.Enum", "version": 1,
        "parameters": {"allowed": "sad,ok,happy"}}, "optional": True}
    # its elements' schema is not optional: with a NULL element the whole array is null, as Debezium writes it
    assert text_converter(moods, -1, PRECISE)("{happy,NULL}") is None
    assert text_converter(moods, -1, PRECISE)("{happy,ok}") == ["happy", "ok"]
    price = PgType(901, "price", "N", "d", base=builtin_type(1700), base_typmod=NUMERIC_10_2, schema="public")
    prices = PgType(900, "_price", "A", "b", element=price, schema="public")
    assert field_schema(prices, -1, True, PRECISE)["items"]["parameters"]["scale"] == "2"
    assert [unscaled(v) for v in text_converter(prices, -1, PRECISE)("{1.50,2.00}")] == [150, 200]
    int_list = PgType(904, "int_list", "A", "d", base=builtin_type(1007), schema="public")  # domain over int[]
    assert text_converter(int_list, -1, PRECISE)("{1,2}") == [1, 2]
    assert field_schema(int_list, -1, False, PRECISE)["type"] == "array"


# ---- types and modes --------------------------------------------------------------------------

BRIEF_BUILTINS = {
    21: "int2", 23: "int4", 20: "int8", 25: "text", 1043: "varchar", 1042: "bpchar", 16: "bool", 700: "float4",
    701: "float8", 1700: "numeric", 17: "bytea", 1082: "date", 1083: "time", 1266: "timetz", 1114: "timestamp",
    1184: "timestamptz", 1186: "interval", 2950: "uuid", 114: "json", 3802: "jsonb", 869: "inet", 650: "cidr",
    829: "macaddr", 774: "macaddr8", 790: "money", 26: "oid", 142: "xml", 18: "char", 19: "name",
}


def test_builtin_types() -> None:
    for oid, name in BRIEF_BUILTINS.items():
        t = builtin_type(oid)
        assert t is not None and (t.oid, t.name, t.typtype, t.schema, t.element) == (oid, name, "b", "pg_catalog", None)
    int_array = builtin_type(1007)
    assert int_array is not None and int_array.name == "_int4" and int_array.category == "A"
    assert int_array.element is builtin_type(23)
    assert builtin_type(21035) is None


def test_modes_are_checked() -> None:
    with pytest.raises(ConfigError):
        TypeModes(time_precision_mode="fast")
    with pytest.raises(ConfigError):
        TypeModes(decimal_handling_mode="exact")


# ---- the registry, against a fake connection --------------------------------------------------

class FakeConnection:
    """Answers the registry's pg_type query from a dict of rows; counts queries."""

    def __init__(self, rows: dict[int, tuple[Any, ...]]) -> None:
        self.rows = rows
        self.queries: list[list[int]] = []
        self.closed = False
        self.autocommit = True

    def execute(self, sql: str, params: tuple[list[int]]) -> FakeConnection:
        self.queries.append(list(params[0]))
        self._result = [self.rows[o] for o in params[0] if o in self.rows]
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._result

    @property
    def info(self) -> Any:
        from psycopg import pq

        class Info:
            transaction_status = pq.TransactionStatus.IDLE
        return Info()


def test_registry_loads_dependencies_and_invalidates() -> None:
    rows = {
        16400: (16400, "mood", "E", "e", 0, 0, "public", -1, ["sad", "ok"]),
        16399: (16399, "_mood", "A", "b", 16400, 0, "public", -1, []),
        16500: (16500, "price", "N", "d", 0, 1700, "public", NUMERIC_10_2, []),
        16501: (16501, "_price", "A", "b", 16500, 0, "public", -1, []),
    }
    conn = FakeConnection(rows)
    opened: list[FakeConnection] = []

    def connect() -> FakeConnection:
        opened.append(conn)
        return conn

    registry = TypeRegistry(connect)  # type: ignore[arg-type]
    assert registry.get(23) is builtin_type(23) and not opened  # built-ins: no connection at all
    registry.load([16399, 16501, 23])
    assert conn.queries == [[16399, 16501], [16400, 16500]]  # one query per round of unknown OIDs
    moods = registry.get(16399)
    assert moods.element is not None and moods.element.enum_values == ("sad", "ok")
    price = registry.get(16500)
    assert price.base is builtin_type(1700) and price.base_typmod == NUMERIC_10_2
    assert registry.get(16501).element is price
    assert len(conn.queries) == 2 and len(opened) == 1
    rows[16400] = (16400, "mood", "E", "e", 0, 0, "public", -1, ["sad", "ok", "happy"])  # ALTER TYPE ADD VALUE
    registry.invalidate(16400)  # forgets the enum and the array built on it, not the domain
    assert registry.get(16399).element.enum_values == ("sad", "ok", "happy")  # type: ignore[union-attr]
    assert registry.get(16501) is registry.get(16501) and len(opened) == 1
    assert registry.get(99999).name == "oid99999"  # gone from the catalog: read as text
    registry.invalidate()
    registry.get(16500)
    assert conn.queries[-1] == [16500]
