"""pgoutput messages -> change events, for one replication session (no I/O here).

    Begin      a transaction opens; one before the resume point is skipped whole, the one the
               offset stops inside is resumed after its last delivered change
    Relation   a table (re)described from the catalog; the signal table is remembered
    Type       a cached type is forgotten
    Insert / Update / Delete / Truncate / Message -> events (cdc.core.emitter)
    Commit     END; the committed position moves past the transaction

The streamer (streamer.py) drives it: it feeds each XLogData to :meth:`ChangeStream.handle` and,
between messages, hands the events over with :meth:`ChangeStream.position`. Incremental-snapshot
windows and signals are the signal handling's (signaling.py): it answers through :class:`StreamHooks`.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from cdc.core import connect
from cdc.core.connect import ConnectSchema
from cdc.core.emitter import ChangeEmitter
from cdc.core.encodings import binary_encoder
from cdc.core.envelope import OP_MESSAGE, TRANSACTION_BLOCK_SCHEMA, now_ts
from cdc.core.records import ChangeEvent, EncodedRows
from cdc.core.topics import sanitize_topic
from cdc.sources.postgres import pgoutput as po
from cdc.sources.postgres.encoded_runs import INSERT, TUPLE_AT, UPDATE, EncodedRun, run_row
from cdc.sources.postgres.native_rows import NativeRow
from cdc.sources.postgres.position import PgPosition
from cdc.sources.postgres.replication import XLogData
from cdc.sources.postgres.source_info import SOURCE_SCHEMA, source_block
from cdc.sources.postgres.tables import TableState

# The data collection a transactional message counts under in its transaction's END event. Debezium
# names the class of its message id with the object's identity hash (a new one per message, so every
# message is its own entry); cdc counts them all under the class name, without the hash.
MESSAGE_DATA_COLLECTION = "io.debezium.connector.postgresql.LogicalDecodingMessageMonitor$LogicalDecodingMessageId"

MESSAGE_KEY_SCHEMA = ConnectSchema(connect.struct(
    [connect.field("prefix",
                   connect.OPTIONAL_STRING)], optional=False, name="io.debezium.connector.postgresql.MessageKey",
    version=1))


def message_value_schema(binary_mode: str) -> ConnectSchema:
    """A logical decoding message's value schema: its content is bytes, or a string in the
    base64/hex binary.handling.modes (as a bytea column's)."""
    content = connect.primitive("bytes" if binary_mode == "bytes" else "string")
    return ConnectSchema(connect.struct(
        [
            connect.field("op", connect.STRING),
            connect.field("ts_ms", connect.OPTIONAL_INT64),
            connect.field("source", SOURCE_SCHEMA),
            connect.field("transaction", TRANSACTION_BLOCK_SCHEMA),
            connect.field("message", connect.struct(
                [connect.field("prefix", connect.OPTIONAL_STRING), connect.field("content", content)],
                optional=False, name="io.debezium.connector.postgresql.Message", version=1)),
        ],
        optional=False, name="io.debezium.connector.postgresql.MessageValue", version=1))


_OPS = {po.Insert: "c", po.Update: "u", po.Delete: "d"}


class StreamHooks(Protocol):
    """What the stream asks the signal handling (signals, incremental-snapshot windows)."""

    def before_transaction(self, final_lsn: int, events: list[ChangeEvent], where: tuple[int, int]) -> None:
        """A transaction is about to open, the stream standing at ``where`` (a read-only chunk's window
        may close here)."""

    def signal_row(self, row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, int]) -> None:
        """A row inserted into the signal table, by column name."""

    def watching(self, table: str, xid: int) -> bool:
        """Whether changes of ``table`` (by transaction ``xid``) fall into an open snapshot window."""

    def observe(self, events: Sequence[ChangeEvent]) -> None:
        """Changes inside that window."""

    def truncated(self, table: str) -> None:
        """``table`` was truncated."""


