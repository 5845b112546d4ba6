"""The initial snapshot cut into key-range chunks that many workers read at once (Spark's executors).

    driver    create the slot exporting its snapshot: the consistent point C, where streaming starts;
              inside that snapshot, cut each captured table into chunks of about N rows by its key
              (the bounds picked from a sample of its pages, or by numbering every key: chunk_bounds)
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


# Keys and pages sampled per chunk wanted (whichever asks more): its bounds are picked among them. A page's
# keys can lie together in key order (a text key of a sequence, a composite key led by a tenant), so the
# pages are what makes the sample even; chunks stay whole whatever the sample (every row in one chunk),
# only their sizes depend on it.
SAMPLE_KEYS_PER_CHUNK = 1_000
SAMPLE_PAGES_PER_CHUNK = 250  # measured: 50 left a 1,000,000-row serial table's 4 chunks 195,000-333,000 rows
MAX_SAMPLE_PERCENT = 20.0  # a table of many chunks: their sizes vary more, and Spark's tasks even that out


def chunk_bounds(conn: psycopg.Connection, table: cat.CatalogTable, chunk_rows: int) -> list[list[str]]:
    """The keys (as text) that start the 2nd, 3rd, ... chunk of about ``chunk_rows`` rows each, in key
    order; a table without a key is one chunk. Picked from a sample of the table's pages when its size is
    known (statistics, scaled to its pages now), without reading the whole table; else (never analyzed,
    or small) by numbering every key, which is exact but reads it all (0.5 s per 1,000,000 rows)."""
    if not table.primary_key:
        return []
    estimate, pages = _estimated_rows(conn, table)
    if estimate is not None and estimate > chunk_rows:
        bounds = _sampled_bounds(conn, table, chunk_rows, estimate, pages)
        if bounds is not None:
            return bounds
    return _numbered_bounds(conn, table, chunk_rows)


def _estimated_rows(conn: psycopg.Connection, table: cat.CatalogTable) -> tuple[int | None, int]:
    """The rows the table holds by its statistics, scaled to its size now as PostgreSQL's planner does
    (None when it was never analyzed), and its pages now."""
    row = conn.execute(
        "SELECT c.reltuples, c.relpages, pg_relation_size(c.oid) / current_setting('block_size')::int "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s",
        (table.schema, table.name)).fetchone()
    if row is None:
        return None, 0
    pages = max(int(row[2]), 1)
    if row[0] is None or row[0] <= 0 or not row[1]:
        return None, pages
    return int(row[0] / row[1] * pages), pages


def _sampled_bounds(conn: psycopg.Connection, table: cat.CatalogTable, chunk_rows: int,
                    estimate: int, pages: int) -> list[list[str]] | None:
    chunks = max(round(estimate / chunk_rows), 2)
    percent = min(MAX_SAMPLE_PERCENT,
                  100.0 * chunks * max(SAMPLE_KEYS_PER_CHUNK / estimate, SAMPLE_PAGES_PER_CHUNK / pages))
    keys, as_text = _key_lists(table)
    # The server sorts the sample and hands over only the keys that start a chunk (the k-th of every
    # sampled/chunks keys), with the sample's size: a 1,000,000-row table's sample is about 77,000 keys,
    # 0.04-0.08 s more when they all came to Python.
    rows = conn.execute(sql.SQL(
        "SELECT {as_text}, n FROM (SELECT {keys}, row_number() OVER (ORDER BY {order}) - 1 AS i, count(*) OVER () AS n "
        "FROM (SELECT {keys} FROM {table} TABLESAMPLE SYSTEM ({percent}) REPEATABLE (0)) s) numbered "
        "WHERE i > 0 AND i * {chunks} / n <> (i - 1) * {chunks} / n ORDER BY i").format(
        as_text=as_text, keys=keys, table=sql.Identifier(table.schema, table.name), percent=sql.Literal(percent),
        order=sql.SQL(", ").join(sql.Identifier("s", k) for k in table.primary_key),
        chunks=sql.Literal(chunks))).fetchall()
    sampled = int(rows[0][-1]) if rows else 0
    if sampled < chunks * 10:  # too few pages sampled to cut by (statistics far off): number every key
        return None
    log.info("%s: about %d rows (statistics), cut into %d chunks by a sample of %d keys (%.2f%% of its pages)",
             table.qualified, estimate, chunks, sampled, percent)
    return [list(row[:-1]) for row in rows]


def _key_lists(table: cat.CatalogTable) -> tuple[sql.Composable, sql.Composable]:
    """The key columns, and the same as text (bounds travel as text in the plan)."""
    return (sql.SQL(", ").join(sql.Identifier(k) for k in table.primary_key),
            sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(k)) for k in table.primary_key))


def _numbered_bounds(conn: psycopg.Connection, table: cat.CatalogTable, chunk_rows: int) -> list[list[str]]:
    keys, as_text = _key_lists(table)
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
