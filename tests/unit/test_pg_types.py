"""PostgreSQL text values -> Debezium values, in every handling mode (no server)."""
from __future__ import annotations

import base64

import pytest

from cdc.sources.postgres.types import PgType, TypeModes, builtin_type, field_schema, parse_array, text_converter

PRECISE = TypeModes()
NUMERIC_10_2 = ((10 << 16) | 2) + 4


def convert(oid: int, text: str, typmod: int = -1, modes: TypeModes = PRECISE):
    pg_type = builtin_type(oid)
    assert pg_type is not None
    return text_converter(pg_type, typmod, modes)(text)


def schema(oid: int, typmod: int = -1, modes: TypeModes = PRECISE):
    pg_type = builtin_type(oid)
    assert pg_type is not None
    return field_schema(pg_type, typmod, True, modes)


def unscaled(b64: str) -> int:
    return int.from_bytes(base64.b64decode(b64), "big", signed=True)


@pytest.mark.parametrize("mode, expected", [("precise", 1234567890), ("double", 12345678.9), ("string", "12345678.90")])
def test_numeric_modes(mode: str, expected: object) -> None:
    value = convert(1700, "12345678.90", NUMERIC_10_2, TypeModes(decimal_handling_mode=mode))
    assert (unscaled(value) if mode == "precise" else value) == expected


def test_numeric_edge_values() -> None:
    assert unscaled(convert(1700, "-0.01", NUMERIC_10_2)) == -1
    assert unscaled(convert(1700, "0.00", NUMERIC_10_2)) == 0
    assert unscaled(convert(1700, "128.00", NUMERIC_10_2)) == 12800
    assert convert(1700, "NaN", NUMERIC_10_2) is None
    variable = convert(1700, "-123.4500")
    assert variable["scale"] == 4 and unscaled(variable["value"]) == -1234500
    assert convert(1700, "NaN") is None
    assert convert(1700, "NaN", modes=TypeModes(decimal_handling_mode="string")) == "NaN"


def test_money_forms() -> None:
    assert unscaled(convert(790, "$1,234.56")) == 123456
    assert unscaled(convert(790, "-$0.99")) == -99
    assert unscaled(convert(790, "($5.00)")) == -500
    assert convert(790, "-$1,000.10", modes=TypeModes(decimal_handling_mode="string")) == "-1000.10"
    assert schema(790) == {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
                           "version": 1, "parameters": {"scale": "2"}}


def test_floats() -> None:
    assert convert(700, "3.14") == 3.14
    assert convert(701, "-1e+308") == -1e308
    assert [convert(701, t) for t in ("NaN", "Infinity", "-Infinity")] == ["NaN", "Infinity", "-Infinity"]


@pytest.mark.parametrize("mode, expected", [
    ("bytes", "3q2+7wA="), ("base64", "3q2+7wA="), ("hex", "deadbeef00"), ("base64-url-safe", "3q2-7wA="),
])
def test_binary_modes(mode: str, expected: str) -> None:
    modes = TypeModes(binary_handling_mode=mode)
    assert convert(17, "\\xdeadbeef00", modes=modes) == expected
    assert schema(17, modes=modes)["type"] == ("bytes" if mode == "bytes" else "string")


def test_temporal_adaptive() -> None:
    assert convert(1082, "2024-02-29") == 19782
    assert convert(1082, "0044-03-15 BC") < -700000
    assert convert(1083, "13:45:30.123456") == 49530123456
    assert convert(1083, "13:45:30.123", typmod=3) == 49530123
    assert schema(1083, typmod=3)["name"] == "io.debezium.time.Time"
    assert convert(1114, "2024-02-29 13:45:30.123456") == 1709214330123456
    assert convert(1114, "2024-02-29 13:45:30.123", typmod=3) == 1709214330123
    assert schema(1114, typmod=3)["name"] == "io.debezium.time.Timestamp"
    assert convert(1114, "infinity") == 2**63 - 1
    assert convert(1184, "2024-02-29 11:45:30.123456+00") == "2024-02-29T11:45:30.123456Z"
    assert convert(1184, "2024-02-29 13:45:30.5+02") == "2024-02-29T11:45:30.500000Z"
    assert convert(1184, "2024-03-01 01:15:00+05:30") == "2024-02-29T19:45:00.000000Z"
    assert convert(1184, "infinity") == "infinity"
    assert convert(1266, "13:45:30.5+05:30") == "08:15:30.5Z"
    assert convert(1266, "00:00:00+00") == "00:00:00Z"
    assert convert(1266, "23:30:00-02") == "01:30:00Z"


def test_temporal_connect_and_microseconds_modes() -> None:
    connect = TypeModes(time_precision_mode="connect")
    assert schema(1082, modes=connect)["name"] == "org.apache.kafka.connect.data.Date"
    assert convert(1083, "13:45:30.123456", modes=connect) == 49530123
    assert schema(1083, modes=connect)["name"] == "org.apache.kafka.connect.data.Time"
    assert convert(1114, "1970-01-01 00:00:01.5", modes=connect) == 1500
    assert schema(1114, modes=connect)["name"] == "org.apache.kafka.connect.data.Timestamp"
    micro = TypeModes(time_precision_mode="adaptive_time_microseconds")
    assert convert(1083, "00:00:01.5", typmod=3, modes=micro) == 1500000
    assert schema(1083, typmod=3, modes=micro)["name"] == "io.debezium.time.MicroTime"


def test_interval_modes() -> None:
    assert convert(1186, "1 year 2 mons 3 days 04:05:06.789") == 37091106789000
    assert convert(1186, "-1 days -00:00:01") == -86401000000
    assert convert(1186, "1 year 2 mons 3 days 04:05:06.789", modes=TypeModes(interval_handling_mode="string")) \
        == "P1Y2M3DT4H5M6.789S"


def test_arrays() -> None:
    assert parse_array('{"a b","c\\"d",NULL,plain}') == ["a b", 'c"d', None, "plain"]
    assert parse_array("{{1,2},{3,4}}") == [["1", "2"], ["3", "4"]]
    assert convert(1007, "{4,NULL,6}") == [4, None, 6]
    assert convert(1009, '{"x,y",z}') == ["x,y", "z"]
    assert convert(1007, "{{1,2},{3,4}}") == [[1, 2], [3, 4]]
    assert convert(1007, "{}") == []
    assert schema(1009) == {"type": "array", "items": {"type": "string", "optional": True}, "optional": True}


def test_enum_domain_and_fallback() -> None:
    mood = PgType(900, "mood", "E", "e", ("sad", "ok", "happy"), schema="public")
    assert field_schema(mood, -1, False, PRECISE) == {
        "type": "string", "optional": False, "name": "io.debezium.data.Enum", "version": 1,
        "parameters": {"allowed": "sad,ok,happy"}}
    numeric = builtin_type(1700)
    price = PgType(901, "price", "N", "d", base=numeric, base_typmod=NUMERIC_10_2)  # domain over numeric(10,2)
    assert field_schema(price, -1, True, PRECISE)["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert unscaled(text_converter(price, -1, PRECISE)("2.50")) == 250
    point = PgType(600, "point", "G", "b")
    assert field_schema(point, -1, True, PRECISE) == {"type": "string", "optional": True}
    assert text_converter(point, -1, PRECISE)("(1,2)") == "(1,2)"
