"""MySQL/MariaDB columns -> Debezium's Kafka Connect schemas, and binlog values -> JSON payloads.

A column comes from the DDL model (``ddl.py``): Debezium chooses the Connect type from the
column's ``typeName`` and JDBC type (``BinlogValueConverters``, 3.5). Values arrive as
python-mysql-replication 1.0.17 decodes them (int, float, Decimal, str, bytes, date, datetime,
timedelta, set, a "0101" string for BIT, parsed JSON); pymysql's snapshot values (bytes for BIT,
"a,c" for SET, str for JSON) are accepted too. A converter is chosen once per column and returns
what the JSON converter writes (base64 text for bytes and decimals).

| MySQL / MariaDB                    | Connect type / semantic name                                 |
|------------------------------------|--------------------------------------------------------------|
| BOOL, BOOLEAN, BIT(1)              | boolean                                                      |
| BIT(n>1)                           | bytes ``io.debezium.data.Bits`` (little-endian)              |
| TINYINT [UNSIGNED], SMALLINT       | int16                                                        |
| SMALLINT UNSIGNED, MEDIUMINT, INT  | int32                                                        |
| INT UNSIGNED, BIGINT               | int64                                                        |
| BIGINT UNSIGNED                    | int64 (long: wraps past 2^63) / Decimal(20,0) (precise)      |
| FLOAT, FLOAT(p<=24), REAL          | float                                                        |
| FLOAT(p>24), FLOAT(m,d), DOUBLE    | double                                                       |
| DECIMAL(p,s), NUMERIC              | bytes ``org.apache.kafka.connect.data.Decimal`` / double / string |
| CHAR, VARCHAR, TEXT, NCHAR, ...    | string                                                       |
| ENUM / SET                         | string ``io.debezium.data.Enum`` / ``EnumSet`` ("a,c")       |
| JSON / UUID (MariaDB)              | string ``io.debezium.data.Json`` / ``Uuid``                  |
| BINARY, VARBINARY, BLOB            | bytes / base64 / base64-url-safe / hex strings               |
| DATE                               | int32 ``io.debezium.time.Date``                              |
| TIME                               | int64 ``io.debezium.time.MicroTime``                         |
| DATETIME(0-3) / (4-6)              | int64 ``io.debezium.time.Timestamp`` / ``MicroTimestamp``    |
| TIMESTAMP                          | string ``io.debezium.time.ZonedTimestamp`` (UTC)             |
| YEAR                               | int32 ``io.debezium.time.Year``                              |
| GEOMETRY..., POINT                 | struct ``io.debezium.data.geometry.Geometry`` / ``Point``    |
| INET4, INET6 (MariaDB)             | string                                                       |

``time.precision.mode=connect`` uses Kafka Connect's Date/Time/Timestamp (milliseconds); a TIME
outside Connect's Time range (negative, or past 24:00:00) is then written as null (the schema
default of a NOT NULL column), with a warning, as Debezium does. ``adaptive`` makes TIME(0-3)
``io.debezium.time.Time`` (milliseconds). ``enable.time.adjuster`` (on by default) reads DATE and
DATETIME years 0-99 as two-digit years: 00-69 are 2000-2069, 70-99 are 1970-1999. A column's
DEFAULT becomes the schema's ``default``, converted as Debezium's ``BinlogDefaultValueConverter``
does; its comment (see ``include.schema.comments``) becomes ``doc``.

A None value of a NOT NULL column (MySQL's zero dates) becomes the schema default, else a zero
value, as Debezium does. python-mysql-replication returns None for an empty SET: pass ``""``
for a value whose ``none_sources`` entry is ``"empty set"``.
"""
from __future__ import annotations

import base64
import codecs
import ipaddress
import logging
import math
import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_FLOOR, Context, Decimal, Inexact, InvalidOperation, Rounded
from typing import Any, ClassVar

from cdc.core import type_rules as rules
from cdc.core.encodings import JDBC, decimal_bytes, float32
from cdc.core.errors import ConfigError
from cdc.core.schema import Column
from cdc.core.type_modes import TypeModes as CoreTypeModes
from cdc.sources.mysql.ddl import enum_options

log = logging.getLogger(__name__)

__all__ = ["TypeModes", "ValueKind", "field_schema", "value_kind", "converter_of", "value_converter", "Converter",
           "is_unsigned", "json_text"]

Converter = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class TypeModes(CoreTypeModes):
    time_precision_mode: str = "adaptive_time_microseconds"  # | adaptive | connect
    bigint_unsigned_handling_mode: str = "long"  # long | precise
    enable_time_adjuster: bool = True  # DATE/DATETIME years 0-99 read as two-digit years

    ALLOWED: ClassVar[dict[str, tuple[str, ...]]] = {
        **CoreTypeModes.ALLOWED, "bigint_unsigned_handling_mode": ("long", "precise"),
    }


