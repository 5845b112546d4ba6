"""Signals and the snapshots they start, beside the stream (cdc.core.signal_handler decides what a
signal does; this is where PostgreSQL reads and writes them).

    signal table rows in the stream (channel 'source')  -> signals and watermarks
    file / Kafka channels, polled between transactions  -> signals
    execute-snapshot, incremental: a chunk read between transactions, between two watermarks the
        stream brings back (cdc.core.incremental); with read.only no watermark is written: the
        chunk's REPEATABLE READ snapshot and the WAL position after it bound its window
    execute-snapshot, blocking: the tables read whole while streaming waits

The stream asks through :class:`cdc.sources.postgres.stream.StreamHooks` (a change inside the open
window, the signal table's rows) and, between transactions, through the methods below.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import psycopg

from cdc.config import Config
from cdc.core import signals as sig
from cdc.core.blocking_snapshot import ReadTable, blocking_snapshots
from cdc.core.chunk_reader import KeysetChunkReader
from cdc.core.records import Batch, ChangeEvent
from cdc.core.source_signals import SourceSignals
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import chunks
from cdc.sources.postgres.source_info import source_block
from cdc.sources.postgres.tables import TableState

# (the LSN the stream stands at, a keepalive of the replication connection) -> a blocking request's reader
OpenBlocking = Callable[[int, Callable[[], None]], AbstractContextManager[ReadTable]]


@dataclass(frozen=True)
class SignalSettings:
    signal_table: str | None  # signal.data.collection
    signal_source: bool  # signals (and watermarks) come through the signal table
    read_only: bool  # read.only: no watermark rows, each chunk's snapshot bounds its window
    chunk_size: int  # incremental.snapshot.chunk.size

    @classmethod
    def from_config(cls, config: Config) -> SignalSettings:
        table: str | None = config.get("signal.data.collection")
        return cls(table, "source" in config.get("signal.enabled.channels") and bool(table), config.get("read.only"),
                   config.get("incremental.snapshot.chunk.size"))


class Signals(SourceSignals):
    def __init__(self, settings: SignalSettings, channels: Sequence[sig.PolledChannel], *,
                 connect: Callable[[], psycopg.Connection], catalog: Callable[[], psycopg.Connection],
                 captured_table: Callable[[str], cat.CatalogTable | None],
                 captured_keys: Callable[[], dict[str, bool]],
                 table_state: Callable[[cat.CatalogTable], TableState], open_blocking: OpenBlocking,
                 prefix: str, dbname: str) -> None:
        """``connect`` opens a connection of its own (the chunks', a signal sent); ``catalog`` is the
        source's (the watermarks)."""
        self.settings = settings
        self._open_blocking = open_blocking
        self.stream_lsn = 0  # the LSN of the change being decoded (the source block of what a signal reads)
        self.stream_commit_lsn: int | None = None  # the last commit's (source.sequence's first LSN)
        self._chunks = chunks.PgChunks(
            connect, captured_table, table_state, lambda table, ts_us: _incremental_source(
                source_block(prefix, dbname, table.schema, table.name, ts_us=ts_us, snapshot="incremental",
                             lsn=self.stream_lsn or None, last_commit_lsn=self.stream_commit_lsn)),
            read_only=settings.read_only)
        table = chunks.PgSignalTable(settings.signal_table, catalog, connect) if settings.signal_table else None
        super().__init__(KeysetChunkReader(self._chunks), table, from_table=settings.signal_source,
                         chunk_size=settings.chunk_size, captured_keys=captured_keys,
                         watermarks_writable=settings.signal_source or settings.read_only, channels=channels)
        self._window: tuple[str, chunks.Visibility] | None = None  # read.only: (chunk id, what it saw)

    # ---- between transactions ------------------------------------------------------------------

    def poll(self, events: list[ChangeEvent], where: tuple[int, int]) -> None:
        self.handler.poll_channels(events, where)

    def blocking_snapshots(self, lsn: int, keepalive: Callable[[], None]) -> Iterator[Batch]:
        self.stream_lsn = lsn
        yield from blocking_snapshots(self.handler.blocking, lambda: self._open_blocking(lsn, keepalive),
                                      lambda: None)

    def between_transactions(self, lsn: int, received_lsn: int, events: list[ChangeEvent],
                             where: tuple[int, int], last_commit_lsn: int | None = None) -> None:
        """The next incremental chunk (signals of one transaction take effect together); a read-only
        window opens at once (what follows may be newer) and closes once the stream passed its WAL position."""
        if self.incremental.wants_chunk:
            self.stream_lsn, self.stream_commit_lsn = lsn, last_commit_lsn
            self.incremental.start_chunk()
            if self._window is not None:
                self._read_only_mark(sig.WINDOW_OPEN, events, where)
        if self._window is not None and received_lsn >= self._window[1].wal_lsn:
            self._read_only_mark(sig.WINDOW_CLOSE, events, where)

    # ---- StreamHooks ---------------------------------------------------------------------------

    def before_transaction(self, final_lsn: int, events: list[ChangeEvent], where: tuple[int, int]) -> None:
        if self._window is not None and final_lsn >= self._window[1].wal_lsn:
            # every transaction the chunk could have seen has been streamed: emit the chunk
            self._read_only_mark(sig.WINDOW_CLOSE, events, where)

    def signal_row(self, row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, int]) -> None:
        self.stream_lsn = position[1]
        self.handler.on_row(row, events, position, str(self.settings.signal_table))

    def watching(self, table: str, xid: int) -> bool:
        return self.window_reads(table) and (self._window is None or not self._window[1].sees(xid))

    def observe(self, events: Sequence[ChangeEvent]) -> None:
        for event in events:
            self.incremental.observe(event)

    def truncated(self, table: str) -> None:
        window = self.incremental.window
        if window is not None and window.open and window.task.table == table:
            window.buffer.clear()  # every row of the chunk is gone

    # ---- watermarks ----------------------------------------------------------------------------

    def _write_watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        if self.settings.read_only:  # the window is the chunk transaction's snapshot, up to the WAL position after it
            if kind == sig.WINDOW_CLOSE and self._chunks.visibility is not None:
                self._window = (chunk_id, self._chunks.visibility)
            return
        super()._write_watermark(kind, chunk_id, data)

    def _read_only_mark(self, kind: str, events: list[ChangeEvent], position: tuple[int, int]) -> None:
        """read.only: a window's open or close, as a watermark row read from the stream would give it."""
        assert self._window is not None
        chunk_id = self._window[0]
        if kind == sig.WINDOW_CLOSE:
            self._window = None
        self.handler.watermark(kind, chunk_id, events, position)


def _incremental_source(block: dict[str, Any]) -> dict[str, Any]:
    """An incremental snapshot's source block as Debezium 3.6.1 writes it: the stream's position only in
    ``sequence`` (last commit, LSN), ``lsn`` null (tests/conformance/workloads/pg_incremental_notifications.sql)."""
    block["lsn"] = None
    return block
