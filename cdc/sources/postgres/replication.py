"""The replication protocol framing that psycopg does not provide, in one place.

    START_REPLICATION SLOT s LOGICAL <lsn> (options)      -> CopyBoth
    loop:
        CopyData 'w' XLogData  (wal_start, wal_end, send_time, pgoutput message)  -> yielded
        CopyData 'k' keepalive (wal_end, send_time, reply_requested)              -> answered
        no XLogData for `idle` seconds                                             -> yield IDLE
        every status interval, or when asked: 'r' standby status (write, flush, apply)

Reads never block longer than ``idle`` so the caller keeps control (to flush, to stop).
Only the LSN the caller says is durable (``flush_lsn``) is reported as flushed: the server
keeps everything after it.
"""
from __future__ import annotations

import logging
import select
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
from psycopg import pq

from cdc.core.errors import CdcError, RetriableSourceError, SourceError
from cdc.sources.postgres import guards
from cdc.sources.postgres.pgoutput import PG_EPOCH_OFFSET_US, format_lsn

log = logging.getLogger(__name__)

_XLOG_HEADER = struct.Struct("!QQq")
_KEEPALIVE = struct.Struct("!QqB")
_STATUS = struct.Struct("!cQQQqB")


def pg_now() -> int:
    """Microseconds since 2000-01-01, the protocol's clock."""
    return time.time_ns() // 1000 - PG_EPOCH_OFFSET_US


DRAINED = "drained"  # nothing more buffered right now
IDLE = "idle"  # nothing arrived for a while


@dataclass(slots=True)
class XLogData:
    wal_start: int
    wal_end: int
    payload: memoryview


class ReplicationStream:
    def __init__(self, conn: psycopg.Connection, slot: str, options: dict[str, str], status_interval_s: float) -> None:
        self.conn = conn
        self.pgconn = conn.pgconn
        self.slot = slot
        self.options = options
        self.status_interval_s = status_interval_s
        self.received_lsn = 0  # highest wal_end seen
        self.flush_lsn = 0  # durable in the sink: what the server may release
        self.idle_flush_allowed = False  # caller says nothing is pending: keepalive LSNs may be flushed
        self._last_status = 0.0
        self._closed = False
        # confirm() may come from another thread than messages() (Spark's driver reads in a thread
        # while its query thread commits): libpq's connection is used by one thread at a time.
        self._io = threading.Lock()

    def start(self, lsn: int) -> None:
        opts = ", ".join(f"{k} '{v}'" for k, v in self.options.items())
        command = f'START_REPLICATION SLOT "{self.slot}" LOGICAL {format_lsn(lsn)} ({opts})'
        log.info("%s", command)
        self.flush_lsn = max(self.flush_lsn, lsn)
        self.pgconn.send_query(command.encode())
        result = self.pgconn.get_result()
        if result is None or result.status != pq.ExecStatus.COPY_BOTH:
            message = (result.error_message.decode(errors="replace") if result is not None else "") or \
                self.pgconn.error_message.decode(errors="replace")
            while self.pgconn.get_result() is not None:
                pass
            raise replication_error(message, self.slot)

    def messages(self, idle: float) -> Iterator[XLogData | str]:
        """XLogData messages as they come; ``DRAINED`` when nothing more is buffered (before
        waiting), ``IDLE`` after ``idle`` seconds without XLogData. Keepalives do not count: a server
        shutting down sends them back to back until we confirm its last position, and that needs the
        caller to hand over (and the engine to store) what it holds, which it does when IDLE."""
        pgconn = self.pgconn
        drained = False
        quiet_since = time.monotonic()  # the last XLogData, or the last IDLE
        while True:
            with self._io:
                nbytes, data = pgconn.get_copy_data(1)
            if nbytes == 0:
                if not drained:
                    drained = True
                    yield DRAINED
                    continue
                self.maybe_send_status()
                left = idle - (time.monotonic() - quiet_since)
                ready = select.select([pgconn.socket], [], [], left)[0] if left > 0 else []
                if not ready:
                    quiet_since = time.monotonic()
                    yield IDLE
                    continue
                try:
                    with self._io:
                        pgconn.consume_input()
                except psycopg.OperationalError as exc:
                    raise replication_error(str(exc), self.slot) from None
                continue
            if nbytes < 0:
                message = pgconn.error_message.decode(errors="replace")
                result = pgconn.get_result()
                if result is not None and result.error_message:
                    message = result.error_message.decode(errors="replace")
                raise replication_error(message or "the server ended the replication stream", self.slot)
            drained = False
            kind = data[0]
            if kind == 0x77:  # 'w'
                quiet_since = time.monotonic()
                # New data is not acknowledged yet: keepalives may not be confirmed past it.
                self.idle_flush_allowed = False
                wal_start, wal_end, _ = _XLOG_HEADER.unpack_from(data, 1)
                if wal_end > self.received_lsn:
                    self.received_lsn = wal_end
                yield XLogData(wal_start, wal_end, data[25:])
            elif kind == 0x6B:  # 'k'
                wal_end, _, reply = _KEEPALIVE.unpack_from(data, 1)
                if wal_end > self.received_lsn:
                    self.received_lsn = wal_end
                if self.idle_flush_allowed and wal_end > self.flush_lsn:
                    # Everything we were sent is acknowledged; confirm the server's position so an
                    # idle (for us) database does not keep WAL for this slot.
                    self.flush_lsn = wal_end
                if reply:
                    self.send_status()
            else:
                raise SourceError(f"unexpected replication message type {chr(kind)!r}")

    def confirm(self, lsn: int) -> None:
        """Everything before ``lsn`` is durable downstream: tell the server."""
        if lsn > self.flush_lsn:
            self.flush_lsn = lsn
            self.send_status()

    def maybe_send_status(self) -> None:
        if time.monotonic() - self._last_status >= self.status_interval_s:
            self.send_status()

    def send_status(self) -> None:
        write = max(self.received_lsn, self.flush_lsn)
        message = _STATUS.pack(b"r", write, self.flush_lsn, self.flush_lsn, pg_now(), 0)
        try:
            with self._io:
                self.pgconn.put_copy_data(message)
                self.pgconn.flush()
        except psycopg.Error as exc:
            raise replication_error(str(exc), self.slot) from None
        self._last_status = time.monotonic()

    def close(self) -> None:
        """End CopyBoth politely (sending the last status first); the connection stays usable."""
        if self._closed:
            return
        self._closed = True
        pgconn = self.pgconn
        if pgconn.status != pq.ConnStatus.OK:
            return
        try:
            self.send_status()
            pgconn.put_copy_end()
            pgconn.flush()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                nbytes, _ = pgconn.get_copy_data(1)
                if nbytes == -1:
                    break
                if nbytes == 0:
                    select.select([pgconn.socket], [], [], 0.2)
                    pgconn.consume_input()
                if nbytes == -2:
                    break
            while pgconn.get_result() is not None:
                pass
        except (psycopg.Error, CdcError, OSError) as exc:
            log.debug("closing the replication stream: %s", exc)


