"""Where a SQL Server pipeline stands at its server: per captured database, the newest LSN of the
change tables against the offset's (cdc.core.source: ReportsLag, ReportsStatus).

    sys.fn_cdc_get_max_lsn()        against the offset's commit_lsn, as 80-bit numbers (0: caught up)
    sys.fn_cdc_map_lsn_to_time()    the commit times of both: the time behind
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from cdc.config import Config
from cdc.metrics.findings import WARNING, Finding, duration
from cdc.metrics.lag import LagReport, Watch
from cdc.metrics.registry import PipelineMetrics

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


def _live(states: list[LsnState]) -> tuple[float | None, float | None]:
    """(LSN distance, seconds behind) of the database furthest behind."""
    distances = [s.lsn_distance for s in states if s.lsn_distance is not None]
    behind = [s.behind_seconds for s in states if s.behind_seconds is not None]
    return (max(distances) if distances else None), (max(behind) if behind else None)


# ---- the running pipeline ------------------------------------------------------------------------

class SqlServerWatch(Watch):
    """One connection per captured database (a SQL Server connection is bound to its database)."""

    def __init__(self, connect: Callable[[str], Any], metrics: PipelineMetrics, databases: list[str]) -> None:
        super().__init__(lambda: None, metrics)
        self._connect_to = connect
        self.databases = databases
        self._conns: dict[str, Any] = {}
        self.lsn_distance = metrics.gauge("cdc_sqlserver_lsn_distance", "sys.fn_cdc_get_max_lsn() minus the "
                                          "commit_lsn read, as 80-bit numbers: 0 when caught up.", ["database"])
        self.behind_seconds = metrics.gauge("cdc_sqlserver_behind_seconds", "Commit time of the newest change in "
                                            "the change tables minus that of the last one read.", ["database"])

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
                self.lsn_distance.labels(database).set(state.lsn_distance)
                self.behind_seconds.labels(database).set(state.behind_seconds or 0)
        _, behind = _live(states)
        m.publish("sqlserver", LagReport(lag_seconds=behind, state={"databases": [s.as_dict() for s in states]}))
        return []

    def close(self) -> None:
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already broken
                pass


# ---- cdc status ------------------------------------------------------------------------------------

def status_report(config: Config, offset: dict[str, Any] | None) -> LagReport:
    from cdc.core.snapshot_restart import interrupted_attempt
    from cdc.sources.sqlserver import connection

    settings = connection.ConnectionSettings.from_config(config)
    databases: list[str] = config.get("database.names") or []
    offsets = sqlserver_offsets(offset, databases)
    states = []
    for database in databases:
        conn = connection.OdbcConnection(settings, database)
        try:
            states.append(sqlserver_lag(conn, database, offsets.get(database)))
        finally:
            conn.close()
    report = LagReport(where=f"{settings.hostname}:{settings.port}",
                       position=", ".join(f"{s.database} {s.max_lsn or 'no LSN'}" for s in states))
    _, report.lag_seconds = _live(states)
    report.stored = ", ".join(f"{s.database} {s.commit_lsn or 'none'}" for s in states)
    for state in states:
        if state.max_lsn is None:
            report.findings.append(Finding(WARNING, "no_max_lsn", f"{state.database}: the change tables hold no LSN "
                                           "(CDC is not enabled, or the capture job has not run)",
                                           "start SQL Server Agent, and enable CDC on the database and its tables"))
        elif attempt := interrupted_attempt(offsets.get(state.database)):
            report.findings.append(Finding(WARNING, "snapshot_interrupted", f"{state.database}: its snapshot was "
                                           f"interrupted (attempt {attempt}); the next run takes it again from the "
                                           "start, each table after a truncate event",
                                           "start the pipeline; nothing to repair"))
        elif state.commit_lsn is None:
            report.findings.append(Finding(WARNING, "no_offset", f"{state.database}: no stored offset yet",
                                           "check offset.storage.file.filename / name against the running "
                                           "pipeline's"))
        else:
            report.details[state.database] = (f"LSN distance {state.lsn_distance}, "
                                              f"{duration(state.behind_seconds or 0)} of changes not read")
    report.state = {"databases": [s.as_dict() for s in states]}
    return report
