"""Spark: the initial snapshot of one SQL Server database in key chunks, read by executors.

    driver     the capture job's maximum LSN; every captured table cut into key ranges (the key of
               every ``chunk_rows``-th row); the stream will start at that LSN
    executors  each reads its range as the table is now, page by page in key order, on its own
               connection

No snapshot can be shared between connections here (as with MySQL), so a chunk may hold a row
changed after the LSN. That change is in the change tables after the LSN, with SQL Server's full
before and after images, and comes after every snapshot row: the target converges to the table.
A key that is not plain (an int or a string) cannot be kept in the plan's JSON: such a table is one
chunk; so is a table without a key.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, TypedDict

from cdc.core.envelope import OP_READ
from cdc.core.errors import SourceError
from cdc.core.records import ChangeEvent
from cdc.sources.sqlserver import catalog
from cdc.sources.sqlserver import queries as q
from cdc.sources.sqlserver.changes import Position
from cdc.sources.sqlserver.connection import QueryLayer
from cdc.sources.sqlserver.lsn import Lsn
from cdc.sources.sqlserver.source_info import source_block
from cdc.sources.sqlserver.tables import CaptureInstance, TableState, plan_tables

log = logging.getLogger(__name__)


class Chunk(TypedDict):
    table: str  # <db>.<schema>.<table>: the events' table id
    key: list[str]
    lower: list[Any] | None  # exclusive; None: from the first row
    upper: list[Any] | None  # inclusive; None: to the last row


def table_chunks(conn: QueryLayer, instance: CaptureInstance, chunk_rows: int) -> list[Chunk]:
    table = instance.data_collection
    key = list(instance.index_columns)
    bounds: list[list[Any]] = []
    if key:
        rows = conn.query(q.key_every(instance.database, instance.schema, instance.table, key), (chunk_rows,))
        bounds = [[row[k] for k in key] for row in rows]
        if not all(isinstance(v, (int, str)) and not isinstance(v, bool) for b in bounds for v in b):
            bounds = []
    edges: list[list[Any] | None] = [None, *bounds, None]
    return [Chunk(table=table, key=key, lower=edges[i], upper=edges[i + 1]) for i in range(len(edges) - 1)]


def chunk_rows(conn: QueryLayer, instance: CaptureInstance, chunk: Chunk, page: int) -> Iterator[list[dict[str, Any]]]:
    """The chunk's rows in pages of ``page`` rows, in key order (keyset paging: each page starts
    after the last key of the one before)."""
    columns = [c.name for c in instance.columns]
    key = chunk["key"]
    if not key:
        yield from conn.batches(q.select_rows(instance.schema, instance.table, columns), (), page)
        return
    last, upper = chunk["lower"], chunk["upper"]
    while True:
        sql = q.chunk_rows(instance.database, instance.schema, instance.table, columns, key, None,
                           last is not None, upper is not None)
        params: list[Any] = [page, *(q.key_params(list(last)) if last is not None else []),
                             *(q.key_params(list(upper)) if upper is not None else [])]
        rows = conn.query(sql, tuple(params))
        if rows:
            yield rows
        if len(rows) < page:
            return
        last = [rows[-1][k] for k in key]


def plan(conn: QueryLayer, instances: list[CaptureInstance], chunk_rows: int, ts_us: int) -> dict[str, Any]:
    """On the driver: the capture job's maximum LSN and every captured table's key chunks; the stream
    starts at that LSN (NULL before any change: the stream then reads them all)."""
    lsn = catalog.max_lsn(conn)
    chunks = [c for table in plan_tables(instances, lsn).values()
              for c in table_chunks(conn, table.current, chunk_rows)]
    log.info("snapshot of database %s in %d chunks, streaming from LSN %s", conn.database, len(chunks), lsn)
    return {"chunks": chunks, "ts_us": ts_us, "lsn": str(lsn),
            "stream_from": {"databases": {conn.database: {**Position(lsn).to_offset(), "snapshot_completed": True}}}}


def chunk_events(conn: QueryLayer, instances: list[CaptureInstance],
                 make_state: Callable[[CaptureInstance], TableState], prefix: str, plan_: dict[str, Any],
                 chunk: Chunk, page: int) -> Iterator[list[ChangeEvent]]:
    """On an executor: the chunk's rows as read events, decoded by the capture instance the stream
    reads at the plan's LSN (``instances``: those of the chunk's table)."""
    database, schema, table = chunk["table"].split(".", 2)
    lsn = Lsn.parse(plan_["lsn"])
    if not instances:
        raise SourceError(f"table {chunk['table']} is no longer captured", fix="start the query again")
    state = make_state(plan_tables(instances, lsn)[f"{schema}.{table}"].current)
    ts_ns = plan_["ts_us"] * 1000
    source = source_block(prefix, database, schema, table, ts_ns=ts_ns, snapshot="true", commit_lsn=lsn)
    ts = (ts_ns // 1_000_000, ts_ns // 1000, ts_ns)
    for rows in chunk_rows(conn, state.instance, chunk, page):
        yield [state.envelope.event(OP_READ, None, state.row(values), dict(source), ts=ts) for values in rows]