# ---- classifying a column ---------------------------------------------------------------------

_GEOMETRY = {"GEOMETRY", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
             "GEOMETRYCOLLECTION", "GEOMCOLLECTION"}
_UNSIGNED_BITS = {"TINYINT": 8, "INT1": 8, "SMALLINT": 16, "INT2": 16, "MEDIUMINT": 24, "INT3": 24,
                  "MIDDLEINT": 24, "INT": 32, "INTEGER": 32, "INT4": 32, "BIGINT": 64, "INT8": 64}
_STRING_TYPES = {JDBC.CHAR, JDBC.VARCHAR, JDBC.NCHAR, JDBC.NVARCHAR}
_BINARY_TYPES = {JDBC.BINARY, JDBC.VARBINARY, JDBC.BLOB}


def _base(column: Column) -> str:
    """The type's first word(s): ``INT`` of ``INT UNSIGNED ZEROFILL``."""
    name = column.type_name.upper()
    for suffix in (" ZEROFILL", " UNSIGNED", " SIGNED", " PRECISION", " BINARY"):
        name = name.replace(suffix, "")
    return name


def is_unsigned(column: Column) -> bool:
    words = column.type_name.upper().split()
    return "UNSIGNED" in words or "ZEROFILL" in words  # ZEROFILL implies UNSIGNED


_unsigned = is_unsigned


def _family(column: Column, modes: TypeModes) -> str:
    """The column's type family (Debezium's choice by typeName and JDBC type), which decides its
    schema and how its DEFAULT is read; ``value_kind`` refines it under the type modes."""
    base = _base(column)
    jdbc = column.jdbc_type
    if base == "JSON":
        return "json"
    if base == "POINT":
        return "point"
    if base in _GEOMETRY:
        return "geometry"
    if base == "YEAR":
        return "year"
    if base == "ENUM":
        return "enum"
    if base == "SET":
        return "set"
    if base == "UUID":
        return "uuid"
    if base in ("INET4", "INET6"):
        return "inet"
    if base in _UNSIGNED_BITS and _unsigned(column):
        bits = _UNSIGNED_BITS[base]
        if bits == 64:
            return "ubigint_precise" if modes.bigint_unsigned_handling_mode == "precise" else "ubigint_long"
        return f"uint{bits}"
    if jdbc == JDBC.FLOAT and column.scale is None and (column.length is None or column.length <= 24):
        return "float32"
    if jdbc == JDBC.BIT:
        return "bits" if (column.length or 1) > 1 else "bit"
    return {
        JDBC.BOOLEAN: "boolean", JDBC.SMALLINT: "int16", JDBC.INTEGER: "int32", JDBC.BIGINT: "int64",
        JDBC.REAL: "float32", JDBC.FLOAT: "float64", JDBC.DOUBLE: "float64", JDBC.DECIMAL: "decimal",
        JDBC.NUMERIC: "decimal", JDBC.DATE: "date", JDBC.TIME: "time", JDBC.TIMESTAMP: "datetime",
        JDBC.TIMESTAMP_WITH_TIMEZONE: "timestamp",
    }.get(jdbc) or ("string" if jdbc in _STRING_TYPES else "binary" if jdbc in _BINARY_TYPES else "unsupported")


def _precision(column: Column) -> int:
    """Fractional-second digits as Debezium sees them: the declared length, or -1."""
    return column.length if column.length is not None else -1


# ---- schemas ----------------------------------------------------------------------------------

