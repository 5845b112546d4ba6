"""The compiled row codec (native/, cdc_native) against the Python path, byte for byte.

For every type the codec writes itself, many edge values go into real pgoutput TupleData bytes
(built here from the text values; the wire format is simple), and the codec's JSON must be
``orjson.dumps(TableState.row(<the tuple as pgoutput.py decodes it>))`` exactly. The values come
from hand-written lists, random bit patterns, and (when a PostgreSQL is at hand) the server's own
``::text`` output under the connection's settings, so the texts are the ones it really sends.
Rows the codec does not take must raise ``cdc_native.Fallback``.
"""
from __future__ import annotations

import logging
import random
import struct
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
import pytest

from cdc.core.columns import ColumnStage
from cdc.core.topics import TopicNaming
from cdc.sources.postgres import native_rows
from cdc.sources.postgres.catalog import CatalogColumn, CatalogTable
from cdc.sources.postgres.pgoutput import _Reader
from cdc.sources.postgres.tables import TableState
from cdc.sources.postgres.types import TypeModes, TypeRegistry
from tests.conftest import require_native

OIDS = {"bool": 16, "bytea": 17, "name": 19, "int8": 20, "int2": 21, "int4": 23, "text": 25, "json": 114,
        "xml": 142, "float4": 700, "float8": 701, "bpchar": 1042, "varchar": 1043, "date": 1082, "time": 1083,
        "timestamp": 1114, "timestamptz": 1184, "numeric": 1700, "uuid": 2950, "jsonb": 3802, "_int4": 1007,
        "interval": 1186}


def numeric_typmod(precision: int, scale: int) -> int:
    return ((precision << 16) | (scale & 0x7FF)) + 4


# ---- building blocks --------------------------------------------------------------------------

def tuple_data(values: Sequence[str | bytes | None]) -> bytes:
    """pgoutput TupleData: Int16 count, then per column 'n', or 't' Int32 length and the text."""
    out = [struct.pack(">H", len(values))]
    for value in values:
        if value is None:
            out.append(b"n")
        else:
            raw = value if isinstance(value, bytes) else value.encode()
            out.append(b"t" + struct.pack(">i", len(raw)) + raw)
    return b"".join(out)


def _no_server() -> Any:
    raise AssertionError("built-in types only: no catalog query")


def table_state(columns: Sequence[tuple[str, str, int]], modes: TypeModes | None = None) -> TableState:
    """A TableState for (name, type name, typmod) columns, built-in types, no server."""
    cat_columns = tuple(CatalogColumn(name, i + 1, OIDS[type_name], typmod, False, None, type_name,
                                      1 if type_name.startswith("_") else 0)
                        for i, (name, type_name, typmod) in enumerate(columns))
    catalog = CatalogTable(1, "public", "t", "d", cat_columns, (columns[0][0],))
    return TableState(catalog, cat_columns, topics=TopicNaming("p"), types=TypeRegistry(_no_server),
                      modes=modes or TypeModes(), columns_stage=ColumnStage({}), key_spec={},
                      unavailable_placeholder="__debezium_unavailable_value")


def python_json(state: TableState, data: bytes, pos: int = 0) -> tuple[bytes, int]:
    """The Python path: pgoutput.py's tuple decoding, TableState.row, orjson."""
    reader = _Reader(data, "I")
    reader.pos = pos
    values = reader.tuple_data()
    return orjson.dumps(state.row(values)), reader.pos


@pytest.fixture()
def native() -> Any:
    return require_native()


def codec_for(state: TableState, **kw: Any) -> Any:
    codec = native_rows.row_codec(state, **kw)
    assert codec is not None
    return codec


def check(state: TableState, rows: Sequence[Sequence[str | None]], native: Any, *, strict: bool = True) -> int:
    """Every row through both paths; returns how many the codec took (the rest raised Fallback).
    ``strict``: the codec has no Python converter to fall back on per value (only python columns)."""
    codec = codec_for(state, allow_python=not strict)
    taken = 0
    for row in rows:
        data = b"\x00\x07junk" + tuple_data(row) + b"tail"
        expected, end = python_json(state, data, 6)
        try:
            got, _, got_end = codec.encode(data, 6)
        except native.Fallback:
            continue
        assert got == expected, (row, got, expected)
        assert got_end == end == len(data) - 4
        taken += 1
    return taken


