"""The tables of an initial snapshot as the core runner reads them (cdc.core.snapshot_runner): each
table's rows as :class:`RowBatch` es, read by COPY through the compiled codec where it can.

    whole tables     COPY of each table inside the slot's exported snapshot (a table of
                     snapshot.select.statement.overrides: COPY of its SELECT, as the table's columns)
    resumable        (snapshot.resumable) SELECT ... WHERE key > last ORDER BY key LIMIT n+1, each
                     chunk's batch with the progress in its offset: {"lsn": the consistent point,
                     "snapshot_progress": {"tables": [this table and those after], "last_key": [...]}}

A resumable snapshot's first run reads every chunk inside the slot's exported snapshot. After a restart
that snapshot is gone: the chunks left are read as they are now, and the stream, which starts at the
slot's consistent point, brings every change since, so applying the events in order still ends at the
table's state. A table without a primary key, or read by its override SELECT, is read whole (and again
whole if the process stops before it ends).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg

from cdc.core.envelope import now_ts
from cdc.core.snapshot_runner import RowBatch, SnapshotTable
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import chunks
from cdc.sources.postgres.native_rows import RowEncoder, encoder_for
from cdc.sources.postgres.snapshot import copy_rows, copy_select, override_select, parse_line
from cdc.sources.postgres.tables import TableState

log = logging.getLogger(__name__)

# (table, ts_us) -> the source block of a batch's events
SourceOf = Callable[[cat.CatalogTable, int], dict[str, Any]]


def row_batch(rows: Sequence[Any], state: TableState, native: RowEncoder | None,
              source: Callable[[int], dict[str, Any]], position: tuple[int, ...], *, encode: bool,
              offset: dict[str, Any] | None = None, ends_table: bool = False) -> RowBatch:
    """Rows as they came from COPY (lines, with ``native``); with ``encode`` the codec encodes the rows
    between the batch's first and last in one call (those two stay events: the marks may flag them).
    ``source(ts_us)``: the source block the batch's events share."""
    row: Callable[[Any], Any] = native.copy_row if native is not None else state.row
    ts = now_ts()
    middle = native.copy_batch(list(rows[1:-1])) if native is not None and encode and len(rows) > 2 else None
    if middle is not None:
        return RowBatch([row(rows[0]), row(rows[-1])], source(ts[1]), position, ts, middle=middle, offset=offset,
                        ends_table=ends_table)
    return RowBatch([row(values) for values in rows], source(ts[1]), position, ts, offset=offset,
                    ends_table=ends_table)


def whole_table(conn: psycopg.Connection, table: cat.CatalogTable, state: TableState, *, lsn: int,
                source: Callable[[int], dict[str, Any]], native: bool, encode: bool, fetch_size: int,
                estimated: int | None, override: str | None = None) -> SnapshotTable:
    """One table of the initial snapshot, read by COPY (``native``: through the compiled codec); ``override``:
    the SELECT it is read with instead of every row (snapshot.select.statement.overrides)."""
    names = [c.name for c in table.columns]

    def batches() -> Iterator[RowBatch]:
        encoder = encoder_for(state, len(names)) if native else None
        for rows in table_rows(conn, table, override, batch_rows=fetch_size, raw=encoder is not None):
            yield row_batch(rows, state, encoder, source, (lsn, 0), encode=encode)

    return SnapshotTable(state.envelope, batches, lambda: estimated, source(now_ts()[1]), (lsn, 0, 0))


def table_rows(conn: psycopg.Connection, table: cat.CatalogTable, override: str | None, *, batch_rows: int,
               raw: bool) -> Iterator[list[Any]]:
    """Every row of the table, or those of its override SELECT (as the table's columns), through COPY."""
    names = [c.name for c in table.columns]
    if override is None:
        return copy_rows(conn, table.schema, table.name, names, batch_rows=batch_rows, raw=raw)
    log.info("snapshot of %s by its SELECT (snapshot.select.statement.overrides): %s", table.qualified, override)
    return copy_select(conn, override_select(conn, table.qualified, names, override), table.qualified,
                       batch_rows=batch_rows, raw=raw)


