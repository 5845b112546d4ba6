"""Debezium 3's ``source.snapshot`` marks on the ``op: r`` events of an initial snapshot.

    first                     the snapshot's first event
    first_in_data_collection  each table's first (but the very first)
    true                      the others
    last_in_data_collection   each table's last (but the very last)
    last                      the snapshot's last event

The last of a table is only known when the next table starts, so one event is held back.
"""
from __future__ import annotations

from typing import Any

from cdc.core.records import ChangeEvent


class SnapshotMarks:
    def __init__(self) -> None:
        self.pending: ChangeEvent | None = None
        self._first_overall = True
        self._first_in_table = True

    def start_table(self) -> None:
        self._first_in_table = True

    def source(self, shared: dict[str, Any]) -> dict[str, Any]:
        """The source block of the next event: ``shared`` (snapshot "true"), or a copy marked first."""
        if self._first_overall:
            self._first_overall = self._first_in_table = False
            return {**shared, "snapshot": "first"}
        if self._first_in_table:
            self._first_in_table = False
            return {**shared, "snapshot": "first_in_data_collection"}
        return shared

    def hold(self, event: ChangeEvent, out: list[ChangeEvent]) -> None:
        """Keep ``event`` back and hand the one held before it to ``out``."""
        if self.pending is not None:
            out.append(self.pending)
        self.pending = event

    def end_table(self, table_id: str) -> None:
        pending = self.pending
        if pending is not None and pending.table_id == table_id and pending.value is not None \
                and pending.value["source"]["snapshot"] != "first":
            pending.value["source"] = {**pending.value["source"], "snapshot": "last_in_data_collection"}

    def finish(self) -> ChangeEvent | None:
        """The event held back, marked ``last``."""
        pending, self.pending = self.pending, None
        if pending is not None and pending.value is not None:
            pending.value["source"] = {**pending.value["source"], "snapshot": "last"}
        return pending
