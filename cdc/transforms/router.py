"""Debezium's ByLogicalTableRouter (and its successor ToLogicalTopicRouter): several physical
tables' topics merged into one logical topic.

The key gets a field naming the physical table (``key.enforce.uniqueness``), so equal keys of two
tables stay distinct, and the key, envelope and row schemas are renamed after the new topic
(``<topic>.Key``, ``<topic>.Envelope``, ``<topic>.Value``) so that a registry sees one subject.
Source: debezium-connect-plugins/src/main/java/io/debezium/transforms/ToLogicalTopicRouter.java
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from cdc.core.connect import ConnectSchema
from cdc.core.records import ChangeEvent
from cdc.transforms.chain import Options, java_replace_first
from cdc.transforms.connect import STRING, Schema, _SchemaCache, ordered, with_name
from cdc.transforms.unwrap import is_envelope

ADJUSTMENT_MODES = ("none", "avro", "avro_unicode")
_AVRO_FIRST = re.compile(r"[A-Za-z_]")
_AVRO_REST = re.compile(r"[A-Za-z0-9_.]")


def adjust_schema_name(name: str, mode: str) -> str:
    """Debezium's SchemaNameAdjuster: ``avro`` replaces each invalid character with ``_`` (a
    leading digit is kept after the ``_``); ``avro_unicode`` with ``_uXXXX``."""
    if mode == "none" or not name:
        return name

    def replace(c: str) -> str:
        return f"_u{ord(c):04x}" if mode == "avro_unicode" else "_"

    out = [name[0] if _AVRO_FIRST.fullmatch(name[0]) else replace(name[0])]
    if mode == "avro" and name[0].isdigit() and not _AVRO_FIRST.fullmatch(name[0]):
        out.append(name[0])
    out.extend(c if _AVRO_REST.fullmatch(c) else replace(c) for c in name[1:])
    return "".join(out)


def _renamed(source: Schema, name: str, fields: list[Schema] | None = None) -> Schema:
    """copySchemaExcludingName: version, doc, parameters, optionality and fields kept, new name."""
    schema: Schema = {"type": "struct", "fields": source["fields"] if fields is None else fields,
                      "optional": bool(source.get("optional")), "name": name}
    schema.update((k, source[k]) for k in ("version", "doc", "parameters") if k in source)
    return ordered(schema)


class ToLogicalTopicRouter:
    KEY_FIELD_DEFAULT = "__dbz__sourceIdentifier"

    def __init__(self, options: Options) -> None:
        topic_regex = options.regex("topic.regex")
        assert topic_regex is not None
        self.topic_regex = topic_regex
        self.topic_replacement = options.required("topic.replacement")
        self.enforce_uniqueness = options.boolean("key.enforce.uniqueness", True)
        self.key_field_name = options.string("key.field.name", self.KEY_FIELD_DEFAULT) or self.KEY_FIELD_DEFAULT
        key_regex_text = (options.string("key.field.regex") or "").strip()
        self.key_field_regex = options.regex("key.field.regex") if key_regex_text else None
        self.key_field_replacement = options.string("key.field.replacement")
        if self.key_field_regex is not None and not (self.key_field_replacement or "").strip():
            raise options.error("key.field.replacement", "key.field.replacement must be non-empty if "
                                "key.field.regex is set.", "set key.field.replacement")
        self.adjustment = options.choice("schema.name.adjustment.mode", ADJUSTMENT_MODES, "none")
        options.accept("logical.destination.cache.size", "logical.table.cache.size")
        self._keys = _SchemaCache()
        self._envelopes = _SchemaCache()

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        old_topic = event.topic
        new_topic = java_replace_first(self.topic_regex, self.topic_replacement, old_topic)
        if not new_topic:  # no match, or an empty result (Debezium warns and keeps the record)
            return event
        key_schema: ConnectSchema | None = None
        key: Any = None
        if event.key is not None:
            if not isinstance(event.key, dict) or event.key_schema is None:
                raise ValueError(f"Only Struct objects supported for [Updating schema], found: {type(event.key)}")
            key_schema = self._keys.get((event.key_schema, new_topic), lambda: self._key_schema(event, new_topic))
            key = dict(event.key)
            if self.enforce_uniqueness:
                key[self.key_field_name] = self._physical_id(old_topic)
        if event.value is None or not is_envelope(event.value_schema):
            return dataclasses.replace(event, topic=new_topic, key_schema=key_schema, key=key)
        value_schema = self._envelopes.get((event.value_schema, new_topic), lambda: self._envelope(event, new_topic))
        return dataclasses.replace(event, topic=new_topic, key_schema=key_schema, key=key,
                                   value_schema=value_schema, value=dict(event.value))

    def _physical_id(self, old_topic: str) -> str:
        if self.key_field_regex is None:
            return old_topic
        assert self.key_field_replacement is not None
        return java_replace_first(self.key_field_regex, self.key_field_replacement, old_topic) or old_topic

    def _key_schema(self, event: ChangeEvent, topic: str) -> ConnectSchema:
        assert event.key_schema is not None
        source = event.key_schema.definition
        fields = list(source["fields"])
        if self.enforce_uniqueness:
            fields.append(with_name(STRING, self.key_field_name))
        return ConnectSchema(_renamed(source, adjust_schema_name(f"{topic}.Key", self.adjustment), fields))

    def _envelope(self, event: ChangeEvent, topic: str) -> ConnectSchema:
        assert event.value_schema is not None
        envelope = event.value_schema.definition
        by_name = {f["field"]: f for f in envelope["fields"]}
        row = by_name.get("before") or by_name.get("after")
        new_row = None if row is None else _renamed(row, adjust_schema_name(f"{topic}.Value", self.adjustment))
        fields = [with_name(new_row, f["field"]) if new_row is not None and f["field"] in ("before", "after") else f
                  for f in envelope["fields"]]
        return ConnectSchema(_renamed(envelope, adjust_schema_name(f"{topic}.Envelope", self.adjustment), fields))


class ByLogicalTableRouter(ToLogicalTopicRouter):
    """The deprecated name, whose key field defaults to ``__dbz__physicalTableIdentifier``."""

    KEY_FIELD_DEFAULT = "__dbz__physicalTableIdentifier"
