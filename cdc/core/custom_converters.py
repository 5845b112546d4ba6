"""Custom converters (``converters``): plugins that choose the schema and values of the columns they claim,
Debezium's ``CustomConverter`` in Python.

    converters=boolean
    boolean.type=io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter
    boolean.selector=inventory\\.orders\\..*

``<name>.type`` names the converter: an entry point of the group ``cdc.custom_converters`` (cdc registers
Debezium's own under their Java class names, as it does transforms), or ``package.module:Class``. The
converter is made with no arguments, ``configure(properties)`` gets the ``<name>.*`` properties without the
prefix, and ``converter_for(column, registration)`` is asked about every column of every captured table: to
claim it, it calls ``registration.register(schema, convert)`` with the field's Connect schema (``type``,
``name``...; cdc sets ``optional`` and the default from the column) and a function of one value. The first
converter that claims a column takes it. ``convert`` gets each non-null value as the source reads it before
its own conversion (PostgreSQL: the text form; MySQL/MariaDB: the Python value of the binlog or of the
snapshot's result, an int, Decimal, str, bytes, date...; SQL Server: pyodbc's), and the column's default as
the source's Connect default of the column; a NULL stays null. See docs/plugins.md.
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from cdc.core.errors import ConfigError

GROUP = "cdc.custom_converters"


@dataclass(frozen=True)
class RelationalColumn:
    """A column as a custom converter sees it (Debezium's RelationalColumn)."""

    name: str
    data_collection: str  # the table: schema.table (PostgreSQL), database.table (MySQL)
    type_name: str
    jdbc_type: int
    length: int | None
    scale: int | None
    optional: bool
    has_default: bool = False
    default: Any = None  # the source's Connect default of the column


class ConverterRegistration:
    """What ``converter_for`` calls to claim a column."""

    def __init__(self) -> None:
        self.schema: dict[str, Any] | None = None
        self.convert: Callable[[Any], Any] | None = None

    def register(self, schema: Mapping[str, Any], convert: Callable[[Any], Any]) -> None:
        if self.schema is None:  # the first registration holds, as in Debezium
            self.schema, self.convert = dict(schema), convert


@runtime_checkable
class CustomConverter(Protocol):
    def configure(self, properties: Mapping[str, str]) -> None: ...

    def converter_for(self, column: RelationalColumn, registration: ConverterRegistration) -> None: ...


@dataclass(frozen=True)
class Claimed:
    """A column a custom converter took: its field schema (optional and default set) and value function."""

    schema: dict[str, Any]
    convert: Callable[[Any], Any]


def names(properties: Mapping[str, Any]) -> list[str]:
    return [n.strip() for n in str(properties.get("converters") or "").split(",") if n.strip()]


def prefixes(properties: Mapping[str, Any]) -> tuple[str, ...]:
    """Each named converter's own properties (``<name>.``), which cdc hands to it."""
    return tuple(f"{name}." for name in names(properties))


def load(properties: Mapping[str, Any]) -> list[CustomConverter]:
    """The converters a configuration names, configured, in its order."""
    out = []
    for name in names(properties):
        kind = str(properties.get(f"{name}.type") or "").strip()
        if not kind:
            raise ConfigError(f"converters names {name!r} but {name}.type is not set",
                              fix=f"set {name}.type to the converter's entry point name or package.module:Class")
        converter = _instance(name, kind)
        own = {k[len(name) + 1:]: str(v) for k, v in properties.items() if k.startswith(f"{name}.")}
        converter.configure(own)
        out.append(converter)
    return out


def _instance(name: str, kind: str) -> CustomConverter:
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    try:
        if kind in found:
            cls = found[kind].load()
        elif ":" in kind:
            module, _, attr = kind.partition(":")
            cls = getattr(importlib.import_module(module), attr)
        else:
            known = ", ".join(sorted(found)) or "none installed"
            raise ConfigError(f"{name}.type={kind!r} is no custom converter cdc knows (a Java class cannot be "
                              f"loaded; installed: {known})",
                              fix="name an installed converter, or a Python class as package.module:Class "
                                  "(docs/plugins.md)")
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{name}.type={kind!r} cannot be loaded: {exc}",
                          fix="install the package that has it, or correct package.module:Class") from None
    converter = cls()
    if not isinstance(converter, CustomConverter):
        raise ConfigError(f"{name}.type={kind!r} is no custom converter: it has no configure(properties) and "
                          "converter_for(column, registration)", fix="see docs/plugins.md")
    return converter


def claim(converters: Sequence[CustomConverter], column: RelationalColumn) -> Claimed | None:
    """The first converter's claim on ``column``, its schema completed as Debezium completes it: optional
    as the column is, the column's default converted."""
    for converter in converters:
        registration = ConverterRegistration()
        converter.converter_for(column, registration)
        if registration.schema is not None and registration.convert is not None:
            schema = {k: v for k, v in registration.schema.items() if k not in ("default", "field")}
            schema["optional"] = column.optional
            if column.has_default and column.default is not None:
                default = registration.convert(column.default)
                if default is not None:
                    schema["default"] = default
            return Claimed(_ordered(schema), registration.convert)
    return None


# Kafka Connect's JsonConverter writes a schema's keys in this order.
_ORDER = ("type", "items", "keys", "values", "fields", "optional", "name", "version", "doc", "parameters", "default")


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    rank = {k: i for i, k in enumerate(_ORDER)}
    return dict(sorted(schema.items(), key=lambda kv: rank.get(kv[0], len(_ORDER))))


# ---- Debezium's own converters ---------------------------------------------------------------------------

class TinyIntOneToBooleanConverter:
    """Debezium's io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter: MySQL/MariaDB
    ``TINYINT(1)`` (and unsigned) as booleans; ``selector``: regular expressions of ``database.table.column``
    the rule is limited to; ``length.checker=false``: every TINYINT, whatever its display width."""

    def __init__(self) -> None:
        self.selector: list[re.Pattern[str]] = []
        self.length_checker = True

    def configure(self, properties: Mapping[str, str]) -> None:
        selector = properties.get("selector", "").strip()
        if selector:
            self.selector = [re.compile(p.strip(), re.IGNORECASE) for p in selector.split(",") if p.strip()]
        if properties.get("length.checker", "").strip():
            self.length_checker = properties["length.checker"].strip().lower() == "true"

    def converter_for(self, column: RelationalColumn, registration: ConverterRegistration) -> None:
        if column.type_name.upper() not in ("TINYINT", "TINYINT UNSIGNED"):
            return
        if self.length_checker and column.length != 1:
            return
        if self.selector and not any(p.fullmatch(f"{column.data_collection}.{column.name}") for p in self.selector):
            return
        registration.register({"type": "boolean"}, _tinyint_boolean)


def _tinyint_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return int(value) > 0
    try:
        return int(str(value)) > 0
    except ValueError:
        return str(value).strip().lower() == "true"
