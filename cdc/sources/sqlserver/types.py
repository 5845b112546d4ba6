"""SQL Server column types -> Kafka Connect schemas and values, by the reference's tables.

Values arrive as pyodbc returns them: ``int``, ``bool``, ``float``, ``str``, ``Decimal``,
``bytes``, ``datetime.date/time/datetime``. Two exceptions keep precision pyodbc would lose:
``datetimeoffset`` comes as SQL Server's text (``2024-01-02 03:04:05.1234567 +02:00``, see
``connection.py``), and any temporal value may come as text with 7 fraction digits. Each column
gets its converter once (:func:`converter`), so rows do no type dispatch.
"""
from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from cdc.core import type_rules as rules
from cdc.core.encodings import JDBC, binary_encoder, decimal_bytes, float32
from cdc.core.schema import Column
from cdc.core.type_modes import TypeModes

Converter = Callable[[Any], Any]

INT_TYPES = {"tinyint": "int16", "smallint": "int16", "int": "int32", "bigint": "int64"}
CHAR_TYPES = frozenset(("char", "varchar", "text", "nchar", "nvarchar", "ntext", "sysname"))
DECIMAL_TYPES = frozenset(("decimal", "numeric", "money", "smallmoney"))
BINARY_TYPES = frozenset(("binary", "varbinary", "image", "timestamp", "rowversion"))
TEMPORAL_TYPES = frozenset(("date", "time", "datetime", "smalldatetime", "datetime2"))

_JDBC = {
    "bit": JDBC.BIT, "tinyint": JDBC.TINYINT, "smallint": JDBC.SMALLINT, "int": JDBC.INTEGER,
    "bigint": JDBC.BIGINT, "real": JDBC.REAL, "float": JDBC.DOUBLE, "decimal": JDBC.DECIMAL,
    "numeric": JDBC.NUMERIC, "money": JDBC.DECIMAL, "smallmoney": JDBC.DECIMAL, "char": JDBC.CHAR,
    "varchar": JDBC.VARCHAR, "text": JDBC.LONGVARCHAR, "nchar": JDBC.NCHAR, "nvarchar": JDBC.NVARCHAR,
    "ntext": JDBC.LONGNVARCHAR, "sysname": JDBC.NVARCHAR, "xml": JDBC.SQLXML, "date": JDBC.DATE,
    "time": JDBC.TIME, "datetime": JDBC.TIMESTAMP, "smalldatetime": JDBC.TIMESTAMP, "datetime2": JDBC.TIMESTAMP,
    "datetimeoffset": JDBC.MICROSOFT_DATETIMEOFFSET, "uniqueidentifier": JDBC.CHAR, "binary": JDBC.BINARY,
    "varbinary": JDBC.VARBINARY, "image": JDBC.LONGVARBINARY, "timestamp": JDBC.BINARY, "rowversion": JDBC.BINARY,
}
_NUMERIC_LENGTH = {"bit": 1, "tinyint": 3, "smallint": 5, "int": 10, "bigint": 19, "real": 24, "float": 53,
                   "money": 19, "smallmoney": 10}


@dataclass(frozen=True, slots=True)
class SqlColumn:
    """A column as ``sys.columns`` describes it (``max_length`` in bytes, -1 for max)."""

    name: str
    type_name: str
    position: int
    max_length: int = 0
    precision: int = 0
    scale: int = 0
    nullable: bool = True
    identity: bool = False
    computed: bool = False
    default: str | None = None

    @property
    def decimal_precision_scale(self) -> tuple[int, int]:
        if self.type_name == "money":
            return 19, 4
        if self.type_name == "smallmoney":
            return 10, 4
        return self.precision, self.scale

    @property
    def char_length(self) -> int:
        if self.type_name in ("text",):
            return 2147483647
        if self.type_name in ("ntext", "xml"):
            return 1073741823
        if self.max_length == -1:
            return 1073741823 if self.type_name.startswith("n") else 2147483647
        return self.max_length // 2 if self.type_name in ("nchar", "nvarchar", "sysname") else self.max_length




# ---- schemas ----------------------------------------------------------------------------------

