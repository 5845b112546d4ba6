"""The column stage: what Debezium's column options do to the fields of every table, on every source.

``column.include.list`` / ``column.exclude.list`` say which columns an event holds; the column mappers
change a field's schema and its values: ``column.truncate.to.N.chars``, ``column.mask.with.N.chars``,
``column.propagate.source.type``, ``datatype.propagate.source.type``, ``column.mask.hash.ALG.with.salt.S``
and its ``v2``; ``field.name.adjustment.mode`` and ``schema.name.adjustment.mode`` rename what Avro
would reject. A source describes each column as Debezium's ``Column`` does (:class:`SourceColumn`) and
hands the table's columns to :meth:`ColumnStage.table`; the result (:class:`TableStage`) is applied by
the envelope (cdc.core.envelope), so the rules hold in snapshots, streams, incremental and blocking
snapshots alike.

Debezium's semantics, as its 3.6.1 jars behave (tests/conformance/workloads/*_column_*.sql):
- mappers change the value schema and values only, never the key;
- one mapper per column: the first rule that matches, in the order truncate, mask, propagate by
  column, propagate by type, hash, hash v2 (a column both masked and propagated is only masked);
- masking and hashing apply to character columns only (the schema is still marked ``masked``);
  a mask replaces every value, NULL included; a hash is cut to the column's length;
- truncation applies to text and binary values, and only where the column may be longer than N.
"""
from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc.core.conversion_failures import ConversionFailures
from cdc.core.custom_converters import Claimed, RelationalColumn, claim
from cdc.core.custom_converters import load as load_converters
from cdc.core.errors import ConfigError
from cdc.core.filters import REGEX_FIX, NameFilter, compile_pattern

# java.sql.Types of character columns: those Debezium masks and hashes (MaskStrings).
CHAR, VARCHAR, LONGVARCHAR, CLOB = 1, 12, -1, 2005
NCHAR, NVARCHAR, LONGNVARCHAR, NCLOB, DATALINK = -15, -9, -16, 2011, 70
CHARACTER_TYPES = frozenset((CHAR, VARCHAR, LONGVARCHAR, CLOB, NCHAR, NVARCHAR, LONGNVARCHAR, NCLOB, DATALINK))

MASKED = "masked"
TRUNCATE_LENGTH = "truncateLength"
SOURCE_TYPE = "__debezium.source.column.type"
SOURCE_LENGTH = "__debezium.source.column.length"
SOURCE_SCALE = "__debezium.source.column.scale"
SOURCE_COMMENT = "__debezium.source.column.comment"
SOURCE_NAME = "__debezium.source.column.name"

ValueMapper = Callable[[Any], Any]


@dataclass(frozen=True)
class SourceColumn:
    """A column as Debezium's ``Column`` describes it: what the column options look at."""

    name: str
    type_name: str  # Debezium's typeName: PostgreSQL's typname (int4, varchar, _int4, a domain's name), MySQL's VARCHAR
    jdbc_type: int  # java.sql.Types
    length: int | None = None  # None: not set (Debezium's -1)
    scale: int | None = None
    comment: str | None = None

    @property
    def is_character(self) -> bool:
        return self.jdbc_type in CHARACTER_TYPES


def source_column(column: Any) -> SourceColumn:
    """A column of the core's schema model (cdc.core.schema.Column: MySQL's DDL parser, SQL Server's catalog
    give what Debezium's tableChanges show) as the column options see it."""
    return SourceColumn(name=column.name, type_name=column.type_name, jdbc_type=column.jdbc_type,
                        length=column.length, scale=column.scale, comment=column.comment)


@dataclass(frozen=True)
class TableStage:
    """What the column options do to one table version: per field (by column name), the schema parameters
    to add, the function every value goes through (NULL included), and the field's name in events."""

    parameters: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    values: Mapping[str, ValueMapper] = field(default_factory=dict)
    renames: Mapping[str, str] = field(default_factory=dict)
    schema_name: Callable[[str], str] = str
    hidden: frozenset[str] = frozenset()  # key columns left out of the rows: read for the key only
    converted: frozenset[str] = frozenset()  # columns a custom converter took (converters=)

    @property
    def changes_values(self) -> bool:
        """Whether some value leaves it otherwise than it came (a mask, hash, truncation, custom converter):
        then only the events carry Debezium's values, not a table's stored ones read as they are."""
        return bool(self.values or self.converted)

    @property
    def changes_rows(self) -> bool:
        """Whether rows leave it otherwise than they came (then the compiled codec, which writes rows as they
        come, is not used for the table)."""
        return self.changes_values or bool(self.renames or self.hidden)


