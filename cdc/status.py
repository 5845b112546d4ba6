"""``cdc status CONFIG`` and ``cdc slots CONFIG``: where a pipeline stands at its source, from outside it.

status connects with the pipeline's config (a connection of its own; the pipeline may run or not),
reads the stored offset and the source's current position, and says what is wrong, each finding
with its fix. Exit status: 0 nothing wrong, 1 a warning, 2 an error.

slots lists PostgreSQL's replication slots, and drops one on request (never an active one).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cdc import registry
from cdc.config import CORE_OPTIONS, Config
from cdc.core.errors import ConfigError, SourceError
from cdc.metrics import options_for
from cdc.metrics.findings import ERROR, WARNING, Finding, duration, exit_code, size

STATUS_WORDS = {0: "OK", 1: "WARNING", 2: "ERROR"}


@dataclass
class Report:
    pipeline: str
    source: str
    where: str
    stored_offset: dict[str, Any] | None
    position: str | None = None  # the source's current position, in its own notation
    lag_bytes: int | None = None
    lag_seconds: float | None = None
    details: dict[str, Any] = field(default_factory=dict)  # what the text shows of the slot or binlog state
    state: dict[str, Any] = field(default_factory=dict)  # that state in full (json)
    stored: str | None = None  # the stored offset in the source's notation
    findings: list[Finding] = field(default_factory=list)

    @property
    def code(self) -> int:
        return exit_code(self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {"status": STATUS_WORDS[self.code].lower(), "pipeline": self.pipeline, "source": self.source,
                "where": self.where, "stored_offset": self.stored_offset, "position": self.position,
                "lag_bytes": self.lag_bytes, "lag_seconds": self.lag_seconds, "details": self.details,
                "state": self.state, "findings": [f.as_dict() for f in self.findings]}

    def text(self) -> str:
        lines = [f"pipeline        {self.pipeline} ({self.source}, {self.where})",
                 f"stored offset   {self.stored or _offset(self.stored_offset)}",
                 f"source position {self.position or '?'}",
                 "lag             " + (f"{size(self.lag_bytes)}" if self.lag_bytes is not None else "?")
                 + (f", {duration(self.lag_seconds)} since the last delivered change" if self.lag_seconds else "")]
        for name, value in self.details.items():
            lines.append(f"{name:<15} {value}")
        lines.append(f"status          {STATUS_WORDS[self.code]}")
        for finding in self.findings:
            lines.append(f"  {finding.level}: {finding.message}")
            if finding.fix:
                lines.append(f"    fix: {finding.fix}")
        return "\n".join(lines)


def _offset(offset: dict[str, Any] | None) -> str:
    if offset is None:
        return "none (the pipeline has stored nothing yet)"
    return ", ".join(f"{k}={v}" for k, v in offset.items() if not isinstance(v, (dict, list))) or "{}"


def _time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def pipeline_config(source: str, properties: dict[str, Any]) -> Config:
    """The pipeline's config with every option it may hold declared (and checked)."""
    source_cls = registry.load(registry.SOURCES, source)
    config = Config(dict(properties)).declare(CORE_OPTIONS).declare(getattr(source_cls, "options", ()))
    config.declare(options_for(source))
    config.validate(("",))  # unknown names were the pipeline's business; only values are checked here
    return config


def stored_offset(config: Config) -> dict[str, Any] | None:
    from cdc.pipeline import offset_store

    store = offset_store(config)
    try:
        return store.load()
    finally:
        store.close()


def status(source: str, properties: dict[str, Any]) -> Report:
    config = pipeline_config(source, properties)
    offset = stored_offset(config)
    name = str(config.get("name"))
    if source == "postgres":
        return _postgres(config, name, offset)
    if source == "mysql":
        return _mysql(config, name, offset)
    if source == "sqlserver":
        return _sqlserver(config, name, offset)
    return Report(name, source, "?", offset, details={"note": f"the {source} source has no position check yet"})


