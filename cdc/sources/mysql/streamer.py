"""The binlog read from a position and handed over in batches (Debezium's streaming change event source):

    open the reader at the start position: by GTID (the source's resume plan) or by file and position
    each event -> BinlogChanges.handle (stream.py decides what it means)
        rows            handed over when the batch is full, with the offset inside the transaction
        commit, DDL     handed over with the offset after it (at once after a DDL or with events, else at
                        least every second); signals and chunks get their turn between transactions
        heartbeat       caught up: the heartbeat topic's event, signals, a batch marked caught_up; a stop
                        asked for ends the stream here
    the reader breaks off   reopened where it stood (by the GTIDs read whole, or at the transaction's start;
                            its delivered rows events skipped) under core's retry policy; a purged binlog is
                            an error with its fix
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pymysql

from cdc.core.errors import SourceError
from cdc.core.heartbeat import Heartbeat
from cdc.core.records import Batch, ChangeEvent
from cdc.sources.mysql import binlog as bl
from cdc.sources.mysql.connection import ER_MASTER_FATAL_READING_BINLOG, ConnectionSettings, translate
from cdc.sources.mysql.resume import PURGED_FIX, reopen_gtids
from cdc.sources.mysql.stream import BinlogChanges, ReadFrom, Step

log = logging.getLogger(__name__)

IDLE_HANDOVER_S = 1.0  # between transactions without events, the offset still moves this often


class _Pending:
    """The events not handed over yet, and when the last batch went."""

    __slots__ = ("events", "since")

    def __init__(self) -> None:
        self.events: list[ChangeEvent] = []
        self.since = time.monotonic()

    def handed_over(self) -> None:
        self.events, self.since = [], time.monotonic()


class BinlogStreamer:
    def __init__(self, settings: ConnectionSettings, *, server_id: int, heartbeat_s: float, max_batch: int,
                 heartbeat: Heartbeat, stopping: Callable[[], bool], offset: Callable[[dict[str, Any]], dict[str, Any]],
                 between: Callable[[list[ChangeEvent]], Iterator[Batch]], wants_turn: Callable[[], bool]) -> None:
        """``offset(position)``: the offset to hand out at a position (the signals' state and the server's
        identity added); ``between(events)``: signals, blocking snapshots and chunks, run between two
        transactions; ``wants_turn()``: whether they need that after every transaction."""
        self._settings = settings
        self.server_id = server_id  # the replica id the reader registers with
        self.heartbeat_s = heartbeat_s
        self.statements = False  # include.query: MariaDB's Annotate_rows events asked for too
        self.heartbeat_action: Callable[[], None] = lambda: None  # heartbeat.action.query
        self.max_batch = max_batch
        self._heartbeat = heartbeat
        self._stopping = stopping
        self._offset = offset
        self._between = between
        self._wants_turn = wants_turn
        self._reader: Any = None  # BinLogStreamReader
        # By GTID: the set the stream starts from (the source's resume plan; None: by file and position), whether
        # a reopened reader goes by the GTIDs read whole (the server has GTIDs: so a server that took over the
        # address, a promoted replica, sends the right transactions), and whether they are MariaDB's.
        self.gtid_start: str | None = None
        self.reopen_by_gtid = False
        self.mariadb = False
        self.position: dict[str, Any] = {}  # offset form of the position after the last whole transaction read

    @property
    def streaming(self) -> bool:
        """True once the binlog reader is open at its start position."""
        return self._reader is not None

    def close(self) -> None:
        if self._reader is not None:
            self._close_reader()
            self._reader = None

    def _close_reader(self) -> None:
        try:
            self._reader.close()
        except Exception:  # noqa: BLE001 - closing a broken socket must not hide the real error
            pass

    def _open(self, start: ReadFrom) -> None:
        gtids = start.gtids or None
        self._reader = bl.open_stream(self._settings.replication_settings(), self.server_id, start.file, start.pos,
                                      self.heartbeat_s, statements=self.statements, gtids=gtids, mariadb=self.mariadb)
        log.info("reading the binlog from %s", f"GTIDs {gtids}" if gtids else f"{start.file}:{start.pos}")

    def _by_gtid(self, start: ReadFrom) -> ReadFrom:
        """Where to reopen: by GTID (the plan's set and what was read since) when the stream goes by GTID."""
        if self.gtid_start is not None:
            return ReadFrom(start.file, start.pos, reopen_gtids(self.gtid_start, start.gtids, self.mariadb))
        return ReadFrom(start.file, start.pos, start.gtids if self.reopen_by_gtid else None)

    # ---- batches ----------------------------------------------------------------------------

    def batches(self, changes: BinlogChanges) -> Iterator[Batch]:
        """The changes from ``changes.position`` on, until a stop is asked for."""
        self.position = changes.position.to_offset()
        pending = _Pending()
        self._open(ReadFrom(changes.position.file, changes.position.pos, self.gtid_start))
        for event in self._events(changes):
            step = changes.handle(event, self._reader, pending.events)
            if step is Step.NONE:
                continue
            if step is Step.ROWS:
                for before, encoded in changes.take_segments():  # rows events encoded whole: handed over at once
                    yield Batch(before, self._offset(changes.in_progress().to_offset()), encoded=encoded)
                if len(pending.events) >= self.max_batch:
                    yield Batch(pending.events, self._offset(changes.in_progress().to_offset()))
                    pending.handed_over()
                continue
            self.position = changes.position.to_offset()
            if step is Step.HEARTBEAT:
                yield from self._caught_up(not changes.tx.active, pending)
                if self._stopping():
                    return
            else:
                yield from self._committed(step, pending)

    def _caught_up(self, between: bool, pending: _Pending) -> Iterator[Batch]:
        """A heartbeat: the server has nothing more now. Inside a transaction only what is pending goes."""
        if between:
            beat = self._heartbeat.due()
            if beat is not None:
                pending.events.append(beat)
                self.heartbeat_action()
            yield from self._between(pending.events)
        if pending.events or between:
            yield Batch(pending.events, self._offset(self.position) if between else None, caught_up=between)
            pending.handed_over()

    def _committed(self, step: Step, pending: _Pending) -> Iterator[Batch]:
        """A transaction or a DDL ended: the position moved past it."""
        if step is Step.DDL or self._wants_turn():
            yield from self._between(pending.events)
        if step is Step.DDL or pending.events or time.monotonic() - pending.since >= IDLE_HANDOVER_S:
            yield Batch(pending.events, self._offset(self.position))
            pending.handed_over()

    # ---- the reader -------------------------------------------------------------------------

    def _events(self, changes: BinlogChanges) -> Iterator[Any]:
        """The binlog's events. Where the reader breaks off it is reopened at ``changes.resume_point()``
        under the retry policy, whose count of attempts starts over once an event was read."""
        def read() -> Iterator[Any]:
            while True:
                yield self._fetch(changes)

        def reopen() -> None:
            start = changes.resume_point()
            changes.reopened(start.file)
            self._open(self._by_gtid(start))

        for event in self._settings.retry.resumed("reading the binlog", read, reopen, self._stopping):
            if event is not None:
                yield event

    def _fetch(self, changes: BinlogChanges) -> Any:
        """The next event; a broken reader is closed and its error translated (retriable when the
        connection was lost)."""
        try:
            return self._reader.fetchone()
        except (pymysql.MySQLError, OSError) as exc:
            start = self._by_gtid(changes.resume_point())
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if code == ER_MASTER_FATAL_READING_BINLOG:
                where = f"GTIDs {start.gtids}" if start.gtids else f"{start.file}:{start.pos}"
                raise SourceError(
                    f"the server cannot send the binlog from {where}: {exc.args[-1]}",
                    fix=f"if the binlog was purged: {PURGED_FIX}; after a failover, the server must hold every "
                        "transaction delivered (log_slave_updates / log_replica_updates, and caught up)",
                ) from None
            error = translate(exc, self._settings, "reading the binlog")
            self._close_reader()  # the connection is broken anyway
            raise error from None
