"""Kafka Connect schemas to Avro schemas, as Confluent's ``AvroData.fromConnectSchema`` converts them.

Followed line by line from ``io.confluent.connect.avro.AvroData`` (schema-registry, avro-data module)
with its defaults (``connect.meta.data=true``, ``enhanced.avro.schema.support=false``,
``scrub.invalid.names=false``): int8/int16 are ``int`` with ``connect.type``; every type carries
``connect.doc``, ``connect.version``, ``connect.parameters``, ``connect.default`` and ``connect.name``;
optional types are unions, ``["null", T]`` with a null default, or ``[T, "null"]`` when the schema has a
default; Decimal is ``bytes`` with ``logicalType: decimal`` (precision from
``connect.decimal.precision``, else 64); Connect's Date/Time/Timestamp get ``date``/``time-millis``/
``timestamp-millis``, Debezium's own time types (io.debezium.time.*) stay their primitive with only
``connect.name``. Maps with string keys are Avro maps, others arrays of ``MapEntry`` records.

The JSON is written as Avro Java's ``Schema.toString()`` writes it (key order, a named type written
once then referred to by name, relative to the enclosing namespace), so the registered text is the
text Confluent's converter registers. Connect ``fixed`` (``connect.fixed.size``) and union/enum
parameters of the enhanced mode are not produced by Debezium and are not handled.
"""
from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import orjson

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_NAME = "ConnectDefault"
DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
DEFAULT_PRECISION = 64

_PRIMITIVES = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float": "float",
               "float32": "float", "double": "double", "float64": "double", "boolean": "boolean",
               "string": "string", "bytes": "bytes"}


class AvroSchemaError(ValueError):
    """A Connect schema that Avro cannot express (as Confluent's converter would refuse it)."""


@dataclass(eq=False)
class _Record:
    """A named Avro record, shared by identity like Avro Java's Schema objects (written once, then by name)."""

    name: str
    namespace: str | None
    doc: str | None = None
    fields: list[dict[str, Any]] = field(default_factory=list)
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.namespace}.{self.name}" if self.namespace else self.name


@dataclass(eq=False)
class _Node:
    """A primitive, array, map or union (Avro's unnamed types)."""

    type: str
    props: dict[str, Any] = field(default_factory=dict)
    items: Any = None  # array items, map values, union branches (a list)


def scrub_name(name: str) -> str:
    """AvroData.doScrubName: URL-encode, then every character outside [A-Za-z0-9_] becomes ``_``."""
    if not name or (all(c.isascii() and (c.isalnum() or c == "_") for c in name) and not name[0].isdigit()):
        return name
    # java.net.URLEncoder keeps only letters, digits and "*-._" (Python's quote also keeps "~")
    encoded = urllib.parse.quote_plus(name, safe="*-._").replace("~", "%7E")
    if encoded[:1].isdigit():
        encoded = "x" + encoded
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in encoded)


def valid_name(name: str) -> bool:
    """Avro Java's name check (Character.isLetter / isLetterOrDigit, so not only ASCII)."""
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name)


