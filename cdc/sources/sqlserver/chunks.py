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

import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import date, datetime
from datetime import time as dtime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cdc.core.chunk_reader import ChunkDialect, ChunkTable, Query, Stamp
from cdc.core.errors import SourceError
from cdc.core.incremental import ChunkError
from cdc.core.signal_table import SignalTable
from cdc.sources.sqlserver import queries as q
from cdc.sources.sqlserver.connection import QueryLayer
from cdc.sources.sqlserver.source_info import source_block
from cdc.sources.sqlserver.tables import TableState

if TYPE_CHECKING:
    from cdc.sources.sqlserver.stream import DatabaseStream

log = logging.getLogger(__name__)

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


class SqlServerChunks(ChunkDialect[tuple["DatabaseStream", TableState]]):
    """SQL Server's part of :class:`cdc.core.chunk_reader.KeysetChunkReader`, on the signal database's
    stream connection (chunks are read between polls, where that connection is free): ``TOP (?)``,
    key comparisons spelled out, rows as dicts."""

    errors = (SourceError,)
    missing_column = "captured column"

    def __init__(self, stream: Callable[[], DatabaseStream | None], prefix: str, clock: Callable[[], int]) -> None:
        self._stream = stream
        self.prefix = prefix
        self.clock = clock

    def table(self, name: str) -> ChunkTable[tuple[DatabaseStream, TableState]]:
        stream = self._stream()
        if stream is None:
            raise ChunkError("the signal table's database is not streaming")
        database, _, table_name = name.partition(".")
        if database != stream.database:
            raise ChunkError(f"table {name} is not in database {stream.database}, the signal table's: an "
                             "incremental snapshot reads tables of the database whose change stream carries its "
                             "watermarks")
        builder = stream.builder
        instance = builder.current.get(table_name)
        state = builder.states.get(instance) if instance else None
        if state is None:
            raise ChunkError(f"table {name} does not exist or is not captured")
        return ChunkTable(name, (stream, state), [c.name for c in state.instance.columns],
                          state.instance.index_columns)

    def max_key_query(self, table: tuple[DatabaseStream, TableState], key: Sequence[str],
                      condition: str | None) -> Query:
        stream, state = table
        return q.chunk_bounds(stream.database, state.instance.schema, state.instance.table, list(key), condition), []

    def chunk_query(self, table: tuple[DatabaseStream, TableState], columns: Sequence[str], key: Sequence[str],
                    condition: str | None, after: Sequence[Any] | None, upto: Sequence[Any] | None,
                    limit: int) -> Query:
        stream, state = table
        params: list[Any] = [int(limit)]
        if after is not None:
            params += q.key_params(list(after))
        if upto is not None:
            params += q.key_params(list(upto))
        return q.chunk_rows(stream.database, state.instance.schema, state.instance.table, list(columns), list(key),
                            condition, after is not None, upto is not None), params

    def query(self, query: Query, table: tuple[DatabaseStream, TableState]) -> Sequence[Any]:
        return table[0].conn.query(query[0], tuple(query[1]))

    def state(self, table: tuple[DatabaseStream, TableState]) -> tuple[TableState, Sequence[str]]:
        return table[1], [c.name for c in table[1].instance.columns]

    def stamp(self, table: tuple[DatabaseStream, TableState]) -> tuple[Stamp, dict[str, Any]]:
        stream, state = table
        now = self.clock()
        return (now // 1_000_000, now // 1000, now), source_block(
            self.prefix, stream.database, state.instance.schema, state.instance.table, ts_ns=now,
            snapshot="incremental", commit_lsn=stream.position.commit_lsn)

    def key_value(self, row: Any, index: int, column: str) -> Any:
        return offset_value(row.get(column))

    def error_text(self, exc: Exception) -> str:
        return exc.message if isinstance(exc, SourceError) else str(exc)


class SqlServerSignalTable(SignalTable[QueryLayer]):
    """The signal table's SQL: watermarks on its database's stream connection, ``cdc signal`` on one of
    its own."""

    errors = (SourceError,)

    def __init__(self, table: tuple[str, str, str], watermarks: Callable[[], QueryLayer | None],
                 connect: Callable[[str], QueryLayer]) -> None:
        self.database, self.schema, self.table = table
        self.where = self.label = ".".join(table)
        self._watermarks = watermarks
        self._connect = connect

    def column_names(self, conn: QueryLayer) -> list[str]:
        return [r["name"] for r in conn.query(q.TABLE_COLUMN_NAMES, (f"{q.quote(self.schema)}.{q.quote(self.table)}",))]

    def insert(self, conn: QueryLayer, id_: str, type_: str, data: str) -> None:
        conn.execute(q.insert_signal(self.schema, self.table), (id_, type_, data))

    def watermark_connection(self) -> QueryLayer | None:
        return self._watermarks()

    def connect(self) -> QueryLayer:
        return self._connect(self.database)

    def error_text(self, exc: Exception) -> str:
        return exc.message if isinstance(exc, SourceError) else str(exc)

    def fixes(self) -> tuple[str, str]:
        create = (f"CREATE TABLE {q.quote(self.schema)}.{q.quote(self.table)} (id VARCHAR(42) PRIMARY KEY, "
                  "type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL);")
        return (f"{create} then {q.enable_table_sql(self.database, self.schema, self.table)}",
                f"its columns must be id, type, data, e.g. {create}")
