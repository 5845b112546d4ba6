"""Capture instances and the per-instance decoding state (columns, converters, envelope).

A table has one capture instance, or two while its schema evolves (SQL Server's way: enable a
second instance after ALTER TABLE, then disable the first). Each instance has its own column
set, so the envelope belongs to the instance, not to the table.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc.core import connect
from cdc.core.columns import ColumnStage, source_column
from cdc.core.envelope import TableEnvelope
from cdc.core.filters import resolve_key_columns
from cdc.core.schema import Table, TableId
from cdc.core.topics import TopicNaming
from cdc.sources.sqlserver.lsn import Lsn
from cdc.sources.sqlserver.source_info import SOURCE_SCHEMA
from cdc.sources.sqlserver.types import SqlColumn, TypeModes, converter, field_schema, table_column

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CaptureInstance:
    database: str
    schema: str
    table: str
    name: str
    start_lsn: Lsn
    change_object_id: int
    source_object_id: int
    columns: tuple[SqlColumn, ...]  # the captured columns, in capture order
    index_columns: tuple[str, ...] = ()

    @property
    def table_name(self) -> str:
        """``schema.table``: what filters and transaction ``data_collection`` s see (with the db)."""
        return f"{self.schema}.{self.table}"

    @property
    def data_collection(self) -> str:
        """``database.schema.table``: Debezium's data-collection name, and the events' table id."""
        return f"{self.database}.{self.schema}.{self.table}"

    @property
    def table_id(self) -> TableId:
        return TableId(self.database, self.schema, self.table)


def build_instances(
    database: str,
    instances: Sequence[dict[str, Any]],
    captured: Sequence[dict[str, Any]],
    index: Sequence[dict[str, Any]],
    object_columns: Callable[[int], list[dict[str, Any]]],
) -> list[CaptureInstance]:
    """Capture instances from the rows of ``queries.CAPTURE_INSTANCES``, ``CAPTURED_COLUMNS``,
    ``INDEX_COLUMNS`` and, per instance, ``OBJECT_COLUMNS`` of the change and source tables.

    Types come from the change table (they are the types the instance captured, even after the
    source table changed); nullability, identity and defaults from the source table when the
    column still exists there."""
    captured_by: dict[str, list[dict[str, Any]]] = {}
    for row in captured:
        captured_by.setdefault(row["capture_instance"], []).append(row)
    index_by: dict[str, list[str]] = {}
    for row in sorted(index, key=lambda r: (r["capture_instance"], r["index_ordinal"])):
        index_by.setdefault(row["capture_instance"], []).append(row["column_name"])
    out = []
    for row in instances:
        name = row["capture_instance"]
        change_cols = {c["name"]: c for c in object_columns(row["change_object_id"])}
        source_cols = {c["name"]: c for c in object_columns(row["source_object_id"])}
        columns = []
        for cc in sorted(captured_by.get(name, []), key=lambda r: r["column_ordinal"]):
            col_name = cc["column_name"]
            typed = change_cols.get(col_name) or source_cols.get(col_name)
            if typed is None:
                raise ValueError(f"column {col_name} of capture instance {name} is in neither table")
            described = source_cols.get(col_name, typed)
            columns.append(SqlColumn(
                name=col_name,
                type_name=str(typed["type_name"]).lower(),
                position=int(cc["column_ordinal"]),
                max_length=int(typed["max_length"]),
                precision=int(typed["precision"]),
                scale=int(typed["scale"]),
                nullable=bool(described["is_nullable"]),
                identity=bool(described["is_identity"]),
                computed=bool(described["is_computed"]),
                default=described.get("default_definition"),
            ))
        out.append(CaptureInstance(
            database=database, schema=row["source_schema"], table=row["source_table"], name=name,
            start_lsn=Lsn.of(row["start_lsn"]), change_object_id=row["change_object_id"],
            source_object_id=row["source_object_id"], columns=tuple(columns),
            index_columns=tuple(index_by.get(name, ())),
        ))
    return out


_NO_DEFAULT = object()


class TableState:
    """Decoding of one capture instance's rows into Debezium row structs."""

    def __init__(self, instance: CaptureInstance, *, topics: TopicNaming, modes: TypeModes,
                 columns: ColumnStage, key_spec: dict[str, list[str]]) -> None:
        self.instance = instance
        db, schema, name = instance.database, instance.schema, instance.table
        self.data_collection = instance.data_collection
        fields: list[dict[str, Any]] = []
        by_name: dict[str, dict[str, Any]] = {}
        spec: list[tuple[str, Callable[[Any], Any]]] = []
        kept: list[SqlColumn] = []
        table_ids = (f"{schema}.{name}", self.data_collection)
        names = [c.name for c in instance.columns]
        # The key's columns are read even when the column options leave them out of the rows: keys keep them.
        key_names = resolve_key_columns(key_spec, list(table_ids), instance.index_columns, names, names)
        hidden: list[str] = []
        converted: list[str] = []  # the columns custom converters took
        for column in instance.columns:
            if not columns.captured(table_ids, column.name):
                if column.name not in key_names:
                    continue
                hidden.append(column.name)
            described_schema, convert = field_schema(column, modes), converter(column, modes)
            claimed = columns.claim(self.data_collection, source_column(table_column(column)), column.nullable,
                                    described_schema.get("default", _NO_DEFAULT), _NO_DEFAULT)
            if claimed is not None:  # a custom converter's column (converters=): its schema and values
                described_schema, convert = claimed.schema, claimed.convert
                converted.append(column.name)
            f = connect.field(column.name, described_schema)
            fields.append(f)
            by_name[column.name] = f
            spec.append((column.name, convert))
            kept.append(column)
        self._spec = tuple(spec)
        self._failures = columns.failures
        self.key_names = tuple(key_names)
        described = [table_column(c) for c in kept]
        self.stage = columns.table(table_ids, [source_column(c) for c in described if c.name not in hidden], by_name,
                                   hidden=hidden, converted=converted)
        topic_names = topics.table(db, schema, name)
        self.envelope = TableEnvelope(
            topic=topic_names.topic,
            table_id=self.data_collection,
            schema_name_prefix=topic_names.schema_prefix,
            key_field=topic_names.key_field,
            key_fields=[by_name[k] for k in key_names],
            value_fields=[f for f in fields if f["field"] not in hidden],
            source_schema=SOURCE_SCHEMA,
            stage=self.stage,
        )
        self.table = Table(
            id=instance.table_id,
            columns=tuple(c for c in described if c.name not in hidden),
            primary_key=tuple(instance.index_columns),
        )

    def row(self, values: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._row(self._spec, values)
        except Exception:  # noqa: BLE001 - a converter failed: again, column by column, under the mode
            failures, table = self._failures, self.data_collection
            return self._row(tuple((name, failures.guard(table, name, convert)) for name, convert in self._spec),
                             values)

    @staticmethod
    def _row(spec: tuple[tuple[str, Callable[[Any], Any]], ...], values: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, convert in spec:
            value = values.get(name)
            out[name] = None if value is None else convert(value)
        return out

    def key(self, row: dict[str, Any] | None) -> tuple[Any, ...] | None:
        if row is None or not self.key_names:
            return None
        return tuple(row.get(k) for k in self.key_names)


@dataclass
class TablePlan:
    """Which instance of a table is read now, and which takes over (at its start LSN)."""

    current: CaptureInstance
    next: CaptureInstance | None = None
    states: dict[str, TableState] = field(default_factory=dict)

    @property
    def stop_lsn(self) -> Lsn | None:
        return self.next.start_lsn if self.next is not None else None


def plan_tables(instances: Sequence[CaptureInstance], position: Lsn) -> dict[str, TablePlan]:
    """Per ``schema.table``: the instance in effect at ``position`` and a newer one, if any.

    An instance is in effect from its start LSN on; with two, the older is read up to the
    newer's start LSN (Debezium's stop LSN), where the switch happens."""
    by_table: dict[str, list[CaptureInstance]] = {}
    for instance in instances:
        by_table.setdefault(instance.table_name, []).append(instance)
    plans = {}
    for name, group in by_table.items():
        group.sort(key=lambda i: i.start_lsn)
        started = [i for i in group if i.start_lsn <= position]
        current = started[-1] if started else group[0]
        later = [i for i in group if i.start_lsn > current.start_lsn]
        plans[name] = TablePlan(current, later[0] if later else None)
    return plans
