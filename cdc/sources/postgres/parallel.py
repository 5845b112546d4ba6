"""The initial snapshot cut into key-range chunks that many workers read at once (Spark's executors).

    driver    create the slot exporting its snapshot: the consistent point C, where streaming starts;
              inside that snapshot, cut each captured table into chunks of about N rows by its key
    worker    one chunk, one connection: BEGIN REPEATABLE READ; SET TRANSACTION SNAPSHOT (the driver
              holds it open until every chunk is read); SELECT ... WHERE key >= lower AND key < upper

Every chunk is read in the one snapshot, so together they are the tables at C, and the stream from
C brings everything after. After a restart the exported snapshot is gone: the chunks are read as the
tables are now, and since the stream still starts at C, applying its events after the chunks ends
at the same rows (the argument of snapshot.resumable).

A plan is plain JSON, so it can live in a Spark offset: a replayed micro-batch reads the same chunks.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from cdc.sources.postgres import catalog as cat

log = logging.getLogger(__name__)

Chunk = dict[str, Any]  # {"table": "schema.name", "lower": [text, ...] | None, "upper": [...] | None}


def chunk_bounds(conn: psycopg.Connection, table: cat.CatalogTable, chunk_rows: int) -> list[list[str]]:
    """The keys (as text) that start the 2nd, 3rd, ... chunk of about ``chunk_rows`` rows each, in key
    order; a table without a key is one chunk."""
    if not table.primary_key:
        return []
    keys = sql.SQL(", ").join(sql.Identifier(k) for k in table.primary_key)
    as_text = sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(k)) for k in table.primary_key)
    query = sql.SQL(
        "SELECT {as_text} FROM (SELECT {keys}, row_number() OVER (ORDER BY {keys}) AS rn FROM {table}) numbered "
        "WHERE rn % {every} = 1 AND rn > 1 ORDER BY rn"  # (not by the keys: here they are text)
    ).format(as_text=as_text, keys=keys, table=sql.Identifier(table.schema, table.name),
             every=sql.Literal(chunk_rows))
    return [list(row) for row in conn.execute(query).fetchall()]


def table_chunks(table: cat.CatalogTable, bounds: list[list[str]]) -> list[Chunk]:
    edges: list[list[str] | None] = [None, *bounds, None]
    return [{"table": table.qualified, "lower": lower, "upper": upper}
            for lower, upper in zip(edges[:-1], edges[1:], strict=True)]


def key_range(table: cat.CatalogTable, chunk: Chunk) -> sql.Composable:
    """``(k1, k2) >= (lower) AND (k1, k2) < (upper)``, the bounds cast to the key columns' types."""
    types = {c.name: c.type_name for c in table.columns}
    keys = sql.SQL("({})").format(sql.SQL(", ").join(sql.Identifier(k) for k in table.primary_key))

    def bound(values: Sequence[str]) -> sql.Composable:
        return sql.SQL("({})").format(sql.SQL(", ").join(
            sql.SQL("{}::{}").format(sql.Literal(v), sql.SQL(types[k])) for k, v in zip(table.primary_key, values,
                                                                                      strict=True)))
    parts = []
    if chunk.get("lower") is not None:
        parts.append(sql.SQL("{} >= {}").format(keys, bound(chunk["lower"])))
    if chunk.get("upper") is not None:
        parts.append(sql.SQL("{} < {}").format(keys, bound(chunk["upper"])))
    return sql.SQL(" AND ").join(parts) if parts else sql.SQL("true")


def select_chunk(table: cat.CatalogTable, chunk: Chunk, columns: Sequence[sql.Composable]) -> sql.Composable:
    return sql.SQL("SELECT {} FROM {} WHERE {}").format(
        sql.SQL(", ").join(columns), sql.Identifier(table.schema, table.name), key_range(table, chunk))


@contextmanager
def in_snapshot(conn: psycopg.Connection, snapshot: str | None) -> Iterator[bool]:
    """A read-only repeatable-read transaction in the exported ``snapshot`` when it still exists;
    yields whether it does (else the transaction sees the tables as they are now)."""
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    imported = False
    if snapshot:
        try:
            conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
            imported = True
        except psycopg.Error as exc:  # the driver released it (a restart): read what is there now
            log.info("snapshot %s is gone (%s): reading the chunk as the table is now", snapshot,
                     str(exc).strip().splitlines()[0])
            conn.execute("ROLLBACK")
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        yield imported
    finally:
        conn.execute("ROLLBACK")