def replication_error(message: str, slot: str) -> CdcError:
    text = message.strip()
    low = text.lower()
    if "is active for pid" in low:
        return SlotInUseError(
            f"replication slot {slot!r} is in use by another process: {text}",
            fix="stop the other pipeline using it, or give this one another slot.name",
        )
    if "does not exist" in low and "replication slot" in low:
        return SlotMissingError(
            f"replication slot {slot!r} does not exist (it was dropped?): {text}",
            fix=(
                "changes made while it was missing cannot be read again; restart with "
                "snapshot.mode=when_needed (or always) to re-snapshot, or delete the stored offset"
            ),
        )
    if "publication" in low and "does not exist" in low:
        return SourceError(text,
                           fix="create the publication, or set publication.autocreate.mode=all_tables or filtered")
    if (lost := guards.explain(Exception(text), slot)) is not None:  # never readable again: not retried
        return SlotMissingError(lost.message, fix=lost.fix)
    if "logical decoding on standby requires" in low:  # wal_level of the primary (PostgreSQL 16+)
        return SourceError(text, fix="on the primary: ALTER SYSTEM SET wal_level = logical; then restart it")
    if "being synchronized from the primary" in low:  # a standby's copy of a failover slot, before its promotion
        return RetriableSourceError(
            f"replication slot {slot!r} is a standby's copy of the primary's failover slot: {text}",
            fix="promote the standby if the primary failed (cdc retries meanwhile); else point database.hostname "
                "back at the primary")
    if "requested wal segment" in low and "removed" in low:
        return SlotMissingError(text, fix="the WAL needed was removed; re-snapshot with snapshot.mode=when_needed")
    return RetriableSourceError(f"replication stream broke: {text}", fix="the source reconnects; check the server log")


class SlotInUseError(SourceError):
    retriable = False


class SlotMissingError(SourceError):
    retriable = False