def _schema(type_: str, name: str | None = None, parameters: dict[str, str] | None = None,
            fields: list[dict[str, Any]] | None = None, doc: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": type_}
    if fields is not None:
        schema["fields"] = fields
    schema["optional"] = True
    if name is not None:
        schema["name"] = name
        schema["version"] = 1
    if doc is not None:
        schema["doc"] = doc
    if parameters is not None:
        schema["parameters"] = parameters
    return schema


def _decimal_schema(precision: int, scale: int) -> dict[str, Any]:
    return rules.decimal_schema("precise", precision, scale, True)


def _base_schema(column: Column, kind: str, modes: TypeModes) -> dict[str, Any] | None:
    if kind in ("boolean", "bit"):
        return _schema("boolean")
    if kind == "bits":
        return rules.bits_schema(column.length or 1, True)
    if kind in ("int16", "uint8"):
        return _schema("int16")
    if kind in ("int32", "uint16", "uint24"):
        return _schema("int32")
    if kind in ("int64", "uint32", "ubigint_long"):
        return _schema("int64")
    if kind == "ubigint_precise":
        return _decimal_schema(20, 0)
    if kind == "float32":
        return _schema("float")
    if kind == "float64":
        return _schema("double")
    if kind == "decimal":
        return rules.decimal_schema(modes.decimal_handling_mode, column.length if column.length is not None else 10,
                                    column.scale or 0, True)
    if kind in ("string", "inet"):
        return _schema("string")
    if kind == "enum":
        return _schema("string", "io.debezium.data.Enum", {"allowed": ",".join(enum_options(column.enum_values))})
    if kind == "set":
        return _schema("string", "io.debezium.data.EnumSet", {"allowed": ",".join(enum_options(column.enum_values))})
    if kind == "json":
        return _schema("string", "io.debezium.data.Json")
    if kind == "uuid":
        return _schema("string", "io.debezium.data.Uuid")
    if kind == "binary":
        return rules.binary_schema(modes.binary_handling_mode, True)
    if kind == "year":
        return _schema("int32", "io.debezium.time.Year")
    if kind == "date":
        return rules.date_schema(modes.time_precision_mode, True)
    if kind == "time":
        return rules.time_schema(modes.time_precision_mode, _precision(column), True)
    if kind == "datetime":
        return rules.timestamp_schema(modes.time_precision_mode, _precision(column), True)
    if kind == "timestamp":
        return rules.zoned_timestamp_schema(True)
    if kind == "geometry":
        return rules.geometry_schema(True)
    if kind == "point":
        return rules.point_schema(True)
    return None


def field_schema(column: Column, modes: TypeModes) -> dict[str, Any] | None:
    """The column's Connect schema as Debezium's JSON converter prints it (without "field").

    None for a type Debezium cannot represent (VECTOR): Debezium leaves such columns out.
    """
    kind = _family(column, modes)
    schema = _base_schema(column, kind, modes)
    if schema is None:
        return None
    schema["optional"] = column.optional
    if column.comment is not None:  # the comment is the doc (replacing a type's own), before parameters
        parameters = schema.pop("parameters", None)
        schema["doc"] = column.comment
        if parameters is not None:
            schema["parameters"] = parameters
    default = _default_value(column, kind, modes)
    if default is not None:
        schema["default"] = default
    return schema


# ---- value converters -------------------------------------------------------------------------

_b64 = base64.b64encode
_EPOCH = datetime(1970, 1, 1)
_EPOCH_DATE = date(1970, 1, 1)
_ONE_US = timedelta(microseconds=1)


_unscaled_bytes = decimal_bytes


def _float32(value: float) -> float:
    return value if not math.isfinite(value) else float32(value)


def _to_int(value: Any) -> int:
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big")
    return int(value)


INT_CONVERTER = _to_int  # a signed integer column's: an int comes out as it went in


def _unsigned_converter(bits: int) -> Converter:
    wrap = 1 << bits

    def convert(value: Any) -> int:
        number = _to_int(value)
        return number + wrap if number < 0 else number  # a signed read of an unsigned column
    return convert


def _ubigint_long(value: Any) -> int:
    number = _to_int(value)
    return number - (1 << 64) if number >= 1 << 63 else number  # Debezium's long mode wraps


def _ubigint_precise(value: Any) -> str:
    number = _to_int(value)
    return _unscaled_bytes(number + (1 << 64) if number < 0 else number)


_EXACT = Context(prec=200, traps=[Inexact, Rounded])  # wider than any DECIMAL(65, 30); never rounds


def unscaled(number: Decimal, scale: int) -> int:
    """The exact integer ``number * 10**scale`` (rounded half up when ``number`` has more digits):
    no decimal context rounds it, so DECIMAL(65,30) keeps every digit."""
    if number.is_finite():
        try:
            shifted = number.scaleb(scale, _EXACT)  # the common case, in C: exactly ``scale`` digits
        except (Inexact, Rounded):
            pass
        else:
            if shifted == shifted.to_integral_value(context=_EXACT):
                return int(shifted)
    sign, digits, exponent = number.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{number} has no exact value")
    value = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        value *= 10 ** shift
    else:
        value, remainder = divmod(value, 10 ** -shift)
        if remainder * 2 >= 10 ** -shift:
            value += 1
    return -value if sign else value


def _decimal_converter(column: Column, mode: str) -> Converter:
    scale = column.scale or 0
    if mode == "double":
        return float
    if mode == "string":
        return lambda value: format(value if isinstance(value, Decimal) else Decimal(str(value)), "f")

    def precise(value: Any) -> str:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
        return _unscaled_bytes(unscaled(number, scale))
    return precise


# MySQL character sets whose Python codec has another name (the others are the same word).
_PYTHON_CODECS = {"utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "latin1": "cp1252",
                  "ascii": "ascii", "binary": "latin-1", "ucs2": "utf-16-be", "utf16": "utf-16-be",
                  "utf16le": "utf-16-le", "utf32": "utf-32-be", "ujis": "euc_jp", "eucjpms": "euc_jp",
                  "euckr": "euc_kr", "koi8r": "koi8_r", "koi8u": "koi8_u", "latin2": "iso8859_2",
                  "latin5": "iso8859_9", "latin7": "iso8859_13", "greek": "iso8859_7", "hebrew": "iso8859_8",
                  "tis620": "tis_620", "macroman": "mac_roman", "macce": "mac_latin2"}


def _latin1_undefined(error: UnicodeError) -> tuple[str, int]:
    """MySQL's latin1 is cp1252 whose five undefined bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D) map to
    the control characters of the same number, as in ISO 8859-1."""
    assert isinstance(error, UnicodeDecodeError)
    return error.object[error.start:error.end].decode("latin-1"), error.end


codecs.register_error("cdc-mysql-latin1", _latin1_undefined)


def python_codec(charset: str | None) -> str:
    name = (charset or "utf8mb4").lower()
    return _PYTHON_CODECS.get(name, name)


def _string_converter(column: Column) -> Converter:
    codec = python_codec(column.charset)
    errors = "cdc-mysql-latin1" if codec == "cp1252" else "strict"
    try:
        codecs.lookup(codec)
    except LookupError:
        log.warning("column %s: character set %s has no Python codec; its text is read as UTF-8",
                    column.name, column.charset)
        codec, errors = "utf-8", "replace"

    def convert(value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, (bytes, bytearray)):  # binlog rows: the column's bytes
            try:
                return bytes(value).decode(codec, errors)
            except UnicodeDecodeError:
                return bytes(value).decode(codec, "replace")
        return str(value)
    return convert


def _binary_converter(column: Column, mode: str) -> Converter:
    pad = column.length if column.jdbc_type == JDBC.BINARY and column.length else 0
    encode = {
        "hex": lambda b: b.hex(),
        "base64-url-safe": lambda b: base64.urlsafe_b64encode(b).decode(),
    }.get(mode, lambda b: _b64(b).decode())  # "bytes" is base64 in JSON too

    def convert(value: Any) -> str:
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        if len(data) < pad:  # the binlog drops BINARY(n)'s trailing zero bytes (DBZ-254)
            data = data.ljust(pad, b"\0")
        return encode(data)
    return convert


def _bits_converter(column: Column) -> Converter:
    length = column.length or 1
    num_bytes = (length + 7) // 8

    def convert(value: Any) -> str:
        if isinstance(value, str):
            number = int(value, 2) if value else 0  # python-mysql-replication: "10100101"
        elif isinstance(value, (bytes, bytearray)):
            number = int.from_bytes(value, "big")  # pymysql: big-endian bytes
        else:
            number = int(value)
        return _b64(number.to_bytes(num_bytes, "little")).decode()  # Debezium's Bits: little-endian
    return convert


def _bit_converter(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip("0") != "" if value not in ("true", "false") else value == "true"
    if isinstance(value, (bytes, bytearray)):
        return any(value)
    return bool(value)


def _enum_converter(column: Column) -> Converter:
    options = enum_options(column.enum_values)

    def convert(value: Any) -> str:
        if isinstance(value, int):  # a 1-based index; 0 is the "invalid value" ''
            return options[value - 1] if 0 < value <= len(options) else ""
        return value.decode() if isinstance(value, (bytes, bytearray)) else value
    return convert


def _set_converter(column: Column) -> Converter:
    options = enum_options(column.enum_values)

    def convert(value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, (bytes, bytearray)):
            return value.decode()
        if isinstance(value, int):
            return ",".join(o for i, o in enumerate(options) if value >> i & 1)
        chosen = set(value)  # python-mysql-replication: a set; keep the definition's order
        return ",".join(o for o in options if o in chosen)
    return convert


def _json_converter(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    return _json_text(value)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}


def _json_string(text: str) -> str:
    out = ['"']
    for c in text:
        escaped = _JSON_ESCAPES.get(c)
        if escaped is not None:
            out.append(escaped)
        elif c < " ":
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _json_number(value: float) -> str:
    """Java's Double.toString, with BigDecimal's plain form where Java would use an exponent."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "e" not in text else format(Decimal(value), "f")
    return format(Decimal(value), "f")


def _json_text(value: Any) -> str:
    """MySQL binary JSON as the binlog client's JsonStringFormatter writes it: compact."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, dict):
        items = (_json_string(k.decode("utf-8") if isinstance(k, bytes) else str(k)) + ":" + _json_text(v)
                 for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_number(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray)):
        return _json_string(bytes(value).decode("utf-8", "replace"))
    if isinstance(value, datetime):
        return _json_string(value.isoformat(" "))
    if isinstance(value, (date, time)):
        return _json_string(value.isoformat())
    if isinstance(value, timedelta):
        return _json_string(_time_text(value))
    return _json_string(str(value))


json_text = _json_text


def _time_text(value: timedelta) -> str:
    micros = value // _ONE_US
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), 1_000_000)
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + (f".{fraction:06d}".rstrip("0") if fraction else "")


