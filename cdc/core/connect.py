"""Kafka Connect schemas, as Debezium's JSON converter prints them.

A schema is kept as the exact dict the converter writes (key order included, because users
diff our output against Debezium's) together with its serialized bytes, computed once per
table version: with ``schemas.enable`` every message repeats its schema, so the bytes are
spliced into each message instead of being serialized again.
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

import orjson


class ConnectSchema:
    """An immutable Kafka Connect schema (``{"type": ..., "optional": ..., ...}``)."""

    __slots__ = ("definition", "__dict__")

    def __init__(self, definition: dict[str, Any]) -> None:
        self.definition = definition

    @cached_property
    def json(self) -> bytes:
        return orjson.dumps(self.definition)

    @cached_property
    def envelope_prefix(self) -> bytes:
        """``{"schema":<this>,"payload":``: what JsonConverter writes before every payload."""
        return b'{"schema":' + self.json + b',"payload":'

    @property
    def name(self) -> str | None:
        return self.definition.get("name")

    @property
    def fields(self) -> list[dict[str, Any]]:
        return self.definition.get("fields", [])

    def __repr__(self) -> str:
        return f"ConnectSchema({self.definition.get('name') or self.definition['type']})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConnectSchema) and self.definition == other.definition

    def __hash__(self) -> int:
        return hash(self.json)


def field(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A struct field: the field's schema with ``"field"`` appended (last, as Connect does)."""
    return {**schema, "field": name}


def struct(
    fields: list[dict[str, Any]],
    *,
    optional: bool,
    name: str | None = None,
    version: int | None = None,
    doc: str | None = None,
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "struct", "fields": fields, "optional": optional}
    if name is not None:
        schema["name"] = name
    if version is not None:
        schema["version"] = version
    if doc is not None:
        schema["doc"] = doc
    return schema


def primitive(type_: str, optional: bool = True, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": optional, **extra}


STRING = primitive("string", False)
OPTIONAL_STRING = primitive("string")
INT64 = primitive("int64", False)
OPTIONAL_INT64 = primitive("int64")
INT32 = primitive("int32", False)
OPTIONAL_INT32 = primitive("int32")
OPTIONAL_BOOLEAN = primitive("boolean")
