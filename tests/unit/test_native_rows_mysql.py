"""The compiled binlog row codec (native/src/binlog.rs, ``cdc_native.BinlogRowCodec``) against the Python
path, byte for byte, without a server (as tests/unit/test_native_rows.py does for pgoutput).

Row images of a rows event are built here in the binlog's layout (MySQL's ``Field::pack``: a null bitmap,
then each value in its storage format; ``rows.py`` reads them and documents each type's), for a column of
every MySQL/MariaDB type, in every combination of the type modes (``decimal.handling.mode``,
``time.precision.mode``, ``binary.handling.mode``, ``bigint.unsigned.handling.mode``,
``enable.time.adjuster``), NOT NULL with and without defaults, from hand-written edge values and random
ones. Both paths get the same bytes, as the stream gives them (``BinlogChanges._rows``):

* Python: ``rows.read_images``, ``TableState.row``, ``orjson.dumps`` (and the envelope's key of the row);
* codec: ``native_rows.binlog_codec`` for the table version (None: the table goes the Python way), its
  ``encode_images``, then the time adjuster's ``YearAdjuster``.

Where the codec takes a table, each image's JSON and key must be the Python path's exactly; it may refuse
an event (``Fallback``) only for what it documents (text that is not UTF-8). Which (type, mode) columns the
codec takes is listed too, so a writer added to it is compared here at once.
"""
from __future__ import annotations

import itertools
import random
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import orjson
import pytest
from pymysqlreplication.column import Column as BinlogColumn

from cdc.core.columns import ColumnStage
from cdc.core.schema import Column
from cdc.core.topics import TopicNaming
from cdc.sources.mysql import native_rows, rows
from cdc.sources.mysql import types as my_types
from cdc.sources.mysql.ddl import MySqlSchema
from cdc.sources.mysql.source_info import source_schema
from cdc.sources.mysql.tables import TableState
from tests.conftest import require_native

ALL_MODES = [my_types.TypeModes(decimal_handling_mode=decimal, time_precision_mode=time, binary_handling_mode=binary,
                                bigint_unsigned_handling_mode=bigint, enable_time_adjuster=adjust)
             for decimal, time, binary, bigint, adjust in itertools.product(
                 my_types.TypeModes.ALLOWED["decimal_handling_mode"], my_types.TypeModes.ALLOWED["time_precision_mode"],
                 my_types.TypeModes.ALLOWED["binary_handling_mode"],
                 my_types.TypeModes.ALLOWED["bigint_unsigned_handling_mode"], (True, False))]
