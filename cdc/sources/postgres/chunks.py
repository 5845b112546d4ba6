"""Key-ordered chunks of a PostgreSQL table, and the signal table (watermarks, signals).

Keys travel as text (the type's output form, as COPY gives it) and go back into SQL cast to the
column's declared type, so any orderable key type works and the offset stays plain JSON:

    SELECT cols FROM t WHERE (<condition>) AND (k1, k2) > ('a'::int, 'b'::text)
                         AND (k1, k2) <= (<max key>) ORDER BY k1, k2 LIMIT n
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from cdc.core.envelope import OP_READ, now_ts
from cdc.core.errors import SourceError
from cdc.core.incremental import ChunkError, TableTask
from cdc.core.records import ChangeEvent
from cdc.core.signals import watermark_data
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres.connection import one
from cdc.sources.postgres.snapshot import copy_select
from cdc.sources.postgres.tables import TableState

log = logging.getLogger(__name__)

SIGNAL_COLUMNS = ("id", "type", "data")


def split_name(qualified: str) -> tuple[str, str]:
    schema, dot, table = qualified.partition(".")
    return (schema, table) if dot else ("public", qualified)


def check_signal_table(conn: psycopg.Connection, qualified: str) -> None:
    """The signal table must exist with text columns id, type, data."""
    schema, table = split_name(qualified)
    rows = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (schema, table)).fetchall()
    create = (f"CREATE TABLE {schema}.{table} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, "
              f"data varchar(2048))")
    if not rows:
        raise SourceError(f"signal table {qualified!r} (signal.data.collection) does not exist", fix=create)
    names = [r[0] for r in rows]
    missing = [c for c in SIGNAL_COLUMNS if c not in names]
    if missing:
        raise SourceError(
            f"signal table {qualified!r} lacks column(s) {', '.join(missing)}; it has {', '.join(names)}",
            fix=f"its first three columns must be id, type, data (text types), e.g. {create}")


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
    key = [surrogate] if surrogate else list(table.primary_key)
    if not key:
        raise ChunkError(f"table {table.qualified} has no primary key; name a unique column as "
                         f"\"surrogate-key\" in the signal's data")
    missing = [k for k in key if k not in names]
    if missing:
        raise ChunkError(f"table {table.qualified} has no column {', '.join(missing)} (surrogate-key)")
    by_name = {c.name: c for c in table.columns}
    return key, [by_name[k].type_name for k in key], [names.index(k) for k in key]


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


class PgChunkReader:
    """The :class:`cdc.core.incremental.ChunkReader` of PostgreSQL: one query a chunk, READ COMMITTED;
    with ``read_only`` inside a REPEATABLE READ transaction whose snapshot is kept in :attr:`visibility`."""

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

    def _table(self, name: str) -> cat.CatalogTable:
        table = self._captured_table(name)
        if table is None:
            raise ChunkError(f"table {name} does not exist or is not captured")
        return table

    def bounds(self, task: TableTask) -> tuple[list[str], list[Any] | None]:
        table = self._table(task.table)
        key, _, _ = key_of(table, task.surrogate_key)
        where = sql.SQL(" WHERE (" + task.condition + ")") if task.condition else sql.SQL("")
        query = sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT 1").format(
            # aliased: ORDER BY "id" would otherwise sort the text output column
            sql.SQL(", ").join(sql.SQL("{}::text AS {}").format(sql.Identifier(k), sql.Identifier(f"_cdc_k{i}"))
                               for i, k in enumerate(key)),
            sql.Identifier(table.schema, table.name), where,
            sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(k)) for k in key))
        try:
            row = self._connection().execute(query).fetchone()
        except psycopg.Error as exc:
            self.close()
            what = f"additional condition {task.condition!r}" if task.condition else "reading its largest key"
            raise ChunkError(f"{what} failed: {str(exc).strip()}") from None
        return key, (list(row) if row is not None else None)

    def read(self, task: TableTask, limit: int) -> list[tuple[list[Any], ChangeEvent]]:
        table = self._table(task.table)
        key, types, positions = key_of(table, task.surrogate_key)
        state = self._state(table)
        select = chunk_select(table, key, types, condition=task.condition, after=task.last_key,
                              upto=task.max_key, limit=limit)
        out: list[tuple[list[Any], ChangeEvent]] = []
        conn = self._connection()
        try:
            if self.read_only:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                xmin, xmax, xip, lsn = one(conn, _VISIBILITY)
                wrap = 1 << 32  # pgoutput's xids are 32 bits
                self.visibility = Visibility(int(xmin) % wrap, int(xmax) % wrap,
                                             frozenset(int(x) % wrap for x in xip or ()), int(lsn))
            batches = list(copy_select(conn, select, table.qualified, batch_rows=limit + 1))
            if self.read_only:
                conn.execute("COMMIT")
        except psycopg.Error as exc:
            self.close()
            raise ChunkError(f"reading a chunk failed: {str(exc).strip()}") from None
        ts = now_ts()
        shared = self._source(table, ts[1])
        for rows in batches:
            for values in rows:
                event = state.envelope.event(OP_READ, None, state.row(values), shared, ts=ts)
                out.append(([values[i] for i in positions], event))
        return out

    def _state(self, table: cat.CatalogTable) -> TableState:
        cached = self._states.get(table.qualified)
        if cached is None or cached[0] != id(table):
            cached = (id(table), self._table_state(table))
            self._states[table.qualified] = cached
        return cached[1]


class SignalTable:
    """Writes to the signal table: watermarks, and signals sent with ``cdc signal``."""

    def __init__(self, connect: Callable[[], psycopg.Connection], qualified: str) -> None:
        self._connect = connect
        self.qualified = qualified
        self.schema, self.name = split_name(qualified)

    def insert(self, id_: str, type_: str, data: dict[str, Any]) -> None:
        statement = sql.SQL("INSERT INTO {} (id, type, data) VALUES (%s, %s, %s)").format(
            sql.Identifier(self.schema, self.name))
        self._connect().execute(statement, (id_, type_, json.dumps(data)))

    def watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        suffix = "open" if kind.endswith("open") else "close"
        try:
            self.insert(f"{chunk_id}-{suffix}", kind, watermark_data(kind, data))
        except psycopg.Error as exc:
            raise ChunkError(f"cannot write the {suffix} watermark into {self.qualified}: {str(exc).strip()}") from None