def _uuid_converter(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)) and len(value) <= 16:
        # the binlog drops a fixed-length value's trailing zero bytes (Debezium then shifts the UUID)
        return str(uuid.UUID(bytes=bytes(value).ljust(16, b"\0")))
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def _inet_converter(size: int) -> Converter:

    def convert(value: Any) -> str:
        if isinstance(value, (bytes, bytearray)) and len(value) <= size:
            # the binlog drops a fixed-length value's trailing zero bytes
            return str(ipaddress.ip_address(bytes(value).ljust(size, b"\0")))
        return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)
    return convert


def _year_converter(value: Any) -> int:
    year = value.year if isinstance(value, (date, datetime)) else int(value)
    if year == 0:  # YEAR's 0000 (Debezium writes 1900)
        return 0
    if 1 <= year <= 69:  # two-digit years, as Debezium adjusts them
        return year + 2000
    if 70 <= year <= 99:
        return year + 1900
    return year


def two_digit_year(year: int) -> int:
    """Debezium's time adjuster (MySQL's rule for two-digit years): 0-69 are 2000-2069, 70-99 1970-1999."""
    return year + 2000 if year < 70 else year + 1900 if year < 100 else year


def civil_days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, year 0 included (which Python's date
    cannot hold; H. Hinnant's days_from_civil)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year - 719468


def _date_text_parts(text: str) -> tuple[int, int, int, int] | None:
    """(year, month, day, microseconds of the day) of a DATE/DATETIME text, which pymysql leaves as
    text when Python cannot hold the value: year 0, or a zero or partial date (None: Debezium
    writes null there, as for the binlog's)."""
    match = _DATE_TIME_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"unexpected date/time value {text!r}")
    year, month, day, hour, minute, second, fraction = match.groups()
    if int(month) == 0 or int(day) == 0:
        return None
    micros = ((int(hour or 0) * 60 + int(minute or 0)) * 60 + int(second or 0)) * 1_000_000
    return int(year), int(month), int(day), micros + int((fraction or "").ljust(6, "0")[:6])


