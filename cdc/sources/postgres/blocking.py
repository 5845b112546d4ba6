"""The tables of a blocking snapshot (``execute-snapshot`` with ``type: blocking``), read whole by COPY
while streaming waits; the order of requests and the skipping of a table are core's
(cdc.core.blocking_snapshot)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg

from cdc.core.blocking_snapshot import ReadTable
from cdc.core.envelope import now_ts
from cdc.core.errors import SourceError
from cdc.core.records import ChangeEvent
from cdc.core.snapshot_runner import read_event
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres.snapshot import copy_rows
from cdc.sources.postgres.source_info import source_block
from cdc.sources.postgres.tables import TableState


class BlockingReads:
    def __init__(self, connect: Callable[[], psycopg.Connection],
                 captured_table: Callable[[str], cat.CatalogTable | None],
                 table_state: Callable[[cat.CatalogTable], TableState], *, prefix: str, dbname: str,
                 fetch_size: int) -> None:
        self._connect = connect
        self._captured_table = captured_table
        self._table_state = table_state
        self._prefix = prefix
        self._dbname = dbname
        self._fetch_size = fetch_size
        self._seq = 0  # the events' positions, after the LSN they are read at

    @contextmanager
    def reader(self, lsn: int, keepalive: Callable[[], None]) -> Iterator[ReadTable]:
        """Every table of one request read in one repeatable-read transaction, each under a savepoint
        so that one that fails to read is skipped and the others still are read. ``lsn``: where the
        stream stands; ``keepalive`` keeps the replication connection alive meanwhile."""
        conn = self._connect()

        def read(name: str, condition: str | None) -> Iterator[list[ChangeEvent]] | None:
            table = self._captured_table(name)
            return None if table is None else self._rows(conn, table, condition, lsn, keepalive)
        try:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield read
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _rows(self, conn: psycopg.Connection, table: cat.CatalogTable, condition: str | None, lsn: int,
              keepalive: Callable[[], None]) -> Iterator[list[ChangeEvent]]:
        state = self._table_state(table)
        conn.execute("SAVEPOINT table_read")
        try:
            for rows in copy_rows(conn, table.schema, table.name, [c.name for c in table.columns], where=condition,
                                  batch_rows=self._fetch_size):
                ts = now_ts()
                source = source_block(self._prefix, self._dbname, table.schema, table.name, ts_us=ts[1],
                                      snapshot="true", lsn=lsn or None)
                events = []
                for values in rows:
                    self._seq += 1
                    events.append(read_event(state.envelope, state.row(values), source, (lsn, 0, self._seq), ts))
                yield events
                keepalive()
        except psycopg.Error as exc:
            conn.execute("ROLLBACK TO SAVEPOINT table_read")
            raise SourceError(str(exc).strip()) from None
