"""Kafka Connect schemas (as Debezium writes them) -> Spark types, and payload -> Spark values.

One converter per field, built once per table version, turns the JSON-ready payload values of
our events (base64 decimals, epoch days, microseconds, ISO strings) into what Spark expects
(Decimal, date, datetime, bytes), so ``before``/``after`` are structs with the table's real types.
"""
from __future__ import annotations

import binascii
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from pyspark.sql import types as T

_EPOCH_DATE = date(1970, 1, 1)
_EPOCH = datetime(1970, 1, 1)

Converter = Callable[[Any], Any]

_unbase64 = binascii.a2b_base64  # base64.b64decode without its argument checks: values are ours


def _identity(value: Any) -> Any:
    return value


def _double(value: Any) -> Any:
    if isinstance(value, str):  # "NaN", "Infinity", "-Infinity"
        return float(value.replace("Infinity", "inf"))
    return float(value)


def _zoned(value: str) -> datetime | None:
    if value in ("infinity", "-infinity"):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def _beyond_none(convert: Converter) -> Converter:
    """Dates and timestamps Spark cannot hold (PostgreSQL's infinity, which Debezium sends as
    extreme values, and years outside 1-9999) become NULL, as an infinite timestamptz does."""
    def checked(value: Any) -> Any:
        try:
            result = convert(value)
        except (OverflowError, ValueError):
            return None
        return result if result is not None and 1 <= result.year <= 9999 else None
    return checked


def field_type(schema: dict[str, Any]) -> tuple[T.DataType, Converter]:
    """Spark type and value converter for one Connect field schema."""
    name = schema.get("name")
    kind = schema["type"]
    params = schema.get("parameters") or {}
    if name == "org.apache.kafka.connect.data.Decimal":
        scale = int(params.get("scale", "0"))
        precision = min(int(params.get("connect.decimal.precision", "38")), 38)

        def decimal(value: str) -> Decimal:
            return Decimal(int.from_bytes(_unbase64(value), "big", signed=True)).scaleb(-scale)
        return T.DecimalType(precision, scale), decimal
    if name == "io.debezium.data.VariableScaleDecimal":
        def variable(value: dict[str, Any]) -> str:
            unscaled = int.from_bytes(_unbase64(value["value"]), "big", signed=True)
            return str(Decimal(unscaled).scaleb(-value["scale"]))
        return T.StringType(), variable
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return T.DateType(), _beyond_none(lambda days: _EPOCH_DATE + timedelta(days=days))
    if name == "io.debezium.time.MicroTimestamp":
        return T.TimestampNTZType(), _beyond_none(lambda us: _EPOCH + timedelta(microseconds=us))
    if name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
        return T.TimestampNTZType(), _beyond_none(lambda ms: _EPOCH + timedelta(milliseconds=ms))
    if name == "io.debezium.time.ZonedTimestamp":
        return T.TimestampType(), _beyond_none(_zoned)  # a BC value: '-4712-01-01T00:00:00Z'
    if kind == "array":
        element_type, element = field_type(schema["items"])
        return T.ArrayType(element_type, True), lambda items: [None if v is None else element(v) for v in items]
    if kind == "struct":
        struct_type, convert = struct_type_of(schema)
        return struct_type, convert
    simple: dict[str, tuple[T.DataType, Converter]] = {
        "boolean": (T.BooleanType(), _identity),
        "int8": (T.ByteType(), _identity),
        "int16": (T.ShortType(), _identity),
        "int32": (T.IntegerType(), _identity),
        "int64": (T.LongType(), _identity),
        "float": (T.FloatType(), _double),
        "double": (T.DoubleType(), _double),
        "bytes": (T.BinaryType(), _unbase64),
        "string": (T.StringType(), _identity),
    }
    return simple[kind]


DEFAULT = "cdc.default"  # a StructField's metadata: the column's default at the source (cdc.spark.evolve)


def _default_metadata(schema: dict[str, Any], convert: Converter) -> dict[str, Any]:
    """The column's default (Debezium's ``default`` of the field) in a field's metadata, as JSON: the
    value a row written before the column was added holds (SQL fills it into existing rows)."""
    default = schema.get("default")
    if default is None:
        return {}
    try:
        value = convert(default)
    except (TypeError, ValueError, OverflowError, binascii.Error):
        return {}
    if isinstance(value, bool | int | float | str):
        return {DEFAULT: value}
    if isinstance(value, Decimal | date | datetime):  # cast back from its text by Spark
        return {DEFAULT: value.isoformat() if isinstance(value, date | datetime) else str(value)}
    return {}  # bytes, arrays, structs: no default carried


def struct_type_of(schema: dict[str, Any]) -> tuple[T.StructType, Callable[[dict[str, Any] | None], tuple | None]]:
    """A Connect struct schema -> Spark StructType and a converter from payload dict to tuple. A field's
    default at the source is in its metadata (``DEFAULT``)."""
    fields = []
    converters: list[tuple[str, Converter]] = []
    for f in schema["fields"]:
        spark_type, convert = field_type(f)
        fields.append(T.StructField(f["field"], spark_type, True, _default_metadata(f, convert)))
        converters.append((f["field"], convert))

    def to_tuple(payload: dict[str, Any] | None) -> tuple | None:
        if payload is None:
            return None
        get = payload.get
        return tuple([None if (v := get(name)) is None else convert(v) for name, convert in converters])
    return T.StructType(fields), to_tuple


SOURCE_FIELDS = ("connector", "name", "db", "schema", "table", "snapshot", "ts_ms", "txId", "lsn")
SOURCE_TYPE = T.StructType([
    T.StructField("connector", T.StringType()), T.StructField("name", T.StringType()),
    T.StructField("db", T.StringType()), T.StructField("schema", T.StringType()),
    T.StructField("table", T.StringType()), T.StructField("snapshot", T.StringType()),
    T.StructField("ts_ms", T.LongType()), T.StructField("txId", T.LongType()), T.StructField("lsn", T.LongType()),
])


UNAVAILABLE = "_unavailable"  # the fields of ``after`` the source did not send (cdc.core.unavailable)
HEADERS = "headers"  # as Spark's Kafka source names them, with its type
HEADERS_TYPE = T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                         T.StructField("value", T.BinaryType())]))


def event_schema(row_type: T.DataType) -> T.StructType:
    """The columns of ``readStream.format("cdc")``: the envelope, typed; then which values of ``after``
    the source did not send (null: all were), and the event's headers (a key change's
    ``__debezium.oldkey``/``newkey``, written as Kafka Connect's default header converter writes them)."""
    return T.StructType([
        T.StructField("op", T.StringType(), False),
        T.StructField("before", row_type, True),
        T.StructField("after", row_type, True),
        T.StructField("source", SOURCE_TYPE, True),
        T.StructField("ts_ms", T.LongType(), True),
        T.StructField("table", T.StringType(), False),
        T.StructField("_position", T.LongType(), False),
        T.StructField(UNAVAILABLE, T.ArrayType(T.StringType()), True),
        T.StructField(HEADERS, HEADERS_TYPE, True),
    ])
