"""Binlog events -> change events (no I/O here: the source reads, this decides).

    GTID / BEGIN        a transaction starts at its first event's position
    TABLE_MAP           the binlog's storage layout of a table, paired with our schema there
    ROWS_QUERY          the statement (include.query)
    WRITE/UPDATE/DELETE_ROWS -> c / u / d events (cdc.core.emitter); signal-table rows -> signals
    XID / COMMIT        END of the transaction; the position moves past it
    QUERY (DDL)         applied to the schema model, recorded in the history, schema change event
                        (TRUNCATE: a 't' event)
    ROTATE              the next binlog file

:meth:`BinlogChanges.handle` returns what happened, so that the source hands batches over at the
right places: after a commit or DDL, on a heartbeat, or when a batch is full.

A (re)start inside a transaction reads it again from its start and skips what was delivered
(:class:`ResumeSkip`): the transaction named by its GTID when there is one (a resume by GTID may read
other transactions first), else the first one read. Rows of a transaction whose GTID source
``gtid.source.includes`` / ``excludes`` leave out are not emitted (``gtid.source.filter.dml.events``).
"""
from __future__ import annotations

import enum
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from cdc.core.emitter import ChangeEmitter
from cdc.core.encoded_rows import Placeholder, template
from cdc.core.envelope import OP_CREATE, now_ts
from cdc.core.errors import SourceError
from cdc.core.native_row import native_module
from cdc.core.records import ChangeEvent, EncodedRows
from cdc.core.redact import redact_secrets
from cdc.core.schema import TableId, parse_table_id
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.transactions import java_hashmap_order
from cdc.sources.mysql import binlog as bl
from cdc.sources.mysql import rows
from cdc.sources.mysql.binlog_compat import FL_ROLLBACK_ALTER_E1, FL_START_ALTER_E1
from cdc.sources.mysql.ddl import DdlEvent, MySqlSchema, ignored_by_debezium
from cdc.sources.mysql.gtids import DeliveredGtids, Wanted, source_of
from cdc.sources.mysql.native_rows import EventRows, YearAdjuster, binlog_codec
from cdc.sources.mysql.position import BinlogPosition, position_key
from cdc.sources.mysql.snapshot import SYSTEM_DATABASES
from cdc.sources.mysql.source_info import source_block
from cdc.sources.mysql.tables import TableState
from cdc.sources.mysql.types import is_unsigned

_OPS = {bl.WriteRowsEvent: "c", bl.UpdateRowsEvent: "u", bl.DeleteRowsEvent: "d"}
_TRUNCATE = re.compile(r"\s*TRUNCATE\s+(?:TABLE\s+)?(?:`((?:[^`]|``)+)`|(\w+))"
                       r"(?:\s*\.\s*(?:`((?:[^`]|``)+)`|(\w+)))?\s*;?\s*$", re.IGNORECASE)


class Step(enum.Enum):
    """What one binlog event meant for the batch being built."""

    NONE = "none"  # keep reading
    ROWS = "rows"  # changes of a transaction (hand over when the batch is full)
    COMMITTED = "committed"  # a transaction ended: the position moved
    DDL = "ddl"  # a statement that changes the schema (or a TRUNCATE) ended its own group
    HEARTBEAT = "heartbeat"  # the server has nothing more right now


class StreamHooks(Protocol):
    """What the stream asks the source (the schema history, signals, snapshot windows)."""

    def table_state(self, database: str, table: str) -> TableState | None: ...

    def schema_changed(self) -> None:
        """Per-table states built before a DDL are stale."""

    def record_ddl(self, position: dict[str, Any], database: str | None, ddl: str,
                   changes: list[dict[str, Any]]) -> None:
        """Store one schema history record (unless it was stored before a restart)."""

    def signal_row(self, row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, ...]) -> None: ...

    def observe(self, table: str, events: Sequence[ChangeEvent]) -> None:
        """Changes of ``table``: the open incremental-snapshot window may hold rows of it."""

    def transaction_starts(self, position: tuple[int, str, int], events: list[ChangeEvent]) -> None:
        """A transaction starts at ``position`` (read-only watermarks behind it fire)."""

    def watching(self, table: str) -> bool:
        """Whether an open incremental-snapshot window reads ``table`` (its changes must be observed)."""


ROW_INDEX = Placeholder(b"\x01")  # source.row of an encoded rows event's records


