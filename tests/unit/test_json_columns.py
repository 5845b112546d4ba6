"""Rows' JSON parsed column by column (cdc.spark.json_columns) against the per-value converters
of cdc.spark.schema, on the values at the edges: NULL rows between others, a row larger than the
parser's default block, PostgreSQL's infinities and dates beyond Spark's years, decimals past
int64, and a float column holding NaN (which the columnar path hands back)."""
from __future__ import annotations

import base64
from typing import Any

import orjson
import pyarrow as pa
import pytest

from cdc.spark.arrow_events import arrow_schema
from cdc.spark.json_columns import ColumnarUnfit, reader_for
from cdc.spark.schema import event_schema, struct_type_of


def _decimal(unscaled: int) -> str:
    return base64.b64encode(unscaled.to_bytes(16, "big", signed=True).lstrip(b"\0") or b"\0").decode()


SCHEMA: dict[str, Any] = {"type": "struct", "fields": [
    {"field": "id", "type": "int16"},
    {"field": "small", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
     "parameters": {"scale": "2", "connect.decimal.precision": "12"}},
    {"field": "big", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
     "parameters": {"scale": "3", "connect.decimal.precision": "30"}},
    {"field": "day", "type": "int32", "name": "io.debezium.time.Date"},
    {"field": "micros", "type": "int64", "name": "io.debezium.time.MicroTimestamp"},
    {"field": "millis", "type": "int64", "name": "io.debezium.time.Timestamp"},
    {"field": "zoned", "type": "string", "name": "io.debezium.time.ZonedTimestamp"},
    {"field": "raw", "type": "bytes"},
    {"field": "text", "type": "string"},
    {"field": "ratio", "type": "double"},
]}

ROWS: list[dict[str, Any] | None] = [
    {"id": 1, "small": _decimal(-12345), "big": _decimal(-(10 ** 25) - 7), "day": 19_782,
     "micros": 1_700_000_000_123_456,
     "millis": 1_700_000_000_123, "zoned": "2024-02-29T08:15:30.5Z", "raw": base64.b64encode(b"\x00\xff").decode(),
     "text": "h\u00e9llo \u2603", "ratio": -0.1},
    None,
    {"id": 2, "small": None, "big": None, "day": None, "micros": None, "millis": None, "zoned": None, "raw": None,
     "text": None, "ratio": None},
    {"id": 3, "small": _decimal(0), "big": _decimal(10 ** 29 - 1), "day": 3_000_000, "micros": -62_135_596_800_000_001,
     "millis": 253_402_300_800_000, "zoned": "infinity", "raw": "", "text": "x" * 3_000_000, "ratio": 1e300},
    {"id": 4, "small": _decimal(1), "big": _decimal(1), "day": -719_162, "micros": 253_402_300_799_999_999,
     "millis": -62_135_596_800_000, "zoned": "-infinity", "raw": "AA==", "text": "", "ratio": 0.0},
]


def _per_value(rows: list[dict[str, Any] | None]) -> list[Any]:
    row_type, convert = struct_type_of(SCHEMA)
    after_type = arrow_schema(event_schema(row_type)).field("after").type
    return pa.array([convert(row) for row in rows], type=after_type).to_pylist()


def _columnar(rows: list[dict[str, Any] | None]) -> list[Any]:
    row_type, _ = struct_type_of(SCHEMA)
    read = reader_for(SCHEMA, arrow_schema(event_schema(row_type)).field("after").type)
    assert read is not None
    return read([None if row is None else orjson.dumps(row) for row in rows]).to_pylist()


def test_edge_values_parse_as_the_per_value_converters_give_them() -> None:
    got, want = _columnar(ROWS), _per_value(ROWS)
    assert got == want
    assert want[1] is None and want[3]["day"] is None and want[3]["zoned"] is None  # the edges are there


def test_a_float_column_holding_nan_is_handed_back() -> None:
    with pytest.raises(ColumnarUnfit):
        _columnar([{"id": 1, "ratio": "NaN"}])


def test_types_it_does_not_cover_have_no_reader() -> None:
    schema = {"type": "struct", "fields": [{
        "field": "v", "type": "struct", "name": "io.debezium.data.VariableScaleDecimal",
        "fields": [{"field": "scale", "type": "int32"}, {"field": "value", "type": "bytes"}]}]}
    row_type, _ = struct_type_of(schema)
    assert reader_for(schema, arrow_schema(event_schema(row_type)).field("after").type) is None
