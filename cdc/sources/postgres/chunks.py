"""Key-ordered chunks of a PostgreSQL table, and the signal table: the SQL of each, the rest in
cdc.core.chunk_reader and cdc.core.signal_table.

Keys travel as text (the type's output form, as COPY gives it) and go back into SQL cast to the
column's declared type, so any orderable key type works and the offset stays plain JSON:

    SELECT cols FROM t WHERE (<condition>) AND (k1, k2) > ('a'::int, 'b'::text)
                         AND (k1, k2) <= (<max key>) ORDER BY k1, k2 LIMIT n
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from cdc.core.chunk_reader import ChunkDialect, ChunkTable, Query, Stamp, chunk_key
from cdc.core.envelope import now_ts
from cdc.core.incremental import ChunkError
from cdc.core.signal_table import SignalTable
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres.connection import one
from cdc.sources.postgres.snapshot import copy_select
from cdc.sources.postgres.tables import TableState

log = logging.getLogger(__name__)

def split_name(qualified: str) -> tuple[str, str]:
    schema, dot, table = qualified.partition(".")
    return (schema, table) if dot else ("public", qualified)


def check_signal_table(conn: psycopg.Connection, qualified: str) -> None:
    """The signal table must exist with text columns id, type, data."""
    PgSignalTable(qualified, lambda: conn, lambda: conn).check(conn)


def key_sql(columns: Sequence[str]) -> sql.Composable:
    return sql.SQL("({})").format(sql.SQL(", ").join(sql.Identifier(c) for c in columns))


def values_sql(values: Sequence[Any], types: Sequence[str]) -> sql.Composable:
    return sql.SQL("({})").format(sql.SQL(", ").join(
        sql.SQL("{}::{}").format(sql.Literal(v), sql.SQL(t)) for v, t in zip(values, types, strict=True)))


def chunk_select(table: cat.CatalogTable, key: Sequence[str], types: Sequence[str], *, condition: str | None,
                 after: Sequence[Any] | None, upto: Sequence[Any] | None, limit: int) -> sql.Composable:
    where: list[sql.Composable] = []
    if condition:
        where.append(sql.SQL("(" + condition + ")"))
    if after is not None:
        where.append(sql.SQL("{} > {}").format(key_sql(key), values_sql(after, types)))
    if upto is not None:
        where.append(sql.SQL("{} <= {}").format(key_sql(key), values_sql(upto, types)))
    return sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT {}").format(
        sql.SQL(", ").join(sql.Identifier(c.name) for c in table.columns),
        sql.Identifier(table.schema, table.name),
        sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where) if where else sql.SQL(""),
        sql.SQL(", ").join(sql.Identifier(c) for c in key),
        sql.Literal(limit),
    )


def key_of(table: cat.CatalogTable, surrogate: str | None) -> tuple[list[str], list[str], list[int]]:
    """Key columns, their SQL types and their positions; ChunkError when the table has none."""
    names = [c.name for c in table.columns]
    key = chunk_key(ChunkTable(table.qualified, table, names, table.primary_key), surrogate)
    return key, key_types(table, key), [names.index(k) for k in key]


def key_types(table: cat.CatalogTable, key: Sequence[str]) -> list[str]:
    """The key columns' declared types: the values (text) are cast back to them."""
    by_name = {c.name: c for c in table.columns}
    return [by_name[k].type_name for k in key]


@dataclass(frozen=True)
class Visibility:
    """What a read-only chunk's transaction saw: its snapshot, and the WAL position just after it."""

    xmin: int
    xmax: int
    in_progress: frozenset[int]
    wal_lsn: int

    def sees(self, xid: int) -> bool:
        """Whether a transaction's changes are in the chunk (32-bit xids, as pgoutput gives them)."""
        return xid < self.xmin or (xid < self.xmax and xid not in self.in_progress)


# On a standby the WAL position is how far it replayed (its snapshot shows what it replayed).
_VISIBILITY = ("SELECT pg_snapshot_xmin(s)::text, pg_snapshot_xmax(s)::text, ARRAY(SELECT pg_snapshot_xip(s))::text[], "
               "CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END - '0/0' "
               "FROM pg_current_snapshot() s")


