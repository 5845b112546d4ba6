"""Key-ordered chunks of a SQL Server table, and the signal table (signals, watermarks).

    SELECT TOP (?) cols FROM [db].[schema].[table]
    WHERE (<condition>) AND <key> > ? AND <key> <= ? ORDER BY <key>

(a composite key's comparison is spelled out, T-SQL has no row values: see ``queries``). The
signal table (``signal.data.collection`` = ``<database>.<schema>.<table>``, columns id, type,
data) must be CDC-enabled: its change-table rows come back in commit order with the data, which
is what orders the watermarks (INSERTs through the query layer) with the changes around them.
Incremental snapshots read tables of the signal table's database (one change stream orders
both); columns and converters are those of the capture instance in effect, so the ``op: r``
events have the shape of the streamed ones. Keys are kept in the offset as JSON: integers and
strings as they are, other types as their text, which SQL Server converts back to the column's.
"""
from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from datetime import date, datetime
from datetime import time as dtime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cdc.core.envelope import OP_READ
from cdc.core.errors import SourceError
from cdc.core.incremental import ChunkError, TableTask
from cdc.core.records import ChangeEvent
from cdc.core.signals import watermark_data
from cdc.sources.sqlserver import queries as q
from cdc.sources.sqlserver.connection import QueryLayer
from cdc.sources.sqlserver.source_info import source_block
from cdc.sources.sqlserver.tables import TableState

if TYPE_CHECKING:
    from cdc.sources.sqlserver.stream import DatabaseStream

log = logging.getLogger(__name__)

SIGNAL_COLUMNS = ("id", "type", "data")


def create_sql(schema: str, table: str) -> str:
    return (f"CREATE TABLE {q.quote(schema)}.{q.quote(table)} (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, "
            f"data VARCHAR(2048) NULL);")


def split_signal_table(qualified: str, databases: list[str]) -> tuple[str, str, str]:
    """``database.schema.table`` (Debezium's form); ``schema.table`` when one database is captured."""
    parts = qualified.split(".")
    if len(parts) == 2 and len(databases) == 1:
        parts = [databases[0], *parts]
    if len(parts) != 3 or not all(parts):
        raise SourceError(f"signal.data.collection {qualified!r} must name <database>.<schema>.<table>",
                          fix="e.g. signal.data.collection=testDB.dbo.debezium_signal")
    database, schema, table = parts
    if database not in databases:
        raise SourceError(f"signal.data.collection {qualified!r} is in database {database!r}, which is not captured "
                          f"(database.names: {', '.join(databases)})",
                          fix="put the signal table in one of the captured databases")
    return database, schema, table


def check_signal_table(conn: QueryLayer, schema: str, table: str) -> None:
    """The table exists with columns id, type, data; else say how to create it."""
    names = [r["name"] for r in conn.query(q.TABLE_COLUMN_NAMES, (f"{q.quote(schema)}.{q.quote(table)}",))]
    create = create_sql(schema, table)
    if not names:
        raise SourceError(f"signal table {conn.database}.{schema}.{table} (signal.data.collection) does not exist",
                          fix=f"{create} then {q.enable_table_sql(conn.database, schema, table)}")
    missing = [c for c in SIGNAL_COLUMNS if c not in names]
    if missing:
        raise SourceError(f"signal table {conn.database}.{schema}.{table} lacks column(s) {', '.join(missing)}; "
                          f"it has {', '.join(names)}", fix=f"its columns must be id, type, data, e.g. {create}")


def insert_signal(conn: QueryLayer, schema: str, table: str, id_: str, type_: str, data: dict[str, Any]) -> None:
    conn.execute(q.insert_signal(schema, table), (id_, type_, json.dumps(data)))


