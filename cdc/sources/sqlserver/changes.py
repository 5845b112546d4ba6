"""Change-table rows -> changes, in the database's order (pure: no I/O).

    rows of each capture instance, ordered (__$start_lsn, __$seqval, __$operation)
      -> merge across instances by the same key                      (merge)
      -> drop rows of an instance at or after its stop LSN
      -> group rows sharing (commit LSN, change LSN)                   (changes)
         3 then 4            -> one update, event_serial_no 2
         1 and 2, same row   -> a primary-key change: delete (1) + create (2)
         anything else       -> one change per row, numbered 1, 2, ...
      -> skip what the stored position says was delivered

``__$start_lsn`` is the commit LSN of the row's transaction and ``__$seqval`` orders the changes
inside it (Debezium's change LSN). ``event_serial_no`` numbers the rows at one position, so a
restart skips exactly the rows the stored ``{commit_lsn, change_lsn, event_serial_no}`` covers,
as Debezium does.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cdc.core.errors import SourceError
from cdc.sources.sqlserver.lsn import NULL, Lsn
from cdc.sources.sqlserver.queries import COMMIT_TIME_COLUMN

OP_DELETE, OP_INSERT, OP_BEFORE, OP_AFTER = 1, 2, 3, 4
META_PREFIX = "__$"


@dataclass(frozen=True, slots=True)
class ChangeRow:
    instance: str
    commit_lsn: Lsn
    change_lsn: Lsn
    operation: int
    values: dict[str, Any]
    commit_ns: int | None = None

    @property
    def order(self) -> tuple[Lsn, Lsn, int]:
        return self.commit_lsn, self.change_lsn, self.operation


def _epoch_ns(value: Any) -> int | None:
    """The commit time column: a datetimeoffset (text or aware datetime) or a naive UTC datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        from cdc.sources.sqlserver.types import zoned_timestamp  # noqa: PLC0415 - avoid a cycle at import
        text = zoned_timestamp(value, 9)
        moment = datetime.fromisoformat(text[:19]).replace(tzinfo=UTC)
        return int(moment.timestamp()) * 1_000_000_000 + int(text[20:29])
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def change_row(instance: str, record: Mapping[str, Any]) -> ChangeRow:
    """One row as the change table (or ``fn_cdc_get_all_changes``) returns it."""
    try:
        commit = Lsn.of(record["__$start_lsn"])
        change = Lsn.of(record["__$seqval"])
        operation = int(record["__$operation"])
    except KeyError as exc:
        raise SourceError(f"a row of capture instance {instance} lacks the column {exc.args[0]}",
                          fix="this is not a CDC change table row; report it with the query used") from None
    values = {k: v for k, v in record.items() if not k.startswith(META_PREFIX)}
    return ChangeRow(instance, commit, change, operation, values, _epoch_ns(record.get(COMMIT_TIME_COLUMN)))


def merge(streams: Iterable[Iterable[ChangeRow]]) -> Iterator[ChangeRow]:
    """Rows of several instances (each already ordered) in one order: commit, change, operation."""
    return heapq.merge(*streams, key=lambda r: r.order)


@dataclass(frozen=True, order=True, slots=True)
class Position:
    """Debezium's SQL Server offset. ``change_lsn`` None: every change of ``commit_lsn`` (and before)
    was delivered; otherwise the changes up to ``event_serial_no`` at that change LSN were."""

    commit_lsn: Lsn = NULL
    change_lsn: Lsn | None = None
    event_serial_no: int | None = None

    def covers(self, commit: Lsn, change: Lsn, serial: int) -> bool:
        """True when the change at (commit, change, serial) was delivered already."""
        if commit != self.commit_lsn:
            return commit < self.commit_lsn
        if self.change_lsn is None:
            return True
        if change != self.change_lsn:
            return change < self.change_lsn
        return serial <= (self.event_serial_no or 0)

    def to_offset(self) -> dict[str, Any]:
        return {
            "commit_lsn": str(self.commit_lsn),
            "change_lsn": None if self.change_lsn is None else str(self.change_lsn),
            "event_serial_no": self.event_serial_no,
        }

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any]) -> Position:
        try:
            commit = Lsn.parse(offset["commit_lsn"]) if offset.get("commit_lsn") else NULL
            change = Lsn.parse(offset["change_lsn"]) if offset.get("change_lsn") else None
        except ValueError as exc:
            raise SourceError(f"the stored offset is not a SQL Server position: {exc}",
                              fix="delete the stored offset of this pipeline to start over") from None
        serial = offset.get("event_serial_no")
        return cls(commit, change, int(serial) if serial is not None and change is not None else None)