def _date_converter(adjust: bool) -> Converter:
    def convert(value: Any) -> int | None:
        if isinstance(value, datetime):
            value = value.date()
        if isinstance(value, date):
            if adjust and value.year < 100:
                return civil_days(two_digit_year(value.year), value.month, value.day)
            return (value - _EPOCH_DATE).days
        parts = _date_text_parts(str(value))
        if parts is None:
            return None
        year, month, day, _ = parts
        return civil_days(two_digit_year(year) if adjust else year, month, day)
    return convert


def _datetime_converter(adjust: bool, divisor: int) -> Converter:
    """DATETIME as epoch microseconds (``divisor`` 1) or milliseconds (1000)."""
    def convert(value: Any) -> int | None:
        if isinstance(value, str):
            parts = _date_text_parts(value)
            if parts is None:
                return None
            year, month, day, micros = parts
            year = two_digit_year(year) if adjust else year
            return (civil_days(year, month, day) * 86_400_000_000 + micros) // divisor
        if not isinstance(value, datetime):  # a date
            value = datetime(value.year, value.month, value.day)
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        if adjust and value.year < 100:
            days = civil_days(two_digit_year(value.year), value.month, value.day)
            micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
            return (days * 86_400_000_000 + micros) // divisor
        return ((value - _EPOCH) // _ONE_US) // divisor
    return convert


_DAY_US = 86_400_000_000


def _connect_time(column: Column) -> Converter:
    """TIME as Kafka Connect's Time (milliseconds of the day), which holds 00:00 to 24:00 only:
    Debezium's Time.toMilliOfDay refuses a value outside, its converter logs it and the field is
    left unset (null, or the schema default of a NOT NULL column)."""
    warned = False

    def convert(value: Any) -> int | None:
        nonlocal warned
        micros = _time_micros(value)
        if 0 <= micros <= _DAY_US:
            return micros // 1000
        if not warned:
            warned = True
            log.warning("TIME value %s of column %s is outside Kafka Connect's Time range (00:00:00 to "
                        "24:00:00): written as null or the column's default (time.precision.mode=connect; "
                        "adaptive_time_microseconds keeps such values)", _time_text(timedelta(microseconds=micros)),
                        column.name)
        return None
    return convert


def _time_micros(value: Any) -> int:
    if isinstance(value, timedelta):
        return value // _ONE_US
    if isinstance(value, time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    return _parse_time(str(value)) // _ONE_US


def _zoned_converter(digits: int) -> Converter:

    def convert(value: Any) -> str | None:
        if value.__class__ is datetime and value.tzinfo is None and value.year >= 1000 and digits == 6:
            iso = value.isoformat()  # the common case, in C: 'YYYY-MM-DDTHH:MM:SS[.ffffff]'
            return (iso if value.microsecond else iso + ".000000") + "Z"
        if isinstance(value, str):
            if _date_text_parts(value) is None:  # the zero TIMESTAMP, as text from pymysql
                return None
            value = datetime.fromisoformat(value)
        if value.tzinfo is not None:  # python-mysql-replication gives naive UTC
            value = value.astimezone(UTC).replace(tzinfo=None)
        text = value.strftime("%Y-%m-%dT%H:%M:%S") if value.year >= 1000 else \
            f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value:%H:%M:%S}"
        if 0 < digits <= 9:
            text += "." + f"{value.microsecond:06d}".ljust(digits, "0")[:digits]
        elif value.microsecond:
            text += "." + f"{value.microsecond:06d}".rstrip("0")
        return text + "Z"
    return convert


def _geometry_parts(value: Any) -> tuple[bytes, int | None]:
    data = bytes(value)
    srid = int.from_bytes(data[:4], "little")  # MySQL: a 4-byte SRID, then WKB
    return data[4:], srid or None  # SRID 0 (none given) is null, as Debezium writes it


def _geometry_converter(value: Any) -> dict[str, Any]:
    wkb, srid = _geometry_parts(value)
    return {"wkb": _b64(wkb).decode(), "srid": srid}


def _point_converter(value: Any) -> dict[str, Any]:
    wkb, srid = _geometry_parts(value)
    order = "<" if wkb[0] == 1 else ">"
    x, y = struct.unpack(order + "dd", wkb[5:21])
    return {"x": x, "y": y, "wkb": _b64(wkb).decode(), "srid": srid}


# ---- value kinds: the one choice per column behind its converter and the codec's writer --------

ValueKind = rules.ValueKind

_PLAIN_KINDS = {"int16": "int", "int32": "int", "int64": "int", "boolean": "bool", "float32": "float32",
                "float64": "float64", "bit": "bit", "json": "json", "uuid": "uuid", "year": "year",
                "geometry": "geometry", "point": "point"}


def value_kind(column: Column, modes: TypeModes) -> ValueKind:
    """What a column's values are under the type modes: the core kinds of
    cdc.core.type_rules.ValueKind (``text``'s parameter is the Python codec of the column's
    character set) and MySQL's own: ``unsigned`` (bits; a signed binlog read wraps back), ``ubigint``
    (bigint.unsigned.handling.mode), ``enum``/``set`` (the options), ``json``, ``uuid``, ``inet``
    (bytes of an address), ``year``, ``connect_time`` (Connect's Time, which holds one day only),
    ``geometry``, ``point``. The Python converter (``converter_of``) and the binlog codec's writer
    (cdc.sources.mysql.native_rows.binlog_kind) are both derived from it."""
    family = _family(column, modes)
    if family in _PLAIN_KINDS:
        return ValueKind(_PLAIN_KINDS[family])
    if family.startswith("uint"):
        return ValueKind("unsigned", int(family[4:]))
    if family.startswith("ubigint"):
        return ValueKind("ubigint", modes.bigint_unsigned_handling_mode)
    if family == "decimal":
        mode = modes.decimal_handling_mode
        return ValueKind("decimal", column.scale or 0) if mode == "precise" else ValueKind("decimal_" + mode)
    if family == "string":
        return ValueKind("text", python_codec(column.charset))
    if family == "binary":
        return ValueKind("binary", modes.binary_handling_mode)
    if family == "bits":
        return ValueKind("bits", column.length or 1)
    if family in ("enum", "set"):
        return ValueKind(family, tuple(enum_options(column.enum_values)))
    if family == "inet":
        return ValueKind("inet", 4 if _base(column) == "INET4" else 16)
    return _temporal_kind(family, _precision(column), modes.time_precision_mode)


def _temporal_kind(family: str, precision: int, mode: str) -> ValueKind:
    if family == "date":
        return ValueKind("date", "days")
    if family == "time":
        return ValueKind("connect_time") if mode == "connect" else ValueKind("time", rules.time_unit(mode, precision))
    if family == "datetime":
        return ValueKind("timestamp", rules.timestamp_unit(mode, precision))
    if family == "timestamp":
        return ValueKind("zoned_timestamp", precision)
    return ValueKind("unsupported")


def converter_of(kind: ValueKind, column: Column, modes: TypeModes) -> Converter:
    """The function from a binlog or snapshot value to the JSON-ready value Debezium writes, for the
    column's kind (the column names it in warnings and decodes its character set's errors)."""
    simple = _SIMPLE_CONVERTERS.get(kind.name)
    if simple is not None:
        return simple
    made = _CONVERTERS.get(kind.name)
    if made is None:
        raise ConfigError(f"column {column.name!r} has type {column.type_name}, which has no Connect mapping")
    return made(kind.param, column, modes)


_SIMPLE_CONVERTERS: dict[str, Converter] = {
    "int": _to_int, "float32": lambda value: _float32(float(value)), "float64": float,
    "bool": lambda value: value == "true" if isinstance(value, str) else bool(value), "bit": _bit_converter,
    "json": _json_converter, "uuid": _uuid_converter, "year": _year_converter, "geometry": _geometry_converter,
    "point": _point_converter,
}


def _decimal_of(_: Any, column: Column, modes: TypeModes) -> Converter:
    return _decimal_converter(column, modes.decimal_handling_mode)


# kind -> (its parameter, the column, the modes) -> the converter
_CONVERTERS: dict[str, Callable[[Any, Column, TypeModes], Converter]] = {
    "unsigned": lambda bits, _, __: _unsigned_converter(bits),
    "ubigint": lambda mode, _, __: _ubigint_precise if mode == "precise" else _ubigint_long,
    "decimal": _decimal_of, "decimal_double": _decimal_of, "decimal_string": _decimal_of,
    "text": lambda _, column, __: _string_converter(column),
    "binary": lambda mode, column, _: _binary_converter(column, mode),
    "bits": lambda _, column, __: _bits_converter(column),
    "enum": lambda _, column, __: _enum_converter(column),
    "set": lambda _, column, __: _set_converter(column),
    "inet": lambda size, _, __: _inet_converter(size),
    "date": lambda _, __, modes: _date_converter(modes.enable_time_adjuster),
    "connect_time": lambda _, column, __: _connect_time(column),
    "time": lambda unit, _, __: _time_millis if unit == "ms" else _time_micros,
    "timestamp": lambda unit, _, modes: _datetime_converter(modes.enable_time_adjuster, 1000 if unit == "ms" else 1),
    "zoned_timestamp": lambda digits, _, __: _zoned_converter(digits),
}


def _time_millis(value: Any) -> int:
    return _time_micros(value) // 1000


_FALLBACKS: dict[str, Any] = {
    "boolean": False, "bit": False, "float32": 0.0, "float64": 0.0, "string": "", "enum": "", "set": "",
    "json": "{}", "uuid": "", "inet": "", "timestamp": "1970-01-01T00:00:00Z",
}


def _fallback(column: Column, kind: str, modes: TypeModes) -> Any:
    """Debezium's value for a NULL in a NOT NULL column when the schema has no default."""
    if kind in _FALLBACKS:
        return _FALLBACKS[kind]
    if kind == "decimal":
        return {"double": 0.0, "string": "0"}.get(modes.decimal_handling_mode, _unscaled_bytes(0))
    if kind == "ubigint_precise":
        return _unscaled_bytes(0)
    if kind in ("binary", "bits"):
        return ""
    if kind in ("geometry", "point"):
        return None
    return 0


def value_converter_parts(column: Column, modes: TypeModes) -> tuple[Converter, Any]:
    """``(convert, missing)``: the converter of a non-None value, and the payload of a None.

    None stays None for a nullable column; for a NOT NULL column (a zero date read as None)
    it becomes the schema default, else Debezium's fallback. Kept apart so a row converter can
    test for None inline (one call per value less on the hot path).
    """
    family = _family(column, modes)
    kind = value_kind(column, modes)
    convert = converter_of(kind, column, modes)
    if column.optional:
        return convert, None
    default = _default_value(column, family, modes)
    missing = default if default is not None else _fallback(column, family, modes)
    if kind.name in ("date", "timestamp", "zoned_timestamp", "connect_time"):
        # these give None for a value they cannot write (a zero date as text, a TIME past 24 hours)
        inner = convert
        convert = lambda value: missing if (result := inner(value)) is None else result  # noqa: E731
    return convert, missing


def value_converter(column: Column, modes: TypeModes) -> Converter:
    """A function from a binlog (or snapshot) value to the column's JSON payload value (None included)."""
    convert, missing = value_converter_parts(column, modes)
    return lambda value: missing if value is None else convert(value)


# ---- default values (Debezium's BinlogDefaultValueConverter) ----------------------------------

_EPOCH_EQUIVALENT_DATE = re.compile(r"\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2}")
_EPOCH_EQUIVALENT_TIMESTAMP = re.compile(
    r"(\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2}) (00:00:00(\.\d{1,6})?)")
_TIME_RE = re.compile(r"(-?)(\d*):(\d*)(?::(\d*))?(?:\.(\d*))?")
_DATE_TIME_RE = re.compile(r"(\d+)-(\d+)-(\d+)(?:[ T](\d+)(?::(\d+)(?::(\d+)(?:\.(\d+))?)?)?)?")


def _parse_time(text: str) -> timedelta:
    match = _TIME_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"unexpected TIME value {text!r}")
    sign, hours, minutes, seconds, fraction = match.groups()
    micros = ((int(hours or 0) * 60 + int(minutes or 0)) * 60 + int(seconds or 0)) * 1_000_000
    micros += int((fraction or "").ljust(6, "0")[:6] or 0)
    return timedelta(microseconds=-micros if sign else micros)


