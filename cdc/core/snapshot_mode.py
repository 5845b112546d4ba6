"""What a source does at start: snapshot, resume one, stream, or stop — one pure function.

    decide(mode, stored offset, whether the log still reaches it) -> Plan

Each source declares the modes it supports (``snapshot_modes``) and maps a plan to its own
steps (PostgreSQL: a slot with an exported snapshot; MySQL: a consistent binlog position; SQL
Server: an LSN). Nothing here touches a server, so every combination is unit-tested.

| stored offset                | mode                                   | plan                          |
|------------------------------|----------------------------------------|-------------------------------|
| none                         | initial, when_needed, always           | SNAPSHOT                      |
| none                         | initial_only                           | SNAPSHOT, then stop           |
| none                         | no_data, recovery                      | SCHEMA (structure, no rows)   |
| none                         | never                                  | LOG_START (the oldest log)    |
| inside a resumable snapshot  | any but always; the log reaches it     | RESUME_SNAPSHOT               |
| after an initial_only run    | initial_only                           | NOTHING                       |
| any other                    | initial_only                           | NOTHING (it never streams)    |
| after an initial_only run    | initial, when_needed, always           | SNAPSHOT (as with none)       |
| any                          | always                                 | SNAPSHOT                      |
| the log no longer reaches it | when_needed                            | SNAPSHOT                      |
| the log no longer reaches it | others                                 | LOG_GONE (an error: the fix)  |
| any other                    |                                        | STREAM from the offset        |
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

ALIASES = {"schema_only": "no_data", "schema_only_recovery": "recovery"}
ALL_MODES = ("initial", "initial_only", "when_needed", "no_data", "never", "always", "recovery")


class Plan(enum.Enum):
    SNAPSHOT = "snapshot"  # structure and rows, then stream (or stop: Decision.then_stop)
    SCHEMA = "schema"  # structure only, then stream
    LOG_START = "log start"  # no snapshot: stream from the oldest log the server has
    RESUME_SNAPSHOT = "resume snapshot"  # a resumable snapshot stopped half way
    STREAM = "stream"  # from the stored offset
    NOTHING = "nothing"  # initial_only, done before
    LOG_GONE = "log gone"  # the stored offset is no longer in the log


@dataclass(frozen=True)
class Decision:
    plan: Plan
    reason: str
    then_stop: bool = False  # initial_only: stop once the snapshot is taken

    @property
    def uses_offset(self) -> bool:
        return self.plan in (Plan.STREAM, Plan.RESUME_SNAPSHOT)


def normalize(mode: str) -> str:
    return ALIASES.get(mode, mode)


def decide(mode: str, offset: dict[str, Any] | None, *, log_reaches: bool) -> Decision:
    """``offset``: the stored offset (None: none); ``log_reaches``: whether the server still has the
    log from that offset on (PostgreSQL: the slot exists; MySQL: the binlog file; SQL Server: the LSN)."""
    mode = normalize(mode)
    final = mode == "initial_only"
    if offset is not None and offset.get("snapshot_progress") is not None:
        if log_reaches and mode != "always":
            return Decision(Plan.RESUME_SNAPSHOT, "the stored offset is inside a resumable snapshot", then_stop=final)
        offset = None  # its log is gone (or always): the snapshot starts over
    if offset is not None and offset.get("snapshot_only"):
        if final:
            return Decision(Plan.NOTHING, "the snapshot was taken already (snapshot.mode=initial_only)")
        if mode in ("initial", "when_needed", "always"):
            offset = None  # only a snapshot was taken before: take it again, then stream
    if offset is None:
        if mode in ("initial", "initial_only", "when_needed", "always"):
            return Decision(Plan.SNAPSHOT, f"no stored offset (snapshot.mode={mode})", then_stop=final)
        if mode in ("no_data", "recovery"):
            return Decision(Plan.SCHEMA, f"no stored offset (snapshot.mode={mode}): structure only")
        if mode == "never":
            return Decision(Plan.LOG_START, "no stored offset (snapshot.mode=never): from the oldest log")
        raise ValueError(f"unknown snapshot.mode {mode!r}")
    if final:  # as Debezium's initial_only snapshotter: a snapshot when there is no offset, never a stream
        return Decision(Plan.NOTHING, "an offset is stored, and snapshot.mode=initial_only only takes a snapshot "
                                      "when there is none; it never streams")
    if mode == "always":
        return Decision(Plan.SNAPSHOT, "snapshot.mode=always")
    if not log_reaches:
        if mode == "when_needed":
            return Decision(Plan.SNAPSHOT, "the stored offset is no longer in the log (snapshot.mode=when_needed)")
        return Decision(Plan.LOG_GONE, "the stored offset is no longer in the log")
    return Decision(Plan.STREAM, "resuming from the stored offset")
