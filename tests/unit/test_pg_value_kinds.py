"""One type choice per PostgreSQL column (issue 28 item 4): ``types.value_kind`` maps a column's type and
the type modes to a value kind (cdc.core.type_rules.ValueKind), and both the Python converter
(``types.converter_of``, behind ``text_converter``) and the compiled codec's writer (``types.codec_kind``,
behind ``native_rows.codec_kinds``) are derived from it. Here: the kinds in every mode, the codec
writing exactly what the converter gives for every kind it takes in every mode, the schemas' time
units agreeing with the values', and native_rows needing no private name of types."""
from __future__ import annotations

import ast
import itertools
from typing import Any

import orjson
import pytest

from cdc.core import type_rules as rules
from cdc.core.type_rules import ValueKind
from cdc.sources.postgres import native_rows
from cdc.sources.postgres.types import (
    PgType,
    TypeModes,
    builtin_type,
    codec_kind,
    converter_of,
    field_schema,
    text_converter,
    value_kind,
)
from tests.conftest import ROOT, require_native

TIME_MODES = TypeModes.ALLOWED["time_precision_mode"]
ALL_MODES = [TypeModes(time_precision_mode=time, decimal_handling_mode=decimal, binary_handling_mode=binary,
                       interval_handling_mode=interval, hstore_handling_mode=hstore)
             for time, decimal, binary, interval, hstore in itertools.product(
                 TIME_MODES, ("precise", "double", "string"), ("bytes", "base64", "base64-url-safe", "hex"),
                 ("numeric", "string"), ("json", "map"))]
OIDS = {"bool": 16, "bytea": 17, "name": 19, "int8": 20, "int2": 21, "int4": 23, "text": 25, "oid": 26, "json": 114,
        "xml": 142, "float4": 700, "float8": 701, "money": 790, "bpchar": 1042, "varchar": 1043, "date": 1082,
        "time": 1083, "timestamp": 1114, "timestamptz": 1184, "interval": 1186, "timetz": 1266, "bit": 1560,
        "varbit": 1562, "numeric": 1700, "uuid": 2950, "jsonb": 3802, "_int4": 1007, "_text": 1009}
MOOD = PgType(21035, "mood", "E", "e", ("sad", "ok", "happy"), schema="public")
MOODS = PgType(21034, "_mood", "A", "b", element=MOOD)
BOXES = PgType(1020, "_box", "A", "b", element=PgType(603, "box", "G", "b"))


def pg(name: str) -> PgType:
    found = builtin_type(OIDS[name])
    assert found is not None
    return found


def numeric_typmod(precision: int, scale: int) -> int:
    return ((precision << 16) | (scale & 0x7FF)) + 4


def codec(name: str, typmod: int = -1, **modes: Any) -> str:
    return codec_kind(value_kind(pg(name), typmod, TypeModes(**modes)))


# ---- the kinds --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, time3, time6, timestamp3, timestamp6, date", [
    ("adaptive", "time:ms", "time:us", "timestamp:ms", "timestamp:us", "date"),
    ("adaptive_time_microseconds", "time:us", "time:us", "timestamp:ms", "timestamp:us", "date"),
    ("connect", "time:ms", "time:ms", "timestamp:ms", "timestamp:ms", "date"),
    ("microseconds", "time:us", "time:us", "timestamp:us", "timestamp:us", "date"),
    ("nanoseconds", "time:ns", "time:ns", "timestamp:ns", "timestamp:ns", "date"),
    ("isostring", "python", "python", "python", "python", "python"),
])
def test_temporal_writers_in_each_time_precision_mode(mode: str, time3: str, time6: str, timestamp3: str,
                                                      timestamp6: str, date: str) -> None:
    assert codec("time", 3, time_precision_mode=mode) == time3
    assert codec("time", -1, time_precision_mode=mode) == codec("time", 6, time_precision_mode=mode) == time6
    assert codec("timestamp", 3, time_precision_mode=mode) == timestamp3
    assert codec("timestamp", -1, time_precision_mode=mode) == timestamp6
    assert codec("date", time_precision_mode=mode) == date
    # zoned values are text in every mode: the column's fraction digits (0: trimmed)
    assert [codec("timestamptz", typmod, time_precision_mode=mode) for typmod in (-1, 0, 3)] == \
           ["tstz:6", "tstz:0", "tstz:3"]
    assert codec("timetz", time_precision_mode=mode) == "python"