PLAIN = TableStage()


# ---- names Avro rejects ---------------------------------------------------------------------------------

_ADJUSTMENT_MODES = ("none", "avro", "avro_unicode")


def _first_ok(c: str) -> bool:
    return c == "_" or ("A" <= c <= "Z") or ("a" <= c <= "z")


def _adjust(name: str, *, unicode: bool, dots: bool) -> str:
    """Debezium's SchemaNameAdjuster.validFullname over Java's UTF-16 units: an invalid character becomes
    ``_`` (``_uXXXX`` in the unicode modes), and a leading digit keeps itself after the ``_``."""
    units = name.encode("utf-16-le")
    chars = [chr(int.from_bytes(units[i:i + 2], "little")) for i in range(0, len(units), 2)]
    out: list[str] = []
    for i, c in enumerate(chars):
        ok = _first_ok(c) if i == 0 else (_first_ok(c) or "0" <= c <= "9" or (dots and c == "."))
        if ok:
            out.append(c)
        elif unicode:
            out.append(f"_u{ord(c):04x}")
        else:
            out.append("_" + c if i == 0 and "0" <= c <= "9" else "_")
    return "".join(out)


def name_adjuster(mode: str, *, field_names: bool) -> Callable[[str], str]:
    """``schema.name.adjustment.mode`` (``field_names`` False: dots separate a full name's parts) or
    ``field.name.adjustment.mode``: none, avro or avro_unicode."""
    if mode == "none":
        return str
    unicode = mode == "avro_unicode"
    return lambda name: _adjust(name, unicode=unicode, dots=not field_names)


# ---- value mappers --------------------------------------------------------------------------------------

def _java_serialized(text: str) -> bytes:
    """A String as Java's ObjectOutputStream.writeObject writes it (what hash v1 digests): the stream header,
    TC_STRING or TC_LONGSTRING, the length, the modified UTF-8 (NUL as C0 80, other characters as CESU-8)."""
    data = bytearray()
    for c in text:
        code = ord(c)
        if code == 0:
            data += b"\xc0\x80"
        elif code > 0xFFFF:  # a supplementary character: its two surrogates, three bytes each
            for unit in (0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)):
                data += chr(unit).encode("utf-8", "surrogatepass")
        else:
            data += c.encode("utf-8", "surrogatepass")
    header = b"\xac\xed\x00\x05"
    if len(data) <= 0xFFFF:
        return header + b"t" + len(data).to_bytes(2, "big") + bytes(data)
    return header + b"|" + len(data).to_bytes(8, "big") + bytes(data)


def hash_function(algorithm: str) -> Callable[[], Any]:
    """Python's hashlib constructor for a Java MessageDigest name (SHA-256, SHA3-512, MD5, SHA-512/256...)."""
    name = algorithm.strip().upper()
    aliases = {"SHA": "sha1", "SHA1": "sha1", "SHA-1": "sha1", "MD5": "md5", "SHA-224": "sha224",
               "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512", "SHA-512/224": "sha512_224",
               "SHA-512/256": "sha512_256", "SHA3-224": "sha3_224", "SHA3-256": "sha3_256",
               "SHA3-384": "sha3_384", "SHA3-512": "sha3_512"}
    python_name = aliases.get(name)
    if python_name is None or python_name not in hashlib.algorithms_available:
        raise ConfigError(f"column.mask.hash.{algorithm}...: {algorithm!r} is no hash algorithm cdc can compute",
                          fix=f"use one of {', '.join(sorted(aliases))} (Java's MessageDigest names)")
    return lambda: hashlib.new(python_name)


def _hasher(algorithm: str, salt: str, v2: bool, length: int | None) -> ValueMapper:
    new = hash_function(algorithm)
    salt_bytes = salt.encode("utf-8")

    def digest(value: Any) -> Any:
        if value is None:
            return None
        text = str(value)
        h = new()
        h.update(salt_bytes)
        h.update(text.encode("utf-8", "surrogatepass") if v2 else _java_serialized(text))
        hexed: str = h.hexdigest()
        return hexed[:length] if length else hexed

    return digest


def _masker(mask: str) -> ValueMapper:
    return lambda _value: mask


def truncated(value: Any, length: int) -> Any:
    """A text cut to ``length`` characters as Java counts them (UTF-16 units; a pair is not split), binary
    data to ``length`` bytes; any other value as it is."""
    if isinstance(value, str):
        if len(value) <= length or not any(ord(c) > 0xFFFF for c in value[:length]):
            return value[:length]
        out, units = [], 0
        for c in value:
            units += 2 if ord(c) > 0xFFFF else 1
            if units > length:
                break
            out.append(c)
        return "".join(out)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value[:length])
    return value


