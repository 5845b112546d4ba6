"""Per-table decoding state: the columns of one table version, their converters and envelope; and the
catalog that keeps the schema model they are built from.

Built from the schema model (``ddl.py``) at the binlog position of the rows, never from the
live table, so rows written before a later ALTER decode with the columns they had. Values are
taken by position: the binlog's rows and a snapshot's ``SELECT *`` both list every column in
table order.

    snapshot / history replay / DESCRIBE  -> TableCatalog.use(schema): the model, states dropped
    a DDL in the binlog                   -> the model changes in place: schema_changed() drops the states
    rows of db.t                          -> state(db, t): built once per table version

The server's facts (its character set, lower_case_table_names, flavour) shape new models and the
events' source schema; the catalog learns them on connecting (``connected``).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from cdc.config import Config
from cdc.core import connect
from cdc.core.columns import ColumnStage, source_column
from cdc.core.envelope import TableEnvelope
from cdc.core.filters import resolve_key_columns
from cdc.core.schema import Table
from cdc.core.topics import TopicNaming
from cdc.sources.mysql.capture import CaptureFilter
from cdc.sources.mysql.connection import ServerInfo
from cdc.sources.mysql.ddl import MySqlSchema
from cdc.sources.mysql.source_info import source_schema
from cdc.sources.mysql.types import INT_CONVERTER, TypeModes, field_schema, value_converter_parts

log = logging.getLogger(__name__)


_NO_DEFAULT = object()


class TableState:
    __slots__ = ("table", "database", "name", "qualified", "envelope", "column_count", "modes", "stage", "_spec",
                 "_names", "_set_columns", "_failures", "_guarded")

    def __init__(
        self,
        table: Table,
        *,
        topics: TopicNaming,
        source_schema: dict[str, Any],
        modes: TypeModes,
        columns_stage: ColumnStage,
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
        names = [c.name for c in table.columns]
        # The key's columns are read even when the column options leave them out of the rows: keys keep them.
        key_names = resolve_key_columns(key_spec, [self.qualified], table.primary_key, names, names)
        hidden: list[str] = []
        converted: list[str] = []  # the columns custom converters took
        for index, column in enumerate(table.columns):
            if not columns_stage.captured((self.qualified,), column.name):
                if column.name not in key_names:
                    continue
                hidden.append(column.name)
            schema = field_schema(column, modes)
            if schema is None:  # a type Debezium cannot represent (VECTOR): left out, as Debezium does
                continue
            parts = value_converter_parts(column, modes)
            claimed = columns_stage.claim(self.qualified, source_column(column), column.optional,
                                          schema.get("default", _NO_DEFAULT), _NO_DEFAULT)
            if claimed is not None:  # a custom converter's column (converters=): its schema and values
                schema, parts = claimed.schema, (claimed.convert, claimed.schema.get("default"))
                converted.append(column.name)
            fields.append(connect.field(column.name, schema))
            by_name[column.name] = fields[-1]
            spec.append((index, column.name, *parts))
            if column.type_name.upper() == "SET":
                set_columns.append(index)
        self._spec = tuple(spec)
        self._failures = columns_stage.failures
        self._guarded: tuple[tuple[int, str, Callable[[Any], Any], Any], ...] | None = None
        self._names = tuple(name for _, name, _, _ in spec)
        self._set_columns = tuple(set_columns)
        key_names = [k for k in key_names if k in by_name]  # a key column of a type Debezium cannot represent
        described = [source_column(c) for c in table.columns if c.name in by_name and c.name not in hidden]
        self.stage = columns_stage.table((self.qualified,), described, by_name, hidden=hidden, converted=converted)
        topic_names = topics.table(self.database, None, self.name)  # Debezium's MySQL table ids have no schema
        self.envelope = TableEnvelope(
            topic=topic_names.topic,
            table_id=self.qualified,
            schema_name_prefix=topic_names.schema_prefix,
            key_field=topic_names.key_field,
            key_fields=[by_name[k] for k in key_names],
            value_fields=[f for f in fields if f["field"] not in hidden],
            source_schema=source_schema,
            stage=self.stage,
        )

    @property
    def spec(self) -> tuple[tuple[int, str, Callable[[Any], Any], Any], ...]:
        """Per output field: (column index, name, converter, the value of a None)."""
        return self._spec

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        """A row image (values in table column order) as the event's row struct."""
        try:
            return {name: missing if (value := values[index]) is None else convert(value)
                    for index, name, convert, missing in self._spec}
        except Exception:  # noqa: BLE001 - a converter failed: again, column by column, under the mode
            return {name: missing if (value := values[index]) is None else convert(value)
                    for index, name, convert, missing in self._guarded_spec()}

    def _guarded_spec(self) -> tuple[tuple[int, str, Callable[[Any], Any], Any], ...]:
        """The spec with each converter under event.converting.failure.handling.mode (built on first need)."""
        if self._guarded is None:
            self._guarded = tuple((index, name, self._failures.guard(self.qualified, name, convert), missing)
                                  for index, name, convert, missing in self._spec)
        return self._guarded

    def rows(self, images: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """Whole row images (a snapshot's rows, every column in table order) as row structs, the same as
        :meth:`row` gives, converted column by column: each column's values go through its converter in
        one ``map`` (integers as read pass as they are), and each struct is zipped from the converted
        columns. Far less Python per value than a row at a time, which decides wide tables' speed."""
        if len(images) < 2:
            return [self.row(values) for values in images]
        try:
            return self._rows(images)
        except Exception:  # noqa: BLE001 - a converter failed: row by row, where it is handled
            return [self.row(values) for values in images]

    def _rows(self, images: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        columns = list(zip(*images, strict=True))
        converted: list[Sequence[Any]] = []
        for index, _, convert, missing in self._spec:
            column = columns[index]
            if None in column:
                converted.append([missing if value is None else convert(value) for value in column])
            elif convert is INT_CONVERTER and set(map(type, column)) == {int}:
                converted.append(column)  # the converter would return each value as it is
            else:
                converted.append(list(map(convert, column)))
        names = self._names
        return [dict(zip(names, values, strict=True)) for values in zip(*converted, strict=True)]


class TableCatalog:
    """The schema model in use and the decoding state of each table it knows."""

    def __init__(self, config: Config, *, topics: TopicNaming, capture: CaptureFilter, columns: ColumnStage,
                 key_spec: dict[str, list[str]]) -> None:
        self.topics = topics
        self.capture = capture
        self.columns = columns
        self.key_spec = key_spec
        self.modes = TypeModes.from_config(config)
        self.skip_unparseable: bool = config.get("schema.history.internal.skip.unparseable.ddl")
        self.include_comments: bool = config.get("include.schema.comments")
        self.include_schema_changes: bool = config.get("include.schema.changes")
        self.server: ServerInfo | None = None
        self.source_schema: dict[str, Any] = source_schema("mysql")
        self.schema: MySqlSchema | None = None
        self._states: dict[tuple[str, str], TableState | None] = {}

    def connected(self, server: ServerInfo) -> None:
        self.server = server
        self.source_schema = source_schema(server.flavor)

    @property
    def flavor(self) -> str:
        return self.server.flavor if self.server else "mysql"

    def new_schema(self) -> MySqlSchema:
        """An empty model that parses DDL as this server does."""
        server = self.server
        return MySqlSchema(
            server_charset=server.charset if server else None,
            skip_unparseable=self.skip_unparseable,
            include_comments=self._comments(),
            lower_case_table_names=server.lower_case_table_names if server else 0,
        )

    def _comments(self) -> bool:
        """Debezium 3.5's MariaDB connector hands its DDL parser include.schema.changes where
        include.schema.comments belongs: on MariaDB comments are kept whenever schema changes are
        emitted (the default); its MySQL connector reads include.schema.comments."""
        return self.include_comments or (self.flavor == "mariadb" and self.include_schema_changes)

    def use(self, schema: MySqlSchema | None) -> None:
        """The model from now on (None: not known yet); the states of the one before are stale."""
        self.schema = schema
        self._states.clear()

    def schema_changed(self) -> None:
        """A DDL changed the model in place: states built before it are stale."""
        self._states.clear()

    def state(self, database: str, table: str) -> TableState | None:
        """The decoding state of a table the model knows (None: it does not)."""
        key = (database, table)
        if key not in self._states:
            assert self.schema is not None
            model = self.schema.table(database, table)
            self._states[key] = None if model is None else TableState(
                model, topics=self.topics, source_schema=self.source_schema, modes=self.modes,
                columns_stage=self.columns, key_spec=self.key_spec)
        return self._states[key]

    def model(self, database: str, table: str) -> Table | None:
        """A captured table's model (never the signal table's), for signals and incremental snapshots."""
        if not self.capture.captured(database, table) or self.capture.is_signal_table(database, table) \
                or self.schema is None:
            return None
        return self.schema.table(database, table)

    def captured_keys(self) -> dict[str, bool]:
        """The captured tables the model knows: {database.table: has a primary key}."""
        if self.schema is None:
            return {}
        return {f"{t.id.catalog}.{t.id.table}": bool(t.primary_key) for t in self.schema.tables()
                if self.model(t.id.catalog or "", t.id.table) is not None}

