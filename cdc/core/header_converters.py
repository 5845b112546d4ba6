"""Kafka Connect's header converters: how a header's (schema, value) becomes the header's bytes.

A Connect worker writes every record header through its ``header.converter``, set apart from the
key and value converters. Its default is ``SimpleHeaderConverter``, which writes a value as
``Values.convertToString`` prints it: a string as its raw text, a number or boolean as Java
prints it, a struct, map or list as JSON-like text (``{"id":10}``). A Debezium topic written by a
worker at its defaults therefore carries ``__debezium.context.connectorLogicalName: shop`` and
``__debezium.newkey: {"id":10}``, and a sink worker at its defaults reads those back; a JSON
envelope there (``{"schema":..,"payload":..}``) stops it ("No schema defined for value of map field").

``header.converter=org.apache.kafka.connect.json.JsonConverter`` writes the JSON converter's
envelope instead (``header.converter.schemas.enable=false``: the payload alone), which is what
Debezium's embedded engine writes when it is configured so.

tests/unit/test_converters_oracle.py checks :class:`SimpleHeaderConverter` against Kafka's own class.
"""
from __future__ import annotations

import base64
import datetime
from typing import Any, Protocol

import orjson

from cdc.core.config import Config, Option
from cdc.core.connect import ConnectSchema
from cdc.core.java_format import java_big_decimal, java_double, java_float
from cdc.core.records import Headers

SIMPLE = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
CLASSES = (SIMPLE, JSON)

_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_DATE, _TIME, _TIMESTAMP = ("org.apache.kafka.connect.data.Date", "org.apache.kafka.connect.data.Time",
                            "org.apache.kafka.connect.data.Timestamp")
_MILLIS_PER_DAY = 86_400_000
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class HeaderConverter(Protocol):
    """The bytes of one header; None for a null value (Kafka keeps the header, with no value)."""

    #: True when the bytes are JSON text (the file sink then writes them into its line as they are).
    writes_json: bool

    def to_bytes(self, schema: ConnectSchema | None, payload: Any) -> bytes | None: ...


class JsonHeaderConverter:
    """Kafka Connect's JsonConverter used as a header converter."""

    writes_json = True

    def __init__(self, schemas_enable: bool = True) -> None:
        self.schemas_enable = schemas_enable

    def to_bytes(self, schema: ConnectSchema | None, payload: Any) -> bytes | None:
        if not self.schemas_enable:
            return orjson.dumps(payload)
        return b'{"schema":' + (schema.json if schema else b"null") + b',"payload":' + orjson.dumps(payload) + b"}"


class SimpleHeaderConverter:
    """Kafka Connect's default header converter (``Values.convertToString`` of the Connect value).

    Our payloads are the JSON converter's view of a Connect value (bytes as base64 text, a
    ``Decimal`` as its unscaled bytes, a ``Date`` as days); the schema says which Java object each
    one stands for, and that object is printed as Java prints it."""

    writes_json = False

    def to_bytes(self, schema: ConnectSchema | None, payload: Any) -> bytes | None:
        if payload is None:
            return None
        return _text(schema.definition if schema else None, payload, embedded=False).encode()


def _text(schema: dict[str, Any] | None, value: Any, *, embedded: bool) -> str:
    if value is None:
        return "null"
    kind = schema.get("type") if schema else None
    name = schema.get("name") if schema else None
    if name == _DECIMAL and isinstance(value, str):
        scale = int((schema or {}).get("parameters", {}).get("scale", 0))
        return java_big_decimal(int.from_bytes(base64.b64decode(value), "big", signed=True), scale)
    if name in (_DATE, _TIME, _TIMESTAMP) and isinstance(value, int):
        return _java_date(value * _MILLIS_PER_DAY if name == _DATE else value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_float(value) if kind == "float" else java_double(value)
    if isinstance(value, str):
        # bytes arrive as base64 text already, which is what Values prints for byte[]
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if embedded else value
    if isinstance(value, list):
        items = (schema or {}).get("items")
        return "[" + ",".join(_text(items, item, embedded=True) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_text(key_schema, key, embedded=True) + ":" + _text(item_schema, item, embedded=True)
                              for key, key_schema, item_schema, item in _entries(schema, value)) + "}"
    raise TypeError(f"a header value of type {type(value).__name__} has no Connect form")


def _entries(schema: dict[str, Any] | None, value: dict[str, Any]) -> list[tuple[str, Any, Any, Any]]:
    """(key, key schema, value schema, value) of a struct (in its fields' order) or a map."""
    schema = schema or {}
    if "fields" in schema:
        return [(f["field"], None, f, value.get(f["field"])) for f in schema["fields"]]
    return [(k, schema.get("keys"), schema.get("values"), v) for k, v in value.items()]


def _java_date(millis: int) -> str:
    # Values.dateFormatFor: under a day since the epoch prints as a time, a whole day as a date.
    moment = _EPOCH + datetime.timedelta(milliseconds=millis)
    if millis < _MILLIS_PER_DAY:
        return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if millis % _MILLIS_PER_DAY == 0:
        return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T" + moment.strftime("%H:%M:%S.") \
        + f"{moment.microsecond // 1000:03d}Z"


def _class_problem(value: str) -> str | None:
    return None if value in CLASSES else f"not a header converter cdc has: {', '.join(CLASSES)}"


HEADER_OPTIONS: tuple[Option, ...] = (
    Option("header.converter", str, SIMPLE,
           "How record headers are written, as a Kafka Connect worker's header.converter: SimpleHeaderConverter "
           "(Connect's default: a string header is its text, a key header {\"id\":10}) or JsonConverter "
           "(a JSON envelope with the schema).", validator=_class_problem),
    Option("header.converter.schemas.enable", bool, True,
           "JsonConverter headers: include the schema with each header's value."),
)


def header_converter(config: Config) -> HeaderConverter:
    """The header converter ``header.converter`` names (Connect's default: SimpleHeaderConverter)."""
    config.declare(HEADER_OPTIONS)
    if config.get("header.converter") == JSON:
        return JsonHeaderConverter(config.get("header.converter.schemas.enable"))
    return SimpleHeaderConverter()


def headers_json(headers: Headers | None, *, as_json: bool) -> bytes:
    """A record's headers as one JSON object (the file and stdout sinks' ``headers``): values a JSON
    header converter wrote are spliced in as they are, any other as a JSON string of their text."""
    if not headers:
        return b"null"
    if as_json:
        return b"{" + b",".join(orjson.dumps(name) + b":" + (value if value is not None else b"null")
                                for name, value in headers) + b"}"
    return orjson.dumps({name: None if value is None else value.decode("utf-8", "replace") for name, value in headers})
