"""Debezium's JSON converter (``org.apache.kafka.connect.json.JsonConverter``).

``schemas.enable=true`` writes ``{"schema": ..., "payload": ...}``; ``false`` writes the payload
alone. The schema bytes come pre-serialized from :class:`ConnectSchema`, so per record only the
payload is encoded. Another converter (Avro with a schema registry) plugs in by offering the
same ``to_record`` method.
"""
from __future__ import annotations

from typing import Any, Protocol

import orjson

from cdc.core.connect import ConnectSchema
from cdc.core.records import ChangeEvent, SinkRecord

_dumps = orjson.dumps


class Converter(Protocol):
    def to_record(self, event: ChangeEvent) -> SinkRecord: ...


class JsonConverter:
    def __init__(self, schemas_enable: bool = True) -> None:
        self.schemas_enable = schemas_enable

    def serialize(self, schema: ConnectSchema | None, payload: Any) -> bytes | None:
        if payload is None and schema is None:
            return None
        if not self.schemas_enable:
            return _dumps(payload)
        schema_json = schema.json if schema is not None else b"null"
        return b'{"schema":' + schema_json + b',"payload":' + _dumps(payload) + b"}"

    def to_record(self, event: ChangeEvent) -> SinkRecord:
        # A tombstone's value is null whatever schemas.enable says, so Kafka compaction works.
        value = None if event.value is None else self.serialize(event.value_schema, event.value)
        key = None if event.key is None else self.serialize(event.key_schema, event.key)
        headers = None
        if event.headers:
            # Kafka Connect's header converter always writes the schema with the value.
            headers = [
                (name, b'{"schema":' + (schema.json if schema else b"null") + b',"payload":' + _dumps(payload) + b"}")
                for name, schema, payload in event.headers
            ]
        return SinkRecord(event.topic, key, value, headers)
