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
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc.core.encoded_rows import template
from cdc.core.envelope import OP_READ, TableEnvelope
from cdc.core.errors import SourceError
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


@dataclass
class SnapshotTable:
    envelope: TableEnvelope
    batches: Callable[[], Iterator[RowBatch]]
    estimated_rows: Callable[[], int | None] = lambda: None
    # the source block and position of the truncate that starts the table again after an interrupted attempt
    restart_source: dict[str, Any] = field(default_factory=dict)
    restart_position: tuple[int, ...] = ()


def read_event(envelope: TableEnvelope, after: Any, source: dict[str, Any], position: tuple[int, ...],
               ts: Timestamps) -> ChangeEvent:
    """A snapshot row's ``op: r`` event (a NativeRow carries its key: it is not read back from the row)."""
    return envelope.event(OP_READ, None, after, source, key=getattr(after, "key", None), position=position, ts=ts)


def read_tables(tables: Sequence[SnapshotTable], *, progress: str = "auto", stopping: Callable[[], bool],
                restarted: bool = False) -> Generator[Batch, None, ChangeEvent | None]:
    """Every table's rows as batches of events; returns the snapshot's last event, not yet handed over."""
    if restarted:  # the earlier attempt's rows are void: every table starts over
        yield Batch([restart_marker(t.envelope, t.restart_source, t.restart_position) for t in tables])
    marks = SnapshotMarks()
    seq = 0
    for table in tables:
        envelope = table.envelope
        shown = TableProgress(envelope.table_id, table.estimated_rows(), progress)
        marks.start_table()
        for batch in table.batches():
            events: list[ChangeEvent] = []
            if batch.middle is None:
                for row in batch.rows:
                    seq += 1
                    marks.hold(read_event(envelope, row, marks.source(batch.source), (*batch.position, seq),
                                          batch.ts), events)
                count = len(batch.rows)
            else:
                first, last = batch.rows
                rows, keys = batch.middle
                seq += 1
                marks.hold(read_event(envelope, first, marks.source(batch.source), (*batch.position, seq), batch.ts),
                           events)
                marks.release(events)  # the middle rows are never a table's first or last
                yield Batch(events, encoded=EncodedRows(
                    template(envelope, batch.source, keyed=keys is not None, position=(*batch.position, seq + 1),
                             ts=batch.ts), rows, keys))
                seq += len(rows) + 1
                events = []
                marks.hold(read_event(envelope, last, marks.source(batch.source), (*batch.position, seq), batch.ts),
                           events)
                count = len(rows) + 2
            shown.advance(count)
            if events:
                yield Batch(events)
            if stopping():
                raise SourceError("stopped during the snapshot; it starts again on the next run")
        marks.end_table(envelope.table_id)
        shown.done()
    return marks.finish()