class AvroSchemaBuilder:
    """One conversion (``fromConnectSchema``): default names are numbered, named types reused within it."""

    def __init__(self, scrub_invalid_names: bool = False, connect_meta_data: bool = True) -> None:
        self.scrub = scrub_invalid_names
        self.meta = connect_meta_data
        self._by_structure: dict[bytes, Any] = {}  # AvroData's schemaMap: non-optional Connect schema -> Avro
        self._by_name: dict[str, _Record] = {}  # its cycleReferences: struct name -> record
        self._seen_names: set[str] = set()
        self._default_names = 0

    # --- names ---------------------------------------------------------------------------------

    def _split(self, full: str | None) -> tuple[str | None, str]:
        if full is None:
            self._default_names += 1
            return NAMESPACE, DEFAULT_NAME + (str(self._default_names) if self._default_names > 1 else "")
        parts = [self._name(p) for p in full.split(".")]
        if len(parts) == 1:
            return None, parts[0]
        return ".".join(parts[:-1]), parts[-1]

    def _name(self, name: str) -> str:
        if self.scrub:
            return scrub_name(name)
        if not valid_name(name):
            raise AvroSchemaError(
                f"{name!r} is not a valid Avro name (letters, digits and _, not starting with a digit)")
        return name

    # --- conversion ----------------------------------------------------------------------------

    def convert(self, schema: dict[str, Any], ignore_optional: bool = False) -> Any:
        optional = bool(schema.get("optional"))
        key = None
        if not optional:
            key = _structure_key(schema)
            cached = self._by_structure.get(key)
            if cached is not None:
                return cached
        kind = schema["type"]
        connect_type = kind if kind in ("int8", "int16") else None
        name = schema.get("name")
        params: dict[str, str] | None = schema.get("parameters")
        base: Any
        if kind in _PRIMITIVES:
            base = _Node(_PRIMITIVES[kind])
            if kind == "bytes" and name == DECIMAL:
                base.props["scale"] = int((params or {})["scale"])
                base.props["precision"] = int((params or {}).get("connect.decimal.precision", DEFAULT_PRECISION))
        elif kind == "array":
            base = _Node("array", items=self._with_cycle(schema["items"], False))
        elif kind == "map":
            key_schema, value_schema = schema["keys"], schema["values"]
            if key_schema["type"] == "string" and not key_schema.get("optional"):
                base = _Node("map", items=self._with_cycle(value_schema, False))
            else:
                if name is None:
                    entry = _Record("MapEntry", NAMESPACE)
                else:
                    namespace, short = self._split(name)
                    entry = _Record(short, namespace, props={"connect.internal.type": "MapEntry"})
                entry.fields = [self._field("key", key_schema, None), self._field("value", value_schema, None)]
                base = _Node("array", items=entry)
        elif kind == "struct":
            if optional:
                union = _Node("union", items=[_Node("null"), self._with_cycle(_non_optional(schema), False)])
                return union  # metadata lives on the record, as Avro unions carry no properties
            namespace, short = self._split(name)
            record = _Record(short, namespace, doc=(params or {}).get(f"{NAMESPACE}.record.doc"))
            if name is not None:
                self._by_name[name] = record
            base = record
            for f in schema.get("fields", []):
                doc = (params or {}).get(f"{NAMESPACE}.field.doc.{f['field']}")
                record.fields.append(self._field(self._name(f["field"]), f, doc))
        else:
            raise AvroSchemaError(f"unknown Connect schema type {kind!r}")

        props = base.props
        if self.meta:
            if schema.get("doc") is not None:
                props["connect.doc"] = schema["doc"]
            if schema.get("version") is not None:
                props["connect.version"] = schema["version"]
            if params:
                props["connect.parameters"] = {k: v for k, v in params.items() if k != f"{NAMESPACE}.field.default"}
            if schema.get("default") is not None and f"{NAMESPACE}.field.default" not in (params or {}):
                props["connect.default"] = default_value(schema, schema["default"], as_property=True)
            if name is not None:
                props["connect.name"] = name
            if connect_type is not None:
                props["connect.type"] = connect_type
        if name == DECIMAL or name == TIME or name == TIMESTAMP or name == DATE:
            props["logicalType"] = {DECIMAL: "decimal", TIME: "time-millis", TIMESTAMP: "timestamp-millis",
                                    DATE: "date"}[name]
        for k, v in (params or {}).items():
            if k.startswith("avro"):
                props[k] = v
        final = base if ignore_optional else _maybe_optional(schema, base)
        if key is not None:
            self._by_structure[key] = final
        return final

    def _with_cycle(self, schema: dict[str, Any], ignore_optional: bool) -> Any:
        name = schema.get("name")
        record = self._by_name.get(name) if name is not None else None
        if record is not None:
            return record if ignore_optional else _maybe_optional(schema, record)
        return self.convert(schema, ignore_optional)

    def _field(self, name: str, schema: dict[str, Any], doc: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name}
        connect_name = schema.get("name")
        scrubbed = connect_name if connect_name is None or not self.scrub else \
            ".".join(scrub_name(p) for p in connect_name.split("."))
        seen = scrubbed is not None and scrubbed in self._seen_names
        if scrubbed is not None:
            self._seen_names.add(scrubbed)
        converted = self.convert(schema)
        out["type"] = converted
        if doc is not None or schema.get("doc") is not None:  # the record's field doc, else the schema's
            out["doc"] = doc if doc is not None else schema["doc"]
        if schema.get("default") is not None:
            out["default"] = default_value(schema, schema["default"])
        elif schema.get("optional"):
            out["default"] = None
        if self.meta and seen and schema.get("parameters") and _is_named(converted):
            out["connect.parameters"] = dict(schema["parameters"])
        return out


