"""Reading a table for a snapshot with ``COPY ... TO STDOUT`` (text format).

COPY is the fastest way out of PostgreSQL, and its text format gives each value in the
type's text output, the same form pgoutput sends, so snapshot and stream share converters.
COPY TO only escapes ``\\b \\f \\n \\r \\t \\v \\\\`` and writes NULL as ``\\N``.
"""
from __future__ import annotations

import re
from typing import Iterator, Sequence

import psycopg
from psycopg import sql

_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape_match(match: re.Match[str]) -> str:
    char = match.group(1)
    return _ESCAPES.get(char, char)


def parse_line(line: str) -> list[str | None]:
    if "\\" not in line:
        return line.split("\t")  # the common case: no NULL, nothing escaped
    return [
        None if field == "\\N" else (_ESCAPE.sub(_unescape_match, field) if "\\" in field else field)
        for field in line.split("\t")
    ]


def copy_rows(conn: psycopg.Connection, schema: str, table: str, columns: Sequence[str],
              where: str | None = None, batch_rows: int = 10_000) -> Iterator[list[list[str | None]]]:
    """Rows of ``schema.table`` as lists of text values (None = NULL), in batches."""
    query = sql.SQL("COPY (SELECT {} FROM {}{}) TO STDOUT").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        sql.Identifier(schema, table),
        sql.SQL(" WHERE " + where) if where else sql.SQL(""),
    )
    tail = ""
    batch: list[list[str | None]] = []
    with conn.cursor().copy(query) as copy:
        for block in copy:
            text = tail + bytes(block).decode("utf-8")
            lines = text.split("\n")
            tail = lines.pop()
            batch.extend(parse_line(line) for line in lines)
            if len(batch) >= batch_rows:
                yield batch
                batch = []
    if tail:
        batch.append(parse_line(tail))
    if batch:
        yield batch