def _semantic(type_: str, optional: bool, name: str, parameters: dict[str, str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": type_, "optional": optional, "name": name, "version": 1}
    if parameters is not None:
        schema["parameters"] = parameters
    return schema


def _plain(type_: str, optional: bool) -> dict[str, Any]:
    return {"type": type_, "optional": optional}


def _fraction_digits(column: SqlColumn) -> int:
    """Fraction-second digits of time/datetime2/datetimeoffset (sys.columns.scale)."""
    if column.type_name in ("datetime",):
        return 3
    if column.type_name == "smalldatetime" or column.type_name == "date":
        return 0
    return column.scale


# ---- value kinds: the one choice per column behind its schema and its converter -----------------

ValueKind = rules.ValueKind


def value_kind(column: SqlColumn, modes: TypeModes) -> ValueKind:
    """What a column's values are under the type modes: the core kinds of
    cdc.core.type_rules.ValueKind and SQL Server's own ``uuid`` (uniqueidentifier, upper case) and
    ``xml``. Its schema (``field_schema``) and converter (``converter``) are both derived from it."""
    t = column.type_name
    if t in _PLAIN_KINDS:
        return ValueKind(_PLAIN_KINDS[t])
    if t in DECIMAL_TYPES:
        mode = modes.decimal_handling_mode
        return ValueKind("decimal", column.decimal_precision_scale[1]) if mode == "precise" \
            else ValueKind("decimal_" + mode)
    mode = modes.time_precision_mode
    if t == "datetimeoffset":
        return ValueKind("zoned_timestamp", column.scale)
    if t == "date":
        return ValueKind("date", "days")
    if t == "time":
        return ValueKind("time", rules.time_unit(mode, _fraction_digits(column)))
    if t in TEMPORAL_TYPES:
        return ValueKind("timestamp", rules.timestamp_unit(mode, _fraction_digits(column)))
    if t in BINARY_TYPES:
        return ValueKind("binary", modes.binary_handling_mode)
    return ValueKind("text")  # char types and anything unknown


_PLAIN_KINDS = {"bit": "bool", "tinyint": "int", "smallint": "int", "int": "int", "bigint": "int",
                "real": "float32", "float": "float64", "uniqueidentifier": "uuid", "xml": "xml"}


def field_schema(column: SqlColumn, modes: TypeModes, optional: bool | None = None) -> dict[str, Any]:
    """The Connect schema of a column (without ``"field"``)."""
    opt = column.nullable if optional is None else optional
    kind = value_kind(column, modes)
    name = kind.name
    if name == "int":
        return _plain(INT_TYPES[column.type_name], opt)
    if name in _PLAIN_SCHEMAS:
        return _plain(_PLAIN_SCHEMAS[name], opt)
    if name.startswith("decimal"):
        precision, scale = column.decimal_precision_scale
        return rules.decimal_schema(modes.decimal_handling_mode, precision, scale, opt)
    if name == "xml":
        return _semantic("string", opt, "io.debezium.data.Xml")
    if name == "zoned_timestamp":
        return rules.zoned_timestamp_schema(opt)
    if name == "date":
        return rules.date_schema(modes.time_precision_mode, opt)
    if name == "time":
        return rules.time_schema(modes.time_precision_mode, _fraction_digits(column), opt)
    if name == "timestamp":
        return rules.timestamp_schema(modes.time_precision_mode, _fraction_digits(column), opt)
    if name == "binary":
        return rules.binary_schema(kind.param, opt)
    return _plain("string", opt)  # text, uuid


_PLAIN_SCHEMAS = {"bool": "boolean", "float32": "float", "float64": "double"}


# ---- values -----------------------------------------------------------------------------------

_unscaled_bytes = decimal_bytes
_float32 = float32


def _decimal_converter(column: SqlColumn, mode: str) -> Converter:
    _, scale = column.decimal_precision_scale
    quantum = Decimal(1).scaleb(-scale)
    if mode == "double":
        return lambda v: float(v)
    if mode == "string":
        return lambda v: format(Decimal(v).quantize(quantum, rounding=ROUND_HALF_UP), "f")
    return lambda v: _unscaled_bytes(int(Decimal(v).quantize(quantum, rounding=ROUND_HALF_UP).scaleb(scale)))


def _binary_converter(mode: str) -> Converter:
    encode = binary_encoder(mode)  # Connect bytes print as base64
    return lambda v: encode(bytes(v))


_EPOCH = datetime(1970, 1, 1)
_EPOCH_DATE = date(1970, 1, 1)
_ONE_US = timedelta(microseconds=1)


def _split_fraction(text: str) -> tuple[str, int]:
    """``"12:34:56.1234567"`` -> (``"12:34:56"``, nanoseconds)."""
    whole, _, fraction = text.partition(".")
    return whole, int((fraction + "000000000")[:9]) if fraction else 0


def _nanos_of_day(value: Any) -> int:
    if isinstance(value, str):
        whole, nanos = _split_fraction(value.strip())
        h, m, s = (int(p) for p in whole.split(":"))
        return ((h * 60 + m) * 60 + s) * 1_000_000_000 + nanos
    if isinstance(value, timedelta):
        return (value // _ONE_US) * 1000
    t: time = value
    return (((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond) * 1000


def _epoch_nanos(value: Any) -> int:
    """A timestamp without zone, read as UTC (the reference: the JVM zone does not matter)."""
    if isinstance(value, str):
        day, _, clock = value.strip().replace("T", " ").partition(" ")
        whole, nanos = _split_fraction(clock or "00:00:00")
        moment = datetime.fromisoformat(f"{day} {whole}")
        return ((moment - _EPOCH) // _ONE_US) * 1000 + nanos
    if isinstance(value, datetime):
        return ((value.replace(tzinfo=None) - _EPOCH) // _ONE_US) * 1000
    return (value - _EPOCH_DATE).days * 86_400_000_000_000


def _epoch_days(value: Any) -> int:
    if isinstance(value, str):
        value = date.fromisoformat(value.strip()[:10])
    if isinstance(value, datetime):
        value = value.date()
    return (value - _EPOCH_DATE).days


def zoned_timestamp(value: Any, digits: int) -> str:
    """``datetimeoffset`` as ``io.debezium.time.ZonedTimestamp``: the instant in UTC (``Z``),
    with the column's fraction digits (none for scale 0)."""
    if isinstance(value, str):
        text = value.strip()
        stamp, _, offset = text.rpartition(" ")
        if not offset or offset[0] not in "+-":
            stamp, offset = text, "+00:00"
        nanos_total = _epoch_nanos(stamp)
        sign = -1 if offset[0] == "-" else 1
        oh, _, om = offset[1:].partition(":")
        nanos_total -= sign * (int(oh) * 60 + int(om or 0)) * 60 * 1_000_000_000
    else:
        moment: datetime = value
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        nanos_total = ((moment - datetime(1970, 1, 1, tzinfo=UTC)) // _ONE_US) * 1000
    seconds, nanos = divmod(nanos_total, 1_000_000_000)
    clock = (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f".{nanos:09d}"[: digits + 1] if digits > 0 else ""
    return f"{clock}{fraction}Z"


_NANOS_PER = {"ms": 1_000_000, "us": 1000, "ns": 1}


def _scaled(nanos: Converter, unit: str) -> Converter:
    """``nanos`` in the kind's unit."""
    divisor = _NANOS_PER[unit]
    return nanos if divisor == 1 else lambda v: nanos(v) // divisor


def _uuid_text(value: Any) -> str:
    return str(value).upper() if isinstance(value, uuid.UUID) else str(value)


def _text(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    return value if isinstance(value, str) else str(value)


def converter(column: SqlColumn, modes: TypeModes) -> Converter:
    """The function turning a non-NULL driver value of ``column`` into the event's value, for its kind."""
    kind = value_kind(column, modes)
    name, param = kind.name, kind.param
    if name in _SIMPLE_CONVERTERS:
        return _SIMPLE_CONVERTERS[name]
    if name.startswith("decimal"):
        return _decimal_converter(column, modes.decimal_handling_mode)
    if name == "zoned_timestamp":
        return lambda v: zoned_timestamp(v, param)
    if name == "time":
        return _scaled(_nanos_of_day, param)
    if name == "timestamp":
        return _scaled(_epoch_nanos, param)
    if name == "binary":
        return _binary_converter(param)
    return _text


_SIMPLE_CONVERTERS: dict[str, Converter] = {"bool": bool, "int": int, "float32": _float32, "float64": float,
                                            "date": _epoch_days, "uuid": _uuid_text}


# ---- tableChanges ---------------------------------------------------------------------------

def _length_scale(column: SqlColumn) -> tuple[int | None, int | None]:
    t = column.type_name
    if t in _NUMERIC_LENGTH:
        return _NUMERIC_LENGTH[t], (None if t in ("real", "float", "bit") else (4 if "money" in t else 0))
    if t in ("decimal", "numeric"):
        return column.precision, column.scale
    if t in CHAR_TYPES or t == "xml":
        return column.char_length, None
    if t == "uniqueidentifier":
        return 36, None
    if t == "date":
        return 10, None
    if t == "smalldatetime":
        return 16, 0
    if t == "datetime":
        return 23, 3
    p = column.scale
    extra = p + 1 if p else 0
    if t == "time":
        return 8 + extra, p
    if t == "datetime2":
        return 19 + extra, p
    if t == "datetimeoffset":
        return 26 + extra, p
    if t in BINARY_TYPES:
        return (2147483647 if column.max_length == -1 or t == "image" else column.max_length), None
    return (column.max_length or None), None


def table_column(column: SqlColumn) -> Column:
    """The column as ``tableChanges`` describes it (the reference's schema change example)."""
    type_name = f"{column.type_name} identity" if column.identity else column.type_name
    length, scale = _length_scale(column)
    return Column(
        name=column.name,
        jdbc_type=_JDBC.get(column.type_name, 1111),
        type_name=type_name,
        type_expression=type_name,
        length=length,
        scale=scale,
        position=column.position,
        optional=column.nullable,
        auto_incremented=False,  # as the reference's example shows for an identity column
        generated=column.computed,
        has_default=column.default is not None,
        default_expression=column.default,
    )
