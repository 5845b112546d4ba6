"""Debezium's ExtractNewRecordState (``io.debezium.transforms.ExtractNewRecordState``).

The change event envelope is replaced by its ``after`` row (Debezium delegates to Kafka's
ExtractField / InsertField / ReplaceField, and so does this), with the same handling of deletes,
tombstones and truncates, and the same names and schemas for the fields and headers it adds
(``__op``, ``__source_ts_ms``...; each added schema is the original's type made optional, without
its default). Anything that is not a change event envelope (schema change events, transaction
BEGIN/END, heartbeats) passes unchanged.
Source: debezium-connect-plugins/src/main/java/io/debezium/transforms/ExtractNewRecordState.java
"""
from __future__ import annotations

import dataclasses
from typing import Any

from cdc.core.connect import ConnectSchema
from cdc.core.records import ChangeEvent
from cdc.transforms.chain import Options
from cdc.transforms.connect import (
    STRING,
    Header,
    Schema,
    TransformError,
    _SchemaCache,
    definition,
    exclude_fields,
    extract_field,
    get_field,
    insert_static,
    optional_basics,
    struct_like,
    with_name,
)
from cdc.transforms.connect import _Side as _ValueSide

DELETED_FIELD = "__deleted"
MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
_TRANSACTION_FIELDS = ("id", "total_order", "data_collection_order")
_TOP_LEVEL_FIELDS = ("op", "ts_ms", "ts_us", "ts_ns")
_VALUE = _ValueSide()


def is_envelope(schema: ConnectSchema | None) -> bool:
    """Debezium's ``Envelope.isEnvelopeSchema``: the value schema's name ends with ``.Envelope``."""
    return schema is not None and (schema.name or "").endswith(".Envelope")


class FieldReference:
    """One entry of ``add.fields`` / ``add.headers``: ``field``, ``struct.field`` or either with
    ``:newName``. An unqualified name lives in ``source`` unless it is a transaction field or one
    of the envelope's own (op, ts_ms...)."""

    def __init__(self, prefix: str, spec: str) -> None:
        parts = spec.split(":")
        if len(parts) > 2:
            raise ValueError(f"Unexpected field name: {spec}")
        splits = parts[0].split(".")
        self.field = splits[0] if len(splits) == 1 else splits[1]
        self.struct: str | None
        if len(splits) == 1:
            if self.field in _TRANSACTION_FIELDS:
                self.struct = "transaction"
            elif self.field in _TOP_LEVEL_FIELDS:
                self.struct = None
            else:
                self.struct = "source"
        else:
            self.struct = splits[0]
        if len(parts) == 2:
            self.new_field = prefix + parts[1]
        else:
            self.new_field = prefix + (self.field if len(splits) == 1 else f"{self.struct}_{self.field}")

    def schema(self, envelope: Schema) -> Schema | None:
        """The added field's schema, or None when the envelope does not have the field."""
        parent = envelope
        if self.struct is not None:
            holder = get_field(envelope, self.struct)
            if holder is None:
                return None
            parent = holder
        found = get_field(parent, self.field) or get_field(envelope, self.field)
        return None if found is None else optional_basics(found)

    def value(self, envelope: dict[str, Any], envelope_schema: Schema) -> Any:
        parent = envelope if self.struct is None else envelope.get(self.struct)
        if parent is None:
            return None  # e.g. no transaction block while snapshotting
        parent_schema = envelope_schema if self.struct is None else get_field(envelope_schema, self.struct)
        # A field another SMT put at the top level is read from there.
        return parent.get(self.field) if get_field(parent_schema, self.field) is not None \
            else envelope.get(self.field)


def _references(prefix: str, spec: str, options: Options, name: str) -> list[FieldReference]:
    try:
        return [FieldReference(prefix, item.strip()) for item in spec.split(",") if item.strip()]
    except ValueError as exc:
        raise options.error(name, str(exc), "use field, struct.field or field:newName") from None


