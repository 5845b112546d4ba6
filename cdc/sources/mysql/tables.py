"""Per-table decoding state: the columns of one table version, their converters and envelope.

Built from the schema model (``ddl.py``) at the binlog position of the rows, never from the
live table, so rows written before a later ALTER decode with the columns they had. Values are
taken by position: the binlog's rows and a snapshot's ``SELECT *`` both list every column in
table order.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from cdc.core import connect
from cdc.core.envelope import TableEnvelope
from cdc.core.filters import NameFilter, resolve_key_columns
from cdc.core.schema import Table
from cdc.core.topics import table_topic
from cdc.sources.mysql.types import TypeModes, field_schema, value_converter_parts

log = logging.getLogger(__name__)


class TableState:
    __slots__ = ("table", "database", "name", "qualified", "envelope", "column_count", "modes", "_spec",
                 "_set_columns")

    def __init__(
        self,
        table: Table,
        *,
        topic_prefix: str,
        source_schema: dict[str, Any],
        modes: TypeModes,
        column_filter: NameFilter,
        key_spec: dict[str, list[str]],
    ) -> None:
        self.table = table
        self.database = table.id.catalog or ""
        self.name = table.id.table
        self.qualified = f"{self.database}.{self.name}"
        self.column_count = len(table.columns)
        self.modes = modes
        spec: list[tuple[int, str, Callable[[Any], Any], Any]] = []
        fields: list[dict[str, Any]] = []
        by_name: dict[str, dict[str, Any]] = {}
        set_columns: list[int] = []
        for index, column in enumerate(table.columns):
            if not column_filter(f"{self.qualified}.{column.name}"):
                continue
            schema = field_schema(column, modes)
            if schema is None:  # a type Debezium cannot represent (VECTOR): left out, as Debezium does
                continue
            fields.append(connect.field(column.name, schema))
            by_name[column.name] = fields[-1]
            spec.append((index, column.name, *value_converter_parts(column, modes)))
            if column.type_name.upper() == "SET":
                set_columns.append(index)
        self._spec = tuple(spec)
        self._set_columns = tuple(set_columns)
        key_names = resolve_key_columns(key_spec, [self.qualified], table.primary_key,
                                        [c.name for c in table.columns], by_name)
        self.envelope = TableEnvelope(
            topic=table_topic(topic_prefix, self.database, self.name),
            table_id=self.qualified,
            schema_name_prefix=f"{topic_prefix}.{self.database}.{self.name}",
            key_fields=[{**by_name[k], "optional": False} for k in key_names],
            value_fields=fields,
            source_schema=source_schema,
        )

    @property
    def spec(self) -> tuple[tuple[int, str, Callable[[Any], Any], Any], ...]:
        """Per output field: (column index, name, converter, the value of a None)."""
        return self._spec

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        """A row image (values in table column order) as the event's row struct."""
        return {name: missing if (value := values[index]) is None else convert(value)
                for index, name, convert, missing in self._spec}
