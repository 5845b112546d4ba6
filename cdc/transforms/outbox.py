"""Debezium's outbox event router (``io.debezium.transforms.outbox.EventRouter``).

An application writes its events into an outbox table (``id``, ``aggregatetype``, ``aggregateid``,
``payload``, ...) in the same transaction as its data; this transform turns each insert into that
table into the event itself: the topic from ``route.by.field`` (through ``route.topic.regex`` /
``route.topic.replacement``), the key from ``table.field.event.key``, the value the payload (or a
struct ``{payload, <additional fields>}`` when fields are placed in the envelope), the event id in
an ``id`` header. Deletes (the outbox is usually emptied right after each insert) and tombstones
are dropped; an update is dropped with a warning, an error log or a failure
(``table.op.invalid.behavior``). Records that are not change events pass unchanged.

Checked record for record against Debezium 3.6.1's class (tests/unit/test_transforms_oracle.py).
Not modelled: the Kafka record timestamp Debezium sets from ``table.field.event.timestamp`` (cdc's
records carry none; the Kafka sink lets the producer stamp them), and OpenTelemetry tracing.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

import orjson

from cdc.core.connect import ConnectSchema
from cdc.core.records import ChangeEvent
from cdc.transforms.chain import Options, java_replace_first
from cdc.transforms.connect import Schema, TransformError, field_schema, get_field, with_name, wrap
from cdc.transforms.unwrap import is_envelope

log = logging.getLogger(__name__)

STRING: Schema = {"type": "string", "optional": False}
BEHAVIOURS = ("warn", "error", "fatal")
PLACEMENTS = ("header", "envelope", "partition")


@dataclasses.dataclass(frozen=True)
class AdditionalField:
    field: str
    placement: str
    alias: str


def _additional_fields(options: Options) -> list[AdditionalField]:
    out = []
    for spec in options.list("table.fields.additional.placement"):
        parts = [p.strip() for p in spec.split(":")]
        if len(parts) not in (2, 3) or parts[1].lower() not in PLACEMENTS:
            raise options.error("table.fields.additional.placement", f"{spec!r} is not field:placement[:alias]",
                                "write each as field:header|envelope|partition[:alias], comma-separated")
        out.append(AdditionalField(parts[0], parts[1].lower(), parts[2] if len(parts) == 3 else parts[0]))
    return out


class EventRouter:
    def __init__(self, options: Options) -> None:
        self.field_id = options.string("table.field.event.id", "id") or "id"
        self.field_key = options.string("table.field.event.key", "aggregateid")
        self.field_timestamp = options.string("table.field.event.timestamp")
        self.field_payload = options.string("table.field.event.payload", "payload") or "payload"
        self.field_schema_version = options.string("table.field.event.schema.version")
        self.route_by = options.string("route.by.field", "aggregatetype") or "aggregatetype"
        regex = options.regex("route.topic.regex", required=False)
        if regex is None:
            from cdc.transforms.chain import java_regex

            regex = java_regex("(?<routedByValue>.*)")
        self.route_regex = regex
        self.route_replacement = options.string("route.topic.replacement", "outbox.event.${routedByValue}") or ""
        self.tombstone_on_empty = options.boolean("route.tombstone.on.empty.payload", False)
        self.expand_json = options.boolean("table.expand.json.payload", False)
        self.null_fields = options.choice("table.json.payload.null.behavior", ("ignore", "optional_bytes"),
                                          "ignore")
        self.additional = _additional_fields(options)
        self.error_on_missing = options.boolean("table.fields.additional.error.on.missing", True)
        fallback = options.string("debezium.op.invalid.behavior")
        self.invalid = options.choice("table.op.invalid.behavior", BEHAVIOURS, fallback or "warn")
        options.accept("tracing.span.context.field", "tracing.operation.name", "tracing.with.context.field.only")
        self._envelope = any(f.placement == "envelope" for f in self.additional)
        self._value_schemas: dict[tuple[Any, ...], Schema] = {}

    def apply(self, event: ChangeEvent) -> ChangeEvent | None:
        if event.value is None:
            return None  # a tombstone
        if not is_envelope(event.value_schema):
            return event  # heartbeats, schema changes, transaction markers
        assert event.value_schema is not None
        op = event.value.get("op")
        if op == "d":
            return None
        if op == "u":
            self._unexpected(event)
            return None
        row: dict[str, Any] = event.value.get("after") or {}
        row_schema = get_field(event.value_schema.definition, "after")
        if row_schema is None:
            raise TransformError("the change event has no after field")
        payload_field = get_field(row_schema, self.field_payload)
        if payload_field is None:
            raise TransformError(f"Unable to find payload field {self.field_payload} in event")
        id_field = get_field(row_schema, self.field_id)
        if id_field is None:
            raise TransformError(f"Unable to find event-id field {self.field_id} in event")
        payload = row.get(self.field_payload)
        headers = [*(event.headers or []), ("id", ConnectSchema(field_schema(id_field)), row.get(self.field_id))]
        value_payload_schema: Schema = field_schema(payload_field)
        if self.expand_json and isinstance(payload, str):
            expanded = self._expand(payload)
            if expanded is not None:
                value_payload_schema, payload = expanded
        routed_by = row.get(self.route_by)
        value_schema: Schema | None
        value: Any
        if self._envelope:
            value_schema = self._value_schema(row_schema, value_payload_schema, routed_by,
                                              row.get(self.field_schema_version) if self.field_schema_version else None)
            value = {"payload": payload}
        else:
            value_schema, value = value_payload_schema, payload
        for extra in self.additional:
            extra_field = get_field(row_schema, extra.field)
            if extra_field is None:
                if self.error_on_missing:
                    raise TransformError(f"Unable to find field {extra.field} in event")
                continue
            if extra.placement == "envelope":
                value[extra.alias] = row.get(extra.field)
            elif extra.placement == "header":
                headers.append((extra.alias, ConnectSchema(field_schema(extra_field)), row.get(extra.field)))
        if (payload is None or str(payload).strip() == "") and self.tombstone_on_empty:
            value_schema, value = None, None
        key_schema, key = self._key(row, row_schema)
        topic = java_replace_first(self.route_regex, self.route_replacement, str(routed_by))
        return dataclasses.replace(event, topic=topic if topic is not None else str(routed_by),
                                   key_schema=wrap(key_schema), key=key, value_schema=wrap(value_schema),
                                   value=value, headers=headers)

    def _key(self, row: dict[str, Any], row_schema: Schema) -> tuple[Schema, Any]:
        field = get_field(row_schema, self.field_key) if self.field_key else None
        if field is not None:
            return field_schema(field), row.get(self.field_key) if self.field_key else None
        return STRING, None

    def _value_schema(self, row_schema: Schema, payload_schema: Schema, routed_by: Any, version: Any) -> Schema:
        """A struct named after the row's with the routed value spliced in before its last part
        (``dbz.public.outbox.<aggregatetype>.Value``). As in Debezium, it is built once per payload
        schema and version: later events of another routed value keep the first one's name."""
        cache_key = (orjson.dumps(payload_schema), version)
        found = self._value_schemas.get(cache_key)
        if found is not None:
            return found
        name = row_schema.get("name")
        if name:
            head, dot, tail = name.rpartition(".")
            name = f"{head}.{routed_by}.{tail}" if dot else f"{routed_by}.{name}"
        else:
            name = str(routed_by)
        fields = [with_name(payload_schema, "payload")]
        for extra in self.additional:
            if extra.placement == "envelope":
                source = get_field(row_schema, extra.field)
                if source is not None:
                    fields.append(with_name(source, extra.alias))
        schema: Schema = {"type": "struct", "fields": fields, "optional": False, "name": name}
        if version is not None:
            schema["version"] = version
        self._value_schemas[cache_key] = schema
        return schema

    def _unexpected(self, event: ChangeEvent) -> None:
        if self.invalid == "fatal":
            raise TransformError(f"Unexpected update message received {event.key}, fail.")
        (log.warning if self.invalid == "warn" else log.error)("Unexpected update message received %s and ignored",
                                                                 event.key)

    def _expand(self, text: str) -> tuple[Schema, Any] | None:
        """The payload's JSON text as a struct with a schema inferred from it (Debezium's JsonSchemaData);
        None, with a warning, when it is not a JSON object or array."""
        if not text.startswith(("{", "[")):
            log.warning("JSON expansion failed: the payload does not start with { or [")
            return None
        try:
            document = orjson.loads(text)
            schema = self._infer(self.field_payload, document)
        except (orjson.JSONDecodeError, TransformError) as exc:
            log.warning("JSON expansion failed: %s", exc)
            return None
        if schema is None:
            return None
        if isinstance(document, list):  # Debezium infers an array schema, then fails building its value
            raise TransformError("Invalid type for ARRAY: the expanded JSON payload is an array")
        return schema, _data(document, schema)

    def _infer(self, key: str, node: Any) -> Schema | None:
        if isinstance(node, bool):
            return {"type": "boolean", "optional": True}
        if isinstance(node, str):
            return {"type": "string", "optional": True}
        if isinstance(node, int):
            kind = "int32" if -2**31 <= node < 2**31 else "int64" if -2**63 <= node < 2**63 else "double"
            return {"type": kind, "optional": True}
        if isinstance(node, float):
            return {"type": "double", "optional": True}
        if isinstance(node, list):
            if not node:
                return None
            items = self._array_items(key, node)
            return {"type": "array", "items": items, "optional": True}
        if isinstance(node, dict):
            fields: list[Schema] = []
            for name, child in node.items():
                child_key = f"{key}.{name}" if key.strip() else name
                child_schema = self._infer(child_key, child)
                if child_schema is not None and all(f["field"] != name for f in fields):
                    fields.append(with_name(child_schema, name))
            schema: Schema = {"type": "struct", "fields": fields, "optional": True}
            if key:
                schema["name"] = key
            return schema
        if node is None and self.null_fields == "optional_bytes":
            return {"type": "bytes", "optional": True}
        return None

    def _array_items(self, key: str, array: list[Any]) -> Schema:
        present = [e for e in array if e is not None]
        if not present:
            raise TransformError(f"Array '{array}' has unrecognized member schema.")
        first = present[0]
        for element in present:
            if _json_type(element) != _json_type(first):
                raise TransformError("Field is not a homogenous array")
        if isinstance(first, dict):
            distinct: dict[bytes, Schema] = {}
            for element in present:
                schema = self._infer(key, element)
                if schema is not None:
                    distinct.setdefault(orjson.dumps(schema), schema)
            schemas = list(distinct.values())
            merged = schemas[0]
            for schema in schemas[1:]:  # a merged schema is built anew: required, as Connect's copySchemaBasics
                merged = _merge(merged, schema)
            return merged
        kinds = {orjson.dumps(self._infer("", e)) for e in present}
        if len(kinds) > 1 and isinstance(first, (int, float)):
            raise TransformError("Field is not a homogenous array, different number types")
        items = self._infer("", first)
        if items is None:
            raise TransformError(f"Array '{array}' has unrecognized member schema.")
        return items


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _merge(left: Schema, right: Schema) -> Schema:
    fields = {f["field"]: f for f in left["fields"]}
    for f in right["fields"]:
        old = fields.get(f["field"])
        if old is None or (old != f and old["type"] == "bytes" and f["type"] != "bytes"):
            fields[f["field"]] = f
    return {**left, "fields": list(fields.values()), "optional": False}


def _data(node: Any, schema: Schema) -> Any:
    """The document's values for the inferred schema: a struct holds every field of its schema (null
    where the object has none); values the schema has no field for are left out."""
    if node is None:
        return None
    kind = schema["type"]
    if kind == "struct":
        return {f["field"]: _data(node.get(f["field"]), f) for f in schema["fields"]}
    if kind == "array":
        return [_data(e, schema["items"]) for e in node]
    return node
