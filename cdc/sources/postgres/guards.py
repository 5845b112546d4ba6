"""Guards on the replication slot: WAL it makes the server keep, and a slot the server invalidated.

A slot keeps every WAL segment after its ``restart_lsn`` until the pipeline confirms it. A stopped
or slow pipeline therefore fills the server's disk, unless ``max_slot_wal_keep_size`` is set, in
which case the server invalidates the slot (``wal_status = 'lost'``) and the changes in between
are gone. ``slot.max.retained.wal.bytes`` warns (or stops the pipeline) before either happens.
"""
from __future__ import annotations

from typing import Any

from cdc.config import Option, non_negative
from cdc.core.errors import CdcError, SourceError
from cdc.metrics.findings import ERROR, WARNING, Finding, size

GUARD_OPTIONS: tuple[Option, ...] = (
    Option("slot.max.retained.wal.bytes", int, 0, "Warn (log and metric) when the slot makes the server keep more "
           "WAL than this (pg_current_wal_lsn() - restart_lsn); 0 disables. Checked every metrics.lag.interval.ms "
           "on a connection of its own.", validator=non_negative),
    Option("slot.retained.wal.action", str, "warn", "What exceeding slot.max.retained.wal.bytes does: warn, or "
           "stop the pipeline with an error, which it does only while the pipeline reads the slot and the WAL it has "
           "not confirmed grows (never before it has read anything, nor while it catches up).",
           choices=("warn", "stop")),
)

# What the server says when reading from an invalidated slot (PostgreSQL 13-15, then 16+).
_INVALIDATED = ("this slot has been invalidated", "can no longer get changes from replication slot",
                "cannot read from logical replication slot")


def lost_slot_error(slot: str) -> SourceError:
    return SourceError(
        f"PostgreSQL invalidated replication slot {slot!r}: it made the server keep more WAL than "
        f"max_slot_wal_keep_size allows, so the server removed that WAL (pg_replication_slots.wal_status = 'lost') "
        f"and the changes after the slot's last confirmed position cannot be read any more",
        fix=f"take a new snapshot: drop the slot (cdc slots CONFIG --drop {slot}) and restart with "
            "snapshot.mode=when_needed (or delete the stored offset); to keep it from happening again, raise "
            "max_slot_wal_keep_size (-1: no limit) or keep the pipeline running, and set slot.max.retained.wal.bytes "
            "to be warned before the limit",
    )


def explain(error: BaseException, slot: str) -> CdcError | None:
    """The lost-slot error when ``error`` is the server refusing an invalidated slot, else None."""
    text = str(error).lower()
    if not any(s in text for s in _INVALIDATED):
        return None
    return conflict_error(slot) if "conflict" in text else lost_slot_error(slot)


def conflict_error(slot: str) -> SourceError:
    """A standby invalidated the slot: its primary removed catalog rows, or lowered wal_level, that it needed."""
    return SourceError(
        f"the standby invalidated replication slot {slot!r} (a conflict with recovery): its primary removed catalog "
        "rows the slot still needed (or its wal_level fell below logical), so the changes after the slot's last "
        "confirmed position cannot be decoded any more",
        fix=f"take a new snapshot: drop the slot (cdc slots CONFIG --drop {slot}) and restart with "
            "snapshot.mode=when_needed; to keep it from happening again, set hot_standby_feedback = on and a "
            "primary_slot_name (a physical slot of the primary) on the standby",
    )


def slot_findings(state: Any, max_retained: int = 0, *, running: bool = False, action: str = "warn") -> list[Finding]:
    """What is wrong with the slot (``state``: a cdc.sources.postgres.lag.SlotState). ``running``: asked by the
    pipeline that owns the slot, which is not idle just because it is between two reads."""
    slot = state.slot
    if not state.exists:
        if running:
            return []  # the source creates it, or fails with its own error
        return [Finding(ERROR, "slot_missing", f"replication slot {slot!r} does not exist: the pipeline has not "
                        "run yet, or the slot was dropped (changes since then cannot be read)",
                        "start the pipeline; if it has stored offsets, with snapshot.mode=when_needed to re-snapshot")]
    if state.wal_status == "lost":
        error = lost_slot_error(slot)
        return [Finding(ERROR, "slot_lost", error.message, error.fix)]
    findings = []
    if state.wal_status == "unreserved":
        findings.append(Finding(WARNING, "slot_unreserved", f"replication slot {slot!r} retains more WAL than "
                                "max_slot_wal_keep_size: the next checkpoint invalidates it",
                                "let the pipeline catch up now, or raise max_slot_wal_keep_size"))
    retained = state.retained_bytes
    if max_retained and retained is not None and retained > max_retained:
        level = ERROR if action == "stop" else WARNING
        findings.append(Finding(level, "wal_retained", f"replication slot {slot!r} makes the server keep "
                                f"{size(retained)} of WAL, above slot.max.retained.wal.bytes={max_retained} "
                                f"({size(state.lag_bytes)} not confirmed by the pipeline)",
                                "check that the pipeline runs and that its sink keeps up; drop the slot of a retired "
                                f"pipeline (cdc slots CONFIG --drop {slot})"))
    if not state.active and not running:
        findings.append(Finding(WARNING, "slot_inactive", f"replication slot {slot!r} is inactive: no pipeline "
                                f"reads it, and the server keeps {size(retained)} of WAL for it",
                                f"start the pipeline, or drop the slot if it is retired (cdc slots CONFIG --drop "
                                f"{slot})"))
    return findings
