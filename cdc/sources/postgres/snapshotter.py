"""The initial snapshot: the captured tables read in the snapshot the slot exported at its consistent
point, through the core runner (cdc.core.snapshot_runner: marks, progress, stop, restart marker, op r
events); snapshot_tables.py says how each table is read (whole, or in resumable key chunks).

    BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '<exported>'
    every table, in Debezium's order (the include list's, then by name)
    COMMIT -> the offset streaming starts from: the consistent point, snapshot_completed

The snapshot and the stream meet at the slot's consistent point: every transaction committed before it
is in the snapshot, every one after it is streamed, none is in both.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator
from typing import Any

import psycopg

from cdc.core.notifications import SILENT, Notifier
from cdc.core.records import Batch
from cdc.core.snapshot_runner import SnapshotStopped, SnapshotTable, read_tables
from cdc.core.snapshot_selection import SnapshotSelection, TableName
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import pgoutput as po
from cdc.sources.postgres.connection import lost_connection_retriable, one
from cdc.sources.postgres.server import ServerInfo
from cdc.sources.postgres.snapshot_tables import ChunkedTables, tables_left, whole_table
from cdc.sources.postgres.source_info import source_block
from cdc.sources.postgres.tables import RowFormat, TableState

log = logging.getLogger(__name__)


class Snapshotter:
    def __init__(self, connect: Callable[[], psycopg.Connection], table_state: Callable[[cat.CatalogTable], TableState],
                 rows: RowFormat, *, prefix: str, dbname: str, order_key: Callable[[str], Any], fetch_size: int,
                 progress: str, stopping: Callable[[], bool], selection: SnapshotSelection | None = None) -> None:
        """``order_key(qualified name)``: the order tables are read in; ``selection``: which of the captured
        tables are read, and how (snapshot.include.collection.list, snapshot.select.statement.overrides)."""
        self._selection = selection or SnapshotSelection()
        self._connect = connect
        self._table_state = table_state
        self._rows = rows
        self._prefix = prefix
        self._dbname = dbname
        self._order_key = order_key
        self._fetch_size = fetch_size
        self._progress = progress
        self._stopping = stopping
        self.notifier: Notifier = SILENT  # Debezium's notifications of the snapshot (the coordinator's)

    def _ordered(self, tables: list[cat.CatalogTable]) -> list[cat.CatalogTable]:
        """The captured tables whose rows the snapshot reads, in the order it reads them."""
        read = [t for t in tables if self._selection.snapshots(_name(t))]
        if len(read) < len(tables):
            log.info("snapshot.include.collection.list: the snapshot reads %d of the %d captured tables (the others "
                     "are streamed only)", len(read), len(tables))
        return sorted(read, key=lambda t: self._order_key(t.qualified))

    def _override(self, table: cat.CatalogTable) -> str | None:
        return self._selection.select_for(_name(table))

    def _source(self, table: cat.CatalogTable, ts_us: int, *, lsn: int, xmin: int | None = None) -> dict[str, Any]:
        return source_block(self._prefix, self._dbname, table.schema, table.name, ts_us=ts_us, snapshot="true",
                            tx_id=xmin, lsn=lsn)

    @staticmethod
    def _completed(lsn: int, server: ServerInfo, **extra: Any) -> dict[str, Any]:
        return server.stamp({"lsn": lsn, "txId": None, "ts_usec": time.time_ns() // 1000, "snapshot_completed": True,
                             **extra})

    def initial(self, tables: list[cat.CatalogTable], snapshot_name: str | None, lsn: int, server: ServerInfo, *,
                final: bool, attempt: int = 0) -> Generator[Batch, None, dict[str, Any]]:
        """Every table read whole in the exported snapshot; returns the offset streaming starts from
        (``final``: marked as the snapshot of an initial_only run). ``attempt``: the earlier attempts,
        interrupted (each table then starts with a truncate)."""
        conn = self._connect()  # the attempt is stored already, before any row goes out
        try:
            with lost_connection_retriable("during the snapshot (it is taken again)"):
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                if snapshot_name:
                    conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
                xmin = one(conn, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")[0] \
                    if server.version >= 130000 else None
                estimates = cat.row_estimates(conn, tables)
                ordered = self._ordered(tables)
                log.info("snapshot of %d tables at %s", len(ordered), po.format_lsn(lsn))
                last = yield from read_tables([self._whole(conn, t, lsn, xmin, estimates.get(t.oid)) for t in ordered],
                                              progress=self._progress, stopping=self._stopping, restarted=attempt > 0,
                                              notifier=self.notifier)
                conn.execute("COMMIT")
        finally:
            conn.close()
        position = self._completed(lsn, server, **({"snapshot_only": True} if final else {}))
        yield Batch([last] if last is not None else [], dict(position))
        return position

    def _whole(self, conn: psycopg.Connection, table: cat.CatalogTable, lsn: int, xmin: int | None,
               estimated: int | None) -> SnapshotTable:
        return whole_table(conn, table, self._table_state(table), lsn=lsn,
                           source=lambda ts_us: self._source(table, ts_us, lsn=lsn, xmin=xmin),
                           native=self._rows.native, encode=self._rows.encoded, fetch_size=self._fetch_size,
                           estimated=estimated, override=self._override(table))

    def resumable(self, tables: list[cat.CatalogTable], snapshot_name: str | None, lsn: int, server: ServerInfo,
                  progress: dict[str, Any] | None) -> Generator[Batch, None, dict[str, Any] | None]:
        """The snapshot in key chunks, each chunk's batch with the progress in its offset (snapshot_tables.py);
        ``progress``: where a stopped one was (None: from the start). Returns the offset streaming starts
        from, None when stopped before the end."""
        left, last_key = tables_left(self._ordered(tables), progress)
        conn = self._connect()
        try:
            with lost_connection_retriable("during the snapshot (it goes on from its last chunk)"):
                if snapshot_name:
                    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
                log.info("resumable snapshot of %d table(s) at %s, %d rows a chunk", len(left), po.format_lsn(lsn),
                         self._fetch_size)
                chunked = ChunkedTables(conn, lsn, chunk_rows=self._fetch_size, table_state=self._table_state,
                                        source=lambda table, ts_us: self._source(table, ts_us, lsn=lsn),
                                        native=self._rows.native and self._rows.encoded, override=self._override)
                try:
                    yield from read_tables(chunked.tables(left, last_key, cat.row_estimates(conn, left)),
                                           progress=self._progress, stopping=self._stopping, resumable=True,
                                           resumed=progress is not None, notifier=self.notifier)
                except SnapshotStopped:
                    return None
                if snapshot_name:
                    conn.execute("COMMIT")
        finally:
            conn.close()
        position = self._completed(lsn, server)
        yield Batch([], dict(position))
        return position


def _name(table: cat.CatalogTable) -> TableName:
    """The table as Debezium's PostgreSQL connector names it (no catalog): schema.table."""
    return None, table.schema, table.name
