"""A snapshot killed half way starts again on the next run: tell consumers to forget the first try.

A consumer that applied the first attempt's rows would keep the rows deleted before the second
attempt reads the table (Debezium behaves the same: nothing tells it). So a snapshot that is not
resumable stores ``{"snapshot_attempt": n}`` as its offset before its first row; a run that finds
it takes the snapshot again and first emits, for every table it reads, one truncate event
(``op: t``, ``source.snapshot: "true"``) whatever ``skipped.operations`` says: a consumer applying
events in order (``cdc.spark.apply_changes`` does) then holds exactly the second attempt.

Resumable snapshots (``snapshot.resumable``, on by default where a source can) need no marker:
they go on after the last stored chunk, and the stream brings what changed in between.
"""
from __future__ import annotations

from typing import Any

from cdc.core.envelope import TableEnvelope
from cdc.core.records import ChangeEvent

ATTEMPT_KEY = "snapshot_attempt"
# Stored right before a source creates the server-side state its first real offset will point into (a
# PostgreSQL slot), where no attempt marker is stored (a resumable snapshot, or no snapshot at all): a run
# killed in between finds that state marked as its own, not another consumer's, and starts as without an offset.
SLOT_PENDING_KEY = "slot_pending"
MARKER_KEYS = (ATTEMPT_KEY, SLOT_PENDING_KEY)  # offsets that are a marker, not a position in the log


def slot_pending_offset() -> dict[str, Any]:
    return {SLOT_PENDING_KEY: True}


def is_slot_pending(offset: dict[str, Any] | None) -> bool:
    return offset is not None and bool(offset.get(SLOT_PENDING_KEY))


def interrupted_attempt(offset: dict[str, Any] | None) -> int:
    """The number of the snapshot attempt a stored offset says was interrupted (0: none)."""
    if offset is None or ATTEMPT_KEY not in offset:
        return 0
    try:
        return int(offset[ATTEMPT_KEY])
    except (TypeError, ValueError):
        return 1


def attempt_offset(previous: int) -> dict[str, Any]:
    """The offset stored before the first row of a snapshot (the ``previous`` attempt's number + 1)."""
    return {ATTEMPT_KEY: previous + 1}


def restart_marker(envelope: TableEnvelope, source: dict[str, Any], position: tuple[int, ...] = ()) -> ChangeEvent:
    """A truncate of ``envelope``'s table, before its rows are read again."""
    return envelope.truncate({**source, "snapshot": "true"}, None, position)
