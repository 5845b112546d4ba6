"""Confluent's Avro converter (``io.confluent.connect.avro.AvroConverter``): schema registry + wire format.

A record is ``0x00``, the schema's registry id (4 bytes, big-endian), then the Avro binary encoding
of the payload (fastavro). The Avro schema is the one Confluent's AvroData derives from the record's
Connect schema (:mod:`cdc.converters.avro_schema`), registered under the subject its strategy names.
Everything per schema (Avro schema, registry id, fastavro's parsed schema, the payload adapter) is
computed once per (topic, Connect schema), so a record costs one adapter pass and one encode.

Payloads arrive in the JSON converter's form (bytes and decimals as base64 text, non-finite floats as
"NaN"/"Infinity"); the adapter turns them back into what Avro encodes.
"""
from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable
from typing import Any

import orjson

from cdc.converters.avro_schema import AvroSchemaError, from_connect_schema, full_name, scrub_name
from cdc.converters.registry import SchemaRegistry
from cdc.core.connect import ConnectSchema
from cdc.core.errors import CdcError, ConfigError

try:
    import fastavro
except ImportError:  # the avro extra
    fastavro = None  # type: ignore[assignment]

MAGIC = b"\x00"

TOPIC_NAME = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
RECORD_NAME = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
TOPIC_RECORD_NAME = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
STRATEGIES = {name.rsplit(".", 1)[1]: name for name in (TOPIC_NAME, RECORD_NAME, TOPIC_RECORD_NAME)}
# Apicurio's artifact resolver strategies, named for the same subjects.
APICURIO_STRATEGIES = {"TopicIdStrategy": TOPIC_NAME, "RecordIdStrategy": RECORD_NAME,
                       "TopicRecordIdStrategy": TOPIC_RECORD_NAME}

Adapter = Callable[[Any], Any]


def strategy_class(name: str) -> str | None:
    """The Confluent strategy class a configured name stands for (class, short or Apicurio name), or None."""
    short = name.strip().rsplit(".", 1)[-1]
    return STRATEGIES.get(short) or APICURIO_STRATEGIES.get(short)


def subject_name(strategy: str, topic: str, is_key: bool, avro_schema: Any) -> str:
    if strategy == RECORD_NAME:
        return full_name(avro_schema)
    if strategy == TOPIC_RECORD_NAME:
        return f"{topic}-{full_name(avro_schema)}"
    return f"{topic}-{'key' if is_key else 'value'}"


class AvroSerializer:
    """Key or value serializer of the Avro converter: ``serialize(topic, schema, payload)``."""

    def __init__(self, registry: SchemaRegistry, *, is_key: bool, strategy: str = TOPIC_NAME,
                 auto_register: bool = True, scrub_invalid_names: bool = False,
                 connect_meta_data: bool = True) -> None:
        if fastavro is None:
            raise ConfigError("the Avro converter needs fastavro", fix="pip install 'cdc-debezium[avro]'")
        self.registry = registry
        self.is_key = is_key
        self.strategy = strategy
        self.auto_register = auto_register
        self.scrub = scrub_invalid_names
        self.meta = connect_meta_data
        self._writers: dict[tuple[str, ConnectSchema], tuple[bytes, Any, Adapter | None]] = {}

    def avro_schema(self, schema: ConnectSchema) -> Any:
        try:
            return from_connect_schema(schema.definition, scrub_invalid_names=self.scrub,
                                       connect_meta_data=self.meta)
        except AvroSchemaError as exc:
            raise ConfigError(f"the Connect schema {schema.name or schema.definition['type']} cannot be "
                              f"written in Avro: {exc}",
                              fix="set schema.name.adjustment.mode=avro and field.name.adjustment.mode=avro on the "
                                  "source, or value.converter.scrub.invalid.names=true") from None

    def subject(self, topic: str, schema: ConnectSchema) -> str:
        return subject_name(self.strategy, topic, self.is_key, self.avro_schema(schema))

    def _writer(self, topic: str, schema: ConnectSchema) -> tuple[bytes, Any, Adapter | None]:
        found = self._writers.get((topic, schema))
        if found is None:
            avro = self.avro_schema(schema)
            text = orjson.dumps(avro).decode()  # compact, as Avro Java's Schema.toString()
            subject = subject_name(self.strategy, topic, self.is_key, avro)
            schema_id = self.registry.register(subject, text) if self.auto_register \
                else self.registry.lookup(subject, text)
            found = (MAGIC + schema_id.to_bytes(4, "big"), fastavro.parse_schema(_encodable(avro)),
                     adapter(schema.definition, scrub_name if self.scrub else None))
            self._writers[(topic, schema)] = found
        return found

    def serialize(self, topic: str, schema: ConnectSchema | None, payload: Any) -> bytes | None:
        if payload is None:  # Confluent's serializer writes null for null (tombstones)
            return None
        if schema is None:
            raise CdcError(f"a record for {topic} has no schema: the Avro converter needs one",
                           fix="use the JSON converter for schemaless records")
        prefix, parsed, adapt = self._writer(topic, schema)
        out = io.BytesIO()
        out.write(prefix)
        fastavro.schemaless_writer(out, parsed, adapt(payload) if adapt is not None else payload)
        return out.getvalue()


