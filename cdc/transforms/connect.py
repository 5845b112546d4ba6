"""Kafka Connect's own SMTs (``org.apache.kafka.connect.transforms``), and the schema helpers
they and Debezium's SMTs share.

Schemas are the JSON dicts Kafka Connect's JsonConverter prints, so every schema built here is
put in the converter's key order (:func:`ordered`); payloads are what the converter prints too
(structs are dicts, bytes are base64 text). The ``$Key`` / ``$Value`` variants are one class
with ``KEY`` set, as in Kafka where they differ only in which half of the record they read.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import re
from decimal import Decimal
from typing import Any

from cdc.core.connect import ConnectSchema
from cdc.core.errors import ConfigError
from cdc.core.records import ChangeEvent
from cdc.transforms.chain import Options, java_replace_first

Schema = dict[str, Any]
Header = tuple[str, ConnectSchema | None, Any]

# JsonConverter.asJsonSchema writes the keys in this order ("field" comes last, in the parent).
_KEY_ORDER = ("type", "fields", "items", "keys", "values", "optional", "name", "version", "doc", "parameters",
              "default")
_BASICS = ("name", "version", "doc", "parameters")

OPTIONAL_STRING: Schema = {"type": "string", "optional": True}
STRING: Schema = {"type": "string", "optional": False}
TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"
DATE_NAME = "org.apache.kafka.connect.data.Date"
TIME_NAME = "org.apache.kafka.connect.data.Time"
DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"


class TransformError(ValueError):
    """A record a transform cannot handle (Kafka Connect's DataException)."""


def ordered(schema: Schema) -> Schema:
    """``schema`` with its keys in JsonConverter's order (what users diff against Debezium)."""
    out = {k: schema[k] for k in _KEY_ORDER if k in schema}
    out.update((k, v) for k, v in schema.items() if k not in out)
    return out


def with_name(schema: Schema, field_name: str) -> Schema:
    """A struct field: the field's schema with ``"field"`` last."""
    return {**{k: v for k, v in schema.items() if k != "field"}, "field": field_name}


def field_schema(field: Schema) -> Schema:
    return {k: v for k, v in field.items() if k != "field"}


def get_field(schema: Schema | None, name: str) -> Schema | None:
    """The field dict (with ``"field"``) named ``name`` in a struct schema, or None."""
    if not schema or schema.get("type") != "struct":
        return None
    for f in schema["fields"]:
        if f["field"] == name:
            return f
    return None


def struct_like(source: Schema, fields: list[Schema], optional: bool = False) -> Schema:
    """Kafka's ``SchemaUtil.copySchemaBasics(source, SchemaBuilder.struct())`` plus ``fields``:
    name, version, doc and parameters are kept; optionality and default are not (a new builder is
    required unless told otherwise)."""
    schema: Schema = {"type": "struct", "fields": fields, "optional": optional}
    schema.update((k, source[k]) for k in _BASICS if k in source)
    return ordered(schema)


def optional_basics(source: Schema) -> Schema:
    """``SchemaUtil.copySchemaBasics(source).optional().build()``: the type and its names, made
    optional; the default is dropped (Debezium's add.fields / add.headers use this)."""
    schema: Schema = {"type": source["type"], "optional": True}
    if source["type"] == "array":
        schema["items"] = source["items"]
    elif source["type"] == "struct":
        schema["fields"] = []  # copySchemaBasics copies no fields
    schema.update((k, source[k]) for k in _BASICS if k in source)
    return ordered(schema)


def get_value(struct: dict[str, Any], field: Schema, replace_null_with_default: bool = True) -> Any:
    """``Struct.get(field)`` (a null becomes the field's default) or ``getWithoutDefault``."""
    value = struct.get(field["field"])
    if value is None and replace_null_with_default:
        return field.get("default")
    return value


def wrap(schema: Schema | ConnectSchema | None) -> ConnectSchema | None:
    return schema if schema is None or isinstance(schema, ConnectSchema) else ConnectSchema(schema)


def definition(schema: ConnectSchema | None) -> Schema | None:
    return None if schema is None else schema.definition


class _SchemaCache:
    """Derived schemas by source schema (Kafka's SMTs keep an LRU of 16; a table has few versions).
    Keys are ConnectSchema objects: a source reuses one per table version, so lookups hit by identity."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._entries: dict[Any, ConnectSchema | None] = {}

    def get(self, key: Any, build: Any) -> Any:
        try:
            return self._entries[key]
        except KeyError:
            if len(self._entries) >= self._size:
                self._entries.clear()
            value = self._entries[key] = build()
            return value


class _Side:
    """Which half of the record a ``$Key`` / ``$Value`` transform works on."""

    KEY = False

    def connect_schema_of(self, event: ChangeEvent) -> ConnectSchema | None:
        return event.key_schema if self.KEY else event.value_schema

    def schema_of(self, event: ChangeEvent) -> Schema | None:
        return definition(self.connect_schema_of(event))

    def value_of(self, event: ChangeEvent) -> Any:
        return event.key if self.KEY else event.value

    def replaced(self, event: ChangeEvent, schema: Schema | ConnectSchema | None, value: Any,
                 headers: list[Header] | None = None) -> ChangeEvent:
        changes: dict[str, Any] = {"key_schema": wrap(schema), "key": value} if self.KEY else \
            {"value_schema": wrap(schema), "value": value}
        if headers is not None:
            changes["headers"] = headers
        return dataclasses.replace(event, **changes)

    def require_struct(self, value: Any, purpose: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise TransformError(f"Only Struct objects supported for [{purpose}], found: {type(value).__name__}")
        return value


# --- routing and filtering ------------------------------------------------------------------------

class RegexRouter:
    """org.apache.kafka.connect.transforms.RegexRouter: ``regex`` must match the whole topic;
    ``replacement`` (Java syntax, ``$1``) then gives the new one."""

    def __init__(self, options: Options) -> None:
        regex = options.regex("regex")
        assert regex is not None
        self.regex = regex
        self.replacement = options.required("replacement")

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        topic = java_replace_first(self.regex, self.replacement, event.topic)
        return event if topic is None else dataclasses.replace(event, topic=topic)


class Filter:
    """org.apache.kafka.connect.transforms.Filter: drops every record (use it with a predicate)."""

    def __init__(self, options: Options) -> None:
        pass

    def apply(self, event: ChangeEvent) -> None:
        return None


# --- field transforms -----------------------------------------------------------------------------

class ExtractField(_Side):
    """ExtractField$Key / $Value: the record half becomes one of its fields (``field``)."""

    def __init__(self, options: Options) -> None:
        self.field = options.required("field")
        self.replace_null_with_default = options.boolean("replace.null.with.default", True)
        # Kafka 3.8's nested paths (field.syntax.version=V2) are not supported; V1 is the default.
        options.choice("field.syntax.version", ("V1",), "V1")

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        return extract_field(self, event, self.field, self.replace_null_with_default)


def extract_field(side: _Side, event: ChangeEvent, name: str, replace_null_with_default: bool = True) -> ChangeEvent:
    schema = side.schema_of(event)
    value = side.value_of(event)
    if schema is None:
        if value is not None and not isinstance(value, dict):
            raise TransformError(f"Only Map objects supported in absence of schema for [field extraction], "
                                 f"found: {type(value).__name__}")
        return side.replaced(event, None, None if value is None else value.get(name))
    field = get_field(schema, name)
    if field is None:
        raise TransformError(f"Unknown field: {name}")
    if value is None:
        return side.replaced(event, field_schema(field), None)
    struct = side.require_struct(value, "field extraction")
    return side.replaced(event, field_schema(field), get_value(struct, field, replace_null_with_default))


class ExtractFieldKey(ExtractField):
    KEY = True


class ExtractFieldValue(ExtractField):
    KEY = False


def _insertion_spec(spec: str | None) -> tuple[str, bool] | None:
    """InsertField's ``name!`` (required) / ``name?`` / ``name`` (optional)."""
    if spec is None:
        return None
    if spec.endswith("?"):
        return spec[:-1], True
    if spec.endswith("!"):
        return spec[:-1], False
    return spec, True


class InsertField(_Side):
    """InsertField$Key / $Value: adds the topic, partition, timestamp or a static value.

    A ChangeEvent is a source record with neither partition nor timestamp yet (Debezium's are
    the same: Kafka assigns them on send), so ``partition.field`` / ``timestamp.field`` add the
    field to the schema with a null value, exactly as Kafka Connect does for such records;
    ``offset.field`` is refused because Kafka fails every source record with it.
    """

    def __init__(self, options: Options) -> None:
        self.topic_field = _insertion_spec(options.string("topic.field"))
        self.partition_field = _insertion_spec(options.string("partition.field"))
        offset_field = options.string("offset.field")
        self.timestamp_field = _insertion_spec(options.string("timestamp.field"))
        self.static_field = _insertion_spec(options.string("static.field"))
        self.static_value = options.string("static.value")
        self.replace_null_with_default = options.boolean("replace.null.with.default", True)
        if offset_field is not None:
            raise options.error("offset.field", "is only applicable to sink connectors (a source record has no "
                                "Kafka offset; Kafka Connect fails every record)", "remove it")
        if not any((self.topic_field, self.partition_field, self.timestamp_field, self.static_field)):
            raise options.error("topic.field", "no field insertion configured",
                                "set topic.field, partition.field, timestamp.field or static.field")
        if self.static_field is not None and self.static_value is None:
            raise options.error("static.value", f"no value specified for static field {self.static_field[0]}",
                                "set static.value")
        self._schemas = _SchemaCache()

    def _added(self, event: ChangeEvent) -> list[tuple[str, Schema, Any]]:
        added: list[tuple[str, Schema, Any]] = []
        if self.topic_field:
            name, opt = self.topic_field
            added.append((name, OPTIONAL_STRING if opt else STRING, event.topic))
        if self.partition_field:
            name, opt = self.partition_field
            added.append((name, {"type": "int32", "optional": opt}, None))
        if self.timestamp_field:
            name, opt = self.timestamp_field
            added.append((name, {"type": "int64", "optional": opt, "name": TIMESTAMP_NAME, "version": 1}, None))
        if self.static_field:
            name, opt = self.static_field
            added.append((name, OPTIONAL_STRING if opt else STRING, self.static_value))
        return added

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        value = self.value_of(event)
        if value is None:
            return event
        added = self._added(event)
        schema = self.schema_of(event)
        if schema is None:
            updated = dict(value)
            # Schemaless: Kafka puts only the values it has (no partition / timestamp here).
            updated.update((name, v) for name, _, v in added if v is not None)
            return self.replaced(event, None, updated)
        struct = self.require_struct(value, "field insertion")
        new_schema = self._schemas.get(self.connect_schema_of(event), lambda: ConnectSchema(struct_like(
            schema, [*schema["fields"], *(with_name(s, n) for n, s, _ in added)])))
        updated = {f["field"]: get_value(struct, f, self.replace_null_with_default) for f in schema["fields"]}
        updated.update((name, v) for name, _, v in added)
        return self.replaced(event, new_schema, updated)


class InsertFieldKey(InsertField):
    KEY = True


class InsertFieldValue(InsertField):
    KEY = False


def insert_static(event: ChangeEvent, name: str, value: str, replace_null_with_default: bool) -> ChangeEvent:
    """``InsertField$Value`` with ``static.field`` / ``static.value`` (Debezium's ``__deleted``)."""
    options = Options({"static.field": name, "static.value": value,
                       "replace.null.with.default": str(replace_null_with_default).lower()},
                      where="(internal)", class_name="InsertField$Value")
    return InsertFieldValue(options).apply(event)


def _rename_mappings(options: Options) -> dict[str, str]:
    renames = {}
    for mapping in options.list("renames"):
        parts = mapping.split(":")
        if len(parts) != 2:
            raise options.error("renames", f"invalid rename mapping: {mapping}", "use old:new pairs, e.g. foo:bar,a:b")
        renames[parts[0]] = parts[1]
    return renames


class ReplaceField(_Side):
    """ReplaceField$Key / $Value: ``exclude``, ``include`` and ``renames`` (``old:new``) of fields."""

    def __init__(self, options: Options) -> None:
        self.exclude = set(options.list("exclude"))
        self.include = set(options.list("include"))
        self.renames = _rename_mappings(options)
        self.replace_null_with_default = options.boolean("replace.null.with.default", True)
        self._schemas = _SchemaCache()

    def _keep(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        value = self.value_of(event)
        if value is None:
            return event
        schema = self.schema_of(event)
        if schema is None:
            return self.replaced(event, None, {self.renames.get(k, k): v for k, v in value.items() if self._keep(k)})
        struct = self.require_struct(value, "field replacement")
        kept = [f for f in schema["fields"] if self._keep(f["field"])]
        new_schema = self._schemas.get(self.connect_schema_of(event), lambda: ConnectSchema(struct_like(
            schema, [with_name(f, self.renames.get(f["field"], f["field"])) for f in kept])))
        updated = {self.renames.get(f["field"], f["field"]): get_value(struct, f, self.replace_null_with_default)
                   for f in kept}
        return self.replaced(event, new_schema, updated)


class ReplaceFieldKey(ReplaceField):
    KEY = True


class ReplaceFieldValue(ReplaceField):
    KEY = False


def exclude_fields(event: ChangeEvent, names: list[str], key: bool) -> ChangeEvent:
    """``ReplaceField`` with ``exclude`` (Debezium's drop.fields.header.name uses it)."""
    options = Options({"exclude": ",".join(names)}, where="(internal)", class_name="ReplaceField")
    return (ReplaceFieldKey if key else ReplaceFieldValue)(options).apply(event)


class ValueToKey:
    """ValueToKey: the key becomes a struct (unnamed) of the value's ``fields``."""

    def __init__(self, options: Options) -> None:
        self.fields = options.list("fields")
        if not self.fields:
            raise options.error("fields", "is empty", "list at least one field of the value")
        self.replace_null_with_default = options.boolean("replace.null.with.default", True)
        self._schemas = _SchemaCache()

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        value = event.value
        schema = definition(event.value_schema)
        if schema is None:
            if not isinstance(value, dict):
                raise TransformError("Only Map objects supported in absence of schema for [copying fields from value "
                                     f"to key], found: {type(value).__name__}")
            return dataclasses.replace(event, key_schema=None, key={f: value.get(f) for f in self.fields})
        if not isinstance(value, dict):
            raise TransformError("Only Struct objects supported for [copying fields from value to key], "
                                 f"found: {type(value).__name__}")
        chosen = []
        for name in self.fields:
            f = get_field(schema, name)
            if f is None:
                raise TransformError(f"Field does not exist: {name}")
            chosen.append(f)
        key_schema = self._schemas.get(event.value_schema, lambda: ConnectSchema(
            {"type": "struct", "fields": [dict(f) for f in chosen], "optional": False}))
        key = {f["field"]: get_value(value, f, self.replace_null_with_default) for f in chosen}
        return dataclasses.replace(event, key_schema=key_schema, key=key)


# --- masking --------------------------------------------------------------------------------------

_INTEGER_TYPES = ("int8", "int16", "int32", "int64")


def _masked(schema: Schema, value: Any, replacement: str | None) -> Any:
    """MaskField's value: the type's zero, or ``replacement`` converted to the field's type."""
    if value is None:
        return None
    type_ = schema["type"]
    name = schema.get("name")
    if name == DECIMAL_NAME:
        scale = int(schema.get("parameters", {}).get("scale", "0"))
        given = 0 if replacement is None else max(0, -Decimal(replacement).as_tuple().exponent)  # type: ignore[operator]
        if given != scale:
            # Kafka masks with BigDecimal.ZERO (or new BigDecimal(replacement)), which the schema refuses.
            raise TransformError(f"Decimal value has mismatching scale for given Decimal schema. Schema has scale "
                                 f"{scale}, value has scale {given}.")
        unscaled = 0 if replacement is None else int(Decimal(replacement).scaleb(scale))
        return base64.b64encode(unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)).decode()
    if replacement is None:
        zeros: dict[str, Any] = {"boolean": False, "string": "", "float": 0.0, "double": 0.0,
                                 "array": [], "map": {}}
        zeros.update((t, 0) for t in _INTEGER_TYPES)  # includes Date / Time / Timestamp: new Date(0)
        if type_ not in zeros:
            raise TransformError(f"Cannot mask value of type: {type_}")
        return zeros[type_]
    if name is not None and name != DECIMAL_NAME and type_ != "string":
        raise TransformError(f"Cannot mask value of type {name} with custom replacement.")
    try:
        if type_ == "string":
            return replacement
        if type_ in _INTEGER_TYPES:
            return int(replacement)
        if type_ in ("float", "double"):
            return float(replacement)
    except ValueError:
        raise TransformError(f"Unable to convert {replacement} (class java.lang.String) to number") from None
    raise TransformError(f"Cannot mask value of type {type_} with custom replacement.")


class MaskField(_Side):
    """MaskField$Key / $Value: ``fields`` replaced with their type's zero or ``replacement``."""

    def __init__(self, options: Options) -> None:
        self.fields = set(options.list("fields"))
        if not self.fields:
            raise options.error("fields", "is empty", "list the fields to mask")
        self.replacement = options.string("replacement")
        if self.replacement is not None and self.replacement == "":
            raise options.error("replacement", "is empty", "use a non-empty string or number, or leave it unset")
        self.replace_null_with_default = options.boolean("replace.null.with.default", True)

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        value = self.value_of(event)
        if value is None:
            return event
        schema = self.schema_of(event)
        if schema is None:
            updated = dict(value)
            for name in self.fields:
                updated[name] = _masked(_schemaless_type(value.get(name)), value.get(name), self.replacement)
            return self.replaced(event, None, updated)
        struct = self.require_struct(value, "mask fields")
        updated = {}
        for f in schema["fields"]:
            v = get_value(struct, f, self.replace_null_with_default)
            updated[f["field"]] = _masked(f, v, self.replacement) if f["field"] in self.fields else v
        return self.replaced(event, self.connect_schema_of(event), updated)


def _schemaless_type(value: Any) -> Schema:
    for python_type, connect_type in ((bool, "boolean"), (int, "int64"), (float, "float64"), (str, "string"),
                                      (list, "array"), (dict, "map")):
        if isinstance(value, python_type):
            return {"type": connect_type}
    return {"type": type(value).__name__}


class MaskFieldKey(MaskField):
    KEY = True


class MaskFieldValue(MaskField):
    KEY = False


# --- headers --------------------------------------------------------------------------------------

class HeaderFrom(_Side):
    """HeaderFrom$Key / $Value: ``fields`` copied (``operation=copy``) or moved into ``headers``."""

    def __init__(self, options: Options) -> None:
        self.fields = options.list("fields")
        self.headers = options.list("headers")
        options.required("operation")
        self.move = options.choice("operation", ("move", "copy"), "copy") == "move"
        self.replace_null_with_default = options.boolean("replace.null.with.default", True)
        if not self.fields:
            raise options.error("fields", "is empty", "list the fields to copy or move")
        if len(self.fields) != len(self.headers):
            raise options.error("headers", "'headers' config must have the same number of elements as 'fields' config.",
                                "give one header name per field, in the same order")
        self._schemas = _SchemaCache()

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        value = self.value_of(event)
        if value is None:
            return event
        headers = list(event.headers or [])
        schema = self.schema_of(event)
        if schema is None:
            updated = dict(value)
            for name, header in zip(self.fields, self.headers, strict=True):
                if self.move:
                    updated.pop(name, None)
                headers.append((header, None, value.get(name)))
            return self.replaced(event, None, updated, headers)
        struct = self.require_struct(value, "header from")
        for name, header in zip(self.fields, self.headers, strict=True):
            f = get_field(schema, name)
            if f is None:
                raise TransformError(f"{name} is not a valid field name")
            header_value = get_value(struct, f, self.replace_null_with_default)
            headers.append((header, ConnectSchema(field_schema(f)), header_value))
        if not self.move:
            return self.replaced(event, self.connect_schema_of(event), value, headers)
        kept = [f for f in schema["fields"] if f["field"] not in self.fields]
        new_schema = self._schemas.get(self.connect_schema_of(event), lambda: ConnectSchema(struct_like(schema, kept)))
        updated = {f["field"]: get_value(struct, f, self.replace_null_with_default) for f in kept}
        return self.replaced(event, new_schema, updated, headers)


class HeaderFromKey(HeaderFrom):
    KEY = True


class HeaderFromValue(HeaderFrom):
    KEY = False


# --- timestamps -----------------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_PRECISION_NS = {"seconds": 1_000_000_000, "milliseconds": 1_000_000, "microseconds": 1_000, "nanoseconds": 1}
_TARGETS = ("string", "unix", "Date", "Time", "Timestamp")


def _java_div(a: int, b: int) -> int:
    """Java's integer division (towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _java_format(pattern: str) -> list[tuple[str, str]]:
    """A SimpleDateFormat pattern as (kind, text) tokens: letters runs and quoted literals."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end == i + 1:
                tokens.append(("lit", "'"))
                i += 2
                continue
            end = len(pattern) if end < 0 else end
            tokens.append(("lit", pattern[i + 1:end]))
            i = end + 1
        elif c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            tokens.append(("field", pattern[i:j]))
            i = j
        else:
            tokens.append(("lit", c))
            i += 1
    return tokens


def _format_field(token: str, t: dt.datetime) -> str:
    letter, n = token[0], len(token)
    numbers = {"y": t.year, "M": t.month, "d": t.day, "H": t.hour, "m": t.minute, "s": t.second,
               "S": t.microsecond // 1000, "D": t.timetuple().tm_yday, "h": (t.hour % 12) or 12, "k": t.hour or 24,
               "K": t.hour % 12, "u": t.isoweekday()}
    if letter == "y" and n == 2:
        return f"{t.year % 100:02d}"
    if letter == "M" and n >= 3:
        return t.strftime("%B" if n >= 4 else "%b")
    if letter == "E":
        return t.strftime("%A" if n >= 4 else "%a")
    if letter == "a":
        return "AM" if t.hour < 12 else "PM"
    if letter in ("X", "Z", "z"):
        if letter == "X":
            return "Z"  # UTC, as the converter works in UTC
        return "+0000" if letter == "Z" else "UTC"
    if letter in numbers:
        return str(numbers[letter]).zfill(n)
    raise TransformError(f"unsupported date format letter {letter!r}")


_PARSE_RE = {"y": r"(?P<y>\d{1,9})", "M": r"(?P<M>\d{1,2})", "d": r"(?P<d>\d{1,2})", "H": r"(?P<H>\d{1,2})",
             "m": r"(?P<m>\d{1,2})", "s": r"(?P<s>\d{1,2})", "S": r"(?P<S>\d{1,9})",
             "X": r"(?P<X>Z|[+-]\d{2}(?::?\d{2})?)", "Z": r"(?P<Z>[+-]\d{4})"}


def _parse(tokens: list[tuple[str, str]], text: str) -> dt.datetime:
    parts = []
    for kind, tok in tokens:
        if kind == "lit":
            parts.append(re.escape(tok))
        elif tok[0] in _PARSE_RE:
            parts.append(_PARSE_RE[tok[0]])
        else:
            raise TransformError(f"unsupported date format letter {tok[0]!r} for parsing")
    m = re.match("".join(parts), text)
    if m is None:
        raise TransformError(f"Could not parse timestamp: value ({text}) does not match pattern")
    g = m.groupdict()
    t = dt.datetime(int(g.get("y") or 1970), int(g.get("M") or 1), int(g.get("d") or 1), int(g.get("H") or 0),
                    int(g.get("m") or 0), int(g.get("s") or 0), int(g.get("S") or 0) * 1000, tzinfo=dt.UTC)
    zone = g.get("X") or g.get("Z")
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        t = t - sign * offset
    return t


class TimestampConverter(_Side):
    """TimestampConverter$Key / $Value: a timestamp ``field`` (or the whole key / value) converted
    between ``string`` (SimpleDateFormat ``format``, UTC), ``unix`` (``unix.precision``) and
    Connect's ``Date`` / ``Time`` / ``Timestamp``."""

    def __init__(self, options: Options) -> None:
        self.field = options.string("field", "") or ""
        self.target = options.choice("target.type", _TARGETS, options.required("target.type"))
        fmt = options.string("format", "") or ""
        self.precision = options.choice("unix.precision", tuple(_PRECISION_NS), "milliseconds")
        self.replace_null_with_default = options.boolean("replace.null.with.default", True)
        self.tokens = _java_format(fmt) if fmt else None
        if self.target == "string" and not fmt:
            raise options.error("format", "TimestampConverter requires format option to be specified when using "
                                "string timestamps", "set format, e.g. yyyy-MM-dd'T'HH:mm:ss.SSSX")
        if self.tokens:
            for kind, tok in self.tokens:
                if kind == "field":
                    _format_field(tok, _EPOCH)  # refuses an unsupported letter now, not at the first record

    def _check_type(self, schema: Schema) -> None:
        """Kafka infers the input type from the schema, and fails for one it does not know."""
        known = schema.get("name") in (TIMESTAMP_NAME, DATE_NAME, TIME_NAME) or schema["type"] in ("string", "int64")
        if not known:
            label = f"{schema.get('name')}:{schema['type'].upper()}" if schema.get("name") else schema["type"].upper()
            raise TransformError(f"Schema Schema{{{label}}} does not correspond to a known timestamp type format")

    def _to_millis(self, schema: Schema | None, value: Any) -> int:
        """The instant as Kafka holds it: a java.util.Date, milliseconds since the epoch."""
        name = schema.get("name") if schema else None
        type_ = schema["type"] if schema else ("string" if isinstance(value, str) else "int64")
        if name in (TIMESTAMP_NAME, TIME_NAME):
            return int(value)
        if name == DATE_NAME:
            return int(value) * 86_400_000
        if type_ == "string":
            if self.tokens is None:
                raise TransformError("TimestampConverter requires format option to be specified when using string "
                                     "timestamps")
            delta = _parse(self.tokens, value) - _EPOCH
            return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000
        if type_ == "int64":
            if self.precision == "seconds":
                return int(value) * 1000
            return _java_div(int(value), 1_000_000 // _PRECISION_NS[self.precision])
        raise TransformError(f"Schema {schema} does not correspond to a known timestamp type format")

    def _from_millis(self, ms: int) -> Any:
        if self.target == "string":
            assert self.tokens is not None
            t = _EPOCH + dt.timedelta(milliseconds=ms)
            return "".join(tok if kind == "lit" else _format_field(tok, t) for kind, tok in self.tokens)
        if self.target == "unix":
            if self.precision == "seconds":
                return _java_div(ms, 1000)
            return ms * (1_000_000 // _PRECISION_NS[self.precision])
        if self.target == "Date":
            return ms // 86_400_000  # midnight UTC of that day
        if self.target == "Time":
            return ms % 86_400_000
        return ms

    def _target_schema(self, optional: bool) -> Schema:
        base: dict[str, Schema] = {
            "string": {"type": "string"}, "unix": {"type": "int64"},
            "Date": {"type": "int32", "name": DATE_NAME, "version": 1},
            "Time": {"type": "int32", "name": TIME_NAME, "version": 1},
            "Timestamp": {"type": "int64", "name": TIMESTAMP_NAME, "version": 1},
        }
        return ordered({**base[self.target], "optional": optional})

    def _convert(self, schema: Schema | None, value: Any) -> Any:
        return None if value is None else self._from_millis(self._to_millis(schema, value))

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        value = self.value_of(event)
        schema = self.schema_of(event)
        if not self.field:
            if schema is not None:
                self._check_type(schema)
            new_schema = None if schema is None else self._target_schema(bool(schema.get("optional")))
            return self.replaced(event, new_schema, self._convert(schema, value))
        if value is None:
            return event
        struct = self.require_struct(value, "converting timestamp formats")
        if schema is None:
            return self.replaced(event, None, {**struct, self.field: self._convert(None, struct.get(self.field))})
        fields = []
        updated = {}
        for f in schema["fields"]:
            v = get_value(struct, f, self.replace_null_with_default)
            if f["field"] == self.field:
                self._check_type(f)
                fields.append(with_name(self._target_schema(bool(f.get("optional"))), f["field"]))
                updated[f["field"]] = self._convert(f, v)
            else:
                fields.append(f)
                updated[f["field"]] = v
        return self.replaced(event, struct_like(schema, fields, bool(schema.get("optional"))), updated)


class TimestampConverterKey(TimestampConverter):
    KEY = True


class TimestampConverterValue(TimestampConverter):
    KEY = False


__all__ = [
    "ConfigError", "ExtractFieldKey", "ExtractFieldValue", "Filter", "HeaderFromKey", "HeaderFromValue",
    "InsertFieldKey", "InsertFieldValue", "MaskFieldKey", "MaskFieldValue", "RegexRouter", "ReplaceFieldKey",
    "ReplaceFieldValue", "TimestampConverterKey", "TimestampConverterValue", "ValueToKey",
]
