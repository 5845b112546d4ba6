"""Per-table decoding state: which columns, which converters, which envelope.

Built once per table version (a snapshot table, or a pgoutput Relation message) and reused
for every row, so the hot path does no type dispatch: a row is a tuple of text values, each
column has its converter chosen in advance.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cdc.core import connect
from cdc.core.columns import ColumnStage, SourceColumn
from cdc.core.envelope import TableEnvelope
from cdc.core.filters import resolve_key_columns
from cdc.core.topics import TopicNaming
from cdc.core.unavailable import PartialRow
from cdc.sources.postgres.catalog import CatalogTable
from cdc.sources.postgres.defaults import NO_DEFAULT, default_value, zero
from cdc.sources.postgres.jdbc import source_column
from cdc.sources.postgres.pgoutput import UNCHANGED_TOAST
from cdc.sources.postgres.source_info import SOURCE_SCHEMA, sequence, source_block
from cdc.sources.postgres.types import (
    PgType,
    TypeModes,
    TypeRegistry,
    column_kind,
    field_schema,
    native_kind,
    numeric_scale,
    text_converter,
    unavailable_value,
)

log = logging.getLogger(__name__)


class ColumnType(Protocol):
    """A column as a Relation message or the catalog describes it."""

    @property
    def name(self) -> str: ...

    @property
    def type_oid(self) -> int: ...

    @property
    def typmod(self) -> int: ...


class TableState:
    """Decoding of one table version's rows into Debezium row structs."""

    def __init__(
        self,
        catalog: CatalogTable,
        columns: Sequence[ColumnType],
        *,
        topics: TopicNaming,
        types: TypeRegistry,
        modes: TypeModes,
        columns_stage: ColumnStage,
        key_spec: dict[str, list[str]],
        unavailable_placeholder: str,
    ) -> None:
        self.catalog = catalog
        self.schema = catalog.schema
        self.name = catalog.name
        self.qualified = catalog.qualified
        self.replica_identity = catalog.replica_identity
        not_null = {c.name: c.not_null for c in catalog.columns}
        defaults = {c.name: c.default for c in catalog.columns}
        dims = {c.name: c.dims for c in catalog.columns}
        types.load(c.type_oid for c in columns)
        spec: list[tuple[int, str, Callable[[str], Any], Any, Any]] = []
        native_kinds: list[str | None] = []  # per spec entry: the compiled codec's own writing, if any
        spec_types: list[tuple[PgType, int]] = []  # per spec entry: (PgType, typmod), for native_rows
        fields: list[dict[str, Any]] = []
        by_name: dict[str, dict[str, Any]] = {}
        described: list[SourceColumn] = []  # the columns in Debezium's terms, for the column options
        names = [c.name for c in columns]
        # The key's columns are read even when the column options leave them out of the rows: keys keep them.
        key_names = resolve_key_columns(key_spec, [self.qualified], catalog.primary_key, names, names)
        hidden: list[str] = []
        converted: list[str] = []  # the columns custom converters took
        for index, column in enumerate(columns):
            if not columns_stage.captured((self.qualified,), column.name):
                if column.name not in key_names:
                    continue
                hidden.append(column.name)
            pg_type = types.get(column.type_oid)
            optional = not not_null.get(column.name, False)
            schema = field_schema(pg_type, column.typmod, optional, modes, max(dims.get(column.name, 1), 1))
            if schema is None:  # a type Debezium has no mapping for (include.unknown.datatypes)
                continue
            convert = text_converter(pg_type, column.typmod, modes)
            native_kinds.append(native_kind(pg_type, column.typmod, modes))
            spec_types.append((pg_type, column.typmod))
            kind = column_kind(pg_type, column.typmod)
            scale = numeric_scale(column.typmod) if kind == "numeric" \
                else modes.money_fraction_digits if kind == "money" else None
            default = default_value(defaults.get(column.name), pg_type.name, convert, enum=kind == "enum", scale=scale)
            described.append(source_column(column.name, pg_type, column.typmod))
            claimed = columns_stage.claim(self.qualified, described[-1], optional, default, NO_DEFAULT)
            if claimed is not None:  # a custom converter's column (converters=): its schema, values, default
                schema, convert, default = claimed.schema, claimed.convert, claimed.schema.get("default", NO_DEFAULT)
                converted.append(column.name)
            elif default is not NO_DEFAULT:
                schema["default"] = default
            field = connect.field(column.name, schema)
            fields.append(field)
            by_name[column.name] = field
            # a column a key-only old tuple leaves out: Debezium gives it its default, else (NOT NULL)
            # its type's zero, else null
            absent = default if default is not NO_DEFAULT else None if optional or claimed is not None \
                else zero(kind, schema, convert, scale)
            spec.append((index, column.name, convert, absent,
                         unavailable_value(pg_type, column.typmod, unavailable_placeholder, modes)))
        self._spec = tuple(spec)
        self._failures = columns_stage.failures
        self._guarded: tuple[tuple[int, str, Callable[[str], Any], Any, Any], ...] | None = None
        self.native_kinds = tuple(native_kinds)
        self._spec_types = tuple(spec_types)
        self._modes = modes
        key_names = [k for k in key_names if k in by_name]  # a key column of a type Debezium cannot represent
        key_fields = [by_name[k] for k in key_names]
        self.stage = columns_stage.table((self.qualified,), [c for c in described if c.name not in hidden], by_name,
                                         hidden=hidden, converted=converted)
        topic_names = topics.table(None, self.schema, self.name)  # Debezium's PostgreSQL table ids have no catalog
        self.envelope = TableEnvelope(
            topic=topic_names.topic,
            table_id=self.qualified,
            schema_name_prefix=topic_names.schema_prefix,
            key_field=topic_names.key_field,
            key_fields=key_fields,
            value_fields=[f for f in fields if f["field"] not in hidden],
            source_schema=SOURCE_SCHEMA,
            stage=self.stage,
        )
        self.key_names = tuple(key_names)
        self.native: Any = None  # a cdc.sources.postgres.native_rows.RowEncoder when the stream uses one
        self._source_base: tuple[tuple[int, int], dict[str, Any]] | None = None

    @property
    def spec(self) -> tuple[tuple[int, str, Callable[[str], Any], Any, Any], ...]:
        """Per output field: (tuple index, name, converter, value when absent, when unavailable)."""
        return self._spec

    @property
    def spec_types(self) -> tuple[tuple[PgType, int], ...]:
        """Per output field, as ``spec``: the column's (PgType, typmod)."""
        return self._spec_types

    @property
    def modes(self) -> TypeModes:
        """The type modes the converters were chosen with."""
        return self._modes

    def source(self, prefix: str, db: str, *, xid: int, commit_us: int, lsn: int,
               last_commit_lsn: int | None) -> dict[str, Any]:
        """The source block of a change: built once per transaction, copied per event."""
        cached = self._source_base
        if cached is None or cached[0] != (xid, commit_us):
            base = source_block(prefix, db, self.schema, self.name, ts_us=commit_us, tx_id=xid, lsn=lsn,
                                last_commit_lsn=last_commit_lsn)
            self._source_base = ((xid, commit_us), base)
            return dict(base)
        source = dict(cached[1])
        source["lsn"] = lsn
        source["sequence"] = sequence(last_commit_lsn, lsn)
        return source

    def row(self, values: Sequence[Any], old: Sequence[Any] | None = None, *, key_only: bool = False
            ) -> dict[str, Any]:
        """Converted row struct from a tuple of text values (None = NULL). An unchanged TOASTed
        value the server did not send is taken from ``old`` (REPLICA IDENTITY FULL), else it is
        Debezium's placeholder. ``key_only``: a key-only old tuple, whose NULLs are columns left out."""
        try:
            return self._row(self._spec, values, old, key_only)
        except Exception:  # noqa: BLE001 - a converter failed: again, column by column, under the mode
            return self._row(self._guarded_spec(), values, old, key_only)

    def _guarded_spec(self) -> tuple[tuple[int, str, Callable[[str], Any], Any, Any], ...]:
        """The spec with each converter under event.converting.failure.handling.mode (built on first need)."""
        if self._guarded is None:
            failures = self._failures
            self._guarded = tuple((i, name, failures.guard(self.qualified, name, convert), absent, unavailable)
                                  for i, name, convert, absent, unavailable in self._spec)
        return self._guarded

    @staticmethod
    def _row(spec: tuple[tuple[int, str, Callable[[str], Any], Any, Any], ...], values: Sequence[Any],
             old: Sequence[Any] | None, key_only: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        missing: list[str] = []  # the columns left at their placeholder: the row says which (PartialRow)
        for index, name, convert, absent, unavailable in spec:
            value = values[index]
            if value is None:
                out[name] = absent if key_only else None
            elif value is UNCHANGED_TOAST:
                previous = old[index] if old is not None else None
                if previous is not None and previous is not UNCHANGED_TOAST:
                    out[name] = convert(previous)
                else:
                    out[name] = unavailable
                    missing.append(name)
            else:
                out[name] = convert(value)
        return PartialRow(out, missing) if missing else out

    def key_values(self, row: dict[str, Any] | None) -> tuple[Any, ...] | None:
        if row is None or not self.key_names:
            return None
        return tuple(row.get(k) for k in self.key_names)


@dataclass
class RowFormat:
    """How rows are built, set on the source after it is made (cdc.core.source.NativeRows, EncodedBatches)."""

    native: bool = False  # as the compiled codec's JSON: nothing but the JSON converter reads them
    encoded: bool = False  # with native, a snapshot's rows also in batches the codec encoded (the engine's)


@dataclass(frozen=True)
class TableStates:
    """The :class:`TableState` of a table version under this pipeline's options (topic naming, type
    modes, the column options, message.key.columns, the unavailable-value placeholder)."""

    topics: TopicNaming
    types: TypeRegistry
    modes: TypeModes
    columns: ColumnStage
    key_spec: dict[str, list[str]]
    unavailable_placeholder: str

    def __call__(self, table: CatalogTable, columns: Sequence[ColumnType] | None = None) -> TableState:
        """``columns``: as a Relation message lists them (default: the catalog's)."""
        return TableState(table, table.columns if columns is None else columns, topics=self.topics,
                          types=self.types, modes=self.modes, columns_stage=self.columns,
                          key_spec=self.key_spec, unavailable_placeholder=self.unavailable_placeholder)
