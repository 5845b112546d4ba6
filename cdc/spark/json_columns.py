"""Rows as Debezium's JSON -> one Arrow struct column of their Spark types, parsed in C++.

The driver's stream gets rows as JSON text: the compiled codec's (``NativeRow.json``), or a
Python row serialized once. pyarrow's JSON reader parses a batch of them column by column, and
each column then becomes its Spark type at once (base64 decimals, epoch days and microseconds,
ISO timestamps) with the same values as the per-value converters of ``cdc.spark.schema``, which
remain the reference: ``reader_for`` returns None for a row with a field type it does not cover
(variable-scale decimals, arrays, nested structs), and a batch it cannot read (a float column
holding "NaN", a value out of Arrow's range) raises ``ColumnarUnfit`` -- the caller then converts
that batch value by value.
"""
from __future__ import annotations

import binascii
import io
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

Finish = Callable[[pa.Array], pa.Array]  # a parsed column -> the column in its Spark type

# The range Spark's dates and timestamps hold (years 1 to 9999); the per-value converters give NULL
# outside it, and so do these.
_DAYS = (-719_162, 2_932_896)
_MICROS = (-62_135_596_800_000_000, 253_402_300_799_999_999)
_MILLIS = (-62_135_596_800_000, 253_402_300_799_999)


class ColumnarUnfit(Exception):
    """This batch's values do not fit the columnar path: convert it value by value."""


def _within(column: pa.Array, bounds: tuple[int, int]) -> pa.Array:
    inside = pc.and_(pc.greater_equal(column, bounds[0]), pc.less_equal(column, bounds[1]))
    return pc.if_else(inside, column, pa.scalar(None, column.type))


def _unbase64(column: pa.Array) -> list[bytes | None]:
    a2b = binascii.a2b_base64
    return [None if v is None else a2b(v) for v in column.to_pylist()]


def _decimal(precision: int, scale: int, target: pa.DataType) -> Finish:
    def finish(column: pa.Array) -> pa.Array:
        unscaled = [None if v is None else int.from_bytes(v, "big", signed=True) for v in _unbase64(column)]
        if precision <= 18:  # fits int64: the unscaled value's 16 bytes, read with the column's scale
            return pa.array(unscaled, pa.int64()).cast(pa.decimal128(38, 0)).view(target)
        return pa.array([None if v is None else Decimal(v).scaleb(-scale) for v in unscaled], target)
    return finish


def _zoned(target: pa.DataType) -> Finish:
    def finish(column: pa.Array) -> pa.Array:
        infinite = pc.is_in(column, pa.array(["infinity", "-infinity"]))  # PostgreSQL's: NULL, as per value
        return pc.if_else(infinite, pa.scalar(None, pa.string()), column).cast(target)
    return finish


def _field(schema: dict[str, Any], target: pa.DataType) -> tuple[pa.DataType, Finish] | None:
    """How one Connect field is parsed (its JSON type) and finished (to ``target``), or None."""
    name = schema.get("name")
    kind = schema["type"]
    if name == "org.apache.kafka.connect.data.Decimal":
        params = schema.get("parameters") or {}
        return pa.string(), _decimal(min(int(params.get("connect.decimal.precision", "38")), 38),
                                     int(params.get("scale", "0")), target)
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return pa.int64(), lambda c: _within(c, _DAYS).cast(pa.int32()).view(target)
    if name == "io.debezium.time.MicroTimestamp":
        return pa.int64(), lambda c: _within(c, _MICROS).view(target)
    if name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
        return pa.int64(), lambda c: pc.multiply(_within(c, _MILLIS), 1000).view(target)
    if name == "io.debezium.time.ZonedTimestamp":
        return pa.string(), _zoned(target)
    if kind in ("int8", "int16", "int32", "int64"):
        return pa.int64(), lambda c: c.cast(target)
    if kind in ("float", "double"):
        return pa.float64(), lambda c: c.cast(target)
    if kind == "boolean":
        return pa.bool_(), lambda c: c
    if kind == "string":
        return pa.string(), lambda c: c
    if kind == "bytes":
        return pa.string(), lambda c: pa.array(_unbase64(c), target)
    return None  # arrays, structs, maps


def reader_for(row_schema: dict[str, Any], row_type: pa.StructType) -> Callable[[list[bytes | None]], pa.Array] | None:
    """A function from rows' JSON texts (None: no row) to a struct array of ``row_type`` (the Arrow
    form of the table's Spark struct), or None when a field's type is not covered here."""
    fields: list[tuple[str, Finish]] = []
    wire: list[pa.Field] = []
    for field_schema, target in zip(row_schema["fields"], row_type, strict=True):
        how = _field(field_schema, target.type)
        if how is None:
            return None
        wire.append(pa.field(field_schema["field"], how[0]))
        fields.append((field_schema["field"], how[1]))
    options = pj.ParseOptions(explicit_schema=pa.schema(wire), unexpected_field_behavior="ignore")

    def read(texts: list[bytes | None]) -> pa.Array:
        present = [t for t in texts if t is not None]
        if not present:
            return pa.nulls(len(texts), row_type)
        try:
            # A block must hold whole rows: large ones (a long text or JSON column) need larger blocks.
            block = max(1 << 20, 2 * max(map(len, present)))
            table = pj.read_json(io.BytesIO(b"\n".join(present)), read_options=pj.ReadOptions(block_size=block),
                                 parse_options=options).combine_chunks()
            columns = [finish(table.column(name).chunk(0)) for name, finish in fields]  # one chunk: combined
            rows = pa.StructArray.from_arrays(columns, fields=list(row_type))
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            raise ColumnarUnfit(str(exc)) from exc
        if len(present) == len(texts):
            return rows
        at = iter(range(len(present)))  # rows without JSON (an insert's before) are NULL structs
        return rows.take(pa.array([None if t is None else next(at) for t in texts], pa.int32()))
    return read