def _postgres(config: Config, name: str, offset: dict[str, Any] | None) -> Report:
    from cdc.metrics.lag import postgres_lag
    from cdc.sources.postgres.connection import ConnectionSettings
    from cdc.sources.postgres.guards import slot_findings
    from cdc.sources.postgres.pgoutput import format_lsn

    settings = ConnectionSettings.from_config(config)
    slot = str(config.get("slot.name"))
    with settings.connect() as conn:
        state = postgres_lag(conn, slot)
        keep = conn.execute("SHOW max_slot_wal_keep_size").fetchone()
    report = Report(name, "postgres", f"slot {slot} on {settings.where}", offset, format_lsn(state.current_lsn))
    stored = int(offset.get("lsn") or 0) if offset else 0
    if stored:
        report.lag_bytes = max(0, state.current_lsn - stored)
        ts_usec = offset.get("ts_usec") if offset else None
        if report.lag_bytes and isinstance(ts_usec, int) and ts_usec > 0:
            report.lag_seconds = max(0.0, time.time() - ts_usec / 1e6)
    if state.exists:
        active = f"active (pid {state.active_pid})" if state.active else "inactive"
        report.details["slot"] = (f"{slot}: {active}, wal_status {state.wal_status or '?'}, retained WAL "
                                  f"{size(state.retained_bytes)}, confirmed_flush "
                                  f"{format_lsn(state.confirmed_flush_lsn) if state.confirmed_flush_lsn else '?'}")
        report.details["wal keep limit"] = f"max_slot_wal_keep_size = {keep[0] if keep else '?'}"
    report.state = state.as_dict()
    if stored:
        when = offset.get("ts_usec") if offset else None
        report.stored = f"{format_lsn(stored)}" + (f" (txId {offset.get('txId')}, committed {_time(when / 1e6)})"
                                                   if offset and isinstance(when, int) else "")
    report.findings = slot_findings(state, config.get("slot.max.retained.wal.bytes") or 0)
    if offset is None and state.exists:
        report.findings.append(Finding(WARNING, "no_offset", "no stored offset: the pipeline has not stored a "
                                       "position yet (or looks in another offset file)",
                                       "check offset.storage.file.filename / name against the running pipeline's"))
    return report


def _mysql(config: Config, name: str, offset: dict[str, Any] | None) -> Report:
    from cdc.metrics.findings import binlog_findings
    from cdc.metrics.lag import mysql_lag
    from cdc.sources.mysql.connection import ConnectionSettings

    settings = ConnectionSettings.from_config(config)
    conn = settings.connect()
    try:
        state = mysql_lag(conn, offset)
    finally:
        conn.close()
    report = Report(name, "mysql", settings.where, offset, f"{state.head_file}:{state.head_pos}",
                    state.behind_bytes, state.behind_seconds)
    oldest = state.files[0][0] if state.files else "?"
    report.details["binlogs"] = f"{len(state.files)} files, oldest {oldest}, head {state.head_file}"
    if not state.expire_seconds:
        report.details["expiry"] = "binlogs are not purged by age (binlog_expire_logs_seconds = 0)"
    elif state.purge_in_seconds is not None and state.purge_in_seconds != float("inf"):
        report.details["expiry"] = (f"binlog_expire_logs_seconds = {state.expire_seconds}; {state.file} may go in "
                                    f"{duration(state.purge_in_seconds)} at the earliest")
    else:
        report.details["expiry"] = f"binlog_expire_logs_seconds = {state.expire_seconds}"
    report.state = state.as_dict()
    if offset and offset.get("file"):
        when = offset.get("ts_sec")
        report.stored = f"{offset['file']}:{offset.get('pos')}" + (
            f" (last event {_time(when)})" if isinstance(when, (int, float)) and when else "")
    report.findings = binlog_findings(state)
    if offset is None:
        report.findings.append(Finding(WARNING, "no_offset", "no stored offset: the pipeline has not stored a "
                                       "position yet (or looks in another offset file)",
                                       "check offset.storage.file.filename / name against the running pipeline's"))
    return report


