"""Key-ordered chunks of a MySQL / MariaDB table, and the signal table (watermarks, signals).

    SELECT cols FROM db.t WHERE (<condition>) AND (k1, k2) > (%s, %s) AND (k1, k2) <= (%s, %s)
    ORDER BY k1, k2 LIMIT n

Columns come from the schema model at the stream's position (the events of a chunk must have
the shape of the events streamed around it). Keys are kept in the offset as JSON: integers as
they are, other types as their text, which MySQL compares back against the column's type.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pymysql

from cdc.core.envelope import OP_READ, now_ts
from cdc.core.errors import SourceError
from cdc.core.incremental import ChunkError, TableTask
from cdc.core.records import ChangeEvent
from cdc.core.schema import Table
from cdc.core.signals import watermark_data
from cdc.sources.mysql.snapshot import quote
from cdc.sources.mysql.tables import TableState

log = logging.getLogger(__name__)

SIGNAL_COLUMNS = ("id", "type", "data")


def split_name(qualified: str) -> tuple[str, str]:
    database, dot, table = qualified.partition(".")
    if not dot:
        raise SourceError(f"signal.data.collection {qualified!r} must name database.table")
    return database, table


def check_signal_table(conn: pymysql.connections.Connection, qualified: str) -> None:
    database, table = split_name(qualified)
    create = (f"CREATE TABLE {quote(database)}.{quote(table)} (id varchar(42) PRIMARY KEY, "
              f"type varchar(32) NOT NULL, data varchar(2048))")
    with conn.cursor() as cur:
        cur.execute("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                    "ORDER BY ORDINAL_POSITION", (database, table))
        names = [r[0] for r in cur.fetchall()]
    if not names:
        raise SourceError(f"signal table {qualified!r} (signal.data.collection) does not exist", fix=create)
    missing = [c for c in SIGNAL_COLUMNS if c not in names]
    if missing:
        raise SourceError(f"signal table {qualified!r} lacks column(s) {', '.join(missing)}; it has {', '.join(names)}",
                          fix=f"its columns must be id, type, data (text types), e.g. {create}")


def insert_signal(conn: pymysql.connections.Connection, qualified: str, id_: str, type_: str,
                  data: dict[str, Any]) -> None:
    database, table = split_name(qualified)
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {quote(database)}.{quote(table)} (id, type, data) VALUES (%s, %s, %s)",
                    (id_, type_, json.dumps(data)))


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


class MySqlChunkReader:
    """The :class:`cdc.core.incremental.ChunkReader` of MySQL / MariaDB (one query a chunk)."""

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

    def _key(self, task: TableTask) -> tuple[str, str, list[str]]:
        database, _, table = task.table.partition(".")
        model = self.tables.model(database, table)
        if model is None:
            raise ChunkError(f"table {task.table} does not exist or is not captured")
        names = [c.name for c in model.columns]
        key = [task.surrogate_key] if task.surrogate_key else list(model.primary_key)
        if not key:
            raise ChunkError(f"table {task.table} has no primary key; name a unique column as "
                             "\"surrogate-key\" in the signal's data")
        missing = [k for k in key if k not in names]
        if missing:
            raise ChunkError(f"table {task.table} has no column {', '.join(missing)} (surrogate-key)")
        return database, table, key

    def _query(self, sql: str, params: tuple[Any, ...], what: str) -> list[tuple[Any, ...]]:
        try:
            with self.connection().cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())
        except pymysql.MySQLError as exc:
            self.close()
            raise ChunkError(f"{what} failed: {exc.args[-1]}") from None

    def bounds(self, task: TableTask) -> tuple[list[str], list[Any] | None]:
        database, table, key = self._key(task)
        where = f" WHERE ({task.condition})" if task.condition else ""
        rows = self._query(
            f"SELECT {', '.join(quote(k) for k in key)} FROM {quote(database)}.{quote(table)}{where} "
            f"ORDER BY {', '.join(quote(k) + ' DESC' for k in key)} LIMIT 1", (),
            f"additional condition {task.condition!r}" if task.condition else "reading its largest key")
        return key, ([_offset_value(v) for v in rows[0]] if rows else None)

    def read(self, task: TableTask, limit: int) -> list[tuple[list[Any], ChangeEvent]]:
        database, table, key = self._key(task)
        state = self.tables.state(database, table)
        assert state is not None
        columns = [c.name for c in state.table.columns]
        positions = [columns.index(k) for k in key]
        keys = f"({', '.join(quote(k) for k in key)})"
        marks = f"({', '.join(['%s'] * len(key))})"
        where: list[str] = [f"({task.condition})"] if task.condition else []
        params: list[Any] = []
        if task.last_key is not None:
            where.append(f"{keys} > {marks}")
            params += task.last_key
        if task.max_key is not None:
            where.append(f"{keys} <= {marks}")
            params += task.max_key
        sql = (f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(database)}.{quote(table)}"
               f"{' WHERE ' + ' AND '.join(where) if where else ''} ORDER BY {', '.join(quote(k) for k in key)} "
               f"LIMIT {int(limit)}")
        rows = self._query(sql, tuple(params), "reading a chunk")
        ts = now_ts()
        shared = self.tables.source_block(database, table, ts[0])
        return [([_offset_value(values[i]) for i in positions],
                 state.envelope.event(OP_READ, None, state.row(values), shared, ts=ts)) for values in rows]


class SignalWriter:
    """Watermarks into the signal table, on the chunk reader's connection."""

    def __init__(self, connection: Callable[[], pymysql.connections.Connection], qualified: str) -> None:
        self._connection = connection
        self.qualified = qualified

    def watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        suffix = "open" if kind.endswith("open") else "close"
        try:
            insert_signal(self._connection(), self.qualified, f"{chunk_id}-{suffix}", kind,
                          watermark_data(kind, data))
        except pymysql.MySQLError as exc:
            raise ChunkError(f"cannot write the {suffix} watermark into {self.qualified}: {exc.args[-1]}") from None