def _parse_datetime(text: str) -> datetime:
    match = _DATE_TIME_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"unexpected date/time value {text!r}")
    year, month, day, hour, minute, second, fraction = match.groups()
    return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                    int((fraction or "").ljust(6, "0")[:6]))


def _logical_default(column: Column, kind: str, text: str) -> Any:
    """The default expression as the value a row would carry, or None for none."""
    trimmed = text.strip()
    lowered = trimmed.lower()
    numeric = kind in ("int16", "int32", "int64", "uint8", "uint16", "uint24", "uint32", "ubigint_long",
                       "ubigint_precise", "year", "float32", "float64", "decimal", "bit", "bits")
    if numeric and lowered in ("true", "false"):
        trimmed = "1" if lowered == "true" else "0"
    if kind in ("int16", "int32", "int64", "uint8", "uint16", "uint24", "uint32", "ubigint_long",
                "ubigint_precise", "year"):
        return int((Decimal(trimmed) + Decimal("0.5")).to_integral_value(rounding=ROUND_FLOOR))  # Math.round
    if kind in ("float32", "float64"):
        return float(trimmed)
    if kind == "decimal":
        return Decimal(trimmed)
    if kind == "boolean":
        return lowered == "true" or (lowered.lstrip("-").isdigit() and int(lowered) != 0)
    if kind == "bit":
        return lowered == "true" or (lowered.lstrip("-").isdigit() and int(lowered) != 0)
    if kind == "bits":
        return trimmed  # a string of binary digits
    if kind == "date":
        zero = bool(_EPOCH_EQUIVALENT_DATE.fullmatch(trimmed) or _EPOCH_EQUIVALENT_TIMESTAMP.fullmatch(trimmed)
                    or trimmed == "0")
        if zero:
            return None if column.optional else _EPOCH_DATE
        try:
            return _parse_datetime(trimmed).date()
        except ValueError:
            return None if column.optional else _EPOCH_DATE
    if kind == "datetime":
        if _EPOCH_EQUIVALENT_TIMESTAMP.fullmatch(trimmed) or trimmed == "0":
            return None if column.optional else _EPOCH
        try:
            return _parse_datetime(trimmed)
        except ValueError:
            return None if column.optional else _EPOCH
    if kind == "timestamp":
        if _EPOCH_EQUIVALENT_TIMESTAMP.fullmatch(trimmed) or trimmed in ("0", "1970-01-01 00:00:00"):
            return None if column.optional else _EPOCH_TIMESTAMP
        return _parse_datetime(trimmed)
    if kind == "time":
        match = re.fullmatch(r"[0-9]*-[0-9]*-[0-9]* ([0-9]*:[0-9]*:[0-9]*(\.[0-9]*)?)", trimmed)
        return _parse_time(match.group(1) if match else trimmed)
    if kind == "binary":
        return text.encode("utf-8")
    if kind in ("geometry", "point"):
        return None
    return text


_EPOCH_TIMESTAMP = object()  # TIMESTAMP's zero default: printed without fraction digits


def _default_value(column: Column, kind: str, modes: TypeModes) -> Any:
    if not column.has_default or column.default_expression is None:
        return None
    try:
        value = _logical_default(column, kind, column.default_expression)
        if value is None:
            return None
        if value is _EPOCH_TIMESTAMP:
            return "1970-01-01T00:00:00Z"
        return converter_of(value_kind(column, modes), column, modes)(value)
    except (ValueError, ArithmeticError, InvalidOperation, OverflowError):
        return None  # Debezium logs an invalid default and leaves it out