def _encodable(avro: Any) -> Any:
    """The schema for fastavro: without the decimal logical type where its scale is outside 0..precision.

    Confluent writes ``logicalType: decimal`` even then (its "legacy" decimal, PostgreSQL's numeric(3,5)),
    which Avro Java ignores when reading but fastavro refuses to parse; the bytes are the same either way."""
    if isinstance(avro, list):
        return [_encodable(branch) for branch in avro]
    if not isinstance(avro, dict):
        return avro
    out = {k: (_encodable(v) if k in ("type", "items", "values") else v) for k, v in avro.items()}
    if "fields" in out:
        out["fields"] = [{**f, "type": _encodable(f["type"])} for f in out["fields"]]
    if out.get("logicalType") == "decimal" and not 0 <= out.get("scale", 0) <= out.get("precision", 0):
        del out["logicalType"]
    return out


# --- payload adapters: JSON-converter form -> Avro datum; None where the value passes unchanged ---

_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _bytes(value: Any) -> Any:
    return base64.b64decode(value) if isinstance(value, str) else value


def _float(value: Any) -> Any:
    return _FLOATS.get(value, value) if isinstance(value, str) else value


def adapter(schema: dict[str, Any], scrub: Callable[[str], str] | None = None) -> Adapter | None:
    """A function turning a payload of this Connect schema into fastavro's datum, or None if none is needed."""
    kind = schema["type"]
    if kind == "bytes":
        return _bytes
    if kind in ("float", "double", "float32", "float64"):
        return _float
    if kind == "array":
        item = adapter(schema["items"], scrub)
        if item is None:
            return None
        return lambda v: None if v is None else [item(x) for x in v]
    if kind == "map":
        key_schema, value_schema = schema["keys"], schema["values"]
        values = adapter(value_schema, scrub)
        if key_schema["type"] == "string" and not key_schema.get("optional"):
            if values is None:
                return None
            return lambda v: None if v is None else {k: _apply(values, x) for k, x in v.items()}
        key_adapt = adapter(key_schema, scrub) or _same
        value_adapt = values or _same
        # JsonConverter writes such a map as [[key, value], ...]; Avro as MapEntry records.
        return lambda v: None if v is None else [
            {"key": key_adapt(k), "value": value_adapt(x)} for k, x in (v.items() if isinstance(v, dict) else v)]
    if kind == "struct":
        fields = [(f["field"], scrub(f["field"]) if scrub else f["field"], adapter(f, scrub))
                  for f in schema.get("fields", [])]
        if all(a is None and src == dst for src, dst, a in fields):
            return None
        return lambda v: None if v is None else {dst: _apply(a, v.get(src)) for src, dst, a in fields}
    return None


def _apply(adapt: Adapter | None, value: Any) -> Any:
    return value if adapt is None else adapt(value)


def _same(value: Any) -> Any:
    return value
