"""The Kafka Connect schemas every source shares, in one place (Debezium keeps them in core too:
``JdbcValueConverters``): temporal types under ``time.precision.mode``, decimals under
``decimal.handling.mode``, binary under ``binary.handling.mode``, bits, zoned times and the
geometry structs. A source maps its column types onto these core kinds and writes only what is its
own (PostgreSQL's intervals and hstore, MySQL's YEAR and SET, SQL Server's datetimeoffset...).

The schemas are dicts in the key order of Kafka's JsonConverter: ``type``, [``fields``|``items``],
``optional``, ``name``, ``version``, [``doc``], [``parameters``].

    time.precision.mode      date            time (p: fraction digits)          timestamp
    adaptive                 Date            p<=3 Time, <=6 MicroTime, NanoTime  p<=3 Timestamp, <=6 Micro, Nano
    adaptive_time_micro...   Date            MicroTime (NanoTime past 6)         as adaptive
    connect                  Connect Date    Connect Time                        Connect Timestamp
    microseconds             Date            MicroTime                           MicroTimestamp
    nanoseconds              Date            NanoTime                            NanoTimestamp
    isostring                IsoDate         IsoTime                             IsoTimestamp
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_DEBEZIUM = "io.debezium.time."
_CONNECT = "org.apache.kafka.connect.data."


def plain(type_: str, optional: bool) -> dict[str, Any]:
    return {"type": type_, "optional": optional}


def semantic(type_: str, optional: bool, name: str, parameters: dict[str, str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": type_, "optional": optional, "name": name, "version": 1}
    if parameters is not None:
        schema["parameters"] = parameters
    return schema


@dataclass(frozen=True, slots=True)
class ValueKind:
    """What a column's values are once its type and the type modes are taken into account: the one
    choice per column, from which a source derives both its Python converter and the compiled
    codec's writer (cdc/sources/postgres/types.py: ``value_kind``). ``param`` is the kind's one
    parameter. The kinds every source shares (``name``, ``param``):

        bool, int, float32, float64, text                 -
        decimal                                           scale (precise: Connect's Decimal)
        variable_decimal                                  - (precise: VariableScaleDecimal)
        decimal_double, decimal_string                    - (decimal.handling.mode double/string)
        binary                                            binary.handling.mode
        bit / bits                                        - (one bit a boolean / Debezium's Bits)
        date                                              "days" or "iso"
        time, timestamp                                   their unit: time_unit / timestamp_unit
        zoned_time                                        -
        zoned_timestamp                                   fraction digits (0: trimmed)

    and each source's own beside them (PostgreSQL: money, interval, hstore, point, array, unknown).
    """

    name: str
    param: Any = None


def time_unit(mode: str, precision: int) -> str:
    """The unit of a time of day with ``precision`` fraction digits under ``time.precision.mode``:
    "ms", "us", "ns", or "iso" (text)."""
    if mode == "isostring":
        return "iso"
    if mode == "connect":
        return "ms"
    if mode == "microseconds":
        return "us"
    if mode == "nanoseconds":
        return "ns"
    if mode == "adaptive_time_microseconds":
        return "us" if precision <= 6 else "ns"
    return _scaled(precision)


def timestamp_unit(mode: str, precision: int) -> str:
    """The unit of a timestamp without a time zone with ``precision`` fraction digits, as ``time_unit``
    (adaptive_time_microseconds is adaptive here)."""
    if mode in ("isostring", "connect", "microseconds", "nanoseconds"):
        return time_unit(mode, precision)
    return _scaled(precision)


def _scaled(precision: int) -> str:
    return "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def date_schema(mode: str, optional: bool) -> dict[str, Any]:
    if mode == "connect":
        return semantic("int32", optional, _CONNECT + "Date")
    if mode == "isostring":
        return semantic("string", optional, _DEBEZIUM + "IsoDate")
    return semantic("int32", optional, _DEBEZIUM + "Date")


# unit -> (Connect type, semantic name) of times and timestamps; connect mode's own names below
_TIME_SCHEMAS = {"iso": ("string", _DEBEZIUM + "IsoTime"), "ms": ("int32", _DEBEZIUM + "Time"),
                 "us": ("int64", _DEBEZIUM + "MicroTime"), "ns": ("int64", _DEBEZIUM + "NanoTime")}
_TIMESTAMP_SCHEMAS = {"iso": ("string", _DEBEZIUM + "IsoTimestamp"), "ms": ("int64", _DEBEZIUM + "Timestamp"),
                      "us": ("int64", _DEBEZIUM + "MicroTimestamp"), "ns": ("int64", _DEBEZIUM + "NanoTimestamp")}


def time_schema(mode: str, precision: int, optional: bool) -> dict[str, Any]:
    """A time of day with ``precision`` fraction digits."""
    if mode == "connect":
        return semantic("int32", optional, _CONNECT + "Time")
    type_, name = _TIME_SCHEMAS[time_unit(mode, precision)]
    return semantic(type_, optional, name)


def timestamp_schema(mode: str, precision: int, optional: bool) -> dict[str, Any]:
    """A timestamp without a time zone with ``precision`` fraction digits."""
    if mode == "connect":
        return semantic("int64", optional, _CONNECT + "Timestamp")
    type_, name = _TIMESTAMP_SCHEMAS[timestamp_unit(mode, precision)]
    return semantic(type_, optional, name)


def zoned_timestamp_schema(optional: bool) -> dict[str, Any]:
    """A timestamp with a time zone, in every mode: ISO-8601 text in UTC."""
    return semantic("string", optional, _DEBEZIUM + "ZonedTimestamp")


def zoned_time_schema(optional: bool) -> dict[str, Any]:
    return semantic("string", optional, _DEBEZIUM + "ZonedTime")


def decimal_schema(mode: str, precision: int | None, scale: int, optional: bool) -> dict[str, Any]:
    """A fixed-scale decimal: Connect's Decimal (``precise``), a double or its text. ``precision``
    None: the Decimal has no ``connect.decimal.precision`` parameter (PostgreSQL's money)."""
    if mode == "double":
        return plain("double", optional)
    if mode == "string":
        return plain("string", optional)
    parameters = {"scale": str(scale)}
    if precision is not None:
        parameters["connect.decimal.precision"] = str(precision)
    return semantic("bytes", optional, _CONNECT + "Decimal", parameters)


def variable_decimal_schema(mode: str, optional: bool) -> dict[str, Any]:
    """A decimal without a fixed scale: Debezium's VariableScaleDecimal struct when precise."""
    if mode in ("double", "string"):
        return decimal_schema(mode, None, 0, optional)
    return {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "scale"},
                                         {"type": "bytes", "optional": False, "field": "value"}],
            "optional": optional, "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
            "doc": "Variable scaled decimal"}


def binary_schema(mode: str, optional: bool) -> dict[str, Any]:
    """Bytes, or their text under the base64/hex binary.handling.modes."""
    return plain("bytes" if mode == "bytes" else "string", optional)


def bits_schema(length: int, optional: bool) -> dict[str, Any]:
    """A bit string: one bit a boolean, more Debezium's Bits (little-endian bytes)."""
    if length > 1:
        return semantic("bytes", optional, "io.debezium.data.Bits", {"length": str(length)})
    return plain("boolean", optional)


_XY_WKB_SRID = [{"type": "double", "optional": False, "field": "x"},
                {"type": "double", "optional": False, "field": "y"},
                {"type": "bytes", "optional": True, "field": "wkb"},
                {"type": "int32", "optional": True, "field": "srid"}]


def point_schema(optional: bool) -> dict[str, Any]:
    return {"type": "struct", "fields": list(_XY_WKB_SRID), "optional": optional,
            "name": "io.debezium.data.geometry.Point", "version": 1, "doc": "Geometry (POINT)"}


def geometry_schema(optional: bool) -> dict[str, Any]:
    return {"type": "struct", "fields": [{"type": "bytes", "optional": False, "field": "wkb"},
                                         {"type": "int32", "optional": True, "field": "srid"}],
            "optional": optional, "name": "io.debezium.data.geometry.Geometry", "version": 1, "doc": "Geometry"}
