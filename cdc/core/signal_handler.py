"""What a source does with a signal, the same for every source.

The source hands each signal it reads (from its signal table in the change stream, or from the
file channel) to :meth:`SignalHandler.on_signal`; watermarks drive the incremental snapshot's
window, ``execute-snapshot`` queues tables (incremental) or blocking reads, ``stop`` /
``pause`` / ``resume`` act on the queue, ``log`` logs. A malformed signal, or one naming tables
that are not captured, is logged with the reason and skipped: a signal never stops the stream.
Blocking requests wait in :attr:`blocking` until the source runs them between transactions.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from cdc.core import signals as sig
from cdc.core.errors import SourceError
from cdc.core.incremental import IncrementalSnapshot, TableTask
from cdc.core.records import ChangeEvent

log = logging.getLogger(__name__)


class SignalHandler:
    def __init__(
        self,
        incremental: IncrementalSnapshot,
        *,
        captured_keys: Callable[[], dict[str, bool]],
        watermarks_writable: bool,
        channels: Sequence[sig.PolledChannel] = (),
    ) -> None:
        """``captured_keys()`` reads the captured tables now: {qualified name: has a primary key};
        ``channels`` are the file / Kafka channels, polled between transactions."""
        self.incremental = incremental
        self.captured_keys = captured_keys
        self.watermarks_writable = watermarks_writable
        self.channels = list(channels)
        self.blocking: list[dict[str, Any]] = []  # {"tables": [...], "conditions": {table: sql}}
        self._last_poll = 0.0

    # ---- channels other than the signal table -------------------------------------------------

    def poll_channels(self, events: list[ChangeEvent], position: tuple[int, ...]) -> None:
        """Read the file / Kafka channels (at most every 200 ms) and act on what they hold."""
        if not self.channels or time.monotonic() - self._last_poll < 0.2:
            return
        self._last_poll = time.monotonic()
        for channel in self.channels:
            for signal in channel.poll():
                self.on_signal(signal, events, position)

    def send(self, type_: str, data: dict[str, Any], id_: str | None = None,
             to_table: Callable[[str, str, dict[str, Any]], str] | None = None) -> str:
        """``cdc signal``: write a signal where the running pipeline reads it (the source's signal
        table through ``to_table(id, type, data)`` when it reads one, else the first polled
        channel); where it went."""
        id_ = id_ or sig.new_id()
        if to_table is not None:
            return to_table(id_, type_, data)
        if not self.channels:
            raise SourceError("no signal channel is configured",
                              fix="set signal.data.collection (channel 'source'), signal.file (channel 'file') "
                                  "or signal.kafka.topic (channel 'kafka')")
        try:
            return self.channels[0].send(id_, type_, data)
        except sig.SignalError as exc:
            raise SourceError(str(exc)) from None

    def close(self) -> None:
        for channel in self.channels:
            channel.close()

    # ---- offsets ------------------------------------------------------------------------------

    def state(self, position: dict[str, Any]) -> None:
        """Put what must survive a restart into an offset."""
        incremental = self.incremental.state()
        if incremental is not None:
            position["incremental"] = incremental
        if self.blocking:
            position["blocking"] = [dict(b) for b in self.blocking]
        for channel in self.channels:
            if channel.position:
                position[channel.offset_key] = channel.position

    def restore(self, offset: dict[str, Any]) -> None:
        self.incremental.restore(offset.get("incremental"))
        self.blocking = [dict(b) for b in offset.get("blocking") or ()]
        for channel in self.channels:
            channel.position = int(offset.get(channel.offset_key) or 0)

    def queue_initial_snapshot(self, captured: dict[str, bool]) -> None:
        """snapshot.resumable: the first snapshot's rows are read as an incremental snapshot of these
        tables ({name: has a primary key}), in key chunks with the progress in the offset; tables
        without a key are read whole, by a blocking snapshot."""
        keyed = sorted(name for name, has_key in captured.items() if has_key)
        keyless = sorted(name for name, has_key in captured.items() if not has_key)
        if keyless:
            log.warning("snapshot.resumable: %s %s no primary key: read whole, not in resumable chunks",
                        ", ".join(keyless), "has" if len(keyless) == 1 else "have")
            self.blocking.append({"tables": keyless, "conditions": {}})
        if keyed:
            self.incremental.add([TableTask(name) for name in keyed])

    # ---- signals ------------------------------------------------------------------------------

    def on_row(self, row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, ...], where: str) -> None:
        """A row inserted into the signal table (columns id, type, data)."""
        try:
            signal = sig.parse_signal(row.get("id"), row.get("type"), row.get("data"), "source")
        except sig.SignalError as exc:
            log.warning("skipping malformed signal %r in %s: %s", row.get("id"), where, exc)
            return
        self.on_signal(signal, events, position)

    def watermark(self, kind: str, chunk_id: str, events: list[ChangeEvent], position: tuple[int, ...],
                  data: dict[str, Any] | None = None) -> None:
        """A chunk's window opens or closes (a watermark row read from the stream, or a read-only
        bound the stream has passed); a closing window's rows are appended to ``events``."""
        out = self.incremental.on_watermark(kind, chunk_id, data)
        for index, event in enumerate(out):
            event.position = (*position, index)
        events.extend(out)

    def on_signal(self, signal: sig.Signal, events: list[ChangeEvent], position: tuple[int, ...]) -> None:
        """Act on one signal; events to emit now (a closed window's rows) are appended to ``events``."""
        incremental = self.incremental
        try:
            if signal.type in sig.WATERMARKS:
                self.watermark(signal.type, signal.id.rsplit("-", 1)[0], events, position, signal.data)
                return
            log.info("signal %r (%s) from channel %s: %s", signal.id, signal.type, signal.channel, signal.data)
            if signal.type == sig.EXECUTE_SNAPSHOT:
                self._execute_snapshot(signal)
            elif signal.type == sig.STOP_SNAPSHOT:
                patterns = sig.stop_patterns(signal)
                queued = [t.table for t in incremental.tables]
                incremental.stop(sig.matching(patterns, queued) if patterns else None)
            elif signal.type == sig.PAUSE_SNAPSHOT:
                incremental.pause()
            elif signal.type == sig.RESUME_SNAPSHOT:
                incremental.resume()
            elif signal.type == sig.LOG:
                log.info("signal log: %s", signal.data.get("message", signal.data))
        except sig.SignalError as exc:
            log.warning("skipping malformed signal %r (%s): %s", signal.id, signal.type, exc)

    def _execute_snapshot(self, signal: sig.Signal) -> None:
        request = sig.parse_snapshot_request(signal)
        captured = self.captured_keys()
        names = sig.matching(request.patterns, list(captured))
        for pattern in request.patterns:
            if not sig.matching((pattern,), list(captured)):
                log.warning("execute-snapshot %r: %r matches no captured table (it does not exist, or the "
                            "filters leave it out); skipped", signal.id, pattern)
        if request.kind == "blocking":
            if names:
                self.blocking.append({"tables": names, "conditions": {n: request.condition_for(n) for n in names}})
            return
        if not self.watermarks_writable:
            raise sig.SignalError("an incremental snapshot needs the signal table (signal.data.collection and "
                                  "channel 'source') for its watermarks; use type 'blocking' or configure it")
        tasks: list[TableTask] = []
        for name in names:
            if not captured[name] and not request.surrogate_key:
                log.error("execute-snapshot %r: table %s has no primary key, so it cannot be read in chunks; "
                          "skipped (give \"surrogate-key\": \"<unique column>\" in the signal's data)", signal.id, name)
                continue
            tasks.append(TableTask(name, request.condition_for(name), request.surrogate_key))
        if tasks:
            self.incremental.add(tasks)