def _maybe_optional(schema: dict[str, Any], base: Any) -> Any:
    if not schema.get("optional"):
        return base
    if schema.get("default") is not None:
        return _Node("union", items=[base, _Node("null")])
    return _Node("union", items=[_Node("null"), base])


def _non_optional(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "optional": False}


def _is_named(node: Any) -> bool:
    if isinstance(node, _Record):
        return True
    return isinstance(node, _Node) and node.type == "union" and any(isinstance(b, _Record) for b in node.items)


def _structure_key(schema: dict[str, Any]) -> bytes:
    # Connect's Schema.equals: the schema's own name is part of it, the field name it sits under is not.
    return orjson.dumps({k: v for k, v in schema.items() if k != "field"}, option=orjson.OPT_SORT_KEYS)


def default_value(schema: dict[str, Any], value: Any, *, as_property: bool = False) -> Any:
    """AvroData.defaultValueFromConnect, from the JSON converter's form of the default: bytes as
    ISO-8859-1 text in a field's default (Avro's JSON encoding), as base64 in the ``connect.default``
    property (Jackson's text of a binary node)."""
    if value is None:
        return None
    kind = schema["type"]
    if kind == "bytes":
        raw = base64.b64decode(value) if isinstance(value, str) else bytes(value)
        return base64.b64encode(raw).decode() if as_property else raw.decode("latin-1")
    if kind in ("float", "float32", "double", "float64"):
        return float(value)
    if kind == "array":
        return [default_value(schema["items"], v, as_property=as_property) for v in value]
    if kind == "map":
        keys, values = schema["keys"], schema["values"]
        if keys["type"] == "string" and not keys.get("optional"):
            return {k: default_value(values, v, as_property=as_property) for k, v in value.items()}
        pairs = value.items() if isinstance(value, dict) else value
        return [[default_value(keys, k, as_property=as_property), default_value(values, v, as_property=as_property)]
                for k, v in pairs]
    if kind == "struct":
        return {f["field"]: default_value(f, value.get(f["field"]), as_property=as_property)
                for f in schema["fields"]}
    return value


def to_json(node: Any, namespace: str | None = None, written: set[str] | None = None) -> Any:
    """The schema as Avro Java's ``Schema.toString()`` writes it (as JSON-ready Python values)."""
    written = set() if written is None else written
    if isinstance(node, _Record):
        full = node.full_name
        if full in written:  # a name reference, relative to the enclosing namespace
            return node.name if node.namespace == namespace or node.namespace is None else full
        written.add(full)
        out: dict[str, Any] = {"type": "record", "name": node.name}
        if node.namespace is not None:
            if node.namespace != namespace:
                out["namespace"] = node.namespace
        elif namespace is not None:
            out["namespace"] = ""
        if node.doc is not None:
            out["doc"] = node.doc
        out["fields"] = [_field_json(f, node.namespace, written) for f in node.fields]
        out.update(node.props)
        return out
    if node.type == "union":
        return [to_json(branch, namespace, written) for branch in node.items]
    if node.type == "array":
        return {"type": "array", "items": to_json(node.items, namespace, written), **node.props}
    if node.type == "map":
        return {"type": "map", "values": to_json(node.items, namespace, written), **node.props}
    return {"type": node.type, **node.props} if node.props else node.type


def _field_json(f: dict[str, Any], namespace: str | None, written: set[str]) -> dict[str, Any]:
    out = {"name": f["name"], "type": to_json(f["type"], namespace, written)}
    for key in ("doc", "default"):
        if key in f:
            out[key] = f[key]
    if "connect.parameters" in f:
        out["connect.parameters"] = f["connect.parameters"]
    return out


def from_connect_schema(schema: dict[str, Any], *, scrub_invalid_names: bool = False,
                        connect_meta_data: bool = True) -> Any:
    """The Avro schema (JSON-ready Python values) that Confluent's AvroData gives for a Connect schema."""
    return to_json(AvroSchemaBuilder(scrub_invalid_names, connect_meta_data).convert(schema))


def full_name(avro: Any) -> str:
    """The name RecordNameStrategy uses: a record's full name, else the Avro type's name."""
    if isinstance(avro, dict):
        if avro.get("type") == "record":
            ns = avro.get("namespace")
            return f"{ns}.{avro['name']}" if ns else avro["name"]
        return str(avro.get("type"))
    if isinstance(avro, list):
        return "union"
    return str(avro)