def _truncator(length: int, schema: Mapping[str, Any]) -> ValueMapper:
    if schema.get("type") == "bytes" and "name" not in schema:  # raw bytes, base64 in the JSON-ready row
        return lambda value: value if value is None else base64.b64encode(base64.b64decode(value)[:length]).decode()
    if schema.get("type") == "string":
        return lambda value: truncated(value, length)
    return lambda value: value  # Debezium cuts only strings and byte buffers (not a decimal's bytes, not a list)


# ---- the rules ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Rule:
    """One column mapper and the columns it applies to (by ``table.column``, or ``table.type`` by type)."""

    kind: str  # truncate, mask, propagate, hash
    patterns: tuple[re.Pattern[str], ...]
    by_type: bool = False
    size: int = 0  # truncate/mask: N
    algorithm: str = ""  # hash
    salt: str = ""
    v2: bool = False

    def matches(self, table_ids: Sequence[str], column: SourceColumn) -> bool:
        last = column.type_name if self.by_type else column.name
        return any(p.fullmatch(f"{t}.{last}") for t in table_ids for p in self.patterns)

    def apply(self, column: SourceColumn, schema: Mapping[str, Any]) -> tuple[dict[str, str], ValueMapper | None]:
        """The parameters it adds to the column's field ``schema`` and the function its values go through."""
        if self.kind == "truncate":
            if column.length is not None and 0 <= column.length <= self.size:
                return {}, None  # never longer than N: Debezium leaves it alone
            return {TRUNCATE_LENGTH: str(self.size)}, _truncator(self.size, schema)
        if self.kind == "mask":
            return {MASKED: "true"}, _masker("*" * self.size) if column.is_character else None
        if self.kind == "hash":
            mapper = _hasher(self.algorithm, self.salt, self.v2, column.length) if column.is_character else None
            return {MASKED: "true"}, mapper
        return _source_type(column), None


def _source_type(column: SourceColumn) -> dict[str, str]:
    out = {SOURCE_TYPE: column.type_name.upper()}
    if column.length is not None:
        out[SOURCE_LENGTH] = str(column.length)
    if column.scale is not None:
        out[SOURCE_SCALE] = str(column.scale)
    if column.comment:
        out[SOURCE_COMMENT] = column.comment
    out[SOURCE_NAME] = column.name
    return out


_TRUNCATE = re.compile(r"column\.truncate\.to\.(\d+)\.chars")
_MASK = re.compile(r"column\.mask\.with\.(\d+)\.chars")
_HASH = re.compile(r"column\.mask\.hash\.(?!v2\.)([^.]+)\.with\.salt\.(.+)")
_HASH_V2 = re.compile(r"column\.mask\.hash\.v2\.([^.]+)\.with\.salt\.(.+)")


def _patterns(name: str, raw: Any) -> tuple[re.Pattern[str], ...]:
    entries = raw if isinstance(raw, (list, tuple)) else str(raw or "").split(",")
    try:
        return tuple(compile_pattern(e.strip()) for e in entries if str(e).strip())
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}", fix=REGEX_FIX) from None


def _rules(properties: Mapping[str, Any]) -> list[_Rule]:
    """The mappers a configuration sets, in the order Debezium tries them (the first that matches wins)."""
    found: dict[str, list[_Rule]] = {"truncate": [], "mask": [], "column": [], "type": [], "hash": [], "hash2": []}
    for name, raw in properties.items():
        if m := _TRUNCATE.fullmatch(name):
            found["truncate"].append(_Rule("truncate", _patterns(name, raw), size=int(m.group(1))))
        elif m := _MASK.fullmatch(name):
            found["mask"].append(_Rule("mask", _patterns(name, raw), size=int(m.group(1))))
        elif name == "column.propagate.source.type":
            found["column"].append(_Rule("propagate", _patterns(name, raw)))
        elif name == "datatype.propagate.source.type":
            found["type"].append(_Rule("propagate", _patterns(name, raw), by_type=True))
        elif m := _HASH_V2.fullmatch(name):
            hash_function(m.group(1))  # an unknown algorithm fails here, before the first event
            found["hash2"].append(_Rule("hash", _patterns(name, raw), algorithm=m.group(1), salt=m.group(2), v2=True))
        elif m := _HASH.fullmatch(name):
            hash_function(m.group(1))
            found["hash"].append(_Rule("hash", _patterns(name, raw), algorithm=m.group(1), salt=m.group(2)))
    return [rule for rules in found.values() for rule in rules]