def check_all_native(state: TableState, texts: Sequence[str | None], native: Any) -> None:
    """A one-column-plus-id table: every text taken by the codec and identical to Python's."""
    rows = [("1", text) for text in texts]
    taken = check(state, rows, native)
    assert taken == len(rows), "some values fell back to Python"


def fallbacks(state: TableState, texts: Sequence[str], native: Any) -> None:
    """Texts the column's kind does not write: Fallback without Python converters; with them (as
    the stream's codec has), that value goes through its converter and the row stays in the codec."""
    strict, lenient = codec_for(state, allow_python=False), codec_for(state)
    for text in texts:
        data = tuple_data(["1", text])
        expected, _ = python_json(state, data)  # the Python path takes it
        with pytest.raises(native.Fallback):
            strict.encode(data, 0)
        assert lenient.encode(data, 0)[0] == expected


def one(type_name: str, typmod: int = -1, modes: TypeModes | None = None) -> TableState:
    return table_state([("id", "int8", -1), ("v", type_name, typmod)], modes)


# ---- values -----------------------------------------------------------------------------------

CONTROL = "".join(chr(c) for c in range(0x20)) + "\x7f"
STRINGS = ["", "a", "x" * 1000, 'quote " backslash \\ slash /', CONTROL, "żółw é ß", "🐢🚀 emoji", "\u2028\u2029",
           "日本語", "</script>", '{"a": [1, 2.5, null]}', "tab\there\nnewline\r\n", "\U0010ffff", "nul-less \x01"]
FLOATS8 = ["0", "-0", "0.1", "-0.1", "1", "-1.5", "1e-07", "1e-05", "1e-06", "0.0001", "1e+16", "1e+15", "1.5e+16",
           "123456789012345680", "9999999999999998", "3.4028235e+38", "1.7976931348623157e+308",
           "-1.7976931348623157e+308", "5e-324", "2.2250738585072014e-308", "0.30000000000000004", "123.456",
           "1e+100", "1e-300", "NaN", "Infinity", "-Infinity", "100", "1e+21", "12345.678e3"]
FLOATS4 = ["0", "-0", "0.1", "-0.1", "1", "1.1", "0.3", "1e-07", "1e+16", "3.4028235e+38", "-3.4028235e+38",
           "3.4028236e+38", "-1e+39", "1.4e-45", "1e-45", "7e-46", "1.17549435e-38", "1.1754942e-38", "16777217",
           "123456.79", "100", "0.00001", "1e-06", "NaN", "Infinity", "-Infinity", "2.5", "1.0000001", "9.999999e-05"]
INTS = {"int2": ["0", "1", "-1", "32767", "-32768"], "int4": ["0", "2147483647", "-2147483648", "42"],
        "int8": ["0", "9223372036854775807", "-9223372036854775808", "-1", "1000000"]}
DATES = ["1970-01-01", "1969-12-31", "1970-01-02", "0001-01-01", "9999-12-31", "2000-02-29", "2024-02-29", "1900-03-01",
         "1582-10-14", "2100-12-31"]
TIMES = ["00:00:00", "23:59:59.999999", "24:00:00", "12:34:56.5", "00:00:00.000001", "13:45:30.123", "01:02:03.0001"]
TIMESTAMPS = ["1970-01-01 00:00:00", "1969-12-31 23:59:59.999999", "1969-12-31 23:59:59.9995",
              "1970-01-01 00:00:00.0005", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999",
              "2024-02-29 13:45:30.123456", "2000-01-01 12:00:00.5",
              "2262-04-11 23:47:16.854775", "2262-04-11 23:47:16.854776", "1677-09-21 00:12:43.145224",
              "1677-09-21 00:12:43.145223", "1900-01-01 00:00:00.1"]
TIMESTAMPTZS = [t + "+00" for t in TIMESTAMPS]
DECIMALS = {2: ["0.00", "-0.01", "0.01", "1.27", "1.28", "-1.28", "-1.29", "327.67", "-327.68", "92233720368547758.07",
                "-92233720368547758.08", "1" + "0" * 35 + ".00", "-" + "9" * 36 + ".99", "-0.00"],
            0: ["0", "1", "-1", "255", "256", "-129", "-128", "12345678901234567890"],
            5: ["0.00000", "3.14159", "-2.71828", "99999.99999", "-0.00001"]}
VDECIMALS = ["0", "0.000", "-0.50", "123.4500", "100", "-100", "1.000001", "-123456789012345678901234567890.123456",
             "0.0000000001", "170141183460469231731687303715884105727", "-170141183460469231731687303715884105728"]