def test_decimal_and_binary_writers_in_each_mode() -> None:
    fixed, negative = numeric_typmod(10, 2), numeric_typmod(5, -2)
    assert [codec("numeric", fixed), codec("numeric", numeric_typmod(38, 0)), codec("numeric"),
            codec("numeric", negative), codec("money")] == ["decimal:2", "decimal:0", "vdecimal", "python", "python"]
    for mode in ("double", "string"):
        assert {codec("numeric", typmod, decimal_handling_mode=mode) for typmod in (fixed, -1, negative)} == {"python"}
    assert [codec("bytea", binary_handling_mode=mode) for mode in ("bytes", "base64", "base64-url-safe", "hex")] == \
           ["bytea", "bytea", "bytea:url", "bytea:hex"]


def test_the_other_kinds() -> None:
    assert [codec(name) for name in ("bool", "int2", "int4", "int8", "oid", "float4", "float8")] == \
           ["bool", "int", "int", "int", "int", "float4", "float8"]
    for name in ("text", "varchar", "bpchar", "name", "uuid", "json", "jsonb", "xml"):
        assert value_kind(pg(name), -1, TypeModes()) == ValueKind("text") and codec(name) == "text"
    assert value_kind(MOOD, -1, TypeModes()) == ValueKind("text")
    assert [codec(name) for name in ("interval", "timetz", "bit", "varbit", "money", "_int4")] == ["python"] * 6
    assert value_kind(pg("bit"), 1, TypeModes()) == ValueKind("bit")
    assert value_kind(pg("bit"), 8, TypeModes()) == value_kind(pg("varbit"), -1, TypeModes()) == ValueKind("bits")
    assert value_kind(pg("interval"), -1, TypeModes(interval_handling_mode="string")) == ValueKind("interval", "iso")
    assert value_kind(pg("money"), -1, TypeModes(money_fraction_digits=3)) == ValueKind("money", ("precise", 3))


def test_an_arrays_kind_holds_its_elements() -> None:
    modes = TypeModes(time_precision_mode="connect")
    assert value_kind(pg("_int4"), -1, modes) == ValueKind("array", (ValueKind("int"), ",", False))
    assert value_kind(MOODS, -1, modes) == ValueKind("array", (ValueKind("text"), ",", True))  # a NULL: all null
    assert value_kind(BOXES, -1, TypeModes(include_unknown_datatypes=True)) == \
           ValueKind("array", (ValueKind("unknown", ("box", "bytes")), ";", False))
    assert converter_of(value_kind(MOODS, -1, modes))('{ok,NULL}') is None
    assert converter_of(value_kind(pg("_int4"), -1, modes))('{1,NULL,3}') == [1, None, 3]


# ---- both derived from the one kind -----------------------------------------------------------

# Columns the codec writes in some mode, with texts of the forms it takes and of those it leaves to
# the converter (infinity, BC, NaN, another offset, bytea's escape form...).
COLUMNS: list[tuple[str, int, list[str]]] = [
    ("bool", -1, ["t", "f"]), ("int2", -1, ["-32768", "7"]), ("int8", -1, ["9223372036854775807", "-1"]),
    ("text", -1, ["héllo \"quoted\"", "multi\nline", ""]), ("uuid", -1, ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]),
    ("jsonb", -1, ['{"a": 1}']), ("float4", -1, ["3.14", "-1.5e-10", "NaN", "1e-45"]),
    ("float8", -1, ["2.718281828459045", "-1e+308", "Infinity", "1e16"]),
    ("numeric", numeric_typmod(10, 2), ["12345678.90", "-0.01", "NaN", "1.5"]),
    ("numeric", numeric_typmod(38, 0), ["99999999999999999999999999999999999999", "-7"]),
    ("numeric", -1, ["3.14159265358979323846264338327950288", "-0.50", "NaN"]),
    ("date", -1, ["2024-02-29", "1970-01-01", "infinity", "0044-03-15 BC"]),
    ("time", -1, ["13:45:30.123456", "24:00:00", "00:00:00"]), ("time", 3, ["13:45:30.123", "00:00:00.999"]),
    ("time", 0, ["13:45:30"]),
    ("timestamp", -1, ["2024-02-29 13:45:30.123456", "1969-12-31 23:59:59.9995", "infinity", "2300-01-01 00:00:00"]),
    ("timestamp", 3, ["2024-02-29 13:45:30.123", "-infinity"]), ("timestamp", 0, ["1970-01-01 00:00:00"]),
    ("timestamptz", -1, ["2024-02-29 11:45:30.123456+00", "1970-01-01 00:00:00+00", "infinity",
                         "2024-02-29 11:45:30+02"]),
    ("timestamptz", 0, ["2024-02-29 11:45:30.5+00", "2024-02-29 11:45:30+00"]),
    ("timestamptz", 3, ["2024-02-29 11:45:30.1+00"]),
    ("bytea", -1, ["\\xdeadbeef00", "\\x", "\\xfbff", "abc\\\\"]),
]


