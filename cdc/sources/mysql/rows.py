"""Binlog row images decoded from our own schema model (pure functions over bytes).

The binlog's TABLE_MAP gives each column's storage type and its metadata (lengths, precision,
fractional digits) whatever the server's settings. What it gives only with
``binlog_row_metadata=FULL`` (names, signedness, character sets, ENUM/SET values) comes from the
schema history instead, as Debezium does. So rows decode the same at MariaDB's default
(NO_LOG), MySQL 8's default (MINIMAL) and FULL.

A row image is a null bitmap over the columns present in the event, then each present, non-null
value in its storage format (MySQL's ``Field::pack``). Values come out in the forms the value
converters of ``types.py`` take:

    integers            int (signed or not, as the schema says)      YEAR     int (0 for 0000)
    FLOAT / DOUBLE      float                                         DECIMAL  Decimal (exact)
    DATE                date, None for a zero date                    TIME     timedelta
    DATETIME            datetime, None for a zero or invalid date     TIMESTAMP datetime (naive UTC)
    CHAR/VARCHAR/TEXT   bytes (decoded by the column's charset later) BINARY/BLOB bytes
    ENUM                int (1-based index, 0 for '')                 SET      int (bit mask)
    BIT                 bytes (big-endian)                            GEOMETRY bytes (SRID + WKB)
    JSON (MySQL)        its text; MariaDB's JSON is a LONGTEXT        absent (MINIMAL image) ABSENT
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from cdc.core.errors import SourceError

# Storage types (MySQL's enum_field_types), as the TABLE_MAP event lists them.
DECIMAL, TINY, SHORT, LONG, FLOAT, DOUBLE, NULL, TIMESTAMP, LONGLONG, INT24 = range(10)
DATE, TIME, DATETIME, YEAR, NEWDATE, VARCHAR, BIT, TIMESTAMP2, DATETIME2, TIME2 = range(10, 20)
JSON, NEWDECIMAL, ENUM, SET, TINY_BLOB, MEDIUM_BLOB, LONG_BLOB, BLOB, VAR_STRING, STRING, GEOMETRY = range(245, 256)


class _Absent:
    """A column the row image leaves out (binlog_row_image=MINIMAL or NOBLOB)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()

Reader = Callable[[bytes, int], tuple[Any, int]]

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_EPOCH = datetime(1970, 1, 1)


class RowDecodeError(SourceError):
    """A row image does not match the column layout it was decoded with."""


# ---- one column's reader ----------------------------------------------------------------------

def _fixed(fmt: str) -> Reader:
    size = struct.calcsize(fmt)
    unpack = struct.Struct(fmt).unpack_from

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        return unpack(buf, pos)[0], pos + size
    return read


def _int24(unsigned: bool) -> Reader:
    def read(buf: bytes, pos: int) -> tuple[int, int]:
        return int.from_bytes(buf[pos:pos + 3], "little", signed=not unsigned), pos + 3
    return read


def _length_prefixed(prefix: int) -> Reader:
    def read(buf: bytes, pos: int) -> tuple[bytes, int]:
        length = int.from_bytes(buf[pos:pos + prefix], "little")
        start = pos + prefix
        return bytes(buf[start:start + length]), start + length
    return read


def _little_int(size: int) -> Reader:
    def read(buf: bytes, pos: int) -> tuple[int, int]:
        return int.from_bytes(buf[pos:pos + size], "little"), pos + size
    return read


def _bits(size: int) -> Reader:
    def read(buf: bytes, pos: int) -> tuple[bytes, int]:
        return bytes(buf[pos:pos + size]), pos + size
    return read


def _year(buf: bytes, pos: int) -> tuple[int, int]:
    value = buf[pos]
    return (value + 1900 if value else 0), pos + 1


def _date(buf: bytes, pos: int) -> tuple[date | None, int]:
    packed = int.from_bytes(buf[pos:pos + 3], "little")
    day, month, year = packed & 31, packed >> 5 & 15, packed >> 9
    try:
        return date(year, month, day), pos + 3
    except ValueError:  # 0000-00-00, 2024-00-10 ...: Debezium writes null (or the default)
        return None, pos + 3


