"""Reading Confluent-framed Avro back into the JSON converter's form of a payload.

The inverse of :class:`cdc.converters.avro.AvroSerializer`, for consumers such as Spark's
``read_kafka_topic``: the writer's schema comes from the registry by the id in the 5-byte header
(cached, so a schema change in the topic is read with the schema it was written with), the datum
is decoded by fastavro, and values are given back as the JSON converter writes them (bytes and
decimals as base64, NaN as "NaN"), so one set of per-type converters serves both formats.
"""
from __future__ import annotations

import base64
import decimal
import io
import math
import struct
from typing import Any

import orjson

from cdc.converters.avro import MAGIC, _encodable, fastavro
from cdc.converters.registry import SchemaRegistry
from cdc.core.errors import CdcError, ConfigError


class AvroReader:
    """``read(data)`` -> the decoded datum (fastavro's values); writer schemas fetched once per id."""

    def __init__(self, registry_url: str, user_info: str | None = None) -> None:
        if fastavro is None:
            raise ConfigError("reading Avro needs fastavro", fix="pip install 'cdc-debezium[avro]'")
        self._registry = SchemaRegistry.from_url_list(registry_url, user_info, "user_info" if user_info else "url")
        self._writers: dict[int, Any] = {}

    def read(self, data: bytes) -> Any:
        if len(data) < 5 or data[:1] != MAGIC:
            raise CdcError("a record is not in Confluent's Avro wire format (magic byte 0, 4-byte schema id)",
                           fix="read this topic with value_converter='json', or check the producer's converter")
        schema_id = int.from_bytes(data[1:5], "big")
        writer = self._writers.get(schema_id)
        if writer is None:
            writer = fastavro.parse_schema(_encodable(orjson.loads(self._registry.schema_by_id(schema_id))))
            self._writers[schema_id] = writer
        return fastavro.schemaless_reader(io.BytesIO(data[5:]), writer, None)


def json_form(schema: dict[str, Any], datum: Any) -> Any:
    """What the JSON converter writes for a decoded Avro datum of this Connect schema."""
    if datum is None:
        return None
    kind = schema["type"]
    if kind == "bytes":
        if isinstance(datum, decimal.Decimal):
            datum = _unscaled_bytes(datum, int((schema.get("parameters") or {}).get("scale", 0)))
        return base64.b64encode(datum).decode()
    if kind in ("float", "double", "float32", "float64"):
        if math.isnan(datum):
            return "NaN"
        if math.isinf(datum):
            return "Infinity" if datum > 0 else "-Infinity"
        if kind in ("float", "float32"):  # Avro's float is 32 bits: print it as the float32 it is
            return struct.unpack("f", struct.pack("f", datum))[0]
        return datum
    if kind == "array":
        return [json_form(schema["items"], x) for x in datum]
    if kind == "map":
        if schema["keys"]["type"] == "string" and not schema["keys"].get("optional"):
            return {k: json_form(schema["values"], v) for k, v in datum.items()}
        return [[json_form(schema["keys"], e["key"]), json_form(schema["values"], e["value"])] for e in datum]
    if kind == "struct":
        return {f["field"]: json_form(f, datum.get(f["field"])) for f in schema["fields"]}
    return datum


def _unscaled_bytes(value: decimal.Decimal, scale: int) -> bytes:
    sign, digits, exponent = value.as_tuple()  # exact: no Decimal context rounding at 65 digits
    unscaled = int("".join(map(str, digits)) or "0") * 10 ** (int(exponent) + scale)
    unscaled = -unscaled if sign else unscaled
    return unscaled.to_bytes(max(1, (unscaled + (unscaled < 0)).bit_length() // 8 + 1), "big", signed=True)
