"""Where a PostgreSQL pipeline stands at its server: its replication slot (cdc.core.source: ReportsLag,
ReportsStatus, HasSlots).

    pg_replication_slots    pg_current_wal_lsn() - confirmed_flush_lsn: WAL the pipeline has not
                            confirmed (the live lag); - restart_lsn: WAL the server keeps for the slot;
                            active, wal_status (lost: invalidated under max_slot_wal_keep_size)

The running pipeline's watch sets the cdc_postgres_slot_* gauges and applies the retained-WAL guard
(slot.max.retained.wal.bytes, slot.retained.wal.action; cdc.sources.postgres.guards); ``cdc status``
reports the slot against the stored offset; ``cdc slots`` lists every slot of the server and drops one.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from cdc.config import Config
from cdc.core.errors import ConfigError
from cdc.metrics.findings import ERROR, WARNING, Finding, size
from cdc.metrics.lag import BacklogGuard, LagReport, Watch
from cdc.metrics.registry import PipelineMetrics
from cdc.sources.postgres.guards import slot_findings
from cdc.sources.postgres.pgoutput import format_lsn, parse_lsn


@dataclass(frozen=True)
class SlotState:
    slot: str
    exists: bool
    current_lsn: int = 0
    active: bool = False
    active_pid: int | None = None
    database: str | None = None
    plugin: str | None = None
    wal_status: str | None = None  # reserved | extended | unreserved | lost (PostgreSQL 13+)
    confirmed_flush_lsn: int | None = None
    restart_lsn: int | None = None
    safe_wal_size: int | None = None  # bytes before max_slot_wal_keep_size invalidates it (13+)
    lag_bytes: int | None = None  # current - confirmed_flush
    retained_bytes: int | None = None  # current - restart

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("current_lsn", "confirmed_flush_lsn", "restart_lsn"):
            if out[key] is not None:
                out[key] = format_lsn(out[key])
        return out


_SLOTS = ("SELECT to_jsonb(s)::text, CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
          "ELSE pg_current_wal_lsn() END::text FROM pg_replication_slots s")
_CURRENT = "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END::text"


def _slot_state(row: dict[str, Any], current: int) -> SlotState:
    confirmed = parse_lsn(row["confirmed_flush_lsn"]) if row.get("confirmed_flush_lsn") else None
    restart = parse_lsn(row["restart_lsn"]) if row.get("restart_lsn") else None
    return SlotState(
        slot=row["slot_name"], exists=True, current_lsn=current, active=bool(row.get("active")),
        active_pid=row.get("active_pid"), database=row.get("database"), plugin=row.get("plugin"),
        wal_status=row.get("wal_status"), confirmed_flush_lsn=confirmed, restart_lsn=restart,
        safe_wal_size=row.get("safe_wal_size"),
        lag_bytes=max(0, current - confirmed) if confirmed is not None else None,
        retained_bytes=max(0, current - restart) if restart is not None else None,
    )


def postgres_slots(conn: Any) -> list[SlotState]:
    """Every replication slot of the server (to_jsonb: the columns each PostgreSQL version has)."""
    rows = conn.execute(_SLOTS + " ORDER BY slot_name").fetchall()
    return [_slot_state(json.loads(row), parse_lsn(current)) for row, current in rows]


def postgres_lag(conn: Any, slot: str) -> SlotState:
    row = conn.execute(_SLOTS + " WHERE slot_name = %s", (slot,)).fetchone()
    if row is None:
        current = conn.execute(_CURRENT).fetchone()
        return SlotState(slot=slot, exists=False, current_lsn=parse_lsn(current[0]) if current else 0)
    return _slot_state(json.loads(row[0]), parse_lsn(row[1]))


# ---- the running pipeline ------------------------------------------------------------------------

class PostgresWatch(Watch):
    def __init__(self, connect: Any, metrics: PipelineMetrics, slot: str, max_retained: int = 0,
                 action: str = "warn") -> None:
        super().__init__(connect, metrics)
        self.slot, self.max_retained = slot, max_retained
        self.guard = BacklogGuard(max_retained, action)
        g = metrics.gauge
        self.slot_lag = g("cdc_postgres_slot_lag_bytes", "pg_current_wal_lsn() - confirmed_flush_lsn of the slot: "
                          "WAL written that the pipeline has not confirmed.")
        self.retained = g("cdc_postgres_slot_retained_wal_bytes", "pg_current_wal_lsn() - restart_lsn of the slot: "
                          "WAL the server keeps for it.")
        self.active = g("cdc_postgres_slot_active", "1 while a process streams from the slot.")
        self.lost = g("cdc_postgres_slot_lost", "1 once the server invalidated the slot (wal_status lost).")
        self.exceeded = g("cdc_postgres_slot_retained_wal_exceeded", "1 while the retained WAL is above "
                          "slot.max.retained.wal.bytes.")

    def check(self, conn: Any) -> list[Finding]:
        state = postgres_lag(conn, self.slot)
        if state.exists:
            self.slot_lag.set(state.lag_bytes or 0)
            self.retained.set(state.retained_bytes or 0)
            self.active.set(1 if state.active else 0)
            self.lost.set(1 if state.wal_status == "lost" else 0)
            self.exceeded.set(1 if self.guard.over(state.retained_bytes) else 0)
        findings = slot_findings(state, self.max_retained, running=True)  # the guard's level is decided here
        if self.guard.stops(state.retained_bytes, state.lag_bytes, self.metrics.reading):
            findings = [replace(f, level=ERROR, message=f"{f.message}; it grew while the pipeline ran, and "
                                "slot.retained.wal.action=stop stops it") if f.code == "wal_retained" else f
                        for f in findings]
        self.metrics.publish("postgres", LagReport(lag_bytes=state.lag_bytes, state=state.as_dict(),
                                                   findings=findings))
        return findings


# ---- cdc status, cdc slots -------------------------------------------------------------------------

def _time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def status_report(config: Config, offset: dict[str, Any] | None) -> LagReport:
    from cdc.core.snapshot_restart import is_slot_pending
    from cdc.sources.postgres.connection import ConnectionSettings

    settings = ConnectionSettings.from_config(config)
    slot = str(config.get("slot.name"))
    with settings.connect() as conn:
        state = postgres_lag(conn, slot)
        keep = conn.execute("SHOW max_slot_wal_keep_size").fetchone()
    report = LagReport(where=f"slot {slot} on {settings.where}", position=format_lsn(state.current_lsn))
    stored = int(offset.get("lsn") or 0) if offset else 0
    if offset and stored:
        report.lag_bytes = max(0, state.current_lsn - stored)
        ts_usec = offset.get("ts_usec")
        if report.lag_bytes and isinstance(ts_usec, int) and ts_usec > 0:
            report.lag_seconds = max(0.0, time.time() - ts_usec / 1e6)
        report.stored = format_lsn(stored) + (f" (txId {offset.get('txId')}, committed {_time(ts_usec / 1e6)})"
                                              if isinstance(ts_usec, int) else "")
    if state.exists:
        active = f"active (pid {state.active_pid})" if state.active else "inactive"
        report.details["slot"] = (f"{slot}: {active}, wal_status {state.wal_status or '?'}, retained WAL "
                                  f"{size(state.retained_bytes)}, confirmed_flush "
                                  f"{format_lsn(state.confirmed_flush_lsn) if state.confirmed_flush_lsn else '?'}")
        report.details["wal keep limit"] = f"max_slot_wal_keep_size = {keep[0] if keep else '?'}"
    report.state = state.as_dict()
    report.findings = slot_findings(state, config.get("slot.max.retained.wal.bytes") or 0)
    if (offset is None or is_slot_pending(offset)) and state.exists:
        report.findings.append(Finding(WARNING, "no_offset", "no stored offset: the pipeline has not stored a "
                                       "position yet (or looks in another offset file)",
                                       "check offset.storage.file.filename / name against the running pipeline's"))
    return report


def slot_report(config: Config, as_json: bool) -> str:
    from cdc.sources.postgres.connection import ConnectionSettings

    with ConnectionSettings.from_config(config).connect() as conn:
        found = postgres_slots(conn)
    if as_json:
        return json.dumps([s.as_dict() for s in found], indent=2)
    lines = [f"{'slot':<24} {'database':<16} {'active':<16} {'wal_status':<11} {'retained WAL':>12} "
             f"{'unconfirmed':>12} confirmed_flush"]
    for s in found:
        active = f"yes (pid {s.active_pid})" if s.active else "no"
        flush = format_lsn(s.confirmed_flush_lsn) if s.confirmed_flush_lsn is not None else "-"
        lines.append(f"{s.slot:<24} {s.database or '-':<16} {active:<16} {s.wal_status or '-':<11} "
                     f"{size(s.retained_bytes):>12} {size(s.lag_bytes):>12} {flush}")
    if not found:
        lines.append("(no replication slots)")
    return "\n".join(lines)


def drop_slot(config: Config, name: str) -> str:
    import psycopg

    from cdc.sources.postgres.connection import ConnectionSettings

    with ConnectionSettings.from_config(config).connect() as conn:
        found = postgres_slots(conn)
        slot = next((s for s in found if s.slot == name), None)
        if slot is None:
            raise ConfigError(f"there is no replication slot {name!r} on this server "
                              f"(there are: {', '.join(s.slot for s in found) or 'none'})",
                              fix="give the name as `cdc slots CONFIG` lists it")
        if slot.active:
            raise _active(name, slot.active_pid)
        try:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (name,))
        except psycopg.errors.ObjectInUse:
            raise _active(name, None) from None
    return f"dropped replication slot {name} (it kept {size(slot.retained_bytes)} of WAL)"


def _active(name: str, pid: int | None) -> ConfigError:
    who = f"process {pid}" if pid else "a running process"
    return ConfigError(f"replication slot {name!r} is active: {who} streams from it, and dropping it would break "
                       "that pipeline (and lose the changes it has not read)",
                       fix=f"stop the pipeline that reads it first, then drop the slot"
                           f"{f' (a stuck one: SELECT pg_terminate_backend({pid}))' if pid else ''}")