class PgChunks(ChunkDialect[cat.CatalogTable]):
    """PostgreSQL's part of :class:`cdc.core.chunk_reader.KeysetChunkReader`: keys as text cast back to
    the column's type, chunks through COPY, READ COMMITTED; with ``read_only`` each chunk inside a
    REPEATABLE READ transaction whose snapshot is kept in :attr:`visibility`."""

    errors = (psycopg.Error,)

    def __init__(self, connect: Callable[[], psycopg.Connection],
                 captured_table: Callable[[str], cat.CatalogTable | None],
                 table_state: Callable[[cat.CatalogTable], TableState],
                 source: Callable[[cat.CatalogTable, int], dict[str, Any]], *, read_only: bool) -> None:
        """``source(table, ts_us)``: the source block of a chunk's events."""
        self._connect = connect
        self._captured_table = captured_table
        self._table_state = table_state
        self._source = source
        self.read_only = read_only
        self._conn: psycopg.Connection | None = None
        self._states: dict[str, tuple[int, TableState]] = {}
        self.visibility: Visibility | None = None

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        return self._conn

    def close(self) -> None:
        if self._conn is not None and not self._conn.closed:
            self._conn.close()
        self._conn = None

    def table(self, name: str) -> ChunkTable[cat.CatalogTable]:
        table = self._captured_table(name)
        if table is None:
            raise ChunkError(f"table {name} does not exist or is not captured")
        return ChunkTable(table.qualified, table, [c.name for c in table.columns], table.primary_key)

    def max_key_query(self, table: cat.CatalogTable, key: Sequence[str], condition: str | None) -> Query:
        where = sql.SQL(" WHERE (" + condition + ")") if condition else sql.SQL("")
        return sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT 1").format(
            # aliased: ORDER BY "id" would otherwise sort the text output column
            sql.SQL(", ").join(sql.SQL("{}::text AS {}").format(sql.Identifier(k), sql.Identifier(f"_cdc_k{i}"))
                               for i, k in enumerate(key)),
            sql.Identifier(table.schema, table.name), where,
            sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(k)) for k in key)), ()

    def chunk_query(self, table: cat.CatalogTable, columns: Sequence[str], key: Sequence[str],
                    condition: str | None, after: Sequence[Any] | None, upto: Sequence[Any] | None,
                    limit: int) -> Query:
        return chunk_select(table, key, key_types(table, key), condition=condition, after=after, upto=upto,
                            limit=limit), ()

    def query(self, query: Query, table: cat.CatalogTable) -> Sequence[Any]:
        return self._connection().execute(query[0]).fetchall()

    def read_chunk(self, query: Query, table: cat.CatalogTable, limit: int) -> Sequence[Any]:
        conn = self._connection()
        if self.read_only:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            xmin, xmax, xip, lsn = one(conn, _VISIBILITY)
            wrap = 1 << 32  # pgoutput's xids are 32 bits
            self.visibility = Visibility(int(xmin) % wrap, int(xmax) % wrap,
                                         frozenset(int(x) % wrap for x in xip or ()), int(lsn))
        rows = [values for batch in copy_select(conn, query[0], table.qualified, batch_rows=limit + 1)
                for values in batch]
        if self.read_only:
            conn.execute("COMMIT")
        return rows

    def state(self, table: cat.CatalogTable) -> tuple[TableState, Sequence[str]]:
        cached = self._states.get(table.qualified)
        if cached is None or cached[0] != id(table):
            cached = (id(table), self._table_state(table))
            self._states[table.qualified] = cached
        return cached[1], [c.name for c in table.columns]

    def stamp(self, table: cat.CatalogTable) -> tuple[Stamp, dict[str, Any]]:
        ts = now_ts()
        return ts, self._source(table, ts[1])

    def error_text(self, exc: Exception) -> str:
        return str(exc).strip()


class PgSignalTable(SignalTable[psycopg.Connection]):
    """The signal table's SQL: watermarks on the source's connection, ``cdc signal`` on one of its own."""

    errors = (psycopg.Error,)

    def __init__(self, qualified: str, watermarks: Callable[[], psycopg.Connection],
                 connect: Callable[[], psycopg.Connection]) -> None:
        self.where = qualified
        self.label = repr(qualified)
        self.schema, self.name = split_name(qualified)
        self._watermarks = watermarks
        self._connect = connect

    def column_names(self, conn: psycopg.Connection) -> list[str]:
        rows = conn.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            (self.schema, self.name)).fetchall()
        return [r[0] for r in rows]

    def insert(self, conn: psycopg.Connection, id_: str, type_: str, data: str) -> None:
        statement = sql.SQL("INSERT INTO {} (id, type, data) VALUES (%s, %s, %s)").format(
            sql.Identifier(self.schema, self.name))
        conn.execute(statement, (id_, type_, data))

    def watermark_connection(self) -> psycopg.Connection:
        return self._watermarks()

    def connect(self) -> psycopg.Connection:
        return self._connect()

    def error_text(self, exc: Exception) -> str:
        return str(exc).strip()

    def fixes(self) -> tuple[str, str]:
        create = (f"CREATE TABLE {self.schema}.{self.name} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, "
                  f"data varchar(2048))")
        return create, f"its first three columns must be id, type, data (text types), e.g. {create}"
