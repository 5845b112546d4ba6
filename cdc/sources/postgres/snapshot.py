"""Reading a table for a snapshot with ``COPY ... TO STDOUT`` (text format).

COPY is the fastest way out of PostgreSQL, and its text format gives each value in the
type's text output, the same form pgoutput sends, so snapshot and stream share converters.
COPY TO only escapes ``\\b \\f \\n \\r \\t \\v \\\\`` and writes NULL as ``\\N``.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import pq, sql

from cdc.core.errors import SourceError
from cdc.core.snapshot_selection import match_columns
from cdc.sources.postgres.connection import lost_connection_retriable

_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape_match(match: re.Match[str]) -> str:
    char = match.group(1)
    return _ESCAPES.get(char, char)


def parse_line(line: str) -> list[str | None]:
    if "\\" not in line:
        return list[str | None](line.split("\t"))  # the common case: no NULL, nothing escaped
    return [
        None if field == "\\N" else (_ESCAPE.sub(_unescape_match, field) if "\\" in field else field)
        for field in line.split("\t")
    ]


def copy_rows(conn: psycopg.Connection, schema: str, table: str, columns: Sequence[str],
              where: str | None = None, batch_rows: int = 10_000, raw: bool = False) -> Iterator[list[Any]]:
    """Rows of ``schema.table`` as lists of text values (None = NULL), in batches; ``raw``: each row
    as its COPY line (bytes without the newline), for the compiled codec.

    Reads at libpq level: the server sends one CopyData message per row, and psycopg's
    ``Copy`` iterator costs several microseconds per message, as much as the rest of a row.
    """
    select = sql.SQL("SELECT {} FROM {}{}").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        sql.Identifier(schema, table),
        sql.SQL(" WHERE " + where) if where else sql.SQL(""),
    )
    return copy_select(conn, select, f"{schema}.{table}", batch_rows, raw)


def override_select(conn: psycopg.Connection, qualified: str, columns: Sequence[str],
                    statement: str) -> sql.Composable:
    """The SELECT of snapshot.select.statement.overrides.<table> as the table's ``columns`` in their order, as
    Debezium reads its result: each column by name (matched without regard to case), one it leaves out
    NULL; a result column the table does not have is an error. Described first (LIMIT 0) inside the
    snapshot's transaction."""
    option = f"snapshot.select.statement.overrides.{qualified}"
    given = sql.SQL(statement)  # the user's SQL, run as given (as Debezium runs it)
    try:
        described = conn.execute(sql.SQL("SELECT * FROM ({}) AS cdc_override LIMIT 0").format(given)).description
    except psycopg.Error as exc:
        raise SourceError(f"{option} cannot be run: {str(exc).strip()}",
                          fix="give a SELECT that runs on its own, e.g. SELECT * FROM "
                              f"{qualified} WHERE ...") from None
    names = [d.name for d in described or ()]
    if names == list(columns):
        return given
    picked = match_columns(names, columns, option)
    return sql.SQL("SELECT {} FROM ({}) AS cdc_override").format(
        sql.SQL(", ").join(sql.Identifier(names[i]) if i is not None else sql.SQL("NULL") for i in picked), given)


def copy_select(conn: psycopg.Connection, select: sql.Composable, label: str,
                batch_rows: int = 10_000, raw: bool = False) -> Iterator[list[Any]]:
    """Rows of any SELECT, through COPY, as :func:`copy_rows` gives them; ``label`` names it in errors.
    A connection lost on the way (a backend terminated, a server restarting) is a retriable error; the
    server's refusals stay psycopg's errors, for the caller to name."""
    with lost_connection_retriable(f"while reading {label}"):
        yield from _copy_select(conn, select, label, batch_rows, raw)


def _copy_select(conn: psycopg.Connection, select: sql.Composable, label: str,
                 batch_rows: int, raw: bool) -> Iterator[list[Any]]:
    query = sql.SQL("COPY ({}) TO STDOUT").format(select).as_bytes(conn)
    pgconn = conn.pgconn
    pgconn.send_query(query)
    result = pgconn.get_result()
    if result is None or result.status != pq.ExecStatus.COPY_OUT:
        message = (result.error_message if result is not None else pgconn.error_message).decode(errors="replace")
        while pgconn.get_result() is not None:
            pass
        raise psycopg.OperationalError(f"COPY of {label} failed: {message.strip()}")
    get_copy_data = pgconn.get_copy_data
    batch: list[Any] = []
    append = batch.append
    while True:
        nbytes, data = get_copy_data(0)
        if nbytes <= 0:
            break
        line = bytes(data)[:-1]  # each message is one row ending in \n
        append(line if raw else parse_line(line.decode()))
        if len(batch) >= batch_rows:
            yield batch
            batch = []
            append = batch.append
    if nbytes == -2:
        raise psycopg.OperationalError(f"COPY of {label} failed: "
                                       f"{pgconn.error_message.decode(errors='replace').strip()}")
    final = pgconn.get_result()
    while pgconn.get_result() is not None:
        pass
    if final is not None and final.status != pq.ExecStatus.COMMAND_OK:
        raise psycopg.OperationalError(f"COPY of {label} failed: "
                                       f"{final.error_message.decode(errors='replace').strip()}")
    if batch:
        yield batch