def test_the_codec_writes_what_the_converter_gives_for_every_kind_in_every_mode() -> None:
    native: Any = require_native()
    taken = 0
    for modes in ALL_MODES:
        for name, typmod, texts in COLUMNS:
            kind = value_kind(pg(name), typmod, modes)
            convert = text_converter(pg(name), typmod, modes)
            writer = codec_kind(kind)
            if writer == "python":
                continue
            row_codec = native.RowCodec([(0, b'"c"', writer, None)], 1, [], orjson.dumps)
            for text in texts:
                raw = text.encode()
                data = b"\x00\x01t" + len(raw).to_bytes(4, "big") + raw
                try:
                    json, _, _ = row_codec.encode(data, 0)
                except native.Fallback:
                    continue  # a text of a form the writer leaves to the converter
                assert json == orjson.dumps({"c": convert(text)}), (name, typmod, modes, writer, text)
                taken += 1
    assert taken > 10000


def test_the_codec_kinds_of_a_table_follow_its_columns_value_kinds() -> None:
    class State:  # what codec_kinds reads of a TableState
        modes = TypeModes(time_precision_mode="connect", binary_handling_mode="hex")
        spec_types = ((pg("int4"), -1), (pg("time"), 6), (pg("bytea"), -1), (pg("numeric"), numeric_typmod(9, 3)),
                      (pg("interval"), -1))

    assert native_rows.codec_kinds(State()) == ["int", "time:ms", "bytea:hex", "decimal:3", "python"]


# ---- schemas and values agree, and one core table of units ------------------------------------

SCHEMA_UNITS = {"Time": "ms", "Timestamp": "ms", "MicroTime": "us", "MicroTimestamp": "us", "NanoTime": "ns",
                "NanoTimestamp": "ns", "IsoTime": "iso", "IsoTimestamp": "iso", "Date": "days", "IsoDate": "iso"}


@pytest.mark.parametrize("mode", TIME_MODES)
def test_the_schemas_unit_is_the_values(mode: str) -> None:
    modes = TypeModes(time_precision_mode=mode)
    for name, typmods in (("time", (-1, 0, 3, 4, 6)), ("timestamp", (-1, 0, 3, 4, 6)), ("date", (-1,))):
        for typmod in typmods:
            schema = field_schema(pg(name), typmod, True, modes)
            assert schema is not None
            kind = value_kind(pg(name), typmod, modes)
            assert SCHEMA_UNITS[schema["name"].rsplit(".", 1)[1]] == kind.param, (name, typmod, schema, kind)


def test_time_and_timestamp_units() -> None:
    expected = {  # mode: (time p3, p6, p9), (timestamp p3, p6, p9)
        "adaptive": (("ms", "us", "ns"), ("ms", "us", "ns")),
        "adaptive_time_microseconds": (("us", "us", "ns"), ("ms", "us", "ns")),
        "connect": (("ms",) * 3, ("ms",) * 3), "microseconds": (("us",) * 3, ("us",) * 3),
        "nanoseconds": (("ns",) * 3, ("ns",) * 3), "isostring": (("iso",) * 3, ("iso",) * 3),
    }
    for mode, (times, timestamps) in expected.items():
        assert tuple(rules.time_unit(mode, p) for p in (3, 6, 9)) == times, mode
        assert tuple(rules.timestamp_unit(mode, p) for p in (3, 6, 9)) == timestamps, mode


def test_native_rows_needs_no_private_name_of_types() -> None:
    tree = ast.parse((ROOT / "cdc" / "sources" / "postgres" / "native_rows.py").read_text())
    private = [node.attr for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
               and node.value.id == "pg_types" and node.attr.startswith("_")]
    private += [alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == "cdc.sources.postgres.types" for alias in node.names if alias.name.startswith("_")]
    assert not private
