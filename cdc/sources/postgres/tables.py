"""Per-table decoding state: which columns, which converters, which envelope.

Built once per table version (a snapshot table, or a pgoutput Relation message) and reused
for every row, so the hot path does no type dispatch: a row is a tuple of text values, each
column has its converter chosen in advance.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Protocol, Sequence

from cdc.core import connect
from cdc.core.envelope import TableEnvelope
from cdc.core.filters import NameFilter, key_columns_for
from cdc.core.topics import table_topic
from cdc.sources.postgres.catalog import CatalogTable
from cdc.sources.postgres.pgoutput import UNCHANGED_TOAST
from cdc.sources.postgres.source_info import SOURCE_SCHEMA, sequence, source_block
from cdc.sources.postgres.types import TypeModes, TypeRegistry, field_schema, text_converter

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
        topic_prefix: str,
        types: TypeRegistry,
        modes: TypeModes,
        column_filter: NameFilter,
        key_spec: dict[str, list[str]],
        unavailable_placeholder: str,
    ) -> None:
        self.catalog = catalog
        self.schema = catalog.schema
        self.name = catalog.name
        self.qualified = catalog.qualified
        self.replica_identity = catalog.replica_identity
        not_null = {c.name: c.not_null for c in catalog.columns}
        types.load(c.type_oid for c in columns)
        spec: list[tuple[int, str, Callable[[str], Any]]] = []
        fields: list[dict[str, Any]] = []
        by_name: dict[str, dict[str, Any]] = {}
        for index, column in enumerate(columns):
            if not column_filter(f"{self.qualified}.{column.name}"):
                continue
            pg_type = types.get(column.type_oid)
            optional = not not_null.get(column.name, False)
            schema = connect.field(column.name, field_schema(pg_type, column.typmod, optional, modes))
            fields.append(schema)
            by_name[column.name] = schema
            spec.append((index, column.name, text_converter(pg_type, column.typmod, modes)))
        self._spec = tuple(spec)
        self._placeholder = unavailable_placeholder
        key_names = key_columns_for(key_spec, self.qualified) or list(catalog.primary_key)
        missing = [k for k in key_names if k not in by_name]
        if missing:
            log.warning("key columns %s of %s are not captured; events of this table get no key", missing, self.qualified)
            key_names = []
        key_fields = [{**by_name[k], "optional": False} for k in key_names]
        self.envelope = TableEnvelope(
            topic=table_topic(topic_prefix, self.schema, self.name),
            table_id=self.qualified,
            schema_name_prefix=f"{topic_prefix}.{self.schema}.{self.name}",
            key_fields=key_fields,
            value_fields=fields,
            source_schema=SOURCE_SCHEMA,
        )
        self.key_names = tuple(key_names)
        self._source_base: tuple[tuple[int, int], dict[str, Any]] | None = None

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

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        """Converted row struct from a tuple of text values (None = NULL)."""
        out: dict[str, Any] = {}
        placeholder = self._placeholder
        for index, name, convert in self._spec:
            value = values[index]
            if value is None:
                out[name] = None
            elif value is UNCHANGED_TOAST:
                out[name] = placeholder
            else:
                out[name] = convert(value)
        return out

    def key_values(self, row: dict[str, Any] | None) -> tuple[Any, ...] | None:
        if row is None or not self.key_names:
            return None
        return tuple(row.get(k) for k in self.key_names)
