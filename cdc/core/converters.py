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
from cdc.core.context_headers import ContextHeaders
from cdc.core.header_converters import HeaderConverter, SimpleHeaderConverter
from cdc.core.records import ChangeEvent, Headers, SinkRecord

_dumps = orjson.dumps


def _default(value: Any) -> Any:
    """Rows a compiled codec already wrote as JSON (cdc.sources.postgres.native_rows) are spliced in."""
    json = getattr(value, "json", None)
    if isinstance(json, bytes):
        return orjson.Fragment(json)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


class Converter(Protocol):
    def to_record(self, event: ChangeEvent) -> SinkRecord: ...


class JsonConverter:
    """Key and value as JSON; headers through ``headers`` (Connect's default, SimpleHeaderConverter,
    unless ``header.converter`` says otherwise: cdc.core.header_converters)."""

    def __init__(self, schemas_enable: bool = True, context: ContextHeaders | None = None,
                 headers: HeaderConverter | None = None) -> None:
        self.schemas_enable = schemas_enable
        self.context = context
        self.header_converter = headers or SimpleHeaderConverter()
        self._context_bytes: Headers | None = None  # serialized at the first record

    def headers(self, event: ChangeEvent) -> Headers | None:
        """The event's headers, then the context headers, as the header converter writes them."""
        to_bytes = self.header_converter.to_bytes
        headers = [(name, to_bytes(schema, payload)) for name, schema, payload in event.headers] \
            if event.headers else None
        if self.context is not None and event.context_headers:
            if self._context_bytes is None:
                self._context_bytes = [(name, to_bytes(schema, payload))
                                       for name, schema, payload in self.context.headers()]
            headers = headers + self._context_bytes if headers else list(self._context_bytes)
        return headers

    def serialize(self, schema: ConnectSchema | None, payload: Any) -> bytes | None:
        if payload is None and schema is None:
            return None
        if not self.schemas_enable:
            return _dumps(payload, default=_default)
        # one copy of the (often kilobytes of) schema per record: joined, not concatenated twice
        prefix = schema.envelope_prefix if schema is not None else b'{"schema":null,"payload":'
        return b"".join((prefix, _dumps(payload, default=_default), b"}"))

    def to_record(self, event: ChangeEvent) -> SinkRecord:
        # As Kafka's JsonConverter: null only when schema and payload are both null (a tombstone, for
        # compaction); a null payload with a schema (unwrap's tombstone mode) is {"schema":..,"payload":null}.
        value = self.serialize(event.value_schema, event.value)
        key = None if event.key is None else self.serialize(event.key_schema, event.key)  # (truncates: no key)
        return SinkRecord(event.topic, key, value, self.headers(event))