CHARSET_BYTES = {"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "latin1": 1, "ascii": 1, None: 1}
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_FRACTION_SCALE = (1, 10000, 100, 1)  # microseconds per unit of a 0-3 byte fraction


@pytest.fixture()
def native() -> Any:
    return require_native()


# ---- the binlog's layout of each type -----------------------------------------------------------

def binlog_column(column: Column, legacy: bool = False) -> BinlogColumn:
    """The TABLE_MAP column python-mysql-replication makes of a column of this type (its storage type and
    metadata); ``legacy``: the temporal types' formats before MySQL 5.6.4 (DATETIME, TIMESTAMP, TIME)."""
    base = base_type(column)
    length, fsp = column.length, column.length or 0
    mbmaxlen = CHARSET_BYTES.get(column.charset, 4)
    if base in ("TINYINT", "BOOL", "BOOLEAN"):
        return BinlogColumn(type=rows.TINY)
    simple = {"SMALLINT": rows.SHORT, "MEDIUMINT": rows.INT24, "INT": rows.LONG, "INTEGER": rows.LONG,
              "BIGINT": rows.LONGLONG, "YEAR": rows.YEAR, "DATE": rows.DATE}
    if base in simple:
        return BinlogColumn(type=simple[base])
    if base in ("FLOAT", "REAL", "DOUBLE"):
        double = base == "DOUBLE" or (base == "FLOAT" and (length or 0) > 24)
        return BinlogColumn(type=rows.DOUBLE if double else rows.FLOAT, size=8 if double else 4)
    if base in ("DECIMAL", "NUMERIC"):
        return BinlogColumn(type=rows.NEWDECIMAL, precision=length, decimals=column.scale or 0)
    if base in ("DATETIME", "TIMESTAMP", "TIME"):
        if legacy:
            return BinlogColumn(type={"DATETIME": rows.DATETIME, "TIMESTAMP": rows.TIMESTAMP, "TIME": rows.TIME}[base])
        return BinlogColumn(type={"DATETIME": rows.DATETIME2, "TIMESTAMP": rows.TIMESTAMP2, "TIME": rows.TIME2}[base],
                            fsp=fsp)
    if base in ("CHAR", "NCHAR", "BINARY"):
        return BinlogColumn(type=rows.STRING, max_length=(length or 1) * (1 if base == "BINARY" else mbmaxlen))
    if base in ("VARCHAR", "NVARCHAR", "VARBINARY"):
        return BinlogColumn(type=rows.VARCHAR, max_length=(length or 1) * (1 if base == "VARBINARY" else mbmaxlen))
    blobs = {"TINY": 1, "": 2, "MEDIUM": 3, "LONG": 4}
    for size, prefix in ((blobs[p], p) for p in blobs):
        if base in (prefix + "TEXT", prefix + "BLOB"):
            return BinlogColumn(type=rows.BLOB, length_size=size)
    if base == "JSON":  # MariaDB's JSON is a LONGTEXT
        return BinlogColumn(type=rows.BLOB, length_size=4)
    if base == "ENUM":
        return BinlogColumn(type=rows.ENUM, size=1 if len(column.enum_values or ()) < 256 else 2)
    if base == "SET":
        count = len(column.enum_values or ())
        return BinlogColumn(type=rows.SET, size=(count + 7) // 8 if count <= 32 else 8)
    if base == "BIT":
        bits = length or 1
        return BinlogColumn(type=rows.BIT, bits=bits, bytes=(bits + 7) // 8)
    if base in ("GEOMETRY", "POINT"):
        return BinlogColumn(type=rows.GEOMETRY, length_size=4)
    if base in ("INET4", "INET6", "UUID"):
        return BinlogColumn(type=rows.STRING, max_length=4 if base == "INET4" else 16)
    raise AssertionError(f"no binlog layout for {column.type_name} in this test")


def base_type(column: Column) -> str:
    """The type's first word: ``INT`` of ``INT UNSIGNED ZEROFILL`` (the model's names carry no length)."""
    return column.type_name.upper().split()[0]


def prefixed(data: bytes, size: int) -> bytes:
    assert len(data) < 1 << (8 * size)
    return len(data).to_bytes(size, "little") + data


def decimal_bytes(negative: bool, unscaled: int, precision: int, scale: int) -> bytes:
    """MySQL's decimal2bin (the inverse of ``rows._new_decimal``)."""
    integral = precision - scale
    whole, frac = divmod(unscaled, 10 ** scale)
    out = bytearray()
    groups = []
    for _ in range(integral // 9):
        whole, group = divmod(whole, 10 ** 9)
        groups.append(group)
    if integral % 9:
        out += whole.to_bytes(_DIG2BYTES[integral % 9], "big")
    else:
        assert whole == 0
    for group in reversed(groups):
        out += group.to_bytes(4, "big")
    tail_digits = scale % 9
    frac_groups, tail = divmod(frac, 10 ** tail_digits)
    fulls = []
    for _ in range(scale // 9):
        frac_groups, group = divmod(frac_groups, 10 ** 9)
        fulls.append(group)
    for group in reversed(fulls):
        out += group.to_bytes(4, "big")
    if tail_digits:
        out += tail.to_bytes(_DIG2BYTES[tail_digits], "big")
    if negative:
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes(out)


def date_bytes(year: int, month: int, day: int) -> bytes:
    return (day | month << 5 | year << 9).to_bytes(3, "little")


def fraction_bytes(micros: int, fsp: int) -> bytes:
    """The fraction of a TIME2/DATETIME2/TIMESTAMP2 of ``fsp`` digits (``micros`` truncated to them)."""
    size = (fsp + 1) // 2
    if not size:
        return b""
    micros -= micros % 10 ** (6 - fsp)
    return (micros // _FRACTION_SCALE[size]).to_bytes(size, "big")


def datetime2_bytes(year: int, month: int, day: int, hour: int, minute: int, second: int, micros: int,
                    fsp: int) -> bytes:
    packed = ((year * 13 + month) << 22 | day << 17 | hour << 12 | minute << 6 | second) + 0x8000000000
    return packed.to_bytes(5, "big") + fraction_bytes(micros, fsp)


def time2_bytes(negative: bool, hours: int, minutes: int, seconds: int, micros: int, fsp: int) -> bytes:
    """MySQL's my_time_packed_to_binary: the packed time's integer part (an arithmetic shift) offset by
    0x800000, then its fraction (C's remainder: negative for a negative time) in 0-2 bytes; 6 bytes at fsp 5-6."""
    micros -= micros % 10 ** (6 - fsp)
    packed = ((hours << 12 | minutes << 6 | seconds) << 24) + micros
    packed = -packed if negative else packed
    size = (fsp + 1) // 2
    if size == 3:
        return (packed + 0x800000000000).to_bytes(6, "big")
    head = ((packed >> 24) + 0x800000).to_bytes(3, "big")
    if not size:
        return head
    remainder = abs(packed) % (1 << 24) * (-1 if packed < 0 else 1)
    unit = 10000 if size == 1 else 100
    frac = remainder // unit if remainder >= 0 else -(-remainder // unit)
    return head + (frac % (1 << (8 * size))).to_bytes(size, "big")


# ---- generated values ---------------------------------------------------------------------------

Gen = Callable[[random.Random], bytes]

STRINGS = ["", "a", "x" * 40, 'quote " backslash \\ slash /', "".join(chr(c) for c in range(0x20)) + "\x7f",
           "żółw é ß", "🐢🚀 emoji", "\u2028\u2029", "日本語", "</script>", '{"a": [1, 2.5, null]}',
           "tab\there\nnewline\r\n", "\U0010ffff", "nul \x00 inside", "trailing  ", "\ufeffbom", "\ud7ff\ue000"]
INVALID_UTF8 = [b"\xff", b"caf\xe9", b"\xc3", b"\xed\xa0\x80", b"a\x80b", b"\xf4\x90\x80\x80"]


def random_text(rng: random.Random, limit: int) -> bytes:
    roll = rng.random()
    if roll < 0.25:
        text = rng.choice(STRINGS)
    elif roll < 0.5:
        text = "".join(chr(rng.randint(0x20, 0x7e)) for _ in range(rng.randint(0, 30)))
    elif roll < 0.95:
        ranges = [(0, 0x7f), (0x80, 0x7ff), (0x800, 0xd7ff), (0xe000, 0xffff), (0x10000, 0x10ffff)]
        text = "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(0, 12)))
    else:
        raw = rng.choice(INVALID_UTF8)
        return raw if len(raw) <= limit else raw[:limit]
    data = text.encode()
    while len(data) > limit:
        text = text[:-1]
        data = text.encode()
    return data


def int_gen(size: int, unsigned: bool) -> Gen:
    bits = 8 * size
    edges = [0, 1, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1, (1 << (bits - 1)) + 1, 2, 127, 128]

    def gen(rng: random.Random) -> bytes:
        value = rng.choice(edges) if rng.random() < 0.3 else rng.getrandbits(bits)
        return value.to_bytes(size, "little")
    return gen


def decimal_gen(precision: int, scale: int) -> Gen:
    def gen(rng: random.Random) -> bytes:
        roll = rng.random()
        if roll < 0.1:
            unscaled = 10 ** precision - 1  # all nines
        elif roll < 0.2:
            unscaled = rng.choice([0, 1, 10 ** scale, 5 * 10 ** max(scale - 1, 0)])
        else:
            unscaled = rng.randrange(10 ** rng.randint(1, precision))
        unscaled %= 10 ** precision  # 1 of a DECIMAL(9,9) is not one
        return decimal_bytes(rng.random() < 0.5, unscaled, precision, scale)  # -0 too
    return gen


def random_date(rng: random.Random) -> tuple[int, int, int]:
    roll = rng.random()
    if roll < 0.08:
        return 0, 0, 0  # the zero date
    if roll < 0.14:
        return rng.choice([(2024, 0, 10), (2024, 2, 0), (0, 1, 1), (2023, 2, 29), (2024, 4, 31), (0, 0, 5)])
    if roll < 0.3:  # the time adjuster's two-digit years, and around them
        return rng.choice([1, 5, 69, 70, 99, 100, 101, 999, 1000]), rng.randint(1, 12), rng.randint(1, 28)
    if roll < 0.4:
        return rng.choice([(1970, 1, 1), (1969, 12, 31), (9999, 12, 31), (1000, 1, 1), (2000, 2, 29), (1582, 10, 10),
                           (2038, 1, 19), (2106, 2, 7)])
    year, month = rng.randint(1, 9999), rng.randint(1, 12)
    return year, month, rng.randint(1, 28 if month == 2 else 30)


def date_gen(rng: random.Random) -> bytes:
    return date_bytes(*random_date(rng))


def datetime2_gen(fsp: int) -> Gen:
    def gen(rng: random.Random) -> bytes:
        year, month, day = random_date(rng)
        if rng.random() < 0.1:
            clock = rng.choice([(0, 0, 0, 0), (23, 59, 59, 999_999), (12, 0, 0, 500_000)])
        else:
            clock = (rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.randrange(1_000_000))
        return datetime2_bytes(year, month, day, *clock, fsp)
    return gen


def timestamp2_gen(fsp: int) -> Gen:
    def gen(rng: random.Random) -> bytes:
        seconds = rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 86399, 951_782_400]) if rng.random() < 0.2 \
            else rng.getrandbits(32)
        micros = rng.choice([0, 999_999, 1, 100_000]) if rng.random() < 0.2 else rng.randrange(1_000_000)
        return seconds.to_bytes(4, "big") + fraction_bytes(micros, fsp)
    return gen


def time2_gen(fsp: int) -> Gen:
    def gen(rng: random.Random) -> bytes:
        hours = rng.choice([0, 23, 24, 838]) if rng.random() < 0.3 else rng.randint(0, 838)
        return time2_bytes(rng.random() < 0.3, hours, rng.randint(0, 59), rng.randint(0, 59), rng.randrange(1_000_000),
                           fsp)
    return gen


def legacy_gen(base: str) -> Gen:
    def gen(rng: random.Random) -> bytes:
        year, month, day = random_date(rng)
        hour, minute, second = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
        if base == "DATETIME":
            return (((year * 100 + month) * 100 + day) * 1_000_000 + (hour * 100 + minute) * 100 + second).to_bytes(
                8, "little")
        if base == "TIMESTAMP":
            return rng.getrandbits(31).to_bytes(4, "little")
        value = (rng.randint(0, 838) * 100 + minute) * 100 + second
        return (-value if rng.random() < 0.3 else value).to_bytes(3, "little", signed=True)
    return gen


def float_gen(size: int) -> Gen:
    def gen(rng: random.Random) -> bytes:
        while True:
            raw = rng.getrandbits(8 * size).to_bytes(size, "little")
            value = struct.unpack("<f" if size == 4 else "<d", raw)[0]
            if value == value and abs(value) != float("inf"):  # the server stores no NaN nor infinity
                return raw
    return gen


def geometry_gen(rng: random.Random) -> bytes:
    srid = rng.choice([0, 4326])
    wkb = b"\x01" + struct.pack("<Idd", 1, rng.uniform(-180, 180), rng.uniform(-90, 90))
    return prefixed(srid.to_bytes(4, "little") + wkb, 4)


def value_gen(column: Column, mapped: BinlogColumn, legacy: bool) -> Gen:
    """Random values of a column in its binlog storage format (what ``rows.reader`` reads)."""
    base = base_type(column)
    storage = mapped.type
    if legacy:
        return legacy_gen(base)
    sizes = {rows.TINY: 1, rows.SHORT: 2, rows.INT24: 3, rows.LONG: 4, rows.LONGLONG: 8}
    if storage in sizes:
        return int_gen(sizes[storage], my_types.is_unsigned(column))
    if storage in (rows.FLOAT, rows.DOUBLE):
        return float_gen(mapped.size)
    if storage == rows.NEWDECIMAL:
        return decimal_gen(mapped.precision, mapped.decimals)
    if storage == rows.DATE:
        return date_gen
    if storage == rows.YEAR:
        return lambda rng: bytes([rng.choice([0, 1, 69, 70, 155, 255]) if rng.random() < 0.3 else rng.randint(0, 255)])
    if storage == rows.DATETIME2:
        return datetime2_gen(mapped.fsp)
    if storage == rows.TIMESTAMP2:
        return timestamp2_gen(mapped.fsp)
    if storage == rows.TIME2:
        return time2_gen(mapped.fsp)
    if storage == rows.ENUM:
        count = len(column.enum_values or ())
        return lambda rng: rng.randint(0, count).to_bytes(mapped.size, "little")
    if storage == rows.SET:
        count = len(column.enum_values or ())
        return lambda rng: rng.getrandbits(count).to_bytes(mapped.size, "little")
    if storage == rows.BIT:
        return lambda rng: rng.getrandbits(mapped.bits).to_bytes(mapped.bytes, "big")
    if storage == rows.GEOMETRY:
        return geometry_gen
    if base in ("INET4", "INET6", "UUID"):
        return lambda rng: prefixed(rng.randbytes(mapped.max_length), 1)
    text = my_types.value_kind(column, my_types.TypeModes()).name in ("text", "json", "enum", "set")
    if storage in (rows.VARCHAR, rows.STRING):
        prefix = 2 if mapped.max_length > 255 else 1
        limit = min(mapped.max_length, 600)
    else:
        prefix, limit = mapped.length_size, (255 if mapped.length_size == 1 else 700)
    if base == "JSON":
        docs = ['{"a": 1}', "[1, 2.5, null]", '"text"', "{}", '{"k": "v\\n", "n": 1e3}']
        return lambda rng: prefixed(rng.choice(docs).encode(), prefix)
    if text:
        return lambda rng: prefixed(random_text(rng, limit), prefix)
    return lambda rng: prefixed(rng.randbytes(rng.randint(0, min(limit, 40))), prefix)


# ---- both paths ---------------------------------------------------------------------------------

def schema_table(ddl: str) -> Any:
    schema = MySqlSchema(server_charset="utf8mb4")
    schema.apply("CREATE DATABASE d")
    schema.apply(ddl, "d")
    table = schema.table("d", "t")
    assert table is not None
    return table


def table_state(table: Any, modes: my_types.TypeModes, exclude: Sequence[str] = ()) -> TableState:
    return TableState(table, topics=TopicNaming("p", by_schema=False), source_schema=source_schema("mariadb"),
                      modes=modes, columns_stage=ColumnStage({}, exclude=list(exclude)), key_spec={})


def image(values: Sequence[bytes | None]) -> bytes:
    """One row image of every column: the null bitmap, then the non-null values."""
    bitmap = bytearray((len(values) + 7) // 8)
    for i, value in enumerate(values):
        if value is None:
            bitmap[i >> 3] |= 1 << (i & 7)
    return bytes(bitmap) + b"".join(v for v in values if v is not None)


def all_present(count: int) -> bytes:
    return ((1 << count) - 1).to_bytes((count + 7) // 8, "little")


@dataclass
class Compared:
    taken: int = 0  # images the codec wrote, identical to Python's
    refused: int = 0  # images of events the codec refused (Fallback): the Python way


def python_path(state: TableState, mapped: Sequence[BinlogColumn], data: bytes, update: bool
                ) -> tuple[list[tuple[bytes, dict[str, Any] | None]], bool]:
    """The rows' (JSON, key) as the stream's Python way writes them, and whether a text column of the
    codec's holds bytes that are not UTF-8."""
    readers = [rows.reader(m.type, m, unsigned=my_types.is_unsigned(c)) for m, c in zip(mapped, state.table.columns,
                                                                                          strict=True)]
    present = all_present(len(mapped))
    texts = [index for index, column in enumerate(state.table.columns)
             if my_types.value_kind(column, state.modes) == my_types.ValueKind("text", "utf-8")]
    out = []
    invalid = False
    for values in rows.read_images(data, readers, present, present if update else None):
        row = state.row(values)
        out.append((orjson.dumps(row), state.envelope.key_of(row)))
        invalid = invalid or any(isinstance(values[i], bytes) and not is_utf8(values[i]) for i in texts)
    return out, invalid


def is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def codec_path(codec: Any, state: TableState, data: bytes, update: bool) -> list[tuple[bytes, dict[str, Any] | None]]:
    present = all_present(state.column_count)
    encoded = codec.encode_images(data, present, present if update else None)
    adjust = native_rows.YearAdjuster.of(state)
    if adjust is not None:
        encoded = adjust(encoded)
    return [(json, key if state.envelope.key_fields else None) for json, key in encoded]


def compare(state: TableState, mapped: Sequence[BinlogColumn], images: Sequence[bytes], native: Any, *,
            update: bool = False, result: Compared | None = None) -> Compared:
    """The images as one rows event through both paths; an event the codec refuses again image by image
    (each must be refused for text that is not UTF-8, the one thing it leaves to Python)."""
    result = result or Compared()
    codec = native_rows.binlog_codec(state, mapped, state.modes)
    assert codec is not None
    step = 2 if update else 1
    events = [b"".join(images)]
    while events:
        data = events.pop()
        expected, invalid = python_path(state, mapped, data, update)
        try:
            got = codec_path(codec, state, data, update)
        except native.Fallback:
            if len(expected) > step:
                events += [b"".join(images[i:i + step]) for i in range(0, len(images), step)]
                images = []
                continue
            assert invalid, ("the codec refused an image it writes", expected)
            result.refused += len(expected)
            continue
        assert got == expected, "\n".join(f"codec  {g}\npython {e}" for g, e in zip(got, expected, strict=True)
                                          if g != e)
        result.taken += len(got)
    return result


# ---- every type in every mode -------------------------------------------------------------------

TYPES = [
    "TINYINT", "TINYINT UNSIGNED", "TINYINT(1)", "BOOLEAN", "SMALLINT", "SMALLINT UNSIGNED", "MEDIUMINT",
    "MEDIUMINT UNSIGNED", "INT", "INT UNSIGNED", "INT UNSIGNED ZEROFILL", "BIGINT", "BIGINT UNSIGNED",
    "FLOAT", "DOUBLE", "FLOAT(30)", "REAL",
    "DECIMAL(1,0)", "DECIMAL(5,1)", "DECIMAL(9,9)", "DECIMAL(10,2)", "DECIMAL(18,4)", "DECIMAL(19,0)",
    "DECIMAL(27,9)", "DECIMAL(38,0)", "DECIMAL(38,10)", "DECIMAL(38,38)", "DECIMAL(39,2)", "DECIMAL(65,30)",
    "DECIMAL(10,2) UNSIGNED",
    "CHAR(4)", "CHAR(64)", "VARCHAR(10)", "VARCHAR(100)", "VARCHAR(300)", "TINYTEXT", "TEXT", "MEDIUMTEXT",
    "LONGTEXT", "NCHAR(5)", "VARCHAR(10) CHARACTER SET utf8mb3", "VARCHAR(10) CHARACTER SET latin1",
    "CHAR(3) CHARACTER SET ascii", "BINARY(4)", "VARBINARY(10)", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB",
    "ENUM('a','b','c')", "SET('x','y','z')", "BIT(1)", "BIT(12)", "BIT(64)", "JSON", "YEAR",
    "DATE", *[f"DATETIME({p})" for p in range(7)], "DATETIME", *[f"TIMESTAMP({p})" for p in range(7)],
    *[f"TIME({p})" for p in range(7)], "GEOMETRY", "POINT", "INET4", "INET6", "UUID",
]
# NOT NULL columns: Python's value of a NULL (a zero date) is then the default, else Debezium's fallback
DEFAULTS = {"DATE": ["'2020-01-02'", "'0000-00-00'", "'0050-06-30'"], "DATETIME": ["'2020-01-02 03:04:05.5'"],
            "TIMESTAMP": ["'2020-01-02 03:04:05'", "'0000-00-00 00:00:00'"], "DECIMAL": ["'1.5'"], "INT": ["7"],
            "VARCHAR": ["'dflt'"], "CHAR": ["'ab'"], "BOOLEAN": ["true"]}
# what the codec writes, of each type (in some mode): the others are the Python way's in every mode
CODEC_TYPES = {t for t in TYPES if not t.startswith(("FLOAT", "DOUBLE", "REAL", "BINARY", "VARBINARY", "ENUM", "SET",
                                                     "BIT", "JSON", "YEAR", "TIME(", "GEOMETRY", "POINT", "INET",
                                                     "UUID")) and "BLOB" not in t}
CODEC_TYPES -= {"BIGINT UNSIGNED", "DECIMAL(39,2)", "DECIMAL(65,30)", "VARCHAR(10) CHARACTER SET latin1",
                "CHAR(3) CHARACTER SET ascii"}
VALUES = 240  # per type and variant, in the first mode that writes it each way; 24 in the others


def variants(ddl_type: str) -> list[str]:
    base = ddl_type.split("(")[0].split()[0]
    out = ["", " NOT NULL"]
    out += [f" NOT NULL DEFAULT {value}" for value in DEFAULTS.get(base, [])]
    return out


CASES = [pytest.param(t, False, id=t) for t in TYPES] + [
    pytest.param(t, True, id=f"{t}-legacy") for t in ("DATETIME", "DATETIME(3)", "TIMESTAMP", "TIMESTAMP(6)",
                                                      "TIME", "TIME(2)")]  # before MySQL 5.6.4's formats


@pytest.mark.parametrize(("ddl_type", "legacy"), CASES)
def test_every_type_in_every_mode(ddl_type: str, legacy: bool, native: Any) -> None:
    """A column of the type (after an INT key) in every mode combination, nullable and NOT NULL (with
    defaults): where the codec takes the table, its JSON and key equal the Python path's for random and
    edge values with NULLs; where it does not, the type is not one it writes."""
    rng = random.Random(ddl_type)
    taken, compared = Compared(), set()
    for variant in variants(ddl_type):
        table = schema_table(f"CREATE TABLE t (id INT PRIMARY KEY, c {ddl_type}{variant}) CHARACTER SET utf8mb4")
        mapped = [binlog_column(table.columns[0]), binlog_column(table.columns[1], legacy)]
        gen = value_gen(table.columns[1], mapped[1], legacy)
        for modes in ALL_MODES:
            state = table_state(table, modes)
            codec = native_rows.binlog_codec(state, mapped, modes)
            if codec is None:
                continue
            assert ddl_type in CODEC_TYPES and not legacy, (ddl_type, modes)
            kind = native_rows.binlog_kind(mapped[1].type, mapped[1], my_types.value_kind(table.columns[1], modes))
            signature = (variant, kind, modes.enable_time_adjuster)
            count = VALUES if signature not in compared else VALUES // 10
            compared.add(signature)
            images = [image([i.to_bytes(4, "little"), None if rng.random() < 0.1 else gen(rng)]) for i in range(count)]
            compare(state, mapped, images, native, result=taken)
            # the same values as updates (before and after images alternating)
            compare(state, mapped, images[: count // 2 * 2], native, update=True, result=taken)
    if ddl_type in CODEC_TYPES and not legacy:
        assert taken.taken > VALUES, taken
        if not any(word in ddl_type for word in ("CHAR", "TEXT")):
            assert taken.refused == 0, taken
    else:
        assert taken.taken == 0


def test_the_codecs_kinds_follow_the_modes() -> None:
    """Which writer a column gets, mode by mode (what test_every_type_in_every_mode compares)."""
    def kinds(ddl_type: str, **modes: Any) -> str | None:
        table = schema_table(f"CREATE TABLE t (c {ddl_type})")
        mapped = binlog_column(table.columns[0])
        return native_rows.binlog_kind(mapped.type, mapped,
                                       my_types.value_kind(table.columns[0], my_types.TypeModes(**modes)))

    assert [kinds("DATETIME(3)", time_precision_mode=m) for m in ("adaptive", "adaptive_time_microseconds",
                                                                    "connect")] == ["datetime2:3:ms"] * 3
    assert [kinds("DATETIME(6)", time_precision_mode=m) for m in ("adaptive", "adaptive_time_microseconds",
                                                                    "connect")] == ["datetime2:6:us", "datetime2:6:us",
                                                                                    "datetime2:6:ms"]
    assert [kinds("DECIMAL(10,2)", decimal_handling_mode=m) for m in ("precise", "double", "string")] == \
           ["decimal:10:2", None, None]
    assert kinds("TIMESTAMP", time_precision_mode="connect") == "timestamp2:0:0"
    assert kinds("BIGINT UNSIGNED", bigint_unsigned_handling_mode="precise") is None
    assert kinds("VARBINARY(4)", binary_handling_mode="hex") is None


# ---- whole tables -------------------------------------------------------------------------------

WIDE = ("CREATE TABLE t (a INT, b VARCHAR(20), c BIGINT, d DECIMAL(12,3) NOT NULL DEFAULT 0, e DATE, "
        "f DATETIME(6), g TIMESTAMP(3) NULL, h BOOLEAN, i TINYINT UNSIGNED NOT NULL, j MEDIUMINT, k TEXT, "
        "l DATETIME NOT NULL DEFAULT '2020-01-01 00:00:00', m SMALLINT UNSIGNED, n CHAR(2), "
        "PRIMARY KEY (b, a)) CHARACTER SET utf8mb4")


def wide_images(rng: random.Random, table: Any, mapped: Sequence[BinlogColumn], count: int) -> list[bytes]:
    gens = [value_gen(column, m, False) for column, m in zip(table.columns, mapped, strict=True)]
    out = []
    for n in range(count):
        values: list[bytes | None] = [None if rng.random() < 0.15 else gen(rng) for gen in gens]
        values[0] = n.to_bytes(4, "little")  # the key is never null
        values[1] = prefixed(f"k{n}".encode(), 1)
        out.append(image(values))
    return out


@pytest.mark.parametrize("modes", [my_types.TypeModes(), my_types.TypeModes(time_precision_mode="connect",
                                                                           enable_time_adjuster=False),
                                   my_types.TypeModes(time_precision_mode="adaptive")], ids=str)
def test_wide_rows_with_a_composite_key(modes: my_types.TypeModes, native: Any) -> None:
    """Tables of many columns the codec writes, a key of text and an integer (its order not the table's),
    NULLs everywhere else, inserts and updates of many rows an event."""
    table = schema_table(WIDE)
    mapped = [binlog_column(column) for column in table.columns]
    state = table_state(table, modes)
    rng = random.Random(5)
    images = wide_images(rng, table, mapped, 600)
    result = compare(state, mapped, images, native)
    compare(state, mapped, images, native, update=True, result=result)
    assert result.taken + result.refused == 1200 and result.taken > 950, result  # refused: text not UTF-8


def test_columns_left_out_of_the_rows(native: Any) -> None:
    """column.exclude.list: the codec steps over the columns the row does not hold, of any type (BLOBs,
    ENUMs, JSON, floats: types it does not write), and writes the rest."""
    table = schema_table("CREATE TABLE t (id INT PRIMARY KEY, blobby BLOB, v VARCHAR(5), f DOUBLE, e ENUM('x','y'), "
                         "j JSON, bt BIT(10), y YEAR, tm TIME(4), d DATE, big DECIMAL(65,30)) CHARACTER SET utf8mb4")
    mapped = [binlog_column(column) for column in table.columns]
    excluded = [f"d.t.{name}" for name in ("blobby", "f", "e", "j", "bt", "y", "tm", "big")]
    state = table_state(table, my_types.TypeModes(), exclude=excluded)
    assert native_rows.binlog_codec(table_state(table, my_types.TypeModes()), mapped, state.modes) is None
    rng = random.Random(9)
    gens = [value_gen(column, m, False) for column, m in zip(table.columns, mapped, strict=True)]
    images = [image([n.to_bytes(4, "little"), *(None if rng.random() < 0.2 else gen(rng) for gen in gens[1:])])
              for n in range(300)]
    assert compare(state, mapped, images, native).taken > 250


def test_events_the_codec_leaves_to_python(native: Any) -> None:
    """Columns left out of an image (binlog_row_image=MINIMAL), truncated events, text that is not UTF-8:
    Fallback, and the stream decodes them the Python way."""
    table = schema_table("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)) CHARACTER SET utf8mb4")
    mapped = [binlog_column(column) for column in table.columns]
    state = table_state(table, my_types.TypeModes())
    codec = native_rows.binlog_codec(state, mapped, state.modes)
    good = image([(1).to_bytes(4, "little"), prefixed(b"ab", 1)])
    assert codec.encode_images(good, b"\x03") == [(b'{"id":1,"v":"ab"}', {"id": 1})]
    for data, present, after in ((good, b"\x01", None), (good, b"\x03", b"\x02"), (good[:-1], b"\x03", None),
                                 (good + good[:3], b"\x03", None),
                                 (image([(1).to_bytes(4, "little"), prefixed(b"\xff", 1)]), b"\x03", None)):
        with pytest.raises(native.Fallback):
            codec.encode_images(data, present, after)


# ---- the layouts built here are the server's ----------------------------------------------------

def test_the_layouts_read_back() -> None:
    """The encoders above against rows.py's readers, on values whose bytes are known (MySQL's docs and
    Debezium's recorded output: tests/fixtures/reference/debezium/mariadb-types.jsonl)."""
    read_decimal = rows.reader(rows.NEWDECIMAL, BinlogColumn(precision=10, decimals=2), unsigned=False)
    for negative, unscaled, precision, scale in ((False, 1234567890, 10, 2), (True, 1, 10, 2), (False, 150, 10, 2),
                                                 (True, 10 ** 38 - 1, 38, 0), (False, 123456789012345678, 27, 9),
                                                 (True, 5, 5, 1), (False, 10 ** 30 - 1, 65, 30)):
        reader = rows.reader(rows.NEWDECIMAL, BinlogColumn(precision=precision, decimals=scale), unsigned=False)
        data = decimal_bytes(negative, unscaled, precision, scale)
        assert len(data) == rows.decimal_size(precision, scale)
        value = reader(data, 0)[0]
        assert value == Decimal((int(negative), tuple(map(int, str(unscaled))), -scale))
    assert decimal_bytes(False, 1234567890, 10, 2) == bytes.fromhex("80bc614e5a")  # binlog.rs's tests
    assert decimal_bytes(True, 1, 10, 2) == bytes.fromhex("7ffffffffe")
    assert read_decimal(bytes.fromhex("8000000132"), 0)[0] == Decimal("1.50")
    assert date_bytes(2024, 2, 29) == bytes.fromhex("5dd00f")
    assert datetime2_bytes(2024, 2, 29, 13, 45, 30, 123456, 6) == bytes.fromhex("99b2badb5e01e240")
    assert datetime2_bytes(1969, 12, 31, 23, 59, 59, 999500, 4) == bytes.fromhex("99027f7efb270b")
    time2 = {fsp: rows.reader(rows.TIME2, BinlogColumn(fsp=fsp), unsigned=False) for fsp in range(7)}
    cases = ((False, 12, 34, 56, 789012), (True, 838, 59, 59, 0), (True, 0, 0, 1, 500000), (True, 1, 2, 3, 10000),
             (False, 0, 0, 0, 0), (True, 0, 0, 0, 250000))
    for negative, hours, minutes, seconds, micros in cases:
        for fsp in range(7):
            truncated = micros - micros % 10 ** (6 - fsp)
            total = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + truncated
            value = time2[fsp](time2_bytes(negative, hours, minutes, seconds, micros, fsp), 0)[0]
            assert value == timedelta(microseconds=-total if negative else total), (negative, hours, micros, fsp)