class ExtractNewRecordState:
    def __init__(self, options: Options) -> None:
        self.mode = options.choice("delete.tombstone.handling.mode", MODES, "tombstone")
        route = options.string("route.by.field", "") or ""
        self.route_by_field = route or None
        fields_prefix = options.string("add.fields.prefix", "__") or ""
        headers_prefix = options.string("add.headers.prefix", "__") or ""
        self.add_fields = _references(fields_prefix, options.string("add.fields", "") or "", options, "add.fields")
        self.add_headers = _references(headers_prefix, options.string("add.headers", "") or "", options,
                                       "add.headers")
        self.replace_null_with_default = options.boolean("replace.null.with.default", True)
        self.drop_fields_header = options.string("drop.fields.header.name")
        self.drop_fields_from_key = options.boolean("drop.fields.from.key", False)
        self.drop_fields_keep_schema_compatible = options.boolean("drop.fields.keep.schema.compatible", True)
        self._schemas = _SchemaCache()

    def apply(self, event: ChangeEvent) -> ChangeEvent | None:
        tombstone = event.value is None
        valid = is_envelope(event.value_schema)
        if (valid or tombstone) and self.add_headers:
            event = dataclasses.replace(event, headers=[*(event.headers or []), *self._headers(event)])
        if tombstone:
            return event if self.mode == "rewrite-with-tombstone" else None
        if not valid:
            return event
        original = event
        value = event.value
        assert value is not None
        if value.get("after") is None and value.get("before") is None:
            return None  # truncate (and anything else without a row) is dropped, as in Debezium
        if value.get("after") is None:
            return self._delete(original)
        unwrapped = extract_field(_VALUE, original, "after")
        if self.mode in ("rewrite", "rewrite-with-tombstone"):
            unwrapped = insert_static(unwrapped, DELETED_FIELD, "false", self.replace_null_with_default)
        if self.route_by_field is not None:
            unwrapped = _routed(unwrapped, unwrapped.value, definition(unwrapped.value_schema), self.route_by_field)
        unwrapped = self._add_fields(original, unwrapped)
        return self._drop_fields(unwrapped)

    def _delete(self, original: ChangeEvent) -> ChangeEvent | None:
        if self.mode == "drop":
            return None
        if self.mode == "tombstone":
            # Debezium keeps the row schema with the null value here (not a true tombstone: its
            # JsonConverter writes {"schema": <row>, "payload": null} when schemas are enabled).
            unwrapped = extract_field(_VALUE, original, "after")
        elif self.mode == "delete-to-tombstone":
            unwrapped = dataclasses.replace(original, value_schema=None, value=None)
        else:
            unwrapped = extract_field(_VALUE, original, "before")
            unwrapped = insert_static(unwrapped, DELETED_FIELD, "true", self.replace_null_with_default)
        if self.route_by_field is not None:
            assert original.value is not None and original.value_schema is not None
            before = get_field(original.value_schema.definition, "before")
            unwrapped = _routed(unwrapped, original.value["before"], before, self.route_by_field)
        unwrapped = self._drop_fields(unwrapped)
        if unwrapped.value is not None:
            unwrapped = self._add_fields(original, unwrapped)
        return unwrapped

    def _headers(self, event: ChangeEvent) -> list[Header]:
        headers: list[Header] = []
        for ref in self.add_headers:
            if event.value is None:
                if ref.field == "op":  # a tombstone is the end of a delete
                    headers.append((ref.new_field, ConnectSchema(STRING), "d"))
                continue
            assert event.value_schema is not None
            envelope = event.value_schema.definition
            schema = ref.schema(envelope)
            if schema is not None:
                headers.append((ref.new_field, ConnectSchema(schema), ref.value(event.value, envelope)))
        return headers

    def _add_fields(self, original: ChangeEvent, unwrapped: ChangeEvent) -> ChangeEvent:
        # Runs even without add.fields: Debezium rebuilds the schema then too, and the rebuilt one
        # (SchemaUtil.copySchemaBasics) is required where the ``after`` field was optional.
        assert original.value is not None and original.value_schema is not None and unwrapped.value is not None
        envelope_schema = original.value_schema.definition
        row_schema = unwrapped.value_schema
        assert row_schema is not None

        def build() -> ConnectSchema:
            fields = list(row_schema.fields)
            for ref in self.add_fields:
                schema = ref.schema(envelope_schema)
                if schema is not None:
                    fields.append(with_name(schema, ref.new_field))
            return ConnectSchema(struct_like(row_schema.definition, fields))

        new_schema = self._schemas.get((row_schema, original.value_schema, original.value.get("op")), build)
        value = dict(unwrapped.value)
        for ref in self.add_fields:
            if ref.schema(envelope_schema) is not None:
                value[ref.new_field] = ref.value(original.value, envelope_schema)
        return dataclasses.replace(unwrapped, value_schema=new_schema, value=value)

    def _drop_fields(self, event: ChangeEvent) -> ChangeEvent:
        if not self.drop_fields_header:
            return event
        header = next((h for h in event.headers or [] if h[0] == self.drop_fields_header), None)
        if header is None or not header[2]:
            return event
        names: list[str] = list(header[2])
        if self.drop_fields_from_key and event.key is not None:
            dropped = self._droppable(event.key_schema, names)
            if dropped:
                event = exclude_fields(event, dropped, key=True)
        dropped = self._droppable(event.value_schema, names)
        if dropped:
            event = exclude_fields(event, dropped, key=False)
        return event

    def _droppable(self, schema: ConnectSchema | None, names: list[str]) -> list[str]:
        if not self.drop_fields_keep_schema_compatible:
            return names
        return [f["field"] for f in (schema.fields if schema else []) if f.get("optional") and f["field"] in names]


def _routed(event: ChangeEvent, row: dict[str, Any] | None, row_schema: Schema | None, field: str) -> ChangeEvent:
    """route.by.field: the row's value of ``field`` (a string column) becomes the topic; a null or
    blank one changes nothing."""
    found = get_field(row_schema, field)
    if found is None:
        raise TransformError(f"{field} is not a valid field name")
    if found["type"] != "string":
        raise TransformError(f"Field '{field}' is not of type STRING")
    topic = None if row is None else row.get(field)
    if topic is None or not topic.strip():
        return event
    return dataclasses.replace(event, topic=topic)
