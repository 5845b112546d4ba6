"""The initial snapshot in key chunks that Spark's executors read in parallel (MySQL / MariaDB).

MySQL has no snapshot another connection can join (PostgreSQL's exported snapshot), so the chunks
are read as the tables are *now*, and the stream starts at the binlog position where the schema
was read, before any chunk: every row changed after that position comes again from the binlog,
after the snapshot rows (``_position`` 0), as a full after image (``binlog_row_image=FULL``) or a
delete. Applying the events in order therefore ends at the tables' state, whatever a chunk saw.

A chunk is a key range of one table: ``(key) > lower AND (key) <= upper`` on its primary key,
bounds from ``ROW_NUMBER()`` every ``chunk_rows`` rows in key order (MySQL 8, MariaDB 10.2+). A
table without a primary key, or whose key values are not numbers or strings (an offset must be
JSON), is one chunk.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypedDict

import pymysql

from cdc.core.envelope import OP_READ, now_ts
from cdc.core.records import ChangeEvent
from cdc.core.schema import Table
from cdc.sources.mysql.position import position_key
from cdc.sources.mysql.snapshot import quote, select_rows
from cdc.sources.mysql.source_info import source_block
from cdc.sources.mysql.tables import TableState


class Chunk(TypedDict):
    table: str  # database.table
    key: list[str]
    lower: list[Any] | None  # exclusive; None: from the first row
    upper: list[Any] | None  # inclusive; None: to the last row


def chunk_bounds(conn: pymysql.connections.Connection, database: str, table: str, key: Sequence[str],
                 chunk_rows: int) -> list[list[Any]]:
    """The key of every ``chunk_rows``-th row in key order."""
    columns = ", ".join(quote(k) for k in key)
    with conn.cursor() as cur:
        cur.execute(f"SELECT {columns} FROM (SELECT {columns}, ROW_NUMBER() OVER (ORDER BY {columns}) AS cdc_rn "
                    f"FROM {quote(database)}.{quote(table)}) numbered WHERE MOD(cdc_rn, %s) = 0 ORDER BY {columns}",
                    (chunk_rows,))
        return [list(row) for row in cur.fetchall()]


def table_chunks(database: str, table: str, key: Sequence[str], bounds: list[list[Any]]) -> list[Chunk]:
    edges: list[list[Any] | None] = [None, *bounds, None]
    return [Chunk(table=f"{database}.{table}", key=list(key), lower=edges[i], upper=edges[i + 1])
            for i in range(len(edges) - 1)]


def plain_values(rows: list[list[Any]]) -> bool:
    return all(isinstance(v, (int, str)) and not isinstance(v, bool) for row in rows for v in row)


def condition(conn: pymysql.connections.Connection, chunk: Chunk) -> str | None:
    """The chunk's WHERE condition (row comparison on the key), values escaped by the driver."""
    columns = "(" + ", ".join(quote(k) for k in chunk["key"]) + ")"
    parts = []
    for bound, op in ((chunk["lower"], ">"), (chunk["upper"], "<=")):
        if bound is not None:
            parts.append(f"{columns} {op} (" + ", ".join(conn.escape(v) for v in bound) + ")")
    return " AND ".join(parts) or None


def plan_chunks(conn: pymysql.connections.Connection, tables: Sequence[tuple[str, str]],
                model: Callable[[str, str], Table | None], chunk_rows: int) -> list[Chunk]:
    """Every table (database, table) cut into key ranges of ``chunk_rows`` rows; one chunk for a table
    without a primary key or with keys an offset cannot hold."""
    chunks: list[Chunk] = []
    for database, table in sorted(tables):
        found = model(database, table)
        key = list(found.primary_key) if found is not None else []
        bounds = chunk_bounds(conn, database, table, key, chunk_rows) if key else []
        if not plain_values(bounds):
            bounds = []
        chunks += table_chunks(database, table, key, bounds)
    return chunks


def chunk_events(conn: pymysql.connections.Connection, plan: dict[str, Any], chunk: Chunk, state: TableState, *,
                 flavor: str, prefix: str, fetch_size: int) -> Iterator[list[ChangeEvent]]:
    """The chunk's rows as read events, at the plan's binlog position (before every streamed change)."""
    database, _, table = chunk["table"].partition(".")
    file_index = position_key(plan["file"], 0)[0]
    shared = source_block(flavor, prefix, database, table, ts_ms=plan["ts_us"] // 1000, server_id=0,
                          file=plan["file"], pos=plan["pos"], snapshot="true")
    for rows in select_rows(conn, database, table, fetch_size, condition(conn, chunk)):
        ts = now_ts()
        yield [state.envelope.event(OP_READ, None, row, dict(shared), position=(file_index, plan["pos"], 0, 0), ts=ts)
               for row in state.rows(rows)]