@dataclass(frozen=True)
class StreamCallbacks:
    """:class:`StreamHooks` as callables the source wires (the table catalog, the schema history, the
    signals), so that the stream holds none of them."""

    table_state: Callable[[str, str], TableState | None]
    schema_changed: Callable[[], None]
    record_ddl: Callable[[dict[str, Any], str | None, str, list[dict[str, Any]]], None]
    signal_row: Callable[[dict[str, Any], list[ChangeEvent], tuple[int, ...]], None]
    observe: Callable[[str, Sequence[ChangeEvent]], None]
    transaction_starts: Callable[[tuple[int, str, int], list[ChangeEvent]], None]
    watching: Callable[[str], bool]


@dataclass
class StreamSettings:
    prefix: str
    flavor: str  # mysql | mariadb
    include_query: bool
    include_schema_changes: bool
    only_captured_tables_ddl: bool
    only_captured_databases_ddl: bool
    signal_table: str | None
    captured: Callable[[str, str], bool]
    captured_database: Callable[[str], bool]


class Transaction:
    """Where the transaction being read started, and how far into it delivery got."""

    __slots__ = ("file", "pos", "gtid", "thread", "query", "row_events", "events", "active", "filtered")

    def __init__(self) -> None:
        self.file = ""
        self.pos = 0
        self.gtid: str | None = None
        self.thread: int | None = None
        self.query: str | None = None
        self.row_events = 0
        self.events = 0  # as Debezium counts them: every event from its BEGIN (MariaDB: its GTID event) on
        self.active = False
        self.filtered = False  # its GTID source is not captured: its rows are not emitted

    def start(self, file: str, pos: int, gtid: str | None, thread: int | None = None) -> None:
        self.file, self.pos, self.gtid, self.thread = file, pos, gtid, thread
        self.query = None
        self.row_events = 0
        self.events = 1
        self.active = True
        self.filtered = False


@dataclass
class ResumeSkip:
    """What of one transaction was delivered before a (re)start, skipped when it is read again."""

    events: int  # rows events; with ``counts_all`` (Debezium's offset) every event from the transaction's start on
    rows: int  # rows of the rows event after them
    gtid: str | None = None  # the transaction's; None: the first transaction read
    counts_all: bool = False


@dataclass(frozen=True)
class ReadFrom:
    """Where to reopen the reader so that the next event is the first not read whole: by file and position, or by
    the GTIDs read whole (the server then sends the transaction being read again, from its start)."""

    file: str
    pos: int
    gtids: str | None


