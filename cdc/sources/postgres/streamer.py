"""The slot's changes as batches of events, from an offset on.

    START_REPLICATION from the offset's LSN (replication.py: the protocol's framing)
    each pgoutput message -> stream.ChangeStream -> events; max.batch.size of them go out at once
    the socket drained (or idle): heartbeat, signal channels, a queued blocking snapshot (streaming
        waits), the next incremental chunk -- never inside a transaction -- then the batch goes out
        with the offset after its last event (signaling.py acts on the signals)
    a transient error: reconnect (cdc.core.retry) and go on from the last offset handed out, if the server is
        still the one the run started on (a name that now leads to another one, as a DNS switch in a failover
        does: the source starts again, to check the offset against it)
    acknowledge(offset) -> standby status update: the server may release WAL before it
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from cdc.core.emitter import ChangeEmitter
from cdc.core.errors import RetriableSourceError, SourceError
from cdc.core.heartbeat import Heartbeat
from cdc.core.records import Batch, ChangeEvent
from cdc.core.retry import RetryPolicy
from cdc.sources.postgres import pgoutput as po
from cdc.sources.postgres.connection import Connections
from cdc.sources.postgres.position import PgPosition
from cdc.sources.postgres.replication import IDLE, ReplicationStream
from cdc.sources.postgres.server import ServerInfo
from cdc.sources.postgres.stream import ChangeStream, StreamHooks
from cdc.sources.postgres.tables import RowFormat, TableState

log = logging.getLogger(__name__)

IDLE_S = 0.5


class ServerChangedError(SourceError):
    """A reconnection reached another server: the source starts again (the engine's retry), to check it."""


@dataclass(frozen=True)
class StreamSettings:
    slot: str
    publication: str
    status_interval_s: float  # status.update.interval.ms
    prefix: str
    dbname: str
    max_batch: int
    per_event_ids: bool  # transaction.id.mode=debezium
    binary_mode: str  # binary.handling.mode (logical decoding messages' content)
    signal_table: str | None
    heartbeat_query: str | None  # heartbeat.action.query
    message_prefixes: Callable[[str], bool] = lambda prefix: True  # message.prefix.include/exclude.list


class StreamSignals(StreamHooks, Protocol):
    """What the streamer asks the signal handling between transactions (signaling.py)."""

    @property
    def busy(self) -> bool: ...

    @property
    def blocking_due(self) -> bool: ...

    def restore(self, offset: dict[str, Any]) -> None: ...

    def state(self, offset: dict[str, Any]) -> None: ...

    def poll(self, events: list[ChangeEvent], where: tuple[int, int]) -> None: ...

    def blocking_snapshots(self, lsn: int, keepalive: Callable[[], None]) -> Iterator[Batch]: ...

    def between_transactions(self, lsn: int, received_lsn: int, events: list[ChangeEvent],
                             where: tuple[int, int], last_commit_lsn: int | None = None) -> None: ...


class Streamer:
    def __init__(self, settings: StreamSettings, connections: Connections, *,
                 describe: Callable[[po.Relation], TableState | None], forget_type: Callable[[int], None],
                 emitter: ChangeEmitter, heartbeat: Heartbeat, signals: StreamSignals, retry: RetryPolicy,
                 stopping: Callable[[], bool], rows: RowFormat | None = None,
                 read_server: Callable[[], ServerInfo] | None = None) -> None:
        self.settings = settings
        self._read_server = read_server  # the server as it is now, checked again after a reconnection
        self._rows = rows or RowFormat()
        self._connections = connections
        self._describe = describe
        self._forget_type = forget_type
        self._emitter = emitter
        self._heartbeat = heartbeat
        self._signals = signals
        self._retry = retry
        self._stopping = stopping
        self._server: ServerInfo | None = None
        self._opened = False  # the stream was opened once in this run: a later opening is a reconnection
        self._stream: ReplicationStream | None = None
        self._changes: ChangeStream | None = None
        self._position: dict[str, Any] | None = None  # offset after the last event handed out

    @property
    def streaming(self) -> bool:
        """True once the replication stream is open: changes committed from now on are captured."""
        return self._stream is not None

    def acknowledge(self, offset: dict[str, Any]) -> None:
        if self._stream is not None and offset.get("lsn"):
            self._stream.confirm(int(offset["lsn"]))
            # Nothing handed out after this offset: keepalive positions may be confirmed too.
            self._stream.idle_flush_allowed = offset == self._position and "lsn_proc" not in offset

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def stream(self, offset: dict[str, Any], server: ServerInfo) -> Iterator[Batch]:
        """Stream from ``offset``; reconnect on transient errors without repeating delivered events."""
        self._position = dict(offset)
        self._server = server
        self._opened = False
        try:
            yield from self._retry.resumed("streaming from the replication slot", self._stream_once, self._reset,
                                           self._stopping)
        except ServerChangedError as exc:  # not retried here, where the offset would go unchecked: by the engine
            raise RetriableSourceError(exc.message, fix=exc.fix) from None

    def _reset(self) -> None:
        self._connections.drop()
        self._stream = None

    def _start_replication(self, lsn: int) -> ReplicationStream:
        assert self._server is not None
        options = {"proto_version": "1", "publication_names": self.settings.publication}
        if self._server.version >= 140000:
            options["messages"] = "true"
        stream = ReplicationStream(self._connections.replication(), self.settings.slot, options,
                                   self.settings.status_interval_s)
        stream.start(lsn)
        return stream

    def _stream_once(self) -> Iterator[Batch]:
        if self._opened:
            self._check_same_server()
        self._opened = True
        resume = PgPosition.from_offset(self._position or {})
        stream = self._start_replication(resume.lsn)
        self._stream = stream
        self._signals.restore(self._position or {})
        settings = self.settings
        changes = ChangeStream(
            resume=resume, prefix=settings.prefix, dbname=settings.dbname, emitter=self._emitter, relations={},
            describe=self._describe, forget_type=self._forget_type, signal_table=settings.signal_table,
            hooks=self._signals, per_event_ids=settings.per_event_ids, binary_mode=settings.binary_mode,
            encode_runs=self._rows.native and self._rows.encoded, max_run=settings.max_batch,
            message_prefixes=settings.message_prefixes)
        self._changes = changes
        events: list[ChangeEvent] = []
        max_batch = settings.max_batch
        for data in stream.messages(IDLE_S):
            if isinstance(data, str):  # DRAINED or IDLE: between messages, hand over what we have
                changes.close_run(events)
                yield from self._handover_runs(changes)
                yield from self._between_messages(events, idle=data is IDLE)
                events = []
                if self._stopping():
                    return
                continue
            changes.handle(data, events)
            if changes.segments:
                yield from self._handover_runs(changes)
                if self._stopping():
                    return
            if len(events) >= max_batch:
                yield from self._handover_inside(events, changes)
                events = []
                if self._stopping():
                    return

    def _check_same_server(self) -> None:
        assert self._server is not None
        if self._read_server is None:
            return
        now = self._read_server()
        if not self._server.same_server(now):
            raise ServerChangedError(
                f"after reconnecting, database.hostname leads to another server than before ({now.describe()}; "
                f"before: {self._server.describe()}; a failover?): the source starts again, so that the stored "
                "offset is checked against it",
                fix="nothing to do after a failover to a promoted standby; else check database.hostname")

    def _handover_runs(self, changes: ChangeStream) -> Iterator[Batch]:
        """The runs of rows encoded in one call, each after the events before it, with the position after
        it; those events up to their last COMMIT go first, with its offset, as in _handover_inside (none,
        when the COMMIT ended a run: the offset alone, where Spark's micro-batch may end)."""
        for before, encoded, position, committed in changes.take_segments():
            if committed is not None and not self._signals.busy:
                count, at = committed
                yield self._handover(before[:count], at)
                before = before[count:]
            batch = self._handover(before, position)
            batch.encoded = encoded
            yield batch

    def _between_messages(self, events: list[ChangeEvent], *, idle: bool) -> Iterator[Batch]:
        """The stream has drained what the server sent: heartbeats, signal channels, a blocking snapshot or
        the next incremental chunk (never inside a transaction), then the batch goes out."""
        changes, stream = self._changes, self._stream
        assert changes is not None and stream is not None
        where = (changes.tx.final_lsn, changes.tx.last_change or 0)
        beat = self._heartbeat.due() if idle else None
        if beat is not None:
            events.append(beat)
            self._run_heartbeat_query()
        self._signals.poll(events, where)
        between = not changes.in_transaction
        if between and self._signals.blocking_due:
            if events:
                yield self._handover(list(events), changes.position())
                events.clear()
            yield from self._signals.blocking_snapshots(changes.committed_lsn, stream.maybe_send_status)
        if between:
            self._signals.between_transactions(changes.committed_lsn, stream.received_lsn, events, where,
                                               last_commit_lsn=changes.last_commit_lsn)
        if events or idle or (self._handed_inside and changes.at_commit):
            *first, batch = self._handover_inside(events, changes)
            yield from first
            batch.caught_up = between
            yield batch

    @property
    def _handed_inside(self) -> bool:
        """Whether the last offset handed out is inside a transaction: when the stream is at a COMMIT with no
        event to hand over (the transaction's rows went in a run, or out with a full batch), the COMMIT's
        offset still goes, where a bounded reader (Spark's micro-batch) may end."""
        return self._position is not None and "lsn_proc" in self._position

    def _handover_inside(self, events: list[ChangeEvent], changes: ChangeStream) -> list[Batch]:
        """Events (copied: the caller reuses its list) handed over where the stream stands, maybe inside
        a transaction. Then the events up to the last COMMIT among them go first, with its offset: a
        committed one, where a bounded reader (Spark's micro-batches) may end, though the socket mostly
        drains inside transactions. Not while an incremental or blocking snapshot runs: its state in
        the offset is the present one."""
        mark = changes.last_commit
        if mark is not None and mark[0] is events and 0 < mark[1] < len(events) and changes.in_transaction \
                and not self._signals.busy:
            _, count, position = mark
            return [self._handover(events[:count], position),
                    self._handover(events[count:], changes.position(inside=True))]
        return [self._handover(list(events), changes.position(inside=True))]

    def _handover(self, events: list[ChangeEvent], position: PgPosition) -> Batch:
        assert self._server is not None
        offset = position.to_offset()
        self._signals.state(offset)
        self._server.stamp(offset)
        self._position = offset
        return Batch(events, offset)

    def _run_heartbeat_query(self) -> None:
        if not self.settings.heartbeat_query:
            return
        try:
            self._connections.catalog().execute(self.settings.heartbeat_query)
        except psycopg.Error as exc:
            log.warning("heartbeat.action.query failed: %s", exc)