BYTEAS = ["\\x", "\\x00", "\\x00ff", "\\xdeadbeef", "\\x" + bytes(range(256)).hex(), "\\xDEADBEEF", "\\xfb", "\\xfbff"]


def random_float8_texts(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        x = struct.unpack(">d", rng.getrandbits(64).to_bytes(8, "big"))[0]
        if x == x and abs(x) != float("inf"):
            out.append(repr(x))
    out += [repr(rng.uniform(-1e6, 1e6)) for _ in range(n // 4)] + [repr(rng.random()) for _ in range(n // 4)]
    return out


def random_float4_texts(n: int, seed: int = 2) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        bits = rng.getrandbits(32)
        if rng.random() < 0.2:
            bits &= 0x807FFFFF  # subnormals
        x = struct.unpack(">f", bits.to_bytes(4, "big"))[0]
        if x == x and abs(x) != float("inf"):
            out.append(f"{x:.{rng.choice([6, 7, 8, 9])}g}")
    return out


# ---- the codec's columns ----------------------------------------------------------------------

def test_native_kinds_in_default_modes() -> None:
    state = table_state([("a", "int2", -1), ("b", "int4", -1), ("c", "int8", -1), ("d", "bool", -1),
                         ("e", "text", -1), ("f", "varchar", 24), ("g", "bpchar", 7), ("h", "name", -1),
                         ("i", "uuid", -1), ("j", "json", -1), ("k", "jsonb", -1), ("l", "xml", -1),
                         ("m", "float4", -1), ("n", "float8", -1), ("o", "numeric", numeric_typmod(12, 3)),
                         ("p", "numeric", -1), ("q", "date", -1), ("r", "time", -1), ("s", "time", 3),
                         ("t", "timestamp", -1), ("u", "timestamp", 3), ("v", "timestamptz", -1),
                         ("w", "timestamptz", 0), ("x", "bytea", -1), ("y", "_int4", -1), ("z", "interval", -1)])
    assert native_rows.codec_kinds(state) == [
        "int", "int", "int", "bool", "text", "text", "text", "text", "text", "text", "text", "text", "float4",
        "float8", "decimal:3", "vdecimal", "date", "time:us", "time:ms", "timestamp:us", "timestamp:ms", "tstz:6",
        "tstz:0", "bytea", "python", "python"]


def test_integers_and_booleans(native: Any) -> None:
    for type_name, texts in INTS.items():
        check_all_native(one(type_name), texts, native)
    check_all_native(one("bool"), ["t", "f", None], native)
    fallbacks(one("int4"), ["007", "-0", "+1"], native)  # not what the server sends; Python decides


@pytest.mark.parametrize("type_name", ["text", "varchar", "bpchar", "name", "uuid", "json", "jsonb", "xml"])
def test_strings_escaped_as_orjson_escapes_them(type_name: str, native: Any) -> None:
    check_all_native(one(type_name), STRINGS, native)


def test_float8(native: Any) -> None:
    check_all_native(one("float8"), FLOATS8 + random_float8_texts(20000), native)


def test_float4(native: Any) -> None:
    check_all_native(one("float4"), FLOATS4 + random_float4_texts(20000), native)


@pytest.mark.parametrize("scale", sorted(DECIMALS))
def test_numeric_with_scale(scale: int, native: Any) -> None:
    check_all_native(one("numeric", numeric_typmod(38, scale)), DECIMALS[scale], native)
    rng = random.Random(scale)
    texts = []
    for _ in range(3000):
        digits = rng.randint(1, 36 - scale)
        whole = str(rng.randrange(10 ** digits))
        fraction = "".join(rng.choice("0123456789") for _ in range(scale))
        texts.append(("-" if rng.random() < 0.5 else "") + whole + ("." + fraction if scale else ""))
    check_all_native(one("numeric", numeric_typmod(38, scale)), texts, native)


def test_numeric_without_typmod(native: Any) -> None:
    check_all_native(one("numeric"), VDECIMALS, native)


def test_numerics_that_go_back_to_python(native: Any) -> None:
    fallbacks(one("numeric", numeric_typmod(50, 2)), ["NaN", "Infinity", "-Infinity", "9" * 40 + ".00", "1.5"], native)
    fallbacks(one("numeric"), ["NaN", "Infinity", "-Infinity", "9" * 40], native)


def test_dates(native: Any) -> None:
    modes = [TypeModes(time_precision_mode=m) for m in ("adaptive", "adaptive_time_microseconds", "connect",
                                                        "microseconds", "nanoseconds")]
    for mode in modes:
        check_all_native(one("date", modes=mode), DATES, native)
    fallbacks(one("date"), ["infinity", "-infinity", "0044-03-15 BC", "10000-01-01"], native)


@pytest.mark.parametrize("mode", ["adaptive", "adaptive_time_microseconds", "connect", "microseconds", "nanoseconds"])
@pytest.mark.parametrize("typmod", [-1, 0, 3, 6])
def test_times_and_timestamps(mode: str, typmod: int, native: Any) -> None:
    modes = TypeModes(time_precision_mode=mode)
    check_all_native(one("time", typmod, modes), TIMES, native)
    check_all_native(one("timestamp", typmod, modes), TIMESTAMPS, native)
    fallbacks(one("timestamp", typmod, modes), ["infinity", "-infinity", "0044-03-15 12:00:00 BC",
                                                 "10000-01-01 00:00:00"], native)


@pytest.mark.parametrize("typmod", [-1, 0, 1, 3, 6])
def test_timestamptz(typmod: int, native: Any) -> None:
    check_all_native(one("timestamptz", typmod), TIMESTAMPTZS, native)
    # other offsets (the connection pins TimeZone=UTC, so the server sends +00), infinity, BC,
    # five-digit years: the Python path
    fallbacks(one("timestamptz", typmod), ["2024-02-29 13:45:30+02", "2024-02-29 13:45:30.5-08",
                                           "2024-02-29 13:45:30+05:30", "1890-01-01 00:00:00-04:56:02",
                                           "infinity", "-infinity", "0044-03-15 00:00:00+00 BC",
                                           "12024-01-01 00:00:00+00"], native)


@pytest.mark.parametrize("mode", ["bytes", "base64", "base64-url-safe", "hex"])
def test_bytea(mode: str, native: Any) -> None:
    rng = random.Random(7)
    texts = BYTEAS + ["\\x" + rng.randbytes(rng.randint(0, 40)).hex() for _ in range(500)]
    check_all_native(one("bytea", modes=TypeModes(binary_handling_mode=mode)), texts, native)
    fallbacks(one("bytea", modes=TypeModes(binary_handling_mode=mode)), ["abc\\000def", "a\\\\b"], native)


def test_python_columns_inside_the_codec(native: Any) -> None:
    """Columns the codec has no writing for go through their converter (and orjson) in the same call."""
    state = table_state([("id", "int4", -1), ("arr", "_int4", -1), ("iv", "interval", -1),
                         ("n", "numeric", numeric_typmod(10, 2)), ("t", "time", -1), ("ts", "timestamp", -1)],
                        TypeModes(decimal_handling_mode="string", time_precision_mode="isostring"))
    assert native_rows.codec_kinds(state) == ["int", "python", "python", "python", "python", "python"]
    assert check(state, [("1", "{1,NULL,3}", "1 year 2 mons 03:04:05.5", "12.50", "13:45:30.25",
                          "2024-02-29 13:45:30.5")], native, strict=False) == 1
    assert native_rows.row_codec(state, allow_python=False) is None


def test_wide_rows_in_field_order_with_nulls(native: Any) -> None:
    columns = [("id", "int8", -1), ("name", "text", -1), ("price", "numeric", numeric_typmod(12, 2)),
               ("at", "timestamptz", -1), ("ok", "bool", -1), ("f", "float8", -1), ("d", "date", -1),
               ("b", "bytea", -1), ("r", "float4", -1), ("ts", "timestamp", -1)]
    state = table_state(columns)
    rng = random.Random(3)
    pools: list[list[str | None]] = [INTS["int8"], STRINGS, DECIMALS[2], TIMESTAMPTZS, ["t", "f"], FLOATS8, DATES,
                                     BYTEAS, FLOATS4, TIMESTAMPS]
    rows = [[None if rng.random() < 0.15 else rng.choice(pool) for pool in pools] for _ in range(2000)]
    assert check(state, rows, native) == len(rows)
    # a column filtered out, columns out of order in the spec: the codec follows the spec's indexes
    state = TableState(state.catalog, state.catalog.columns, topics=TopicNaming("p"), types=TypeRegistry(_no_server),
                       modes=TypeModes(), columns_stage=ColumnStage({}, exclude=[r"public\.t\.name"]), key_spec={},
                       unavailable_placeholder="x")
    assert check(state, rows, native) == len(rows)


def test_rows_that_go_back_to_python(native: Any) -> None:
    state = table_state([("id", "int4", -1), ("v", "text", -1)])
    codec = codec_for(state, width=2)
    strict = codec_for(state, width=2, allow_python=False)
    toast = struct.pack(">H", 2) + b"t" + struct.pack(">i", 1) + b"1" + b"u"
    binary = struct.pack(">H", 2) + b"t" + struct.pack(">i", 1) + b"1" + b"b" + struct.pack(">i", 1) + b"x"
    truncated = struct.pack(">H", 2) + b"t" + struct.pack(">i", 9) + b"1"
    for data in (toast, binary, truncated, tuple_data(["1"]), tuple_data(["1", "a", "b"]), b"\x00"):
        with pytest.raises(native.Fallback):
            codec.encode(data, 0)
    for data in (tuple_data(["1", b"\xff\xfe"]), tuple_data(["01", "a"])):  # not UTF-8; not canonical
        with pytest.raises(native.Fallback):
            strict.encode(data, 0)
    assert codec.encode(tuple_data(["1", "a"]), 0)[0] == b'{"id":1,"v":"a"}'


def test_the_codec_api(native: Any) -> None:
    codec = native.RowCodec([(1, "b", "int8"), (0, "a", "text")])
    data = tuple_data(["x", "2", "ignored"])
    json, keys, end = codec.encode(b"ab" + data, 2)
    assert (json, keys, end) == (b'{"b":2,"a":"x"}', (), len(data) + 2)
    with pytest.raises(ValueError):
        native.RowCodec([(0, "a", "money")])
    with pytest.raises(ValueError):
        native.RowCodec([(0, "a", "python")])  # a python column needs its converter and dumps
    assert native.RowCodec([]).encode(tuple_data([]), 0)[0] == b"{}"


def test_one_warning_without_the_module(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "cdc_native", None)  # import fails
    from cdc.core import native_row

    monkeypatch.setattr(native_row, "_module", None)
    monkeypatch.setattr(native_row, "_warned", False)
    with caplog.at_level(logging.WARNING, logger=native_row.__name__):
        assert native_rows.row_codec(one("int4")) is None
        assert native_rows.row_codec(one("text")) is None
    warnings = [r for r in caplog.records if r.name == native_row.__name__]
    assert len(warnings) == 1 and "pip install ./native" in warnings[0].getMessage()


# ---- the server's own texts -------------------------------------------------------------------

SERVER_VALUES: dict[tuple[str, int], list[str]] = {
    ("int2", -1): ["0", "32767", "-32768", "(random()*65535 - 32768)::int2"],
    ("int8", -1): ["9223372036854775807", "-9223372036854775808", "(random()*1e18 - 5e17)::int8"],
    ("bool", -1): ["true", "false"],
    ("text", -1): ["E'quote \" backslash \\\\ nl \\n tab \\t bell \\x07 esc \\x1b del \\x7f'", "'żółw 🐢 é'", "''",
                   "md5(random()::text)", "chr((random()*1000 + 32)::int) || chr((random()*50000 + 1000)::int)"],
    ("uuid", -1): ["gen_random_uuid()"],
    ("jsonb", -1): ["'{\"k\": \"v\\n\", \"n\": 1e3, \"a\": [1, 2.5, null]}'::jsonb",
                    "jsonb_build_object('r', random())"],
    ("float8", -1): ["0.1", "'-0'::float8", "1e-7", "1e16", "'1.7976931348623157e308'::float8", "'5e-324'::float8",
                     "'NaN'::float8", "'Infinity'::float8", "'-Infinity'::float8", "random()",
                     "(random() - 0.5) * 1e300", "(random() - 0.5) * 1e-300", "random() * 1e16", "random() * 1e-5"],
    ("float4", -1): ["0.1", "'-0'::float4", "1e-7", "1e16", "3.4028235e38", "'1.4e-45'::float4", "'NaN'::float4",
                     "'Infinity'::float4", "random()", "(random() - 0.5) * 1e38", "(random() - 0.5) * 1e-38",
                     "random() * 1e7"],
    ("numeric", numeric_typmod(20, 4)): ["0", "-0.0001", "1234567890123456.7891", "-1234567890123456.7891",
                                        "(random() - 0.5) * 1e16"],
    ("numeric", numeric_typmod(30, 0)): ["0", "-1", "999999999999999999999999999999", "(random() - 0.5) * 1e20"],
    ("numeric", -1): ["0", "-0.500", "123.4500", "(random() - 0.5)::numeric * 10^(random()*30)::int",
                      "12345678901234567890.12345678901234"],
    ("date", -1): ["'1970-01-01'", "'1969-12-31'", "'0001-01-01'", "'9999-12-31'", "'2024-02-29'",
                   "('1970-01-01'::date + (random()*2e6 - 1e6)::int)"],
    ("time", -1): ["'00:00:00'", "'24:00:00'", "'23:59:59.999999'",
                   "'12:00:00'::time + random() * interval '10 hours'"],
    ("time", 3): ["'12:34:56.789'", "'12:00:00'::time + random() * interval '10 hours'"],
    ("timestamp", -1): ["'1970-01-01 00:00:00'", "'1969-12-31 23:59:59.999999'", "'0001-01-01 00:00:00'",
                        "'9999-12-31 23:59:59.999999'", "'2000-01-01'::timestamp + random() * interval '600 years' - "
                        "interval '300 years'"],
    ("timestamp", 3): ["'1969-12-31 23:59:59.9995'", "'2000-01-01'::timestamp + random() * interval '100 years'"],
    ("timestamptz", -1): ["'2024-02-29 13:45:30+02'", "'1969-12-31 23:59:59.999999+00'", "'0001-01-01 00:00:00+00'",
                          "'9999-12-31 23:59:59.999999+00'", "'2000-01-01'::timestamptz + random() * interval "
                          "'600 years' - interval '300 years'"],
    ("timestamptz", 3): ["'2024-02-29 13:45:30.5+02'", "'2000-01-01'::timestamptz + random() * interval '100 years'"],
    ("timestamptz", 0): ["'2024-02-29 13:45:30+02'", "'2000-01-01'::timestamptz + random() * interval '100 years'"],
    ("bytea", -1): ["'\\x'::bytea", "'\\x00ff'::bytea", "decode(md5(random()::text), 'hex')",
                    "decode(repeat(md5(random()::text), (random()*5)::int), 'hex')"],
}


@pytest.fixture(scope="module")
def server_texts(pg_admin_dsn: str) -> Iterator[dict[tuple[str, int], list[str]]]:
    """Per (type, typmod): the server's text output of the values above (the random ones 300
    times), under the settings the connector's connection pins."""
    import psycopg

    options = ("-c DateStyle=ISO -c IntervalStyle=postgres -c TimeZone=UTC -c bytea_output=hex "
               "-c extra_float_digits=1")
    texts: dict[tuple[str, int], list[str]] = {}
    with psycopg.connect(pg_admin_dsn, options=options, autocommit=True) as conn:
        for (type_name, typmod), expressions in SERVER_VALUES.items():
            sql_type = {("numeric", numeric_typmod(20, 4)): "numeric(20,4)",
                        ("numeric", numeric_typmod(30, 0)): "numeric(30,0)"}.get(
                (type_name, typmod), type_name if typmod < 0 else f"{type_name}({typmod})")
            got: list[str] = []
            for expression in expressions:
                times = 300 if "random()" in expression else 1
                # the output function's text (what pgoutput sends); bool's cast to text says 'true'
                value = f"({expression})::{sql_type}"
                text = f"boolout({value})::text" if type_name == "bool" else f"{value}::text"
                rows = conn.execute(f"SELECT {text} FROM generate_series(1, {times})").fetchall()
                got += [r[0] for r in rows]
            texts[(type_name, typmod)] = got
    yield texts


def test_the_servers_texts(server_texts: dict[tuple[str, int], list[str]], native: Any) -> None:
    def python_only(type_name: str, typmod: int, text: str) -> bool:
        if type_name == "numeric":
            return len(text.replace("-", "").replace(".", "")) > 38  # past 127 bits
        return type_name in ("date", "timestamp", "timestamptz") and (" BC" in text or "infinity" in text)

    python_texts = 0
    for (type_name, typmod), texts in server_texts.items():
        state = one(type_name, typmod)
        check_all_native(state, [t for t in texts if not python_only(type_name, typmod, t)], native)
        rest = [t for t in texts if python_only(type_name, typmod, t)]
        fallbacks(state, rest, native)
        python_texts += len(rest)
    assert python_texts < 200  # the random dates reach BC now and then; almost all is native