def _sqlserver(config: Config, name: str, offset: dict[str, Any] | None) -> Report:
    from cdc.metrics.lag import sqlserver_lag, sqlserver_offsets
    from cdc.sources.sqlserver.connection import ConnectionSettings, OdbcConnection

    settings = ConnectionSettings.from_config(config)
    databases: list[str] = config.get("database.names") or []
    offsets = sqlserver_offsets(offset, databases)
    states = []
    for database in databases:
        conn = OdbcConnection(settings, database)
        try:
            states.append(sqlserver_lag(conn, database, offsets.get(database)))
        finally:
            conn.close()
    report = Report(name, "sqlserver", f"{settings.hostname}:{settings.port}", offset,
                    ", ".join(f"{s.database} {s.max_lsn or 'no LSN'}" for s in states))
    behind = [s.behind_seconds for s in states if s.behind_seconds is not None]
    report.lag_seconds = max(behind) if behind else None
    report.stored = ", ".join(f"{s.database} {s.commit_lsn or 'none'}" for s in states)
    for state in states:
        if state.max_lsn is None:
            report.findings.append(Finding(WARNING, "no_max_lsn", f"{state.database}: the change tables hold no LSN "
                                           "(CDC is not enabled, or the capture job has not run)",
                                           "start SQL Server Agent, and enable CDC on the database and its tables"))
        elif state.commit_lsn is None:
            report.findings.append(Finding(WARNING, "no_offset", f"{state.database}: no stored offset yet",
                                           "check offset.storage.file.filename / name against the running "
                                           "pipeline's"))
        else:
            report.details[state.database] = (f"LSN distance {state.lsn_distance}, "
                                              f"{duration(state.behind_seconds or 0)} of changes not read")
    report.state = {"databases": [s.as_dict() for s in states]}
    return report


def print_status(source: str, properties: dict[str, Any], as_json: bool) -> int:
    try:
        report = status(source, properties)
    except (SourceError, ConfigError) as exc:
        # cannot even look: that is an error of the pipeline too (exit 2), said the same way
        finding = Finding(ERROR, "unreachable", exc.message, exc.fix)
        report = Report(str(properties.get("name") or "cdc"), source, "?", None, findings=[finding])
    print(json.dumps(report.as_dict(), indent=2, default=str) if as_json else report.text())
    return report.code


# ---- slots ----------------------------------------------------------------------------------------

def slots(properties: dict[str, Any], drop: str | None = None, as_json: bool = False) -> int:
    from cdc.metrics.lag import postgres_slots
    from cdc.sources.postgres.connection import ConnectionSettings
    from cdc.sources.postgres.pgoutput import format_lsn

    config = pipeline_config("postgres", properties)
    settings = ConnectionSettings.from_config(config)
    with settings.connect() as conn:
        found = postgres_slots(conn)
        if drop is not None:
            return _drop(conn, found, drop)
    if as_json:
        print(json.dumps([s.as_dict() for s in found], indent=2))
        return 0
    print(f"{'slot':<24} {'database':<16} {'active':<16} {'wal_status':<11} {'retained WAL':>12} {'unconfirmed':>12} "
          "confirmed_flush")
    for s in found:
        active = f"yes (pid {s.active_pid})" if s.active else "no"
        flush = format_lsn(s.confirmed_flush_lsn) if s.confirmed_flush_lsn is not None else "-"
        print(f"{s.slot:<24} {s.database or '-':<16} {active:<16} {s.wal_status or '-':<11} "
              f"{size(s.retained_bytes):>12} {size(s.lag_bytes):>12} {flush}")
    if not found:
        print("(no replication slots)")
    return 0


def _drop(conn: Any, found: list[Any], name: str) -> int:
    import psycopg

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
    print(f"dropped replication slot {name} (it kept {size(slot.retained_bytes)} of WAL)")
    return 0


def _active(name: str, pid: int | None) -> ConfigError:
    who = f"process {pid}" if pid else "a running process"
    return ConfigError(f"replication slot {name!r} is active: {who} streams from it, and dropping it would break "
                       "that pipeline (and lose the changes it has not read)",
                       fix=f"stop the pipeline that reads it first, then drop the slot"
                           f"{f' (a stuck one: SELECT pg_terminate_backend({pid}))' if pid else ''}")
