"""The initial snapshot's row loop, one for every source (Debezium's RelationalSnapshotChangeEventSource
keeps it in core too; a connector only says how to read its database):

    after an interrupted attempt: one truncate per table first (cdc.core.snapshot_restart)
    for each table, in the order the source gives (Debezium's: the include list's, then by name):
        its rows, batch by batch, as op r events marked first / first_in_data_collection / true /
        last_in_data_collection / last (cdc.core.snapshot_marks), with its progress shown
        (cdc.core.progress); asked to stop, it stops between two batches
    returns the last event, held back to be marked last: the source hands it over with the offset
    streaming starts from

A source describes each table as a :class:`SnapshotTable`: its envelope, how many rows it has (for the
progress), and its rows as :class:`RowBatch` es read in the source's consistent snapshot.

A resumable snapshot (``resumable``) hands an offset with some batches, the progress a later run goes on
from: every row read up to it goes out with it (nothing held back), so such a batch says whether its
table ends there, for the marks. Asked to stop, it stops after such a batch (:class:`SnapshotStopped`,
which the source takes as the end of the run); resumed (``resumed``), it marks no event first.
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc.core.encoded_rows import template
from cdc.core.envelope import OP_READ, TableEnvelope
from cdc.core.errors import SourceError
from cdc.core.notifications import SILENT, Notifier
from cdc.core.notifications import collections as notified_collections
from cdc.core.progress import TableProgress
from cdc.core.records import Batch, ChangeEvent, EncodedRows
from cdc.core.snapshot_marks import SnapshotMarks
from cdc.core.snapshot_restart import restart_marker

Timestamps = tuple[int, int, int]


@dataclass
class RowBatch:
    """Rows of one table read together. ``rows`` are row structs (a ``NativeRow`` carries its key); with
    ``middle`` (the compiled codec's JSON of the rows between, and their keys), ``rows`` holds only the
    batch's first and last row, which the marks may flag."""

    rows: Sequence[Any]
    source: dict[str, Any]  # the source block the batch's events share ("snapshot": "true")
    position: tuple[int, ...]  # each row's position is this, then the row's sequence number
    ts: Timestamps
    middle: tuple[list[bytes], list[bytes] | None] | None = None
    offset: dict[str, Any] | None = None  # a resumable snapshot's progress, handed over with the batch's rows
    ends_table: bool = False  # with ``offset``: no row of the table follows (its last is marked now)


@dataclass
class SnapshotTable:
    envelope: TableEnvelope
    batches: Callable[[], Iterator[RowBatch]]
    estimated_rows: Callable[[], int | None] = lambda: None
    # the source block and position of the truncate that starts the table again after an interrupted attempt
    restart_source: dict[str, Any] = field(default_factory=dict)
    restart_position: tuple[int, ...] = ()
    partly_read: bool = False  # a resumed snapshot goes on inside it: its first row here is not its first


class SnapshotStopped(SourceError):
    """A resumable snapshot stopped where it can go on from: the offset handed over last."""


def read_event(envelope: TableEnvelope, after: Any, source: dict[str, Any], position: tuple[int, ...],
               ts: Timestamps) -> ChangeEvent:
    """A snapshot row's ``op: r`` event (a NativeRow carries its key: it is not read back from the row)."""
    return envelope.event(OP_READ, None, after, source, key=getattr(after, "key", None), position=position, ts=ts)


def read_tables(tables: Sequence[SnapshotTable], *, progress: str = "auto", stopping: Callable[[], bool],
                restarted: bool = False, resumable: bool = False, resumed: bool = False,
                notifier: Notifier = SILENT) -> Generator[Batch, None, ChangeEvent | None]:
    """Every table's rows as batches of events; returns the snapshot's last event, not yet handed over.
    ``notifier``: Debezium's notifications of the initial snapshot (cdc.core.notifications)."""
    if restarted:  # the earlier attempt's rows are void: every table starts over
        yield Batch([restart_marker(t.envelope, t.restart_source, t.restart_position) for t in tables])
    names = [t.envelope.table_id for t in tables]
    collections = ",".join(names)  # in the snapshot's order; its IN_PROGRESS notes in the order of a Java set
    if notifier.enabled:
        yield Batch(notifier.initial_snapshot("STARTED"))
    rows = _ReadEvents(SnapshotMarks(first=not resumed))
    for index, table in enumerate(tables):
        envelope = table.envelope
        shown = TableProgress(envelope.table_id, table.estimated_rows(), progress)
        rows.marks.start_table(first=not table.partly_read)
        scanned = 0
        notes = notifier.initial_snapshot("IN_PROGRESS", current_collection_in_progress=envelope.table_id,
                                          data_collections=notified_collections(names))
        for batch in table.batches():
            events = yield from rows.read(envelope, batch)
            count = len(batch.rows) + (len(batch.middle[0]) if batch.middle is not None else 0)
            scanned += count
            if notes:
                events, notes = notes + events, []
            shown.advance(count)
            if batch.offset is not None:
                rows.hand_over(events, envelope.table_id, ends_table=batch.ends_table,
                               last_table=index == len(tables) - 1)
                yield Batch(events, batch.offset)
            elif events:
                yield Batch(events)
            if (batch.offset is not None or not resumable) and stopping():
                if batch.offset is not None:
                    raise SnapshotStopped("stopped during the snapshot; it goes on from there on the next run")
                raise SourceError("stopped during the snapshot; it starts again on the next run")
        rows.marks.end_table(envelope.table_id)
        shown.done()
        if notifier.enabled:
            yield Batch(notes + notifier.initial_snapshot(
                "TABLE_SCAN_COMPLETED", scanned_collection=envelope.table_id, total_rows_scanned=str(scanned),
                status="SUCCEEDED", data_collections=collections))
    if notifier.enabled:
        yield Batch(notifier.initial_snapshot("COMPLETED"))
    return rows.marks.finish()


class _ReadEvents:
    """Rows into ``op: r`` events numbered across the snapshot, the marks holding one back."""

    def __init__(self, marks: SnapshotMarks) -> None:
        self.marks = marks
        self.seq = 0

    def _event(self, envelope: TableEnvelope, row: Any, batch: RowBatch) -> ChangeEvent:
        self.seq += 1
        return read_event(envelope, row, self.marks.source(batch.source), (*batch.position, self.seq), batch.ts)

    def read(self, envelope: TableEnvelope, batch: RowBatch) -> Generator[Batch, None, list[ChangeEvent]]:
        """The batch's events; with encoded middle rows, those and the events before them go out first."""
        events: list[ChangeEvent] = []
        if batch.middle is None:
            for row in batch.rows:
                self.marks.hold(self._event(envelope, row, batch), events)
            return events
        first, last = batch.rows
        middle, keys = batch.middle
        self.marks.hold(self._event(envelope, first, batch), events)
        self.marks.release(events)  # the middle rows are never a table's first or last
        yield Batch(events, encoded=EncodedRows(
            template(envelope, batch.source, keyed=keys is not None, position=(*batch.position, self.seq + 1),
                     ts=batch.ts), middle, keys))
        self.seq += len(middle)
        events = []
        self.marks.hold(self._event(envelope, last, batch), events)
        return events

    def hand_over(self, events: list[ChangeEvent], table_id: str, *, ends_table: bool, last_table: bool) -> None:
        """Nothing held back past a resumable snapshot's offset: the event held goes out, marked if its
        table ends here."""
        if ends_table and last_table:
            last = self.marks.finish()
            if last is not None:
                events.append(last)
            return
        if ends_table:
            self.marks.end_table(table_id)
        self.marks.release(events)
