"""A pure decoder of PostgreSQL ``pgoutput`` logical replication messages (no I/O).

Message formats: PostgreSQL's "Logical Replication Message Formats" (shared/reference/002_*).
Protocol 2 adds a leading xid to Relation/Type/Insert/Update/Delete/Truncate/Message inside a
streamed block (between Stream Start and Stream Stop): pass ``in_stream=True`` there.

Tuple data is returned as a plain tuple: None for SQL NULL, :data:`UNCHANGED_TOAST` for an
unchanged TOASTed value the server did not send, ``str`` for text values, ``bytes`` for binary.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PG_EPOCH_OFFSET_US = 946_684_800_000_000  # 2000-01-01 - 1970-01-01 in microseconds


class PgOutputError(ValueError):
    """Bytes that are not a valid pgoutput message."""


class _UnchangedToast:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"

    def __reduce__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST = _UnchangedToast()

TupleData = tuple


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int
    commit_ts: int  # microseconds since 2000-01-01, as sent
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts: int


@dataclass(frozen=True, slots=True)
class Origin:
    lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class RelationColumn:
    flags: int  # 1: part of the replica identity key
    name: str
    type_oid: int
    typmod: int


@dataclass(frozen=True, slots=True)
class Relation:
    xid: int | None
    relid: int
    namespace: str
    name: str
    replica_identity: str  # 'd' default, 'n' nothing, 'f' full, 'i' index
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True, slots=True)
class TypeMessage:
    xid: int | None
    oid: int
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Insert:
    xid: int | None
    relid: int
    new: TupleData


@dataclass(frozen=True, slots=True)
class Update:
    xid: int | None
    relid: int
    old: TupleData | None
    old_kind: str | None  # 'K' key columns only, 'O' whole old row
    new: TupleData


@dataclass(frozen=True, slots=True)
class Delete:
    xid: int | None
    relid: int
    old: TupleData
    old_kind: str


@dataclass(frozen=True, slots=True)
class Truncate:
    xid: int | None
    options: int  # 1 CASCADE, 2 RESTART IDENTITY
    relids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LogicalMessage:
    xid: int | None
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


@dataclass(frozen=True, slots=True)
class StreamStart:
    xid: int
    first_segment: bool


@dataclass(frozen=True, slots=True)
class StreamStop:
    pass


@dataclass(frozen=True, slots=True)
class StreamCommit:
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts: int


@dataclass(frozen=True, slots=True)
class StreamAbort:
    xid: int
    subxid: int
    abort_lsn: int | None  # protocol 4 (parallel streaming) only
    abort_ts: int | None


Message = (Begin | Commit | Origin | Relation | TypeMessage | Insert | Update | Delete | Truncate | LogicalMessage
           | StreamStart | StreamStop | StreamCommit | StreamAbort)

_I16 = struct.Struct("!h")
_U16 = struct.Struct("!H")
_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")
_U64 = struct.Struct("!Q")
_BEGIN = struct.Struct("!QqI")
_COMMIT = struct.Struct("!BQQq")
_STREAM_COMMIT = struct.Struct("!IBQQq")
_COLUMN_TAIL = struct.Struct("!Ii")


class _Reader:
    """A cursor over one message's bytes."""

    __slots__ = ("data", "pos", "kind")

    def __init__(self, data: bytes, kind: str) -> None:
        self.data = data
        self.pos = 1
        self.kind = kind

    def fail(self, what: str) -> PgOutputError:
        return PgOutputError(f"pgoutput message {self.kind!r}: {what} at offset {self.pos} of {len(self.data)} bytes")

    def unpack(self, fmt: struct.Struct) -> tuple:
        try:
            values = fmt.unpack_from(self.data, self.pos)
        except struct.error:
            raise self.fail(f"truncated ({fmt.size} bytes expected)") from None
        self.pos += fmt.size
        return values

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("truncated")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def cstring(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise self.fail("unterminated string")
        value = self.data[self.pos:end].decode("utf-8")
        self.pos = end + 1
        return value

    def xid(self, in_stream: bool) -> int | None:
        return self.unpack(_U32)[0] if in_stream else None

    def tuple_data(self) -> TupleData:
        # The hot path: one call per row, locals only, text columns first.
        data = self.data
        pos = self.pos
        size = len(data)
        unpack_i32 = _I32.unpack_from
        try:
            count = (data[pos] << 8) | data[pos + 1]
            pos += 2
            values: list[Any] = [None] * count
            for i in range(count):
                kind = data[pos]
                if kind == 0x74:  # 't' text
                    length = unpack_i32(data, pos + 1)[0]
                    start = pos + 5
                    pos = start + length
                    if pos > size:
                        raise IndexError
                    values[i] = data[start:pos].decode()
                elif kind == 0x6E:  # 'n' null (the list holds None already)
                    pos += 1
                elif kind == 0x75:  # 'u' unchanged TOAST
                    values[i] = UNCHANGED_TOAST
                    pos += 1
                elif kind == 0x62:  # 'b' binary
                    length = unpack_i32(data, pos + 1)[0]
                    start = pos + 5
                    pos = start + length
                    if pos > size:
                        raise IndexError
                    values[i] = data[start:pos]
                else:
                    self.pos = pos
                    raise self.fail(f"unknown tuple column kind {chr(kind)!r}")
        except (IndexError, struct.error):
            self.pos = pos
            raise self.fail("truncated tuple data") from None
        self.pos = pos
        return tuple(values)


def _begin(r: _Reader, in_stream: bool) -> Begin:
    final_lsn, ts, xid = r.unpack(_BEGIN)
    return Begin(final_lsn, ts, xid)


def _commit(r: _Reader, in_stream: bool) -> Commit:
    flags, commit_lsn, end_lsn, ts = r.unpack(_COMMIT)
    return Commit(flags, commit_lsn, end_lsn, ts)


def _origin(r: _Reader, in_stream: bool) -> Origin:
    (lsn,) = r.unpack(_U64)
    return Origin(lsn, r.cstring())


def _relation(r: _Reader, in_stream: bool) -> Relation:
    xid = r.xid(in_stream)
    (relid,) = r.unpack(_U32)
    namespace = r.cstring()
    name = r.cstring()
    identity = chr(r.byte())
    (count,) = r.unpack(_I16)
    columns = []
    for _ in range(count):
        flags = r.byte()
        column = r.cstring()
        oid, typmod = r.unpack(_COLUMN_TAIL)
        columns.append(RelationColumn(flags, column, oid, typmod))
    return Relation(xid, relid, namespace, name, identity, tuple(columns))


def _type(r: _Reader, in_stream: bool) -> TypeMessage:
    xid = r.xid(in_stream)
    (oid,) = r.unpack(_U32)
    return TypeMessage(xid, oid, r.cstring(), r.cstring())


def _expect(r: _Reader, allowed: bytes) -> str:
    kind = r.byte()
    if kind not in allowed:
        r.pos -= 1
        raise r.fail(f"unexpected tuple marker {chr(kind)!r}")
    return chr(kind)


def _insert(r: _Reader, in_stream: bool) -> Insert:
    xid = r.xid(in_stream)
    (relid,) = r.unpack(_U32)
    _expect(r, b"N")
    return Insert(xid, relid, r.tuple_data())


def _update(r: _Reader, in_stream: bool) -> Update:
    xid = r.xid(in_stream)
    (relid,) = r.unpack(_U32)
    marker = _expect(r, b"KON")
    old = None
    old_kind = None
    if marker != "N":
        old_kind = marker
        old = r.tuple_data()
        _expect(r, b"N")
    return Update(xid, relid, old, old_kind, r.tuple_data())


def _delete(r: _Reader, in_stream: bool) -> Delete:
    xid = r.xid(in_stream)
    (relid,) = r.unpack(_U32)
    kind = _expect(r, b"KO")
    return Delete(xid, relid, r.tuple_data(), kind)


def _truncate(r: _Reader, in_stream: bool) -> Truncate:
    xid = r.xid(in_stream)
    (count,) = r.unpack(_U32)
    options = r.byte()
    relids = tuple(r.unpack(_U32)[0] for _ in range(count))
    return Truncate(xid, options, relids)


def _message(r: _Reader, in_stream: bool) -> LogicalMessage:
    xid = r.xid(in_stream)
    flags = r.byte()
    (lsn,) = r.unpack(_U64)
    prefix = r.cstring()
    (length,) = r.unpack(_U32)
    end = r.pos + length
    if end > len(r.data):
        raise r.fail("truncated message content")
    content = bytes(r.data[r.pos:end])
    r.pos = end
    return LogicalMessage(xid, bool(flags & 1), lsn, prefix, content)


def _stream_start(r: _Reader, in_stream: bool) -> StreamStart:
    (xid,) = r.unpack(_U32)
    return StreamStart(xid, r.byte() == 1)


def _stream_stop(r: _Reader, in_stream: bool) -> StreamStop:
    return StreamStop()


def _stream_commit(r: _Reader, in_stream: bool) -> StreamCommit:
    xid, flags, commit_lsn, end_lsn, ts = r.unpack(_STREAM_COMMIT)
    return StreamCommit(xid, flags, commit_lsn, end_lsn, ts)


def _stream_abort(r: _Reader, in_stream: bool) -> StreamAbort:
    (xid,) = r.unpack(_U32)
    (subxid,) = r.unpack(_U32)
    abort_lsn = abort_ts = None
    if len(r.data) - r.pos >= 16:  # protocol 4 adds the abort LSN and time
        (abort_lsn,) = r.unpack(_U64)
        (abort_ts,) = r.unpack(_U64)
    return StreamAbort(xid, subxid, abort_lsn, abort_ts)


_DECODERS: dict[int, Callable[[_Reader, bool], Message]] = {
    ord("B"): _begin, ord("C"): _commit, ord("O"): _origin, ord("R"): _relation, ord("Y"): _type,
    ord("I"): _insert, ord("U"): _update, ord("D"): _delete, ord("T"): _truncate, ord("M"): _message,
    ord("S"): _stream_start, ord("E"): _stream_stop, ord("c"): _stream_commit, ord("A"): _stream_abort,
}


def decode(data: bytes | memoryview, in_stream: bool = False) -> Message:
    """Decode one pgoutput message (the payload of an XLogData)."""
    if isinstance(data, memoryview):
        data = data.tobytes()
    if not data:
        raise PgOutputError("empty pgoutput message")
    decoder = _DECODERS.get(data[0])
    if decoder is None:
        raise PgOutputError(f"unknown pgoutput message type {chr(data[0])!r} (0x{data[0]:02x})")
    return decoder(_Reader(data, chr(data[0])), in_stream)


def pg_timestamp_to_unix_micros(ts: int) -> int:
    return ts + PG_EPOCH_OFFSET_US


def format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    high, _, low = text.partition("/")
    if not _:
        raise ValueError(f"not an LSN: {text!r}")
    return (int(high, 16) << 32) | int(low, 16)
