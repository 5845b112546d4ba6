"""Where a MySQL / MariaDB pipeline stands at its server: the binlogs (cdc.core.source: ReportsLag,
ReportsStatus).

    SHOW MASTER STATUS / SHOW BINARY LOGS    the bytes between the position read and the head (the live
                                             lag; its time: the age of the last event read while behind,
                                             0 when caught up)
    binlog_expire_logs_seconds               how long before the server purges the oldest binlog a
    (or expire_logs_days)                    restart still needs (the stored offset's), or has purged it

The binlog guard: a warning when that binlog may be purged within the hour, an error (the pipeline
stops: the changes in between are lost) once it is gone.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from cdc.config import Config
from cdc.core.errors import SourceError
from cdc.metrics.findings import ERROR, WARNING, Finding, duration, size
from cdc.metrics.lag import INF, LagReport, Watch
from cdc.metrics.registry import PipelineMetrics

PURGE_WARNING_S = 3600.0  # warn when the oldest binlog still needed may be purged within this time


@dataclass(frozen=True)
class BinlogState:
    head_file: str
    head_pos: int
    files: list[tuple[str, int]] = field(default_factory=list)  # (name, size) as SHOW BINARY LOGS lists them
    file: str | None = None  # the position compared (None: no offset yet)
    pos: int | None = None
    behind_bytes: int | None = None
    behind_seconds: float | None = None
    expire_seconds: int = 0  # 0: binlogs are never purged by age
    purge_in_seconds: float | None = None  # inf: never; None: unknown (no event time in the offset)
    position_purged: bool = False

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if out["purge_in_seconds"] == INF:
            out["purge_in_seconds"] = None
            out["never_purged"] = True
        out["files"] = [{"name": n, "size": s} for n, s in self.files]
        return out


def _rows(conn: Any, query: str) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(query)
        return list(cur.fetchall())


def binlog_head(conn: Any) -> tuple[str, int]:
    try:
        rows = _rows(conn, "SHOW MASTER STATUS")
    except Exception:  # noqa: BLE001 - MySQL 8.4 renamed it
        rows = _rows(conn, "SHOW BINARY LOG STATUS")
    if not rows:
        raise SourceError("SHOW MASTER STATUS returned nothing: the binlog is off", fix="start the server with log_bin")
    return str(rows[0][0]), int(rows[0][1])


def expire_seconds(conn: Any) -> int:
    values = {str(k).lower(): v for k, v in _rows(
        conn, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('binlog_expire_logs_seconds', 'expire_logs_days')")}
    seconds = int(float(values.get("binlog_expire_logs_seconds") or 0))
    return seconds or int(float(values.get("expire_logs_days") or 0) * 86400)


def mysql_lag(conn: Any, offset: dict[str, Any] | None, now: float | None = None) -> BinlogState:
    """Where ``offset`` (file, pos, ts_sec: Debezium's binlog offset) stands against the server's binlogs.

    The purge estimate is the earliest the file may go: the server purges by file modification
    time, which is at least the time of the last event read from it (``ts_sec``)."""
    now = time.time() if now is None else now
    head_file, head_pos = binlog_head(conn)
    files = [(str(r[0]), int(r[1])) for r in _rows(conn, "SHOW BINARY LOGS")]
    expire = expire_seconds(conn)
    if not offset or not offset.get("file"):
        return BinlogState(head_file, head_pos, files, expire_seconds=expire)
    file, pos = str(offset["file"]), int(offset.get("pos") or 0)
    names = [n for n, _ in files]
    if file not in names:
        return BinlogState(head_file, head_pos, files, file, pos, expire_seconds=expire, position_purged=True)
    sizes = dict(files)
    if file == head_file:
        behind = max(0, head_pos - pos)
    else:
        later = names[names.index(file) + 1:]
        behind = max(0, sizes[file] - pos) + sum(sizes[n] for n in later if n != head_file) + head_pos
    ts_sec = offset.get("ts_sec")
    behind_s = max(0.0, now - ts_sec) if behind and isinstance(ts_sec, (int, float)) and ts_sec > 0 else 0.0
    if not expire or file == head_file:  # the file being written is never purged
        purge_in: float | None = INF
    elif isinstance(ts_sec, (int, float)) and ts_sec > 0:
        purge_in = ts_sec + expire - now
    else:
        purge_in = None
    return BinlogState(head_file, head_pos, files, file, pos, behind, behind_s, expire, purge_in)


def binlog_findings(state: BinlogState) -> list[Finding]:
    """What is wrong with the binlog a restart needs: purged (an error), or purged soon (a warning)."""
    if state.file is None:
        return []
    if state.position_purged:
        oldest = state.files[0][0] if state.files else "none"
        return [Finding(ERROR, "binlog_purged",
                        f"the stored offset is in binlog {state.file}, which the server no longer has (its oldest is "
                        f"{oldest}): the changes between them are lost",
                        "take a new snapshot: restart with snapshot.mode=when_needed (or delete the stored offset); "
                        "then keep binlogs longer (binlog_expire_logs_seconds) than the pipeline may be stopped")]
    purge_in = state.purge_in_seconds
    if purge_in is not None and purge_in != INF and purge_in < PURGE_WARNING_S:
        when = f"within {duration(purge_in)}" if purge_in > 0 else "at the next binlog rotation"
        return [Finding(WARNING, "binlog_purge_soon",
                        f"binlog {state.file}, the oldest the pipeline still needs, may be purged {when} "
                        f"(binlog_expire_logs_seconds={state.expire_seconds}); {size(state.behind_bytes)} not read yet",
                        "make sure the pipeline runs and keeps up, or raise binlog_expire_logs_seconds "
                        "(SET GLOBAL binlog_expire_logs_seconds = ...; and in the server's config)")]
    return []


# ---- the running pipeline ------------------------------------------------------------------------

class MySqlWatch(Watch):
    def __init__(self, connect: Any, metrics: PipelineMetrics) -> None:
        super().__init__(connect, metrics)
        g = metrics.gauge
        self.behind_bytes = g("cdc_mysql_binlog_behind_bytes", "Bytes of binlog between the position read and the "
                              "server's head (SHOW MASTER STATUS).")
        self.behind_seconds = g("cdc_mysql_binlog_behind_seconds", "Age of the last event read while behind the "
                                "head; 0 when caught up.")
        self.purge_in = g("cdc_mysql_binlog_purge_in_seconds", "Time left, at the earliest, before the server's "
                          "expiry purges the oldest binlog the pipeline still needs (+Inf: never).")
        self.purged = g("cdc_mysql_binlog_position_purged", "1 when the binlog of the stored offset is no longer on "
                        "the server.")

    def check(self, conn: Any) -> list[Finding]:
        m = self.metrics
        # bytes behind: from what was read; the purge: the file a restart needs (the stored offset's)
        read = mysql_lag(conn, m.read_offset or m.committed_offset)
        stored = mysql_lag(conn, m.committed_offset) if m.committed_offset is not m.read_offset else read
        if read.behind_bytes is not None:
            self.behind_bytes.set(read.behind_bytes)
            self.behind_seconds.set(read.behind_seconds or 0)
        if stored.file is not None:
            self.purged.set(1 if stored.position_purged else 0)
            self.purge_in.set(stored.purge_in_seconds if stored.purge_in_seconds is not None else float("nan"))
        findings = binlog_findings(stored)
        m.publish("mysql", LagReport(lag_bytes=read.behind_bytes, lag_seconds=read.behind_seconds,
                                     state={**read.as_dict(), "purge_in_seconds": stored.as_dict()["purge_in_seconds"]},
                                     findings=findings))
        return findings


# ---- cdc status ------------------------------------------------------------------------------------

def status_report(config: Config, offset: dict[str, Any] | None) -> LagReport:
    from cdc.sources.mysql.connection import ConnectionSettings

    settings = ConnectionSettings.from_config(config)
    conn = settings.connect()
    try:
        state = mysql_lag(conn, offset)
    finally:
        conn.close()
    report = LagReport(state.behind_bytes, state.behind_seconds, settings.where, f"{state.head_file}:{state.head_pos}")
    oldest = state.files[0][0] if state.files else "?"
    report.details["binlogs"] = f"{len(state.files)} files, oldest {oldest}, head {state.head_file}"
    if not state.expire_seconds:
        report.details["expiry"] = "binlogs are not purged by age (binlog_expire_logs_seconds = 0)"
    elif state.purge_in_seconds is not None and state.purge_in_seconds != INF:
        report.details["expiry"] = (f"binlog_expire_logs_seconds = {state.expire_seconds}; {state.file} may go in "
                                    f"{duration(state.purge_in_seconds)} at the earliest")
    else:
        report.details["expiry"] = f"binlog_expire_logs_seconds = {state.expire_seconds}"
    report.state = state.as_dict()
    if offset and offset.get("file"):
        when = offset.get("ts_sec")
        report.stored = f"{offset['file']}:{offset.get('pos')}" + (
            f" (last event {datetime.fromtimestamp(when, UTC).isoformat(timespec='seconds')})"
            if isinstance(when, (int, float)) and when else "")
    report.findings = binlog_findings(state)
    if offset is None:
        report.findings.append(Finding(WARNING, "no_offset", "no stored offset: the pipeline has not stored a "
                                       "position yet (or looks in another offset file)",
                                       "check offset.storage.file.filename / name against the running pipeline's"))
    return report