def offset_value(value: Any) -> Any:
    """A key value as JSON for the offset; SQL Server converts the text back to the column's type."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (Decimal, float, uuid.UUID)):
        return str(value)
    if isinstance(value, (datetime, date, dtime)):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    raise ChunkError(f"a key of type {type(value).__name__} cannot be kept in the offset (binary keys are not "
                     "supported by incremental snapshots; name another unique column as \"surrogate-key\")")


class SqlServerChunkReader:
    """The :class:`cdc.core.incremental.ChunkReader` of SQL Server, on the signal database's stream
    connection (chunks are read between polls, where that connection is free)."""

    def __init__(self, stream: Callable[[], DatabaseStream | None], prefix: str, clock: Callable[[], int]) -> None:
        self._stream = stream
        self.prefix = prefix
        self.clock = clock

    def _target(self, task: TableTask) -> tuple[DatabaseStream, TableState, list[str]]:
        stream = self._stream()
        if stream is None:
            raise ChunkError("the signal table's database is not streaming")
        database, _, table_name = task.table.partition(".")
        if database != stream.database:
            raise ChunkError(f"table {task.table} is not in database {stream.database}, the signal table's: an "
                             "incremental snapshot reads tables of the database whose change stream carries its "
                             "watermarks")
        builder = stream.builder
        instance = builder.current.get(table_name)
        state = builder.states.get(instance) if instance else None
        if state is None:
            raise ChunkError(f"table {task.table} does not exist or is not captured")
        names = [c.name for c in state.instance.columns]
        key = [task.surrogate_key] if task.surrogate_key else list(state.instance.index_columns)
        if not key:
            raise ChunkError(f"table {task.table} has no primary key; name a unique column as \"surrogate-key\" in "
                             "the signal's data")
        missing = [k for k in key if k not in names]
        if missing:
            raise ChunkError(f"table {task.table} has no captured column {', '.join(missing)} (surrogate-key)")
        return stream, state, key

    @staticmethod
    def _query(stream: DatabaseStream, sql: str, params: list[Any], what: str) -> list[dict[str, Any]]:
        try:
            return stream.conn.query(sql, tuple(params))
        except SourceError as exc:
            raise ChunkError(f"{what} failed: {exc.message}") from None

    def bounds(self, task: TableTask) -> tuple[list[str], list[Any] | None]:
        stream, state, key = self._target(task)
        instance = state.instance
        rows = self._query(stream, q.chunk_bounds(stream.database, instance.schema, instance.table, key,
                                                  task.condition), [],
                           f"additional condition {task.condition!r}" if task.condition else "reading its largest key")
        return key, ([offset_value(rows[0][k]) for k in key] if rows else None)

    def read(self, task: TableTask, limit: int) -> list[tuple[list[Any], ChangeEvent]]:
        stream, state, key = self._target(task)
        instance = state.instance
        columns = [c.name for c in instance.columns]
        after, up_to = task.last_key is not None, task.max_key is not None
        params: list[Any] = [int(limit)]
        if after:
            params += q.key_params(list(task.last_key or ()))
        if up_to:
            params += q.key_params(list(task.max_key or ()))
        sql = q.chunk_rows(stream.database, instance.schema, instance.table, columns, key, task.condition, after, up_to)
        rows = self._query(stream, sql, params, "reading a chunk")
        now = self.clock()
        ts = (now // 1_000_000, now // 1000, now)
        shared = source_block(self.prefix, stream.database, instance.schema, instance.table, ts_ns=now,
                              snapshot="incremental", commit_lsn=stream.position.commit_lsn)
        return [([offset_value(values.get(k)) for k in key],
                 state.envelope.event(OP_READ, None, state.row(values), shared, ts=ts)) for values in rows]


class SignalWriter:
    """Watermarks into the signal table, on the signal database's stream connection."""

    def __init__(self, conn: Callable[[], QueryLayer | None], schema: str, table: str) -> None:
        self._conn = conn
        self.schema = schema
        self.table = table

    def watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        suffix = "open" if kind.endswith("open") else "close"
        conn = self._conn()
        if conn is None:
            raise ChunkError("the signal table's database is not streaming")
        try:
            insert_signal(conn, self.schema, self.table, f"{chunk_id}-{suffix}", kind,
                          watermark_data(kind, data))
        except SourceError as exc:
            raise ChunkError(f"cannot write the {suffix} watermark into {conn.database}.{self.schema}.{self.table}: "
                             f"{exc.message}") from None
