"""Key-ordered chunks of a MySQL / MariaDB table, and the signal table: the SQL of each, the rest in
cdc.core.chunk_reader and cdc.core.signal_table.

    SELECT cols FROM db.t WHERE (<condition>) AND (k1, k2) > (%s, %s) AND (k1, k2) <= (%s, %s)
    ORDER BY k1, k2 LIMIT n

Columns come from the schema model at the stream's position (the events of a chunk must have
the shape of the events streamed around it). Keys are kept in the offset as JSON: integers as
they are, other types as their text, which MySQL compares back against the column's type.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pymysql

from cdc.core.chunk_reader import ChunkDialect, ChunkTable, Query, Stamp
from cdc.core.envelope import now_ts
from cdc.core.errors import SourceError
from cdc.core.incremental import ChunkError
from cdc.core.schema import Table
from cdc.core.signal_table import SignalTable
from cdc.sources.mysql.connection import ConnectionSettings, translate
from cdc.sources.mysql.snapshot import quote
from cdc.sources.mysql.tables import TableState

log = logging.getLogger(__name__)

def split_name(qualified: str) -> tuple[str, str]:
    database, dot, table = qualified.partition(".")
    if not dot:
        raise SourceError(f"signal.data.collection {qualified!r} must name database.table")
    return database, table


def _offset_value(value: Any) -> Any:
    """A key value as JSON for the offset; MySQL compares the text back against the column."""
    if value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, (Decimal, float, date, datetime, timedelta)):
        return str(value)
    raise ChunkError(f"a primary key of type {type(value).__name__} cannot be kept in the offset "
                     f"(binary keys are not supported by incremental snapshots)")


@dataclass(frozen=True)
class ChunkTables:
    """What reading a captured table while streaming asks of the source (incremental and blocking
    snapshots): the table's model and decoding state at the stream's position, and the source block
    of rows read there."""

    model: Callable[[str, str], Table | None]  # (database, table) -> None: not captured (or the signal table)
    state: Callable[[str, str], TableState | None]
    source_block: Callable[[str, str, int], dict[str, Any]]  # (database, table, ts_ms)


class MySqlChunks(ChunkDialect[tuple[str, str]]):
    """MySQL's part of :class:`cdc.core.chunk_reader.KeysetChunkReader`: row values with ``%s`` marks,
    on a connection of its own (the watermarks go on it too)."""

    errors = (pymysql.MySQLError,)

    def __init__(self, connect: Callable[[], pymysql.connections.Connection], tables: ChunkTables) -> None:
        self._connect = connect
        self.tables = tables
        self._conn: pymysql.connections.Connection | None = None

    def connection(self) -> pymysql.connections.Connection:
        if self._conn is None or not self._conn.open:
            self._conn = self._connect()
        return self._conn

    def close(self) -> None:
        if self._conn is not None and self._conn.open:
            self._conn.close()
        self._conn = None

    def table(self, name: str) -> ChunkTable[tuple[str, str]]:
        database, _, table = name.partition(".")
        model = self.tables.model(database, table)
        if model is None:
            raise ChunkError(f"table {name} does not exist or is not captured")
        return ChunkTable(name, (database, table), [c.name for c in model.columns], model.primary_key)

    def max_key_query(self, table: tuple[str, str], key: Sequence[str], condition: str | None) -> Query:
        where = f" WHERE ({condition})" if condition else ""
        return (f"SELECT {', '.join(quote(k) for k in key)} FROM {quote(table[0])}.{quote(table[1])}{where} "
                f"ORDER BY {', '.join(quote(k) + ' DESC' for k in key)} LIMIT 1"), ()

    def chunk_query(self, table: tuple[str, str], columns: Sequence[str], key: Sequence[str],
                    condition: str | None, after: Sequence[Any] | None, upto: Sequence[Any] | None,
                    limit: int) -> Query:
        keys = f"({', '.join(quote(k) for k in key)})"
        marks = f"({', '.join(['%s'] * len(key))})"
        where: list[str] = [f"({condition})"] if condition else []
        params: list[Any] = []
        if after is not None:
            where.append(f"{keys} > {marks}")
            params += after
        if upto is not None:
            where.append(f"{keys} <= {marks}")
            params += upto
        return (f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table[0])}.{quote(table[1])}"
                f"{' WHERE ' + ' AND '.join(where) if where else ''} ORDER BY {', '.join(quote(k) for k in key)} "
                f"LIMIT {int(limit)}"), params

    def query(self, query: Query, table: tuple[str, str]) -> Sequence[Any]:
        with self.connection().cursor() as cur:
            cur.execute(query[0], tuple(query[1]))
            return list(cur.fetchall())

    def state(self, table: tuple[str, str]) -> tuple[TableState, Sequence[str]]:
        state = self.tables.state(*table)
        assert state is not None
        return state, [c.name for c in state.table.columns]

    def stamp(self, table: tuple[str, str]) -> tuple[Stamp, dict[str, Any]]:
        ts = now_ts()
        return ts, self.tables.source_block(table[0], table[1], ts[0])

    def offset_value(self, value: Any) -> Any:
        return _offset_value(value)

    def error_text(self, exc: Exception) -> str:
        return str(exc.args[-1])


class MySqlSignalTable(SignalTable[pymysql.connections.Connection]):
    """The signal table's SQL: watermarks on the chunk reader's connection, ``cdc signal`` on one of its own
    (the name is split when used: a name without a database fails there, as a SourceError)."""

    errors = (pymysql.MySQLError,)

    def __init__(self, qualified: str, watermarks: Callable[[], pymysql.connections.Connection],
                 settings: ConnectionSettings) -> None:
        self.where = qualified
        self.label = repr(qualified)
        self._watermarks = watermarks
        self._settings = settings

    def column_names(self, conn: pymysql.connections.Connection) -> list[str]:
        database, table = split_name(self.where)
        with conn.cursor() as cur:
            cur.execute("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s "
                        "AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (database, table))
            return [r[0] for r in cur.fetchall()]

    def insert(self, conn: pymysql.connections.Connection, id_: str, type_: str, data: str) -> None:
        database, table = split_name(self.where)
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {quote(database)}.{quote(table)} (id, type, data) VALUES (%s, %s, %s)",
                        (id_, type_, data))

    def watermark_connection(self) -> pymysql.connections.Connection:
        return self._watermarks()

    def connect(self) -> pymysql.connections.Connection:
        return self._settings.connect()

    def send_failed(self, exc: Exception) -> Exception | None:
        assert isinstance(exc, pymysql.MySQLError)
        return translate(exc, self._settings, "writing the signal")

    def error_text(self, exc: Exception) -> str:
        return str(exc.args[-1])

    def fixes(self) -> tuple[str, str]:
        database, table = split_name(self.where)
        create = (f"CREATE TABLE {quote(database)}.{quote(table)} (id varchar(42) PRIMARY KEY, "
                  f"type varchar(32) NOT NULL, data varchar(2048))")
        return create, f"its columns must be id, type, data (text types), e.g. {create}"
