"""Debezium 3's ``source.snapshot`` marks on the ``op: r`` events of an initial snapshot.

    first                     the snapshot's first event
    first_in_data_collection  each table's first (but the very first)
    true                      the others
    last_in_data_collection   each table's last (but the very last)
    last                      the snapshot's last event

The last of a table is only known when the next table starts, so :class:`SnapshotMarks` holds
one event back, unless the reader knows ahead (a chunked snapshot reading one row past its chunk) and
says where a table ends. The same precedence either way, last > first > last_in_data_collection >
first_in_data_collection. A snapshot resumed after a stop marks no event first, nor the first row of
the table it resumes inside.
"""
from __future__ import annotations

from typing import Any

from cdc.core.records import ChangeEvent


def snapshot_flag(*, first: bool, first_in_table: bool, last_in_table: bool, last: bool) -> str:
    """The ``source.snapshot`` of one event from where it stands in the snapshot and in its table."""
    if last:
        return "last"
    if first:
        return "first"
    if last_in_table:
        return "last_in_data_collection"
    if first_in_table:
        return "first_in_data_collection"
    return "true"


class SnapshotMarks:
    def __init__(self, *, first: bool = True) -> None:
        """``first``: the snapshot's first event is among those to come (not so in a resumed one)."""
        self.pending: ChangeEvent | None = None
        self._first_overall = first
        self._first_in_table = True

    def start_table(self, *, first: bool = True) -> None:
        """``first``: the table's first row is among those to come (not so in the table a snapshot resumes inside)."""
        self._first_in_table = first

    def source(self, shared: dict[str, Any]) -> dict[str, Any]:
        """The source block of the next event: ``shared`` (snapshot "true"), or a copy marked first."""
        flag = snapshot_flag(first=self._first_overall, first_in_table=self._first_in_table, last_in_table=False,
                             last=False)
        self._first_overall = self._first_in_table = False
        return shared if flag == "true" else {**shared, "snapshot": flag}

    def hold(self, event: ChangeEvent, out: list[ChangeEvent]) -> None:
        """Keep ``event`` back and hand the one held before it to ``out``."""
        if self.pending is not None:
            out.append(self.pending)
        self.pending = event

    def release(self, out: list[ChangeEvent]) -> None:
        """Hand the event held back to ``out`` now: events follow that are neither first nor last."""
        if self.pending is not None:
            out.append(self.pending)
            self.pending = None

    def end_table(self, table_id: str) -> None:
        """``table_id`` has no more rows: the event held back, if it is that table's, is its last."""
        pending = self.pending
        if pending is not None and pending.table_id == table_id and pending.value is not None:
            self._mark(pending, last_in_table=True, last=False)

    def finish(self) -> ChangeEvent | None:
        """The event held back, marked ``last``."""
        pending, self.pending = self.pending, None
        if pending is not None and pending.value is not None:
            self._mark(pending, last_in_table=True, last=True)
        return pending

    @staticmethod
    def _mark(event: ChangeEvent, *, last_in_table: bool, last: bool) -> None:
        assert event.value is not None
        current = event.value["source"]["snapshot"]
        flag = snapshot_flag(first=current == "first", first_in_table=current == "first_in_data_collection",
                             last_in_table=last_in_table, last=last)
        event.value["source"] = {**event.value["source"], "snapshot": flag}
