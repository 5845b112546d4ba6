"""The source's own view of how far behind the pipeline is, whatever the database: what a source's lag
watch reports (:class:`LagReport`), the base of the watches (:class:`Watch`: a connection of its own,
findings logged once), the guard on a backlog (:class:`BacklogGuard`), and the monitor that polls
the watch on a timer in a background thread (:class:`Monitor`).

Each database's queries are in its own package, behind cdc.core.source.ReportsLag (the running
pipeline) and ReportsStatus (``cdc status``):

    cdc.sources.postgres.lag    pg_replication_slots: the slot's unconfirmed and retained WAL, wal_status
    cdc.sources.mysql.lag       SHOW MASTER STATUS / SHOW BINARY LOGS against the position read, and how
                                long before the server's expiry purges the oldest binlog still needed
    cdc.sources.sqlserver.lag   per database, sys.fn_cdc_get_max_lsn() against the offset's commit_lsn

Never the source's connection: the source's replication connection is busy streaming, and a query
on it would interleave with the stream.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cdc.core.source import LagWatch
from cdc.metrics.findings import ERROR, Finding
from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)

INF = float("inf")


@dataclass
class LagReport:
    """Where the source's log stands against the pipeline's position, in the source's own terms.

    The running pipeline's watch fills the live part (``lag_bytes``, ``lag_seconds``, ``state``,
    ``findings``): the status page's headline and the history's lag chart read it. ``cdc status``
    also prints ``where``, ``position``, ``stored`` and ``details``."""

    lag_bytes: float | None = None  # of log between the source's head and the pipeline (0: caught up)
    lag_seconds: float | None = None  # how long behind in time (0: caught up; None: the source cannot tell)
    where: str = "?"  # the server (and slot) asked
    position: str | None = None  # the source's current position, in its own notation
    stored: str | None = None  # the pipeline's offset in that notation
    details: dict[str, str] = field(default_factory=dict)  # lines of cdc status' text
    state: dict[str, Any] = field(default_factory=dict)  # the source's state in full (JSON, the page)
    findings: list[Finding] = field(default_factory=list)


class Watch:
    """One source's lag query on its own connection (opened again after a failure): ``check(conn)``
    sets the source's gauges, publishes a :class:`LagReport` (``metrics.publish``) and returns its
    findings."""

    def __init__(self, connect: Callable[[], Any], metrics: PipelineMetrics) -> None:
        self._connect = connect
        self._conn: Any = None
        self.metrics = metrics

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

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already broken
                pass


class BacklogGuard:
    """A limit on what the source's server keeps for the pipeline (PostgreSQL: the WAL its slot
    retains). Above the limit the watch warns; with action ``stop`` it stops the pipeline, but only
    when the pipeline reads its log, its backlog (what it has not confirmed) is itself above the limit,
    and it grew since the last look by more than 1% of the limit. Never before the pipeline has read
    anything, and never while it catches up: a pipeline started far behind must be able to catch up;
    one that falls further behind while it runs is stopped. Nor once it has caught up: the server may
    keep WAL above the limit for a while after (PostgreSQL moves a slot's restart_lsn on at its next
    running-transactions record), while the backlog is a few kB of WAL written since the last confirmation."""

    def __init__(self, limit: int, action: str) -> None:
        self.limit, self.action = limit, action
        self._previous: float | None = None  # the backlog at the last look while reading

    def over(self, kept: float | None) -> bool:
        return bool(self.limit) and kept is not None and kept > self.limit

    def stops(self, kept: float | None, backlog: float | None, reading: bool) -> bool:
        """Whether this look stops the pipeline: ``kept`` is what the limit applies to, ``backlog``
        what shows whether the pipeline keeps up, ``reading`` whether it reads its log now."""
        previous, self._previous = self._previous, backlog if reading else None
        if self.action != "stop" or not self.over(kept) or not reading or backlog is None or previous is None:
            return False
        if not self.over(backlog):
            return False  # the pipeline keeps up: what the server keeps beyond the limit is not its backlog
        return backlog > previous + max(1, self.limit // 100)


class Monitor:
    """The background thread: a history sample every sample interval, the source's lag every lag
    interval, and once more as soon as the source starts reading its log (the first look is taken
    before, when a slot is not active yet). A scrape of /metrics that comes first takes that look
    itself (:meth:`refresh`). A finding that is an error (a lost slot, a guard's stop) stops the
    pipeline through ``fail``."""

    def __init__(self, metrics: PipelineMetrics, watch: LagWatch | None, fail: Callable[[BaseException], None], *,
                 lag_interval_s: float, sample_interval_s: float | None) -> None:
        self.metrics, self.watch, self.fail = metrics, watch, fail
        self.lag_interval_s, self.sample_interval_s = lag_interval_s, sample_interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cdc-metrics-monitor", daemon=True)
        self._lock = threading.Lock()  # the monitor thread and a scrape's refresh share the watch
        self._failed = False
        self._looked_streaming = False  # a look was taken while the source read its log
        self._reported: set[str] = set()  # codes of the findings logged (each once while it lasts)
        if watch is not None:
            metrics.refresh = self.refresh

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def _run(self) -> None:
        next_lag = next_sample = time.monotonic()
        intervals = [i for i in (self.lag_interval_s if self.watch else None, self.sample_interval_s) if i]
        tick = min(intervals + [0.25])
        while not self._stop.is_set():
            now = time.monotonic()
            if self.sample_interval_s and now >= next_sample:
                next_sample = now + self.sample_interval_s
                self.metrics.sample()
            if self.watch is not None and (now >= next_lag or self._stale()):
                next_lag = now + self.lag_interval_s
                self.poll()
            self._stop.wait(tick)

    def _stale(self) -> bool:
        """The source reads its log now, and no look was taken since it does."""
        return not self._looked_streaming and self.metrics.streaming()

    def refresh(self) -> None:
        """Before a scrape: the look the monitor is about to take, taken now (at most once)."""
        if self.watch is not None and self._stale():
            self.poll()

    def poll(self) -> list[Finding]:
        assert self.watch is not None
        with self._lock:
            streaming = self.metrics.streaming()
            try:
                findings = self.watch.poll()
            except Exception as exc:  # noqa: BLE001 - a monitoring query must never stop the pipeline
                self.metrics.lag_query_errors.inc()
                log.debug("source lag query failed: %s", exc)
                return []
            self._looked_streaming = self._looked_streaming or streaming
        self.report(findings)
        fatal = [f for f in findings if f.level == ERROR]
        if fatal and not self._failed:
            from cdc.core.errors import SourceError

            self._failed = True
            self.fail(SourceError(fatal[0].message, fix=fatal[0].fix))
        return findings

    @property
    def failed(self) -> bool:
        """Whether a finding of this monitor (a lost slot, a guard's stop) has stopped the pipeline."""
        return self._failed

    def report(self, findings: list[Finding]) -> None:
        """Log each finding when it appears (not at every poll)."""
        codes = {f.code for f in findings}
        for finding in findings:
            if finding.code not in self._reported:
                log.warning("%s%s", finding.message, f"\n  fix: {finding.fix}" if finding.fix else "")
        self._reported = codes

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(10)
        if self.watch is not None:
            self.watch.close()
