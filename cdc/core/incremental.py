"""Incremental snapshots (DBLog / Debezium), one algorithm for every source.

The source owns the change stream and two callbacks; this module owns the queue of tables,
the chunk window and its de-duplication, and the progress kept in the offset:

    start_chunk()                                    the source calls it when wants_chunk
        write_watermark(snapshot-window-open, id)    an insert into the signal table
        rows = reader.read(task, chunk size)         SELECT ... WHERE key > last ORDER BY key
        write_watermark(snapshot-window-close, id)
        buffer = {key: read event}                   held, not emitted
    the stream, in log order:
        window-open(id) seen     -> the window opens
        change to key k, window open -> buffer.pop(k)  (the streamed change is newer)
        window-close(id) seen    -> emit what is left of the buffer (op r, snapshot=incremental),
                                    last key := the chunk's last key; next chunk
A row changed inside its window is therefore emitted once, by the stream, with its latest
value; no snapshot row follows a newer streamed change of the same key. The progress (tables
left, each with its last key and upper bound) is in ``state()``; the source puts it in every
offset, so a restart continues after the last chunk whose window closed before the stored
offset. Chunks read but not closed are read again; nothing before them is.

Replay (Spark): a micro-batch planned before a crash is read again from the log, and must hold
the chunks it held the first time. A reader that may replay sets ``run``: the chunk ids carry it
and the watermarks carry each chunk's description (``cdc.chunk``: table, key columns, bounds);
the state names the open window, so a micro-batch never ends inside one. In ``replay_run`` mode
no chunk is started: the windows of that run found in the log are opened and closed again, each
chunk re-read over the same key range and de-duplicated against the changes streamed inside the
same window. The rows hold the values of the re-read (later changes follow in the log).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cdc.core.notifications import INCREMENTAL_SNAPSHOT, SILENT, Notifier
from cdc.core.records import ChangeEvent
from cdc.core.signals import WINDOW_CLOSE, WINDOW_OPEN, new_id

log = logging.getLogger(__name__)


class ChunkError(Exception):
    """The table cannot be read (SQL error in a condition, no key, gone): it is skipped."""


@dataclass
class TableTask:
    """One table of an incremental snapshot and how far it got."""

    table: str
    condition: str | None = None
    surrogate_key: str | None = None
    key_columns: list[str] | None = None  # chosen when the table starts
    max_key: list[Any] | None = None  # upper bound, read when the table starts
    last_key: list[Any] | None = None  # key of the last row of the last closed chunk
    started: bool = False
    scanned: int = 0  # rows read by this run (the notifications' total_rows_scanned; not in the offset)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "condition": self.condition, "surrogate_key": self.surrogate_key,
                "key_columns": self.key_columns, "max_key": self.max_key, "last_key": self.last_key,
                "started": self.started}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableTask:
        return cls(data["table"], data.get("condition"), data.get("surrogate_key"), data.get("key_columns"),
                   data.get("max_key"), data.get("last_key"), bool(data.get("started")))


class ChunkReader(Protocol):
    """What a source provides to read its tables in key order."""

    def bounds(self, task: TableTask) -> tuple[list[str], list[Any] | None]:
        """Key columns and the largest key (None: nothing to read). Raises ChunkError."""

    def read(self, task: TableTask, limit: int) -> list[tuple[list[Any], ChangeEvent]]:
        """Up to ``limit`` rows with key > task.last_key and <= task.max_key, in key order, each as
        (key values as stored in the offset, op r event). Raises ChunkError."""


def hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, hashable(v)) for k, v in value.items()))
    return value


def event_key(event: ChangeEvent, columns: Sequence[str]) -> tuple[Any, ...] | None:
    """The de-duplication key of an event: its row's key columns (after, else before, else key)."""
    value = event.value
    row = None
    if value is not None:
        row = value.get("after") or value.get("before")
    if row is None:
        row = event.key
    if not row:
        return None
    return tuple(hashable(row.get(c)) for c in columns)