class BinlogChanges:
    def __init__(self, *, start: BinlogPosition, schema: MySqlSchema, emitter: ChangeEmitter,
                 schema_events: SchemaChangeEvents, gtids: DeliveredGtids, settings: StreamSettings,
                 hooks: StreamHooks) -> None:
        self.position = start  # after the last transaction handed over whole
        self.file = start.file  # the binlog file being read
        self.tx = Transaction()
        self.schema = schema
        self.emitter = emitter
        self.schema_events = schema_events
        self.gtids = gtids
        self.settings = settings
        self.hooks = hooks
        # whether the history holds a record at this position already (recorded before a restart)
        self.recorded: Callable[[dict[str, Any]], bool] = lambda position: False
        self.dml_wanted: Wanted | None = None  # GTID sources whose rows are emitted; None: all
        self._resume = ResumeSkip(start.event, start.row, start.gtid, start.debezium_counts) \
            if start.inside_transaction else None  # pending until its transaction is read
        self._skip: ResumeSkip | None = None  # of the transaction being read
        # binlog table id -> (table version, readers, the compiled codec or None, what moves the
        # two-digit years of the codec's rows or None)
        self._layouts: dict[int, tuple[TableState, list[rows.Reader], Any, YearAdjuster | None]] = {}
        self.native = False  # rows through the compiled codec (cdc.sources.mysql.native_rows) when it takes them
        # with native: a rows event's inserts as one encoded batch (EncodedRows), which only the engine takes
        self.encoded = False
        # rows events encoded whole, each with the events before it, for the streamer to hand over
        self.segments: list[tuple[list[ChangeEvent], EncodedRows]] = []
        self._fallback: Any = None  # cdc_native.Fallback

    # ---- positions -----------------------------------------------------------------------------

    def in_progress(self) -> BinlogPosition:
        """The position after the rows handed out so far, inside the open transaction."""
        tx = self.tx
        return self.position.inside(tx.file, tx.pos, tx.row_events, tx.gtid) if tx.active else self.position

    def resume_point(self) -> ReadFrom:
        """Where to reopen the binlog so that the next event is the first not yet read whole."""
        tx = self.tx
        file, pos = (tx.file, tx.pos) if tx.active else (self.position.file, self.position.pos)
        return ReadFrom(file, pos, self.gtids.text())

    def reopened(self, file: str) -> None:
        """The reader was reopened at ``resume_point()``: the open transaction comes again, its rows events read
        so far skipped (or as many as a skip still under way covers)."""
        tx = self.tx
        self.file = file
        if tx.active:  # a skip not passed yet counts the same way again
            self._resume = self._skip if self._skip is not None else ResumeSkip(tx.row_events, 0, tx.gtid)
        self._skip = None
        tx.active = False

    def _started(self) -> None:
        """A transaction starts (tx.start): the resume skip applies to it if it is the one it names."""
        resume = self._resume
        self._skip = None
        if resume is not None and (resume.gtid is None or resume.gtid == self.tx.gtid):
            self._skip, self._resume = resume, None

    # ---- dispatch ------------------------------------------------------------------------------

    def handle(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        if self.tx.active:
            self.tx.events += 1
        handler = self._HANDLERS.get(type(event))
        return handler(self, event, stream, events) if handler is not None else Step.NONE

    def _on_heartbeat(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        if not self.tx.active:  # caught up: every watermark is behind us
            self.hooks.transaction_starts(position_key(self.file, bl.event_end(event) or self.position.pos), events)
        return Step.HEARTBEAT

    def _on_rotate(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        self.file = event.next_binlog
        return Step.NONE

    def _on_gtid(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        # A MariaDB GTID flagged standalone precedes a DDL, which ends the group itself.
        tx = self.tx
        tx.start(self.file, bl.event_start(event, stream), event.gtid)
        tx.filtered = self.dml_wanted is not None and not self.dml_wanted(source_of(event.gtid))
        self._started()
        self.hooks.transaction_starts(position_key(self.file, tx.pos), events)
        return Step.NONE

    def _on_rows_query(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        self.tx.query = redact_secrets(event.query)
        return Step.NONE

    def _on_annotate_rows(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        """MariaDB's Annotate_rows: the statement of the rows events after it (include.query)."""
        self.tx.query = redact_secrets(event.sql_statement.decode("utf-8", "replace"))
        return Step.NONE

    def _on_query(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        query = event.query
        upper = query.lstrip()[:8].upper()
        tx = self.tx
        if upper.startswith("BEGIN"):
            if not tx.active or tx.gtid is None or tx.row_events:
                tx.start(self.file, bl.event_start(event, stream), tx.gtid if tx.active else None)
                self._started()
                self.hooks.transaction_starts(position_key(self.file, tx.pos), events)
            tx.events = 1  # MySQL's GTID event is not counted by Debezium: its count starts at BEGIN
            tx.thread = event.slave_proxy_id
            return Step.NONE
        if upper.startswith("COMMIT") or upper.startswith("ROLLBACK"):
            self._commit(event, events)
            return Step.COMMITTED
        if upper.startswith("XA "):
            return self._xa(query, event, stream, events)
        if not MySqlSchema._may_change_schema(query):
            return Step.NONE  # SAVEPOINT and the like, inside a transaction
        self._ddl(event, stream, events)
        return Step.DDL

    def _xa(self, query: str, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        """XA statements. A prepared XA transaction is its own binlog group: (GTID or ``XA START``),
        its rows, ``XA END``, then an XA_PREPARE event (which the reader does not ask for); the
        later ``XA COMMIT``/``XA ROLLBACK`` is a group of its own without rows. So ``XA END`` ends the
        transaction (END event, position past it) and ``XA COMMIT``/``ROLLBACK`` only move the
        position; else the next transaction would be folded into the prepared one. (MySQL logs
        ``XA COMMIT ... ONE PHASE`` in the same group after ``XA END``: the END has been written
        then, and it just moves the position; MariaDB logs ONE PHASE as an ordinary transaction.)"""
        words = query.split(None, 2)
        verb = words[1].upper() if len(words) > 1 else ""
        tx = self.tx
        if verb in ("START", "BEGIN"):
            if not tx.active:  # MySQL without GTIDs: the group starts here, as with BEGIN
                tx.start(self.file, bl.event_start(event, stream), None)
                self._started()
                self.hooks.transaction_starts(position_key(self.file, tx.pos), events)
            tx.events = 1
            tx.thread = event.slave_proxy_id
            return Step.NONE
        if verb in ("END", "COMMIT", "ROLLBACK"):
            self._commit(event, events)
            return Step.COMMITTED
        return Step.NONE  # XA RECOVER and the like

    def _on_xid(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        self._commit(event, events)
        return Step.COMMITTED

    def _commit(self, event: Any, events: list[ChangeEvent]) -> None:
        self.emitter.end(events, event.timestamp * 1000)
        self._advance(event)

    def _advance(self, event: Any, *, keep_gtid: bool = False) -> None:
        tx = self.tx
        if tx.gtid:
            self.gtids.add(tx.gtid)
        self.position = BinlogPosition(self.file, bl.event_end(event), gtids=self.gtids.text(),
                                       server_id=event.packet.server_id, ts_sec=event.timestamp)
        self._skip = None
        tx.active = False
        tx.thread = None
        if not keep_gtid:
            tx.gtid = None
            tx.filtered = False

    # ---- rows ----------------------------------------------------------------------------------

    def _on_table_map(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        """A TABLE_MAP names a table id for the rows events after it: pair its storage layout with
        our schema at this position, which names the columns and says what the binlog may not."""
        database, table = event.schema, event.table
        if not self.settings.captured(database, table) and f"{database}.{table}" != self.settings.signal_table:
            return Step.NONE
        state = self.hooks.table_state(database, table)
        mapped = stream.table_map.get(event.table_id)
        if state is None or mapped is None:
            return Step.NONE
        cached = self._layouts.get(event.table_id)
        if cached is not None and cached[0] is state:
            return Step.NONE
        columns = state.table.columns
        wrong = [] if len(mapped.columns) != len(columns) else \
            rows.type_mismatches([c.type for c in mapped.columns], list(columns))
        if len(mapped.columns) != len(columns) or wrong:
            import pymysqlreplication.constants.FIELD_TYPE as field_types

            names = {getattr(field_types, n): n for n in dir(field_types) if n.isupper()}
            binlog = ", ".join(names.get(c.type, str(c.type)) for c in mapped.columns)
            model = ", ".join(f"{c.name} {c.type_name}" for c in columns)
            raise SourceError(
                f"the binlog describes {state.qualified} at {self.file} as ({binlog}), the schema history as "
                f"({model}): they are not the same table, so rows would be decoded into the wrong columns",
                fix="the history is another server's, was edited or lost a DDL: restore it; or, if the table has not "
                    "changed since the stored offset, move it away and set snapshot.mode=recovery; or start over with "
                    "a new snapshot",
            )
        readers = [rows.reader(binlog_column.type, binlog_column, unsigned=is_unsigned(column))
                   for binlog_column, column in zip(mapped.columns, columns, strict=True)]
        codec = binlog_codec(state, mapped.columns, state.modes) if self.native else None
        if codec is not None:
            self._fallback = native_module().Fallback
        self._layouts[event.table_id] = (state, readers, codec, YearAdjuster.of(state) if codec is not None else None)
        return Step.NONE

    def _layout(self, event: Any, state: TableState, pos: int
                ) -> tuple[TableState, list[rows.Reader], Any, YearAdjuster | None]:
        layout = self._layouts.get(event.table_id)
        if layout is None or layout[0] is not state:
            raise SourceError(f"rows of {state.qualified} at {self.file}:{pos} without their TABLE_MAP",
                              fix="report this with the binlog file and position")
        return layout

    def _rows(self, event: Any, state: TableState, pos: int
              ) -> tuple[int, Callable[[int], Any], list[tuple[bytes, Any]] | None]:
        """The row images of a rows event: their number and image i as the event's row, through the
        compiled codec when the table has one and it takes the event (then also the codec's (row JSON,
        key) of each), else decoded here."""
        _, readers, codec, adjust_years = self._layout(event, state, pos)
        data = event.packet.read(event.event_size - event.packet.read_bytes)
        if codec is not None:
            after = getattr(event, "columns_present_bitmap2", None) if isinstance(event, bl.UpdateRowsEvent) else None
            try:
                encoded = codec.encode_images(data, event.columns_present_bitmap, after)
            except self._fallback:
                pass
            else:
                if adjust_years is not None:  # the codec writes years 0001-0099 as stored
                    encoded = adjust_years(encoded)
                native = EventRows(encoded, lambda: [state.row(image) for image in self._decode(event, state, pos,
                                                                                                data, readers)],
                                   bool(state.envelope.key_fields))
                return len(native), native.row, encoded
        images = self._decode(event, state, pos, data, readers)
        row = state.row
        return len(images), lambda index: row(images[index]), None

    def _images(self, event: Any, state: TableState, pos: int) -> list[list[Any]]:
        """The row images of a rows event, decoded from our schema (never the library's ``rows``)."""
        readers = self._layout(event, state, pos)[1]
        return self._decode(event, state, pos, event.packet.read(event.event_size - event.packet.read_bytes), readers)

    def _decode(self, event: Any, state: TableState, pos: int, data: bytes, readers: list[rows.Reader]
                ) -> list[list[Any]]:
        after = getattr(event, "columns_present_bitmap2", None) if isinstance(event, bl.UpdateRowsEvent) else None
        try:
            images = rows.read_images(data, readers, event.columns_present_bitmap, after)
        except (IndexError, ValueError, struct.error) as exc:
            raise SourceError(f"cannot decode rows of {state.qualified} at {self.file}:{pos}: {exc}",
                              fix="the schema history does not match the table at this binlog position; "
                                  "restore it or take a new snapshot") from None
        for image in images:
            if rows.ABSENT in image:
                raise SourceError(f"rows of {state.qualified} at {self.file}:{pos} leave columns out (a MINIMAL or "
                                  "NOBLOB row image): their values cannot be known",
                                  fix="SET GLOBAL binlog_row_image = 'FULL' (and in the server's config)")
        return images

    def _on_rows(self, event: Any, stream: Any, events: list[ChangeEvent]) -> Step:
        tx = self.tx
        if not tx.active:  # no BEGIN: a GTID group's rows after its DDL (CREATE ... SELECT), or no GTIDs
            filtered = tx.filtered
            tx.start(self.file, bl.event_start(event, stream, self.position.pos), tx.gtid)
            tx.filtered = filtered
            self._started()
        tx.row_events += 1
        first_row = 0
        if (skip := self._skip) is not None:
            if (tx.events if skip.counts_all else tx.row_events) <= skip.events:
                return Step.NONE  # delivered before the restart
            first_row, self._skip = skip.rows, None  # the rows event after those: its first rows were delivered
        if tx.filtered:
            return Step.NONE  # gtid.source.includes / excludes leave its source out
        database, table = event.schema, event.table
        if f"{database}.{table}" == self.settings.signal_table:
            if isinstance(event, bl.WriteRowsEvent):
                self._signal_rows(event, events, (position_key(tx.file, 0)[0], tx.pos, tx.row_events))
            return Step.NONE
        if not self.settings.captured(database, table):
            return Step.NONE
        first = len(events)
        self._row_events(event, stream, events, first_row)
        self.hooks.observe(f"{database}.{table}", events[first:])
        return Step.ROWS

    def _row_events(self, event: Any, stream: Any, events: list[ChangeEvent], first_row: int) -> None:
        tx = self.tx
        state = self.hooks.table_state(event.schema, event.table)
        if state is None:
            raise SourceError(
                f"rows of {event.schema}.{event.table} at {self.file}:{bl.event_start(event, stream, tx.pos)}, but no "
                "schema is known for that table there (its CREATE is older than the schema history)",
                fix="take a new snapshot (delete the offsets, or snapshot.mode=when_needed), or use snapshot.mode="
                    "recovery if the table has not changed since",
            )
        emit = self.emitter
        kind = type(event)
        if not emit.emits(_OPS[kind]):
            return
        ts_ms = event.timestamp * 1000
        if emit.tracker is not None and not emit.in_transaction:
            emit.begin(events, tx.gtid or f"{tx.file}:{tx.pos}", ts_ms)
        envelope = state.envelope
        ts = now_ts()
        position_base = (position_key(tx.file, 0)[0], tx.pos, tx.row_events)
        count, row, encoded = self._rows(event, state, tx.pos)
        # source.pos is the rows event's own position (the offset keeps the transaction's start)
        base = source_block(self.settings.flavor, self.settings.prefix, state.database, state.name, ts_ms=ts_ms,
                            server_id=event.packet.server_id, file=tx.file, pos=bl.event_start(event, stream, tx.pos),
                            gtid=tx.gtid, thread=tx.thread, query=tx.query if self.settings.include_query else None)
        if encoded is not None and self.encoded and kind is bl.WriteRowsEvent and first_row == 0 \
                and emit.tracker is None and not self.hooks.watching(state.qualified):
            self._segment(events, state, encoded, base, (*position_base, 0), ts)
            return
        pairs = kind is bl.UpdateRowsEvent
        for index in range(first_row, count // 2 if pairs else count):
            source = {**base, "row": index}
            position = (*position_base, index)
            if kind is bl.WriteRowsEvent:
                after = row(index)
                emit.create(events, envelope, after, source, position, ts, key=getattr(after, "key", None))
            elif kind is bl.DeleteRowsEvent:
                emit.delete(events, envelope, row(index), source, position, ts)
            else:
                emit.update(events, envelope, row(2 * index), row(2 * index + 1), source, position, ts)

    def _segment(self, events: list[ChangeEvent], state: TableState, encoded: list[tuple[bytes, Any]],
                 source: dict[str, Any], position: tuple[int, ...], ts: tuple[int, int, int]) -> None:
        """A rows event's inserts as one encoded batch after the events before it (which leave ``events``):
        the records differ only in their row, their key and ``source.row``."""
        keyed = bool(state.envelope.key_fields)
        rows_json = [json for json, _ in encoded]
        keys = [orjson.dumps(key) for _, key in encoded] if keyed else None
        template_event = template(state.envelope, {**source, "row": ROW_INDEX}, keyed=keyed, position=position,
                                  ts=ts, op=OP_CREATE)
        more = {ROW_INDEX.json: [b"%d" % index for index in range(len(encoded))]}
        self.segments.append((list(events), EncodedRows(template_event, rows_json, keys, more)))
        events.clear()

    def take_segments(self) -> list[tuple[list[ChangeEvent], EncodedRows]]:
        segments, self.segments = self.segments, []
        return segments

    def _signal_rows(self, event: Any, events: list[ChangeEvent], position: tuple[int, ...]) -> None:
        state = self.hooks.table_state(event.schema, event.table)
        if state is None:
            return  # the signal table's definition is unknown here (created before the history)
        names = [c.name for c in state.table.columns]
        for index, image in enumerate(self._images(event, state, position[1])):
            row = {name: value.decode("utf-8") if isinstance(value, bytes) else value
                   for name, value in zip(names, image, strict=True)}
            self.hooks.signal_row(row, events, (*position, index))

    # ---- DDL -----------------------------------------------------------------------------------

    def _ddl(self, event: Any, stream: Any, events: list[ChangeEvent]) -> None:
        # CREATE/ALTER USER ... IDENTIFIED BY 'secret': masked before the history, an event or a log sees it
        ddl = redact_secrets(event.query) or ""
        database = event.schema.decode() if isinstance(event.schema, bytes) else (event.schema or "")
        file, end, start = self.file, bl.event_end(event), bl.event_start(event, stream)
        settings = self.settings
        # MariaDB's DDL carries a thread id that Debezium (3.5) does not show, as for its rows
        thread = None if settings.flavor == "mariadb" else event.slave_proxy_id
        gtid = self.tx.gtid

        def source(db: str, table: str | None) -> dict[str, Any]:
            return source_block(settings.flavor, settings.prefix, db, table, ts_ms=event.timestamp * 1000,
                                server_id=event.packet.server_id, file=file, pos=start, gtid=gtid, thread=thread)

        # The rows of a CREATE TABLE ... SELECT follow in the same GTID group: they keep its GTID.
        self._advance(event, keep_gtid=True)
        if getattr(event, "gtid_flags3", 0) & (FL_START_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
            # binlog_alter_two_phase: an ALTER is logged at its start and again at its COMMIT ALTER (or its
            # ROLLBACK ALTER), each with the statement's text; the table changes at the commit only.
            return
        truncated = truncated_table(ddl, database)
        if truncated is not None:  # a 't' event; no history record, no schema change event (as Debezium)
            state = self.hooks.table_state(*truncated) if settings.captured(*truncated) else None
            if state is not None and self.emitter.emits("t"):
                self.emitter.truncate(events, state.envelope, source(database, truncated[1]),
                                      (position_key(file, 0)[0], end, 0, 0))
            return
        parsed = self.schema.apply_events(ddl, database or None)
        changes = [e.change for e in parsed if e.change is not None and e.applied]
        self.hooks.schema_changed()
        touched = [c for c in changes if self._change_captured(c)]
        if not self.recorded(self.position.to_offset()):  # not recorded before a restart
            wanted = (not settings.only_captured_tables_ddl or touched or not changes) and \
                     (not settings.only_captured_databases_ddl or not database or settings.captured_database(database))
            if wanted:
                self.hooks.record_ddl(self.position.to_offset(), database or None, ddl, changes)
        if not settings.include_schema_changes or ignored_by_debezium(ddl):
            return
        if not parsed:
            # No parser event (ALTER DATABASE, index or sequence DDL...): Debezium quotes the statement
            # whole under the session's database; its source.table is "" (a set holding only null).
            if self._event_wanted(database or None, None):
                events.append(self.schema_events.event(source(database, ""), database, ddl, [], ts_ms=now_ts()[0]))
            return
        # Debezium: one event per parser event, under the database it belongs to; source.table names
        # the tables of the run of consecutive events in that database (a Java HashSet's order).
        for run in _runs_by_database(parsed):
            ids = {f"{e.table.catalog}.{e.table.table}": e.table.table for e in run if e.table is not None}
            tables = ",".join(ids[k] for k in java_hashmap_order(list(ids))) if ids else None
            for item in run:
                if self._event_wanted(item.database, item.table):
                    events.append(self.schema_events.event(source(item.database or "", tables), item.database or "",
                                                           item.ddl, [item.change] if item.change else [],
                                                           ts_ms=now_ts()[0]))

    def _event_wanted(self, database: str | None, table: TableId | None) -> bool:
        """Debezium emits schema changes of every database (the history stores them all) unless
        schema.history.internal.store.only.captured.tables.ddl / ...databases.ddl narrow it; never
        of the server's own databases."""
        settings = self.settings
        if database in SYSTEM_DATABASES:
            return False
        if settings.only_captured_tables_ddl and table is not None:
            return settings.captured(table.catalog or "", table.table)
        if (settings.only_captured_tables_ddl or settings.only_captured_databases_ddl) and database:
            return settings.captured_database(database)
        return True

    def _change_captured(self, change: dict[str, Any]) -> bool:
        parts = parse_table_id(change["id"])
        return len(parts) == 2 and self.settings.captured(parts[0], parts[1])

    _HANDLERS: dict[type, Callable[[BinlogChanges, Any, Any, list[ChangeEvent]], Step]] = {
        bl.HeartbeatLogEvent: _on_heartbeat, bl.RotateEvent: _on_rotate, bl.MariadbGtidEvent: _on_gtid,
        bl.GtidEvent: _on_gtid, bl.TableMapEvent: _on_table_map, bl.RowsQueryLogEvent: _on_rows_query,
        bl.MariadbAnnotateRowsEvent: _on_annotate_rows,
        bl.QueryEvent: _on_query, bl.XidEvent: _on_xid, bl.WriteRowsEvent: _on_rows, bl.UpdateRowsEvent: _on_rows,
        bl.DeleteRowsEvent: _on_rows,
    }


def truncated_table(ddl: str, default_db: str) -> tuple[str, str] | None:
    """(database, table) of a ``TRUNCATE [TABLE] [db.]t`` statement, else None."""
    match = _TRUNCATE.match(ddl)
    if match is None:
        return None
    first = (match.group(1) or "").replace("``", "`") or match.group(2)
    second = (match.group(3) or "").replace("``", "`") or match.group(4)
    return (first, second) if second else (default_db, first)


def _runs_by_database(parsed: list[DdlEvent]) -> list[list[DdlEvent]]:
    """Consecutive events of one database, as Debezium's DdlChanges.getEventsByDatabase groups them."""
    runs: list[list[DdlEvent]] = []
    for item in parsed:
        if runs and runs[-1][0].database == item.database:
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs
