"""The source's own view of how far behind the pipeline is: one query function per source, and the
monitor that runs them on a timer, in a background thread, on a connection of its own.

    PostgreSQL   pg_replication_slots: pg_current_wal_lsn() - confirmed_flush_lsn (not yet confirmed)
                 and pg_current_wal_lsn() - restart_lsn (WAL the server keeps for the slot), wal_status
    MySQL        SHOW MASTER STATUS / SHOW BINARY LOGS against the position read, and how long before
                 binlog_expire_logs_seconds (or expire_logs_days) purges the oldest binlog still needed
    SQL Server   per database, sys.fn_cdc_get_max_lsn() against the offset's commit_lsn, and the time
                 between their commits (sys.fn_cdc_map_lsn_to_time)

Never the source's connection: the source's replication connection is busy streaming, and a
query on it would interleave with the stream.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from cdc.metrics.findings import ERROR, Finding, binlog_findings
from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)

INF = float("inf")


# ---- PostgreSQL ----------------------------------------------------------------------------------

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
        from cdc.sources.postgres.pgoutput import format_lsn

        out = asdict(self)
        for key in ("current_lsn", "confirmed_flush_lsn", "restart_lsn"):
            if out[key] is not None:
                out[key] = format_lsn(out[key])
        return out


_SLOTS = ("SELECT to_jsonb(s)::text, CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
          "ELSE pg_current_wal_lsn() END::text FROM pg_replication_slots s")
_CURRENT = "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END::text"


def _slot_state(row: dict[str, Any], current: int) -> SlotState:
    from cdc.sources.postgres.pgoutput import parse_lsn

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
    from cdc.sources.postgres.pgoutput import parse_lsn

    rows = conn.execute(_SLOTS + " ORDER BY slot_name").fetchall()
    return [_slot_state(json.loads(row), parse_lsn(current)) for row, current in rows]


def postgres_lag(conn: Any, slot: str) -> SlotState:
    from cdc.sources.postgres.pgoutput import parse_lsn

    row = conn.execute(_SLOTS + " WHERE slot_name = %s", (slot,)).fetchone()
    if row is None:
        current = conn.execute(_CURRENT).fetchone()
        return SlotState(slot=slot, exists=False, current_lsn=parse_lsn(current[0]) if current else 0)
    return _slot_state(json.loads(row[0]), parse_lsn(row[1]))


# ---- MySQL / MariaDB -----------------------------------------------------------------------------

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
        from cdc.core.errors import SourceError

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


# ---- SQL Server ----------------------------------------------------------------------------------

# The newest LSN in the change tables, and the commit times of it and of the stored commit_lsn.
SQLSERVER_LAG = ("SELECT sys.fn_cdc_get_max_lsn() AS max_lsn, "
                 "sys.fn_cdc_map_lsn_to_time(sys.fn_cdc_get_max_lsn()) AS max_time, "
                 "sys.fn_cdc_map_lsn_to_time(CONVERT(binary(10), ?)) AS stored_time")


@dataclass(frozen=True)
class LsnState:
    database: str
    max_lsn: str | None  # None: the capture job has not run (or CDC is off)
    commit_lsn: str | None = None  # the stored offset's (None: no offset for this database yet)
    lsn_distance: int | None = None  # max_lsn - commit_lsn as 80-bit numbers: 0 when caught up
    behind_seconds: float | None = None  # commit time of max_lsn minus that of commit_lsn

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sqlserver_offsets(offset: dict[str, Any] | None, databases: list[str]) -> dict[str, dict[str, Any]]:
    """Per database, from either offset shape (cdc's ``databases`` map, Debezium's single-database one)."""
    if not offset:
        return {}
    if isinstance(offset.get("databases"), dict):
        return dict(offset["databases"])
    return {databases[0]: offset} if databases and "commit_lsn" in offset else {}


def sqlserver_lag(conn: Any, database: str, offset: dict[str, Any] | None) -> LsnState:
    from cdc.sources.sqlserver.lsn import Lsn

    stored = Lsn.parse(offset["commit_lsn"]) if offset and offset.get("commit_lsn") else None
    row = conn.query(SQLSERVER_LAG, ((stored or Lsn.of(None)).raw,))[0]
    newest = Lsn.of(row.get("max_lsn"))
    if not newest.available:
        return LsnState(database, None, str(stored) if stored else None)
    if stored is None:
        return LsnState(database, str(newest))
    distance = max(0, newest.as_int() - stored.as_int())
    behind = None
    if distance and row.get("max_time") is not None and row.get("stored_time") is not None:
        behind = max(0.0, (row["max_time"] - row["stored_time"]).total_seconds())
    return LsnState(database, str(newest), str(stored), distance, behind if distance else 0.0)


# ---- the monitor -----------------------------------------------------------------------------------

class Watch:
    """One source's lag query on its own connection, the metrics it sets and the findings it logs."""

    def __init__(self, connect: Callable[[], Any], metrics: PipelineMetrics) -> None:
        self._connect = connect
        self._conn: Any = None
        self.metrics = metrics
        self._reported: set[str] = set()

    def connection(self) -> Any:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def poll(self) -> list[Finding]:
        try:
            return self.check(self.connection())
        except Exception:
            self.close()  # a broken connection is opened again next time
            raise

    def check(self, conn: Any) -> list[Finding]:
        raise NotImplementedError

    def report(self, findings: list[Finding]) -> None:
        """Log each finding when it appears (not at every poll)."""
        codes = {f.code for f in findings}
        for finding in findings:
            if finding.code not in self._reported:
                log.warning("%s%s", finding.message, f"\n  fix: {finding.fix}" if finding.fix else "")
        self._reported = codes

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already broken
                pass


class PostgresWatch(Watch):
    def __init__(self, connect: Callable[[], Any], metrics: PipelineMetrics, slot: str, max_retained: int = 0,
                 action: str = "warn") -> None:
        super().__init__(connect, metrics)
        self.slot, self.max_retained, self.action = slot, max_retained, action

    def check(self, conn: Any) -> list[Finding]:
        from cdc.sources.postgres.guards import slot_findings

        state = postgres_lag(conn, self.slot)
        m = self.metrics
        if state.exists:
            m.pg_slot_lag.set(state.lag_bytes or 0)
            m.pg_retained.set(state.retained_bytes or 0)
            m.pg_active.set(1 if state.active else 0)
            m.pg_lost.set(1 if state.wal_status == "lost" else 0)
            m.pg_retained_exceeded.set(1 if self.max_retained and (state.retained_bytes or 0) > self.max_retained
                                       else 0)
        m.source_lag = {"kind": "postgres", "lag_bytes": state.lag_bytes, **state.as_dict()}
        return slot_findings(state, self.max_retained, running=True, action=self.action)


class MySqlWatch(Watch):
    def check(self, conn: Any) -> list[Finding]:
        m = self.metrics
        # bytes behind: from what was read; the purge: the file a restart needs (the stored offset's)
        read = mysql_lag(conn, m.read_offset or m.committed_offset)
        stored = mysql_lag(conn, m.committed_offset) if m.committed_offset is not m.read_offset else read
        if read.behind_bytes is not None:
            m.mysql_behind_bytes.set(read.behind_bytes)
            m.mysql_behind_seconds.set(read.behind_seconds or 0)
        if stored.file is not None:
            m.mysql_purged.set(1 if stored.position_purged else 0)
            m.mysql_purge_in.set(stored.purge_in_seconds if stored.purge_in_seconds is not None else float("nan"))
        m.source_lag = {"kind": "mysql", "lag_bytes": read.behind_bytes, **read.as_dict(),
                        "purge_in_seconds": stored.as_dict()["purge_in_seconds"]}
        return binlog_findings(stored)


class SqlServerWatch(Watch):
    """One connection per captured database (a SQL Server connection is bound to its database)."""

    def __init__(self, connect: Callable[[str], Any], metrics: PipelineMetrics, databases: list[str]) -> None:
        super().__init__(lambda: None, metrics)
        self._connect_to = connect
        self.databases = databases
        self._conns: dict[str, Any] = {}

    def poll(self) -> list[Finding]:
        m = self.metrics
        offsets = sqlserver_offsets(m.read_offset or m.committed_offset, self.databases)
        states = []
        for database in self.databases:
            conn = self._conns.get(database)
            if conn is None:
                conn = self._conns[database] = self._connect_to(database)
            try:
                state = sqlserver_lag(conn, database, offsets.get(database))
            except Exception:
                self.close()
                raise
            states.append(state)
            if state.lsn_distance is not None:
                m.sqlserver_lsn_distance.labels(database).set(state.lsn_distance)
                m.sqlserver_behind_seconds.labels(database).set(state.behind_seconds or 0)
        m.source_lag = {"kind": "sqlserver", "databases": [s.as_dict() for s in states]}
        return []

    def close(self) -> None:
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already broken
                pass


class Monitor:
    """The background thread: a history sample every sample interval, the source's lag every lag
    interval. A finding that is an error (a lost slot; retained WAL above the limit with
    slot.retained.wal.action=stop) stops the pipeline through ``fail``."""

    def __init__(self, metrics: PipelineMetrics, watch: Watch | None, fail: Callable[[BaseException], None], *,
                 lag_interval_s: float, sample_interval_s: float | None) -> None:
        self.metrics, self.watch, self.fail = metrics, watch, fail
        self.lag_interval_s, self.sample_interval_s = lag_interval_s, sample_interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cdc-metrics-monitor", daemon=True)
        self._failed = False

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def _run(self) -> None:
        next_lag = next_sample = time.monotonic()
        intervals = [i for i in (self.lag_interval_s if self.watch else None, self.sample_interval_s) if i]
        tick = min(intervals + [1.0])
        while not self._stop.is_set():
            now = time.monotonic()
            if self.sample_interval_s and now >= next_sample:
                next_sample = now + self.sample_interval_s
                self.metrics.sample()
            if self.watch is not None and now >= next_lag:
                next_lag = now + self.lag_interval_s
                self.poll()
            self._stop.wait(tick)

    def poll(self) -> list[Finding]:
        assert self.watch is not None
        try:
            findings = self.watch.poll()
        except Exception as exc:  # noqa: BLE001 - a monitoring query must never stop the pipeline
            self.metrics.lag_query_errors.inc()
            log.debug("source lag query failed: %s", exc)
            return []
        self.watch.report(findings)
        fatal = [f for f in findings if f.level == ERROR]
        if fatal and not self._failed:
            from cdc.core.errors import SourceError

            self._failed = True
            self.fail(SourceError(fatal[0].message, fix=fatal[0].fix))
        return findings

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(10)
        if self.watch is not None:
            self.watch.close()