@dataclass
class Window:
    chunk_id: str
    task: TableTask
    columns: tuple[str, ...]
    buffer: dict[tuple[Any, ...], ChangeEvent]
    last_key: list[Any] | None
    exhausted: bool  # fewer rows than asked: the table is done when this window closes
    open: bool = False
    dropped: int = 0  # buffered rows superseded by streamed changes
    changed: set[tuple[Any, ...]] | None = None  # replay: keys streamed inside the window (read at the close)
    first_key: list[Any] | None = None  # replay: the chunk's rows have keys above this one


CHUNK_DATA = "cdc.chunk"  # the watermarks' field describing the chunk (written when ``run`` is set)


@dataclass
class IncrementalSnapshot:
    reader: ChunkReader
    write_watermark: Callable[[str, str, dict[str, Any] | None], None]  # (kind, chunk id, extra data)
    chunk_size: int = 1024
    tables: list[TableTask] = field(default_factory=list)
    paused: bool = False
    snapshot_id: str = ""
    chunk_no: int = 0
    window: Window | None = None
    rows_emitted: int = 0
    rows_dropped: int = 0
    on_table_done: Callable[[str], None] | None = None
    run: str = ""  # set by a reader that may replay (Spark): chunk ids and watermarks describe the chunks
    replay_run: str | None = None  # replaying: re-read the chunks of this run found in the log, start none
    replayed_chunks: int = 0
    notifier: Notifier = SILENT  # Debezium's notifications (notification.enabled.channels), the coordinator's
    _notes: list[ChangeEvent] = field(default_factory=list)  # handed out with the next watermark's events

    # ---- state in the offset --------------------------------------------------------------

    def state(self) -> dict[str, Any] | None:
        if not self.tables and not self.paused:
            return None
        state = {"id": self.snapshot_id, "paused": self.paused, "chunk": self.chunk_no,
                 "tables": [t.to_dict() for t in self.tables]}
        if self.run and self.window is not None and self.window.open:
            state["window"] = self.window.chunk_id  # not a place to end a replayable micro-batch
        return state

    def restore(self, state: dict[str, Any] | None) -> None:
        self.window = None
        if not state:
            self.tables, self.paused = [], False
            return
        self.snapshot_id = state.get("id") or new_id()
        self.paused = bool(state.get("paused"))
        self.chunk_no = int(state.get("chunk") or 0)
        self.tables = [TableTask.from_dict(t) for t in state.get("tables") or ()]
        if self.tables:
            log.info("resuming the incremental snapshot of %s (%s)", ", ".join(t.table for t in self.tables),
                     f"after key {self.tables[0].last_key}" if self.tables[0].last_key else "from the start")

    @property
    def active(self) -> bool:
        return bool(self.tables) or self.paused

    @property
    def wants_chunk(self) -> bool:
        return self.window is None and not self.paused and bool(self.tables)

    # ---- signals ----------------------------------------------------------------------------

    def add(self, tasks: Sequence[TableTask]) -> None:
        """Queue tables; one already queued or running is not added twice."""
        if not self.tables and not self.paused:
            self.snapshot_id = new_id()
            self.chunk_no = 0
            self._note("STARTED", data_collections=",".join(t.table for t in tasks))
        queued = {t.table for t in self.tables}
        for task in tasks:
            if task.table in queued:
                log.info("incremental snapshot of %s is already queued", task.table)
                continue
            self.tables.append(task)
            queued.add(task.table)
        log.info("incremental snapshot queue: %s", ", ".join(t.table for t in self.tables))

    def stop(self, tables: Sequence[str] | None) -> None:
        """Stop the named tables (None: all)."""
        names = set(tables) if tables is not None else {t.table for t in self.tables}
        if self.window is not None and self.window.task.table in names:
            self.window = None
        stopped = [t.table for t in self.tables if t.table in names]
        self.tables = [t for t in self.tables if t.table not in names]
        if stopped:
            self._note("ABORTED", data_collections=",".join(stopped))
        if not self.tables:
            self.paused = False
        log.info("incremental snapshot stopped for %s", ", ".join(stopped) or "nothing (none running)")

    def pause(self) -> None:
        if self.tables:
            self.paused = True
            self._note("PAUSED")
            log.info("incremental snapshot paused")
        else:
            log.info("pause-snapshot: no incremental snapshot is running")

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self._note("RESUMED")
            log.info("incremental snapshot resumed")

    # ---- chunks -----------------------------------------------------------------------------

    def start_chunk(self) -> None:
        """Open the next chunk's window: watermark, read, watermark. Skips tables that fail."""
        if self.replay_run is not None:
            return  # the log holds the windows to read again
        while self.wants_chunk:
            task = self.tables[0]
            try:
                if not task.started:
                    task.key_columns, task.max_key = self.reader.bounds(task)
                    task.started = True
                    log.info("incremental snapshot of %s started (key %s)", task.table, ", ".join(task.key_columns))
                if task.max_key is None:
                    self._finish(task)
                    continue
                self.chunk_no += 1
                # unique across restarts; fits varchar(42) with its -open / -close suffix
                chunk_id = f"{self.chunk_no}.{self.run}.{new_id()[:12]}" if self.run else \
                    f"{self.chunk_no}.{new_id()[:20]}"
                self.write_watermark(WINDOW_OPEN, chunk_id, self._open_data(task))
                rows = self.reader.read(task, self.chunk_size)
                last_key = rows[-1][0] if rows else task.last_key
                task.scanned += len(rows)
                self._note("IN_PROGRESS", current_collection_in_progress=task.table,
                           maximum_key=_shown_key(task.max_key),
                           data_collections=",".join(t.table for t in self.tables),
                           last={"last_processed_key": _shown_key(last_key)})
                self.write_watermark(WINDOW_CLOSE, chunk_id, {CHUNK_DATA: {
                    "to": last_key, "exhausted": len(rows) < self.chunk_size}} if self.run else None)
            except ChunkError as exc:
                log.error("incremental snapshot of %s skipped: %s", task.table, exc)
                self.tables.pop(0)
                continue
            self.window = Window(chunk_id, task, tuple(task.key_columns or ()), {}, last_key,
                                 exhausted=len(rows) < self.chunk_size)
            self._fill(self.window, rows)
            return

    @staticmethod
    def _fill(window: Window, rows: list[tuple[list[Any], ChangeEvent]]) -> None:
        """A chunk's rows into its window's buffer, by key; replaying, less the keys streamed inside
        the window (``changed``), which the stream carries."""
        for _, event in rows:
            key = event_key(event, window.columns)
            if key is None:
                continue
            if window.changed is not None and key in window.changed:
                window.dropped += 1
            else:
                window.buffer[key] = event

    def _open_data(self, task: TableTask) -> dict[str, Any] | None:
        if not self.run:
            return None  # Debezium's watermark row, nothing more
        return {CHUNK_DATA: {"table": task.table, "condition": task.condition, "surrogate_key": task.surrogate_key,
                             "key_columns": task.key_columns, "max_key": task.max_key, "from": task.last_key}}

    def _finish(self, task: TableTask) -> None:
        collections = ",".join(t.table for t in self.tables)
        if self.tables and self.tables[0] is task:
            self.tables.pop(0)
        log.info("incremental snapshot of %s done", task.table)
        self._note("TABLE_SCAN_COMPLETED", scanned_collection=task.table, total_rows_scanned=str(task.scanned),
                   data_collections=collections, status="SUCCEEDED")
        if not self.tables:
            self._note("COMPLETED")
        if self.on_table_done is not None:
            self.on_table_done(task.table)

    def observe(self, event: ChangeEvent) -> None:
        """A streamed change: if the window is open on its table, its key leaves the buffer."""
        window = self.window
        if window is None or not window.open or event.table_id != window.task.table:
            return
        key = event_key(event, window.columns)
        if key is None:
            return
        if window.changed is not None:
            window.changed.add(key)
        elif window.buffer.pop(key, None) is not None:
            window.dropped += 1

    @property
    def window_table(self) -> str | None:
        window = self.window
        return window.task.table if window is not None and window.open else None

    def on_watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> list[ChangeEvent]:
        """A watermark read from the stream; returns the events to emit now (at the close)."""
        if self.replay_run is not None:
            self._replay_watermark(kind, chunk_id, (data or {}).get(CHUNK_DATA))
        notes, self._notes = self._notes, []
        window = self.window
        if window is None or window.chunk_id != chunk_id:
            return notes  # an earlier run's, or a stopped chunk's
        if kind == WINDOW_OPEN:
            window.open = True
            return notes
        if kind != WINDOW_CLOSE or not window.open:
            return []
        self.window = None
        events = list(window.buffer.values())
        self.rows_emitted += len(events)
        self.rows_dropped += window.dropped
        task = window.task
        task.last_key = window.last_key
        if window.exhausted:
            self._finish(task)
        notes, self._notes = self._notes, []
        return notes + events if not window.exhausted else events + notes

    def _note(self, type_: str, last: dict[str, str] | None = None, **data: str) -> None:
        """A notification of the incremental snapshot, handed out with the next watermark's events."""
        if self.replay_run is None:  # a replayed window was notified when it was first read
            self._notes += self.notifier.notify(INCREMENTAL_SNAPSHOT, type_, data, last)

    # ---- replay ----------------------------------------------------------------------------------

    def _replay_watermark(self, kind: str, chunk_id: str, chunk: dict[str, Any] | None) -> None:
        """Replaying: a window of the replayed run opens again (its task as the watermark describes
        it), or closes: its chunk is read again over the same key range, less the keys streamed
        inside the window, into the buffer that ``on_watermark`` then emits."""
        parts = chunk_id.split(".")
        if len(parts) != 3 or parts[1] != self.replay_run or not isinstance(chunk, dict):
            return  # another run's window: the replayed micro-batch did not hold its rows
        if kind == WINDOW_OPEN:
            task = self._replay_task(chunk)
            self.chunk_no = int(parts[0])
            self.window = Window(chunk_id, task, tuple(task.key_columns or ()), {}, None, exhausted=False,
                                 changed=set(), first_key=task.last_key)
            return
        window = self.window
        if kind != WINDOW_CLOSE or window is None or window.chunk_id != chunk_id or window.changed is None:
            return
        window.last_key, window.exhausted = chunk.get("to"), bool(chunk.get("exhausted"))
        task = window.task
        if window.last_key is not None and window.last_key != window.first_key:
            bounded = TableTask(task.table, task.condition, task.surrogate_key, task.key_columns,
                                max_key=window.last_key, last_key=window.first_key, started=True)
            try:
                rows = self.reader.read(bounded, 2**31 - 1)
            except ChunkError as exc:
                log.error("replaying chunk %s of %s: %s", chunk_id, task.table, exc)
                rows = []
            self._fill(window, rows)
        window.changed = None
        self.replayed_chunks += 1

    def _replay_task(self, chunk: dict[str, Any]) -> TableTask:
        """The queued task a replayed window belongs to, set as it was when the window opened;
        tables queued before it were done by then."""
        name = chunk.get("table")
        index = next((i for i, t in enumerate(self.tables) if t.table == name), None)
        if index is None:  # queued by a signal the log does not hold (the file or Kafka channel)
            self.tables.insert(0, TableTask(str(name)))
            index = 0
        for task in self.tables[:index]:
            self._finish(task)
        task = self.tables[0]
        task.condition, task.surrogate_key = chunk.get("condition"), chunk.get("surrogate_key")
        task.key_columns, task.max_key = chunk.get("key_columns"), chunk.get("max_key")
        task.last_key, task.started = chunk.get("from"), True
        return task


def _shown_key(key: list[Any] | None) -> str:
    """A chunk key as Debezium's notifications show it: the value of a one-column key, else the list."""
    if not key:
        return ""
    return str(key[0]) if len(key) == 1 else "[" + ", ".join(map(str, key)) + "]"