@dataclass(frozen=True, slots=True)
class Change:
    """One logical change: ``op`` is c, u, d, or k (a primary-key change: delete then create)."""

    instance: str
    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    commit_lsn: Lsn
    change_lsn: Lsn
    event_serial_no: int  # of the last row it consumed (the create of a key change)
    commit_ns: int | None
    delete_delivered: bool = False  # a key change whose delete was delivered before a restart

    @property
    def position(self) -> Position:
        return Position(self.commit_lsn, self.change_lsn, self.event_serial_no)


def _group_changes(group: list[ChangeRow]) -> Iterator[tuple[Change, int]]:
    """Changes of the rows at one (commit, change) position, each with its first row's number."""
    ops = [r.operation for r in group]
    first = group[0]
    if ops == [OP_DELETE, OP_INSERT] and group[0].instance == group[1].instance:
        yield Change(first.instance, "k", group[0].values, group[1].values, first.commit_lsn, first.change_lsn,
                     2, first.commit_ns), 1
        return
    i = 0
    while i < len(group):
        row = group[i]
        if row.operation == OP_BEFORE:
            after = group[i + 1] if i + 1 < len(group) else None
            if after is None or after.operation != OP_AFTER or after.instance != row.instance:
                raise SourceError(
                    f"the update-before row at {row.commit_lsn}/{row.change_lsn} of {row.instance} is not followed "
                    "by its update-after row", fix="report this with the change table rows around that LSN")
            yield Change(row.instance, "u", row.values, after.values, row.commit_lsn, row.change_lsn, i + 2,
                         row.commit_ns), i + 1
            i += 2
            continue
        if row.operation == OP_AFTER:
            raise SourceError(f"an update-after row at {row.commit_lsn}/{row.change_lsn} of {row.instance} has no "
                              "update-before row", fix="read the change tables with N'all update old' (both images)")
        op = "d" if row.operation == OP_DELETE else "c"
        before, after_values = (row.values, None) if op == "d" else (None, row.values)
        yield Change(row.instance, op, before, after_values, row.commit_lsn, row.change_lsn, i + 1,
                     row.commit_ns), i + 1
        i += 1


def changes(rows: Iterable[ChangeRow], resume: Position | None = None,
            stop_lsns: Mapping[str, Lsn] | None = None) -> Iterator[Change]:
    """Merged rows -> changes after ``resume``; rows of an instance at or after its stop LSN
    (a newer instance has taken over) are dropped."""
    stops = stop_lsns or {}
    group: list[ChangeRow] = []

    def flush() -> Iterator[Change]:
        for change, first_serial in _group_changes(group):
            if resume is not None and resume.covers(change.commit_lsn, change.change_lsn, change.event_serial_no):
                continue
            if (change.op == "k" and resume is not None
                    and resume.covers(change.commit_lsn, change.change_lsn, first_serial)):
                change = Change(change.instance, "k", change.before, change.after, change.commit_lsn,
                                change.change_lsn, change.event_serial_no, change.commit_ns, delete_delivered=True)
            yield change

    for row in rows:
        stop = stops.get(row.instance)
        if stop is not None and row.commit_lsn >= stop:
            continue
        if group and (row.commit_lsn, row.change_lsn) != (group[0].commit_lsn, group[0].change_lsn):
            yield from flush()
            group = []
        group.append(row)
    if group:
        yield from flush()