def tables_left(ordered: list[cat.CatalogTable], progress: dict[str, Any] | None
                ) -> tuple[list[cat.CatalogTable], list[Any] | None]:
    """The tables a resumable snapshot still reads, in order, and the last key read in the first of them."""
    if progress is None:
        return ordered, None
    wanted = list(progress.get("tables") or ())
    left = [t for t in ordered if t.qualified in wanted]
    last_key = progress.get("last_key")
    if left and left[0].qualified != (wanted[0] if wanted else None):
        last_key = None  # the table in progress is gone
    return left, last_key


class ChunkedTables:
    """The tables of a resumable snapshot, each read in key-ordered chunks of ``chunk_rows``."""

    def __init__(self, conn: psycopg.Connection, lsn: int, *, chunk_rows: int,
                 table_state: Callable[[cat.CatalogTable], TableState], source: SourceOf, native: bool,
                 override: Callable[[cat.CatalogTable], str | None] = lambda table: None) -> None:
        """``native``: rows through the compiled codec, encoded in batches; ``override``: a table's SELECT of
        snapshot.select.statement.overrides (such a table is read whole by it, not in key chunks)."""
        self._conn = conn
        self._override = override
        self._lsn = lsn
        self._chunk_rows = chunk_rows
        self._table_state = table_state
        self._source = source
        self._native = native

    def tables(self, left: list[cat.CatalogTable], last_key: list[Any] | None,
               estimates: dict[int, int]) -> list[SnapshotTable]:
        """``last_key``: where the first table was left (None: from its start)."""
        names = [t.qualified for t in left]
        return [self._table(table, names[index:], last_key if index == 0 else None, estimates.get(table.oid))
                for index, table in enumerate(left)]

    def _table(self, table: cat.CatalogTable, rest: list[str], last_key: list[Any] | None,
               estimated: int | None) -> SnapshotTable:
        state = self._table_state(table)

        def batches() -> Iterator[RowBatch]:
            override = self._override(table)
            if table.primary_key and override is None:
                yield from self._chunks(table, state, rest, last_key)
            else:
                yield from self._whole(table, state, rest, override)

        return SnapshotTable(state.envelope, batches, lambda: estimated, self._source(table, now_ts()[1]),
                             (self._lsn, 0, 0), partly_read=last_key is not None)

    def _offset(self, rest: list[str], key: list[Any] | None) -> dict[str, Any]:
        return {"lsn": self._lsn, "txId": None, "ts_usec": time.time_ns() // 1000,
                "snapshot_progress": {"tables": rest, "last_key": key}}

    def _chunks(self, table: cat.CatalogTable, state: TableState, rest: list[str],
                last_key: list[Any] | None) -> Iterator[RowBatch]:
        """One batch a chunk, reading one row past it to know whether the table ends there."""
        key, types, positions = chunks.key_of(table, None)
        native = encoder_for(state, len(table.columns)) if self._native else None
        while True:
            select = chunks.chunk_select(table, key, types, condition=None, after=last_key, upto=None,
                                         limit=self._chunk_rows + 1)
            rows = [r for batch in copy_select(self._conn, select, table.qualified, batch_rows=self._chunk_rows + 1,
                                               raw=native is not None) for r in batch]
            more = len(rows) > self._chunk_rows
            rows = rows[:self._chunk_rows]
            if rows:
                values = parse_line(rows[-1].decode()) if native is not None else rows[-1]
                last_key = [values[i] for i in positions]
            offset = self._offset(rest if more else rest[1:], last_key if more else None)
            yield row_batch(rows, state, native, lambda ts_us: self._source(table, ts_us), (self._lsn, 0),
                            encode=True, offset=offset, ends_table=not more)
            if not more:
                return

    def _whole(self, table: cat.CatalogTable, state: TableState, rest: list[str],
               override: str | None) -> Iterator[RowBatch]:
        why = "is read by its SELECT (snapshot.select.statement.overrides)" if override else "has no primary key"
        log.warning("table %s %s: its snapshot is not chunked (read whole, and read again whole if the process "
                    "stops before it ends)", table.qualified, why)
        for rows in table_rows(self._conn, table, override, batch_rows=self._chunk_rows, raw=False):
            yield row_batch(rows, state, None, lambda ts_us: self._source(table, ts_us), (self._lsn, 0),
                            encode=False)
        ts = now_ts()
        yield RowBatch([], self._source(table, ts[1]), (self._lsn, 0), ts, offset=self._offset(rest[1:], None),
                       ends_table=True)
