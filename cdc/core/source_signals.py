"""What every source's signals share: the incremental snapshot over the core chunk reader, the
signal handler, the signal table, and the offset's part of them.

A source's signals class derives from :class:`SourceSignals` and keeps only what is its own: when
its stream stands between transactions, how a blocking snapshot reads, and, with ``read.only``,
what bounds a chunk's window instead of watermark rows.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cdc.core.chunk_reader import KeysetChunkReader
from cdc.core.incremental import ChunkError, IncrementalSnapshot
from cdc.core.signal_handler import SignalHandler
from cdc.core.signal_table import SignalTable
from cdc.core.signals import PolledChannel


class SourceSignals:
    def __init__(self, reader: KeysetChunkReader[Any], signal_table: SignalTable[Any] | None, *, from_table: bool,
                 chunk_size: int, captured_keys: Callable[[], dict[str, bool]], watermarks_writable: bool,
                 channels: Sequence[PolledChannel]) -> None:
        """``from_table``: signals and watermarks come through the signal table (channel 'source')."""
        self.signal_table = signal_table
        self.from_table = from_table and signal_table is not None
        self._reader = reader
        self.incremental = IncrementalSnapshot(reader, self._write_watermark, chunk_size)
        self.handler = SignalHandler(self.incremental, captured_keys=captured_keys,
                                     watermarks_writable=watermarks_writable, channels=channels)

    def close(self) -> None:
        self._reader.close()
        self.handler.close()

    # ---- the offset ----------------------------------------------------------------------------

    def state(self, offset: dict[str, Any]) -> None:
        """What must survive a restart (the incremental snapshot's queue, blocking requests, channel positions)."""
        self.handler.state(offset)

    def restore(self, offset: dict[str, Any]) -> None:
        self.handler.restore(offset)

    @property
    def busy(self) -> bool:
        """An incremental or blocking snapshot runs: the offset holds its present state."""
        return self.incremental.active or bool(self.handler.blocking)

    @property
    def blocking_due(self) -> bool:
        """A blocking request waits, and no chunk's window is open (a blocking snapshot waits for it)."""
        return bool(self.handler.blocking) and self.incremental.window is None

    def _queue_initial(self, takes: Callable[[str], bool]) -> None:
        """snapshot.resumable: the captured tables ``takes`` names, to be read in chunks while streaming."""
        self.handler.queue_initial_snapshot({name: keyed for name, keyed in self.handler.captured_keys().items()
                                             if takes(name)})

    # ---- the open window -------------------------------------------------------------------------

    def window_reads(self, table: str) -> bool:
        """Whether the open chunk's window reads ``table``: its changes must be observed one by one."""
        window = self.incremental.window
        return window is not None and window.open and window.task.table == table

    # ---- watermarks and cdc signal ---------------------------------------------------------------

    def _write_watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        if self.signal_table is None or not self.from_table:
            raise ChunkError("incremental snapshots need the signal table (signal.data.collection, channel "
                             "'source') to write their watermarks")
        self.signal_table.watermark(kind, chunk_id, data)

    def send(self, type_: str, data: dict[str, Any], id_: str | None = None) -> str:
        """Where the running pipeline reads it: the signal table when signals come through it, else a channel."""
        to_table = self._insert if self.from_table else None
        return self.handler.send(type_, data, id_, to_table)

    def _insert(self, id_: str, type_: str, data: dict[str, Any]) -> str:
        assert self.signal_table is not None
        return self.signal_table.send(id_, type_, data)