def _time_old(buf: bytes, pos: int) -> tuple[timedelta, int]:
    value = int.from_bytes(buf[pos:pos + 3], "little", signed=True)
    sign, value = (-1 if value < 0 else 1), abs(value)
    seconds = value // 10000 * 3600 + value // 100 % 100 * 60 + value % 100
    return timedelta(seconds=sign * seconds), pos + 3


def _datetime_old(buf: bytes, pos: int) -> tuple[datetime | None, int]:
    value = int.from_bytes(buf[pos:pos + 8], "little")
    day_part, time_part = divmod(value, 1_000_000)
    try:
        return datetime(day_part // 10000, day_part // 100 % 100, day_part % 100,
                        time_part // 10000, time_part // 100 % 100, time_part % 100), pos + 8
    except ValueError:
        return None, pos + 8


def _fraction(fsp: int, signed: bool) -> Callable[[bytes, int], tuple[int, int]]:
    """The fractional seconds after a TIME2/DATETIME2/TIMESTAMP2 (in microseconds)."""
    size = (fsp + 1) // 2
    scale = (1, 10000, 100, 1)[size]

    def read(buf: bytes, pos: int) -> tuple[int, int]:
        if not size:
            return 0, pos
        return int.from_bytes(buf[pos:pos + size], "big", signed=signed) * scale, pos + size
    return read


def _time2(fsp: int) -> Reader:
    """MySQL's my_time_packed_from_binary: 3 bytes of sign/hour/minute/second, then the fraction,
    the whole offset so that it sorts as unsigned bytes."""
    size = (fsp + 1) // 2

    def read(buf: bytes, pos: int) -> tuple[timedelta, int]:
        if size == 3:
            packed = int.from_bytes(buf[pos:pos + 6], "big") - 0x800000000000
            end = pos + 6
        else:
            intpart = int.from_bytes(buf[pos:pos + 3], "big") - 0x800000
            frac = int.from_bytes(buf[pos + 3:pos + 3 + size], "big") if size else 0
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x100 if size == 1 else 0x10000
            packed = (intpart << 24) + frac * (10000 if size == 1 else 100 if size == 2 else 1)
            end = pos + 3 + size
        negative = packed < 0
        packed = -packed if negative else packed
        hms, micros = packed >> 24, packed % (1 << 24)
        seconds = (hms >> 12 & 0x3FF) * 3600 + (hms >> 6 & 0x3F) * 60 + (hms & 0x3F)
        total = seconds * 1_000_000 + micros
        return timedelta(microseconds=-total if negative else total), end
    return read


def _datetime2(fsp: int) -> Reader:
    fraction = _fraction(fsp, signed=False)

    def read(buf: bytes, pos: int) -> tuple[datetime | None, int]:
        packed = int.from_bytes(buf[pos:pos + 5], "big") - 0x8000000000
        micros, end = fraction(buf, pos + 5)
        ymd, hms = packed >> 17, packed % (1 << 17)
        year_month = ymd >> 5
        try:
            return datetime(year_month // 13, year_month % 13, ymd & 31, hms >> 12, hms >> 6 & 63, hms & 63,
                            micros), end
        except ValueError:  # a zero or partial date
            return None, end
    return read


def _timestamp2(fsp: int) -> Reader:
    fraction = _fraction(fsp, signed=False)

    def read(buf: bytes, pos: int) -> tuple[datetime, int]:
        seconds = int.from_bytes(buf[pos:pos + 4], "big")
        micros, end = fraction(buf, pos + 4)
        return _EPOCH + timedelta(seconds=seconds, microseconds=micros), end
    return read


def _timestamp_old(buf: bytes, pos: int) -> tuple[datetime, int]:
    return _EPOCH + timedelta(seconds=int.from_bytes(buf[pos:pos + 4], "little")), pos + 4


def decimal_size(precision: int, scale: int) -> int:
    integral, fractional = precision - scale, scale
    return (integral // 9 * 4 + _DIG2BYTES[integral % 9] + fractional // 9 * 4 + _DIG2BYTES[fractional % 9])


def _new_decimal(precision: int, scale: int) -> Reader:
    """MySQL's decimal2bin: base-10^9 groups big-endian, the leading partial group first; negative
    numbers have every bit inverted; the top bit is flipped so the bytes sort as numbers."""
    size = decimal_size(precision, scale)
    integral = precision - scale
    head, full_int = _DIG2BYTES[integral % 9], integral // 9
    full_frac, tail_digits = scale // 9, scale % 9
    tail = _DIG2BYTES[tail_digits]

    def read(buf: bytes, pos: int) -> tuple[Decimal, int]:
        raw = bytearray(buf[pos:pos + size])
        negative = not raw[0] & 0x80
        raw[0] ^= 0x80
        if negative:
            raw = bytearray(b ^ 0xFF for b in raw)
        p = 0
        whole = 0
        if head:
            whole = int.from_bytes(raw[:head], "big")
            p = head
        for _ in range(full_int):
            whole = whole * 1_000_000_000 + int.from_bytes(raw[p:p + 4], "big")
            p += 4
        frac = 0
        for _ in range(full_frac):
            frac = frac * 1_000_000_000 + int.from_bytes(raw[p:p + 4], "big")
            p += 4
        if tail:
            frac = frac * 10 ** tail_digits + int.from_bytes(raw[p:p + tail], "big")
        unscaled = whole * 10 ** scale + frac
        return Decimal((1 if negative else 0, tuple(map(int, str(unscaled))), -scale)), pos + size
    return read


def _json_binary(prefix: int) -> Reader:
    from pymysqlreplication.json_binary import parse_json

    from cdc.sources.mysql.types import json_text

    def read(buf: bytes, pos: int) -> tuple[str, int]:
        length = int.from_bytes(buf[pos:pos + prefix], "little")
        start = pos + prefix
        data = bytes(buf[start:start + length])
        return ("null" if not data else json_text(parse_json(data[0], data[1:]))), start + length
    return read


def reader(storage_type: int, column: Any, *, unsigned: bool) -> Reader:
    """The reader of one column, from its TABLE_MAP storage type and metadata (``column`` carries
    python-mysql-replication's parsed metadata attributes) and our schema's signedness."""
    t = storage_type
    if t == TINY:
        return _fixed("<B" if unsigned else "<b")
    if t == SHORT:
        return _fixed("<H" if unsigned else "<h")
    if t == INT24:
        return _int24(unsigned)
    if t == LONG:
        return _fixed("<I" if unsigned else "<i")
    if t == LONGLONG:
        return _fixed("<Q" if unsigned else "<q")
    if t == FLOAT:
        return _fixed("<f")
    if t == DOUBLE:
        return _fixed("<d")
    if t == YEAR:
        return _year
    if t == NEWDECIMAL:
        return _new_decimal(column.precision, column.decimals)
    if t in (DATE, NEWDATE):
        return _date
    if t == TIME:
        return _time_old
    if t == TIME2:
        return _time2(column.fsp)
    if t == DATETIME:
        return _datetime_old
    if t == DATETIME2:
        return _datetime2(column.fsp)
    if t == TIMESTAMP:
        return _timestamp_old
    if t == TIMESTAMP2:
        return _timestamp2(column.fsp)
    if t in (VARCHAR, VAR_STRING, STRING):
        return _length_prefixed(2 if column.max_length > 255 else 1)
    if t == ENUM or t == SET:
        return _little_int(column.size)
    if t in (BLOB, TINY_BLOB, MEDIUM_BLOB, LONG_BLOB, GEOMETRY):
        return _length_prefixed(column.length_size)
    if t == JSON:
        return _json_binary(column.length_size)
    if t == BIT:
        return _bits(column.bytes)
    raise RowDecodeError(f"binlog column type {t} is not supported",
                         fix="report it with the table's CREATE TABLE statement")


# ---- row images -------------------------------------------------------------------------------

def _bit(bitmap: bytes, index: int) -> bool:
    return bool(bitmap[index >> 3] >> (index & 7) & 1)


def read_image(buf: bytes, pos: int, readers: Sequence[Reader], present: bytes) -> tuple[list[Any], int]:
    """One row image starting at ``pos``: the values in column order (ABSENT where not present)."""
    count = len(readers)
    present_count = sum(1 for i in range(count) if _bit(present, i))
    nulls = buf[pos:pos + (present_count + 7) // 8]
    pos += (present_count + 7) // 8
    values: list[Any] = []
    n = 0
    for i in range(count):
        if not _bit(present, i):
            values.append(ABSENT)
            continue
        if nulls[n >> 3] >> (n & 7) & 1:
            values.append(None)
        else:
            value, pos = readers[i](buf, pos)
            values.append(value)
        n += 1
    return values, pos


def read_images(buf: bytes, readers: Sequence[Reader], present: bytes, present_after: bytes | None = None,
                ) -> list[list[Any]]:
    """Every row image of a rows event's data; for an UPDATE (``present_after`` given), before and
    after images alternate."""
    images = []
    pos = 0
    end = len(buf)
    while pos < end:
        values, pos = read_image(buf, pos, readers, present)
        images.append(values)
        if present_after is not None:
            values, pos = read_image(buf, pos, readers, present_after)
            images.append(values)
    if pos != end:
        raise RowDecodeError(f"a row image ran {pos - end} bytes past the end of its event",
                             fix="the schema history does not match the table at this binlog position")
    return images


# The binlog's storage type codes (a TABLE_MAP's column types) each column type of the schema model
# is written with; a type missing here is not checked.
_STRINGS = frozenset((15, 253, 254, 247, 248))  # VARCHAR, VAR_STRING, STRING (CHAR, BINARY, ENUM, SET, INET...)
_BLOBS = frozenset((249, 250, 251, 252))
_BINLOG_TYPES: dict[str, frozenset[int]] = {
    **{name: frozenset((1,)) for name in ("TINYINT", "BOOL", "BOOLEAN")},
    "SMALLINT": frozenset((2,)), "MEDIUMINT": frozenset((9,)), "INT": frozenset((3,)), "INTEGER": frozenset((3,)),
    "BIGINT": frozenset((8,)), "FLOAT": frozenset((4,)), "DOUBLE": frozenset((5,)), "REAL": frozenset((5, 4)),
    **{name: frozenset((0, 246)) for name in ("DECIMAL", "NUMERIC", "DEC", "FIXED")},
    "DATE": frozenset((10, 14)), "DATETIME": frozenset((12, 18)), "TIMESTAMP": frozenset((7, 17)),
    "TIME": frozenset((11, 19)), "YEAR": frozenset((13,)), "BIT": frozenset((16,)),
    **{name: _STRINGS for name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY", "ENUM", "SET", "NCHAR", "NVARCHAR",
                                   "CHARACTER", "INET4", "INET6", "UUID")},
    **{name: _BLOBS for name in ("TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "TINYBLOB", "BLOB", "MEDIUMBLOB",
                                 "LONGBLOB", "LONG", "LONG VARCHAR", "LONG VARBINARY")},
    "JSON": frozenset((245, 252)),  # MariaDB writes JSON as a LONGTEXT
}


def type_mismatches(binlog_types: list[int], columns: list[Any]) -> list[int]:
    """The indexes of the columns whose TABLE_MAP type the schema model's type cannot be: the model and
    the binlog then describe two different tables (a history of another server, a lost DDL)."""
    out = []
    for index, (code, column) in enumerate(zip(binlog_types, columns, strict=True)):
        expected = _BINLOG_TYPES.get(str(column.type_name).upper())
        if expected is not None and code not in expected:
            out.append(index)
    return out
