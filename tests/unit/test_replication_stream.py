"""The replication framing against a scripted connection: what is confirmed to the server, when."""
from __future__ import annotations

import struct
from typing import Any

from cdc.sources.postgres.replication import DRAINED, ReplicationStream


class ScriptedPgConn:
    """Hands out queued CopyData messages; records standby status updates."""

    def __init__(self, messages: list[bytes]) -> None:
        self.messages = list(messages)
        self.sent: list[tuple[int, int, int]] = []
        self.socket = -1

    def get_copy_data(self, async_: int) -> tuple[int, Any]:
        if not self.messages:
            return 0, b""
        message = self.messages.pop(0)
        return len(message), memoryview(message)

    def put_copy_data(self, data: bytes) -> None:
        _, write, flush, apply, _, _ = struct.unpack("!cQQQqB", data)
        self.sent.append((write, flush, apply))

    def flush(self) -> None:
        pass


class Conn:
    def __init__(self, pgconn: ScriptedPgConn) -> None:
        self.pgconn = pgconn


def xlog(start: int, end: int, payload: bytes = b"B") -> bytes:
    return b"w" + struct.pack("!QQq", start, end, 0) + payload


def keepalive(end: int, reply: bool = True) -> bytes:
    return b"k" + struct.pack("!QqB", end, 0, 1 if reply else 0)


def drain(stream: ReplicationStream) -> list[Any]:
    out = []
    for item in stream.messages(0.01):
        if item is DRAINED:
            return out
        out.append(item)
    return out


def test_keepalives_are_answered_with_the_acknowledged_position_only() -> None:
    pgconn = ScriptedPgConn([xlog(100, 200), keepalive(300)])
    stream = ReplicationStream(Conn(pgconn), "s", {}, 60)  # type: ignore[arg-type]
    data = drain(stream)
    assert [(d.wal_start, d.wal_end) for d in data] == [(100, 200)]
    assert pgconn.sent == [(300, 0, 0)]  # received up to 300, nothing flushed yet
    stream.confirm(150)
    assert pgconn.sent[-1] == (300, 150, 150)


def test_idle_keepalive_is_confirmed_only_while_nothing_new_arrived() -> None:
    pgconn = ScriptedPgConn([keepalive(500)])
    stream = ReplicationStream(Conn(pgconn), "s", {}, 60)  # type: ignore[arg-type]
    stream.confirm(400)
    stream.idle_flush_allowed = True  # the source says: everything handed out is acknowledged
    drain(stream)
    assert pgconn.sent[-1][1] == 500  # an idle database does not hold WAL for us
    # new data arrives after that acknowledgement: a later keepalive must not confirm past it
    pgconn.messages = [xlog(600, 700), keepalive(800)]
    drain(stream)
    assert pgconn.sent[-1] == (800, 500, 500)
