"""Signals and incremental snapshots of a MySQL / MariaDB pipeline: what core's signal handler and
incremental snapshot (cdc.core.signal_handler, cdc.core.incremental) need done on this database.

    the signal table        signal.data.collection (channel "source"): signals and a chunk's watermarks
                            are rows written there and read back from the binlog (on_row)
    read.only               nothing written: a chunk's watermarks are the binlog positions before and
                            after it is read, fired as the stream passes them (transaction_starts)
    between transactions    the file / Kafka channels polled, blocking snapshots read, the next chunk read
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pymysql

from cdc.config import Config
from cdc.core import signals as sig
from cdc.core.blocking_snapshot import ReadTable, blocking_snapshots
from cdc.core.chunk_reader import KeysetChunkReader
from cdc.core.envelope import OP_READ, now_ts
from cdc.core.errors import SourceError
from cdc.core.incremental import ChunkError
from cdc.core.records import Batch, ChangeEvent
from cdc.core.source_signals import SourceSignals
from cdc.sources.mysql import chunks
from cdc.sources.mysql import snapshot as snap
from cdc.sources.mysql.connection import ConnectionSettings, binlog_position
from cdc.sources.mysql.position import position_key

log = logging.getLogger(__name__)

Key = tuple[int, str, int]  # position_key's


class MySqlSignals(SourceSignals):
    def __init__(self, config: Config, *, settings: ConnectionSettings, tables: chunks.ChunkTables,
                 captured_keys: Callable[[], dict[str, bool]], position: Callable[[], dict[str, Any]],
                 offset: Callable[[], dict[str, Any]]) -> None:
        """``position()``: where the stream stands (its offset form); ``offset()``: the offset to hand out
        there, after a blocking snapshot."""
        self.table: str | None = config.get("signal.data.collection")
        from_table = "source" in config.get("signal.enabled.channels") and bool(self.table)
        self.read_only: bool = config.get("read.only")
        self._fetch: int = config.get("snapshot.fetch.size")
        self._settings = settings
        self._tables = tables
        self._position = position
        self._offset = offset
        self._marks: list[tuple[Key, str, str]] = []  # read.only: (binlog position, kind, chunk id)
        self._chunks = chunks.MySqlChunks(settings.connect, tables)
        table = chunks.MySqlSignalTable(self.table, self._chunks.connection, settings) if self.table else None
        super().__init__(KeysetChunkReader(self._chunks), table, from_table=from_table,
                         chunk_size=config.get("incremental.snapshot.chunk.size"), captured_keys=captured_keys,
                         watermarks_writable=from_table or self.read_only, channels=sig.polled_channels(config))

    def check_table(self, conn: pymysql.connections.Connection) -> None:
        """The signal table exists with its columns (when signals are read from it)."""
        if self.from_table:
            assert self.signal_table is not None
            self.signal_table.check(conn)

    # ---- the initial snapshot in chunks (snapshot.resumable) ----------------------------------

    def chunked_snapshot_possible(self) -> bool:
        if not self.from_table:
            log.warning("snapshot.resumable needs the signal table (signal.data.collection) for the watermarks of "
                        "its chunks: taking the classic snapshot")
            return False
        return True

    def queue_initial_snapshot(self, snapshots: Callable[[str], bool] = lambda name: True) -> None:
        """The captured tables (those ``snapshots`` takes, by database.table: snapshot.include.collection.list),
        to be read in chunks while streaming (the queue goes into the next offset)."""
        self._queue_initial(snapshots)

    # ---- what the stream hands over ---------------------------------------------------------

    def on_row(self, row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, ...]) -> None:
        """A row inserted into the signal table: a signal or a watermark."""
        self.handler.on_row(row, events, position, str(self.table))

    def watching(self, table: str) -> bool:
        """Whether the open chunk's window reads ``table``: its changes must be observed one by one."""
        return self.window_reads(table)

    def observe(self, table: str, events: Sequence[ChangeEvent]) -> None:
        """Changes of ``table``: they supersede the rows of it that the open chunk holds."""
        if self.watching(table):
            for change in events:
                self.incremental.observe(change)

    def transaction_starts(self, position: Key, events: list[ChangeEvent]) -> None:
        """read.only: the watermarks the stream has reached act as if read from the signal table."""
        while self._marks and self._marks[0][0] <= position:
            key, kind, chunk_id = self._marks.pop(0)
            self.handler.watermark(kind, chunk_id, events, (key[0], key[2]))

    def _write_watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        if self.read_only:  # no write: the binlog's end now is where the window opens / closes
            try:
                file, pos = binlog_position(self._chunks.connection())
            except (pymysql.MySQLError, SourceError) as exc:
                raise ChunkError(f"cannot read the binlog position for a watermark: {exc}") from None
            self._marks.append((position_key(file, pos), kind, chunk_id))
            return
        super()._write_watermark(kind, chunk_id, data)

    # ---- between two transactions -------------------------------------------------------------

    @property
    def wants_turn(self) -> bool:
        """Whether the stream must stop by after each transaction: a chunk, a blocking snapshot or a
        channel may be waiting."""
        return bool(self.incremental.active or self.handler.blocking or self.handler.channels)

    def between_transactions(self, events: list[ChangeEvent]) -> Iterator[Batch]:
        """Signals from the file, blocking snapshots and the next incremental chunk run here, where the
        stream stands between two transactions. ``events`` not yet handed over go out before a
        blocking snapshot (the list is emptied then)."""
        position = self._position()
        self.handler.poll_channels(events, (position_key(str(position.get("file") or ""), 0)[0],
                                            int(position.get("pos") or 0)))
        if self.blocking_due:
            if events:
                yield Batch(list(events), self._offset())
                events.clear()
            yield from blocking_snapshots(self.handler.blocking, self._blocking_reader, self._offset)
        if self.incremental.wants_chunk:
            self.incremental.start_chunk()

    @contextmanager
    def _blocking_reader(self) -> Iterator[ReadTable]:
        """A blocking snapshot's table reads, on a connection of their own, with the stream's schema."""
        conn = self._settings.connect()
        tables = self._tables

        def read(name: str, condition: str | None) -> Iterator[list[ChangeEvent]] | None:
            database, _, table = name.partition(".")
            state = tables.state(database, table) if tables.model(database, table) else None
            if state is None:
                return None

            def events() -> Iterator[list[ChangeEvent]]:
                assert state is not None
                for rows in snap.select_rows(conn, database, table, self._fetch, condition):
                    ts = now_ts()
                    source = {**tables.source_block(database, table, ts[0]), "snapshot": "true"}
                    yield [state.envelope.event(OP_READ, None, row, source, ts=ts) for row in state.rows(rows)]
            return events()
        try:
            yield read
        finally:
            conn.close()