# The families of properties of the pattern options (cdc.core.options declares them).
COLUMN_PATTERNS = {"truncate": _TRUNCATE.pattern, "mask": _MASK.pattern,
                   "hash": r"column\.mask\.hash\.(v2\.)?([^.]+)\.with\.salt\.(.+)"}


class ColumnStage:
    """The column options of one pipeline, parsed once; :meth:`table` applies them to a table version."""

    def __init__(self, properties: Mapping[str, Any], *, include: Iterable[str] | None = None,
                 exclude: Iterable[str] | None = None, field_names: str = "none", schema_names: str = "none",
                 failures: ConversionFailures | None = None) -> None:
        include, exclude = list(include or []), list(exclude or [])
        if include and exclude:
            raise ConfigError("column.include.list and column.exclude.list are both set; Debezium takes one or the "
                              "other", fix="keep one of them")
        self.filter = NameFilter(include, exclude)
        self.rules = _rules(properties)
        self.field_name = name_adjuster(field_names, field_names=True)
        self.schema_name = name_adjuster(schema_names, field_names=False)
        self._renaming = field_names != "none"
        self.failures = failures or ConversionFailures()  # event.converting.failure.handling.mode
        self.converters = load_converters(properties)  # converters=: custom converters, configured

    @classmethod
    def from_config(cls, config: Any) -> ColumnStage:
        return cls(config.properties, include=config.get("column.include.list"),
                   exclude=config.get("column.exclude.list"), field_names=config.get("field.name.adjustment.mode"),
                   schema_names=config.get("schema.name.adjustment.mode"),
                   failures=ConversionFailures(config.get("event.converting.failure.handling.mode")))

    def captured(self, table_ids: Sequence[str], column: str) -> bool:
        """Whether events hold the column (include/exclude lists on ``table.column``, any of the table's names)."""
        if self.filter.is_open:
            return True
        if self.filter.include:
            return any(self.filter(f"{t}.{column}") for t in table_ids)
        return all(self.filter(f"{t}.{column}") for t in table_ids)

    def claim(self, table_id: str, column: SourceColumn, optional: bool, default: Any, no_default: Any = None
              ) -> Claimed | None:
        """A custom converter's claim on ``column`` (converters=), None without one; ``default``: the source's
        Connect default of the column, ``no_default`` when it has none."""
        if not self.converters:
            return None
        return claim(self.converters, RelationalColumn(
            name=column.name, data_collection=table_id, type_name=column.type_name, jdbc_type=column.jdbc_type,
            length=column.length, scale=column.scale, optional=optional, has_default=default is not no_default,
            default=None if default is no_default else default))

    def table(self, table_ids: Sequence[str], columns: Iterable[SourceColumn], schemas: Mapping[str, Mapping[str, Any]],
              hidden: Iterable[str] = (), converted: Iterable[str] = ()) -> TableStage:
        """What the options do to a table version's captured ``columns`` (``schemas``: their field schemas by
        name); ``table_ids``: the names a pattern may use for the table (schema.table, and
        database.schema.table where the source has both); ``hidden``: key columns the rows hold for the key only."""
        parameters: dict[str, dict[str, str]] = {}
        values: dict[str, ValueMapper] = {}
        renames: dict[str, str] = {}
        for column in columns:
            rule = next((r for r in self.rules if r.matches(table_ids, column)), None)
            if rule is not None:
                params, mapper = rule.apply(column, schemas[column.name])
                if params:
                    parameters[column.name] = params
                if mapper is not None:
                    values[column.name] = mapper
            if self._renaming and (adjusted := self.field_name(column.name)) != column.name:
                renames[column.name] = adjusted
        hidden, converted = frozenset(hidden), frozenset(converted)
        if not (parameters or values or renames or hidden or converted) and self.schema_name is str:
            return PLAIN
        return TableStage(parameters, values, renames, self.schema_name, hidden, converted)


def with_parameters(schema: dict[str, Any], parameters: Mapping[str, str]) -> dict[str, Any]:
    """A Connect field schema with ``parameters`` added, in the place Kafka Connect's JsonConverter writes
    them (after name/version/doc, before default and the field name)."""
    if not parameters:
        return schema
    out: dict[str, Any] = {}
    placed = False
    for key, value in schema.items():
        if key == "parameters":
            out[key] = {**value, **parameters}
            placed = True
        elif key in ("default", "field") and not placed:
            out["parameters"] = dict(parameters)
            placed = True
            out[key] = value
        else:
            out[key] = value
    if not placed:
        out["parameters"] = dict(parameters)
    return out