@dataclass
class Transaction:
    """The transaction being decoded."""

    xid: int = 0
    final_lsn: int = 0  # its commit LSN, known from BEGIN
    commit_us: int = 0
    open: bool = False
    skipping: bool = False  # delivered before the resume point
    last_change: int | None = None  # LSN of its last change handed out


class MessageEvents:
    """Logical decoding messages (pg_logical_emit_message) as Debezium's message events."""

    def __init__(self, prefix: str, dbname: str, binary_mode: str) -> None:
        self.prefix = prefix
        self.dbname = dbname
        self.topic = sanitize_topic(f"{prefix}.message")
        self.schema = message_value_schema(binary_mode)
        self.content = binary_encoder(binary_mode)

    def event(self, message: po.LogicalMessage, tx: Transaction, lsn: int, last_commit_lsn: int | None,
              block: dict[str, Any] | None) -> ChangeEvent:
        """``block``: the transaction block of a transactional message, when transactions are tracked."""
        source = source_block(self.prefix, self.dbname, "", "",
                              ts_us=tx.commit_us if message.transactional else time.time_ns() // 1000,
                              tx_id=tx.xid if message.transactional else None, lsn=lsn,
                              last_commit_lsn=last_commit_lsn)
        value = {"op": OP_MESSAGE, "ts_ms": now_ts()[0], "source": source, "transaction": block,
                 "message": {"prefix": message.prefix, "content": self.content(message.content)}}
        return ChangeEvent(self.topic, MESSAGE_KEY_SCHEMA, {"prefix": message.prefix}, self.schema, value,
                           context_headers=False)


class Segment(NamedTuple):
    """A run of rows encoded in one call (``encoded``), the events before it, and the position after it;
    ``committed``: how many of those events end with a COMMIT, and the position after that COMMIT (where
    a bounded reader, Spark's micro-batches, may end), when they do."""

    before: list[ChangeEvent]
    encoded: EncodedRows
    position: PgPosition
    committed: tuple[int, PgPosition] | None


class ChangeStream:
    def __init__(self, *, resume: PgPosition, prefix: str, dbname: str, emitter: ChangeEmitter,
                 relations: dict[int, TableState | None], describe: Callable[[po.Relation], TableState | None],
                 forget_type: Callable[[int], None], signal_table: str | None, hooks: StreamHooks,
                 per_event_ids: bool = False, binary_mode: str = "bytes", encode_runs: bool = False,
                 max_run: int = 10_000, message_prefixes: Callable[[str], bool] = lambda prefix: True) -> None:
        """``message_prefixes``: whether a logical decoding message of that prefix is emitted
        (message.prefix.include.list / exclude.list)."""
        self.committed_lsn = resume.lsn
        self.resume = resume
        self._skip_commit = resume.lsn_commit
        self._skip_until = resume.lsn_proc or 0
        self._skip_in_next = resume.proc_in_next  # Debezium's offset: the first transaction is the partial one
        self.prefix = prefix
        self.dbname = dbname
        self.emitter = emitter
        self.relations = relations
        self.describe = describe
        self.forget_type = forget_type
        self.signal_table = signal_table
        self.hooks = hooks
        self.per_event_ids = per_event_ids  # transaction.id.mode=debezium
        self.messages = MessageEvents(prefix, dbname, binary_mode)
        self.message_prefixes = message_prefixes
        self.tx = Transaction()
        self.last_commit_lsn: int | None = None  # source.sequence's first LSN (Debezium's)
        # The events list of the last COMMIT, how many events it held then, and the position after it.
        self.last_commit: tuple[list[ChangeEvent], int, PgPosition] | None = None
        self._signal_relid: int | None = None
        self.signal_columns: list[str] = []
        # Runs of rows encoded in one call (cdc.sources.postgres.encoded_runs): never with transaction metadata.
        self.encode_runs = encode_runs and emitter.tracker is None
        self.max_run = max_run
        self.run: EncodedRun | None = None
        # Runs ended, each with the events before it and the position after it, for the streamer to hand over.
        self.segments: list[Segment] = []

    # ---- positions -----------------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        return self.tx.open

    @property
    def at_commit(self) -> bool:
        """Whether no change of an open transaction came yet: the position is after the last COMMIT."""
        return not self.tx.open or self.tx.last_change is None

    def position(self, inside: bool = False) -> PgPosition:
        """Where a batch handed out now ends: after the last whole transaction, or (``inside``) after
        the last change of the open one."""
        tx = self.tx
        if inside and tx.open and tx.last_change is not None:
            return PgPosition(self.committed_lsn, tx.final_lsn, tx.last_change, tx.xid or None, tx.commit_us or None)
        if self.resuming_inside:
            return self.resume  # not "after committed_lsn": that would deliver the transaction's first part again
        return PgPosition(self.committed_lsn, tx_id=tx.xid or None, ts_usec=tx.commit_us or None)

    @property
    def resuming_inside(self) -> bool:
        """Whether the stream resumed inside a transaction (its first part delivered before the restart)
        and has delivered nothing of it since: until then, a batch handed over keeps the resume position."""
        return self.resume.inside_transaction and (self._skip_in_next or self._skip_commit is not None)

    # ---- dispatch ------------------------------------------------------------------------------

    def handle(self, data: XLogData, events: list[ChangeEvent]) -> None:
        payload = data.payload if isinstance(data.payload, bytes) else bytes(data.payload)
        kind = payload[0]
        if self.encode_runs and self._into_run(payload, kind, data.wal_start, events):
            return
        if self.run is not None:
            self.close_run(events)
        if kind == INSERT or kind == UPDATE:  # the compiled codec takes the new tuple when it can
            native = self._native(payload, kind)
            if native is not None:
                self._on_row(native, data.wal_start, events)
                return
        message = po.decode(payload)
        handler = self._HANDLERS.get(type(message))
        if handler is not None:
            handler(self, message, data.wal_start, events)

    def _native(self, payload: bytes, kind: int) -> po.Insert | po.Update | None:
        """The message with its new tuple encoded by the table's codec (a NativeRow), when the table
        has one and the message has no old tuple; None: decode it the Python way."""
        relid = run_row(payload, kind)
        if relid is None:
            return None
        state = self.relations.get(relid)
        if state is None or state.native is None:
            return None
        row = state.native.encode(payload, TUPLE_AT)
        if row is None:
            return None
        return po.Insert(None, relid, row) if kind == INSERT else po.Update(None, relid, None, None, row)

    # ---- runs of rows encoded in one call ------------------------------------------------------

    def _into_run(self, payload: bytes, kind: int, lsn: int, events: list[ChangeEvent]) -> bool:
        """Whether the message went into a run (the open one, or one it starts)."""
        relid = run_row(payload, kind)
        if relid is None:
            return False
        run = self.run
        if run is not None:
            if run.relid == relid and run.kind == kind and len(run.lsns) < self.max_run:
                run.add(payload, lsn)
                self.tx.last_change = lsn
                return True
            self.close_run(events)
        state = self.relations.get(relid)
        tx = self.tx
        if state is None or state.native is None or not state.native.batchable or not tx.open \
                or self._delivered(lsn) or not self.emitter.emits("c" if kind == INSERT else "u") \
                or self.hooks.watching(state.qualified, tx.xid):
            return False
        source = state.source(self.prefix, self.dbname, xid=tx.xid, commit_us=tx.commit_us, lsn=lsn,
                              last_commit_lsn=self.last_commit_lsn)
        self.run = EncodedRun(relid, kind, state, source, self.last_commit_lsn, tx.final_lsn)
        self.run.add(payload, lsn)
        tx.last_change = lsn
        return True

    def close_run(self, events: list[ChangeEvent]) -> None:
        """End the open run: its rows encoded into ``segments`` (with the events before it, which leave
        ``events``), or, when the codec leaves any to Python, decoded into ``events`` one by one."""
        run, self.run = self.run, None
        if run is None:
            return
        encoded = run.encoded()
        if encoded is None:
            for payload, lsn in zip(run.payloads, run.lsns, strict=True):
                self._on_row(po.decode(payload), lsn, events)  # type: ignore[arg-type]
            return
        committed = None
        if self.last_commit is not None and self.last_commit[0] is events:
            committed = self.last_commit[1:]  # the events up to a COMMIT, with the position after it
            self.last_commit = None  # its count was of the events that leave now
        self.segments.append(Segment(list(events), encoded, self.position(inside=True), committed))
        events.clear()

    def take_segments(self) -> list[Segment]:
        segments, self.segments = self.segments, []
        return segments

    def _on_begin(self, message: po.Begin, wal_start: int, events: list[ChangeEvent]) -> None:
        tx = self.tx
        self.hooks.before_transaction(message.final_lsn, events, (tx.final_lsn, tx.last_change or 0))
        tx.open = True
        tx.xid = message.xid
        tx.final_lsn = message.final_lsn
        tx.commit_us = po.pg_timestamp_to_unix_micros(message.commit_ts)
        tx.skipping = tx.final_lsn < self.committed_lsn
        tx.last_change = None
        if self._skip_in_next and not tx.skipping:
            self._skip_commit, self._skip_in_next = tx.final_lsn, False
        resuming_inside = self._skip_commit is not None and tx.final_lsn == self._skip_commit
        tracker = self.emitter.tracker
        if tracker is None or tx.skipping:
            return
        tx_id = f"{tx.xid}:{wal_start if self.per_event_ids else tx.final_lsn}"
        if resuming_inside:
            tracker.id = tx_id  # its BEGIN went out before the restart
        else:
            self.emitter.begin(events, tx_id, tx.commit_us // 1000)

    def _on_commit(self, message: po.Commit, wal_start: int, events: list[ChangeEvent]) -> None:
        tx = self.tx
        tx.open = False
        if not tx.skipping:
            tracker = self.emitter.tracker
            if tracker is not None and tracker.active and self.per_event_ids:
                tracker.id = f"{tx.xid}:{message.end_lsn}"
            self.emitter.end(events, tx.commit_us // 1000)
            self.last_commit_lsn = message.end_lsn
        self.committed_lsn = max(self.committed_lsn, message.end_lsn)
        self._skip_commit = None
        tx.skipping = False
        self.last_commit = (events, len(events), self.position())

    def _on_relation(self, message: po.Relation, wal_start: int, events: list[ChangeEvent]) -> None:
        if f"{message.namespace}.{message.name}" == self.signal_table:
            self.relations[message.relid] = None  # its rows are signals, never events
            self._signal_relid = message.relid
            self.signal_columns = [c.name for c in message.columns]
            return
        self.relations[message.relid] = self.describe(message)

    def _on_type(self, message: po.TypeMessage, wal_start: int, events: list[ChangeEvent]) -> None:
        self.forget_type(message.oid)

    def _delivered(self, wal_start: int) -> bool:
        """Delivered before the resume point: a skipped transaction, or the resumed one's first part."""
        tx = self.tx
        return tx.skipping or (self._skip_commit is not None and tx.final_lsn == self._skip_commit
                               and wal_start <= self._skip_until)

    def _change_seen(self, lsn: int) -> None:
        self.tx.last_change = lsn
        tracker = self.emitter.tracker
        if self.per_event_ids and tracker is not None and tracker.active:
            tracker.id = f"{self.tx.xid}:{lsn}"

    def _on_row(self, message: po.Insert | po.Update | po.Delete, lsn: int, events: list[ChangeEvent]) -> None:
        if self._delivered(lsn):
            return
        self._change_seen(lsn)
        state = self.relations.get(message.relid)
        if state is None:
            if message.relid == self._signal_relid and isinstance(message, po.Insert):
                # a column added to the signal table since: ignored
                row = dict(zip(self.signal_columns, message.new, strict=False))
                self.hooks.signal_row(row, events, (self.tx.final_lsn, lsn))
            return
        first = len(events)
        self._row_events(state, message, lsn, events)
        if self.hooks.watching(state.qualified, self.tx.xid):
            self.hooks.observe(events[first:])

    def _row_events(self, state: TableState, message: po.Insert | po.Update | po.Delete, lsn: int,
                    events: list[ChangeEvent]) -> None:
        emit = self.emitter
        if not emit.emits(_OPS[type(message)]):
            return
        tx = self.tx
        source = state.source(self.prefix, self.dbname, xid=tx.xid, commit_us=tx.commit_us, lsn=lsn,
                              last_commit_lsn=self.last_commit_lsn)
        envelope = state.envelope
        position = (tx.final_lsn, lsn)
        if isinstance(message, po.Insert):
            new = message.new
            if type(new) is NativeRow:
                emit.create(events, envelope, new, source, position, key=new.key)
            else:
                emit.create(events, envelope, state.row(new), source, position)
        elif isinstance(message, po.Delete):
            emit.delete(events, envelope, state.row(message.old, key_only=message.old_kind == "K"), source, position)
        else:
            # A key-only old tuple ('K') comes when the identity's columns changed; Debezium shows no
            # before image for it unless the key changed. The key is read before the columns the
            # tuple leaves out are filled in.
            key_only = message.old_kind == "K"
            old = state.row(message.old, key_only=key_only) if message.old is not None else None
            old_key = envelope.key_of(state.row(message.old)) if key_only and message.old is not None else None
            new = message.new
            after = new if type(new) is NativeRow else state.row(new, message.old)
            emit.update(events, envelope, None if key_only else old, after, source, position, key_row=old,
                        old_key=old_key)

    def _on_truncate(self, message: po.Truncate, lsn: int, events: list[ChangeEvent]) -> None:
        if self._delivered(lsn):
            return
        self._change_seen(lsn)
        if not self.emitter.emits("t"):
            return
        tx = self.tx
        for relid in message.relids:
            state = self.relations.get(relid)
            if state is None:
                continue
            self.hooks.truncated(state.qualified)
            source = source_block(self.prefix, self.dbname, state.schema, state.name, ts_us=tx.commit_us,
                                  tx_id=tx.xid, lsn=lsn, last_commit_lsn=self.last_commit_lsn)
            self.emitter.truncate(events, state.envelope, source, (tx.final_lsn, lsn))

    def _on_message(self, message: po.LogicalMessage, lsn: int, events: list[ChangeEvent]) -> None:
        if message.transactional:
            if self._delivered(lsn):
                return
            self._change_seen(lsn)
        else:
            self.last_commit_lsn = lsn  # Debezium commits a non-transactional message at once
        if not self.message_prefixes(message.prefix):
            return  # filtered after the position moved, as Debezium's dispatcher does: not counted in END
        tracker = self.emitter.tracker
        # A transactional message is an event of its transaction: counted, with its block.
        block = tracker.block(MESSAGE_DATA_COLLECTION) if message.transactional and tracker is not None \
            and tracker.active else None
        events.append(self.messages.event(message, self.tx, lsn, self.last_commit_lsn, block))

    _HANDLERS: dict[type, Callable[[ChangeStream, Any, int, list[ChangeEvent]], None]] = {
        po.Begin: _on_begin, po.Commit: _on_commit, po.Relation: _on_relation, po.TypeMessage: _on_type,
        po.Insert: _on_row, po.Update: _on_row, po.Delete: _on_row, po.Truncate: _on_truncate,
        po.LogicalMessage: _on_message,
    }
