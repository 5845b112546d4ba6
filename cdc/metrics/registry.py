"""Every metric of a pipeline, in one place, and the engine's view of them (:class:`PipelineMetrics`).

Debezium's metrics keep Debezium's names and meanings, shaped as the JMX exporter configuration
Debezium's own monitoring examples use gives them to Prometheus (``debezium_metrics_<Attribute>``
gauges labelled ``plugin``, ``name`` = topic.prefix, ``context`` = streaming | snapshot;
``RowsScanned`` also by ``table``), so dashboards built for Debezium read cdc unchanged. What
Debezium has no name for is ``cdc_*``, in Prometheus' own conventions.

The engine calls :meth:`PipelineMetrics.batch` once per batch and :meth:`~PipelineMetrics.committed`
once per stored offset: events are tallied per batch in one loop, and each metric is touched once
per batch, not once per event.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.gc_collector import GCCollector
from prometheus_client.metrics_core import Metric
from prometheus_client.process_collector import ProcessCollector

from cdc.core.records import Batch, ChangeEvent
from cdc.core.source import ReportsStreaming
from cdc.metrics.history import History

if TYPE_CHECKING:
    from cdc.metrics.lag import LagReport

# The source-block field that tells one transaction from the next, per connector (the first present wins).
TX_FIELDS = ("txId", "gtid", "commit_lsn", "pos")
MAX_ERRORS = 20
_ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


@dataclass(frozen=True)
class LoggedError:
    time: float
    level: str
    logger: str
    message: str


@dataclass
class TableSnapshot:
    rows: int = 0
    done: bool = False


class SourceGauges:
    """The source's own gauges (``cdc_<source>_*``), declared by its lag watch: only the running
    source's are exported, and only once the watch has sampled them (never a 0 that was not read)."""

    def __init__(self) -> None:
        self.gauges: list[Gauge] = []
        self.sampled = False

    def collect(self) -> Iterator[Metric]:
        if self.sampled:
            for gauge in self.gauges:
                yield from gauge.collect()

    def describe(self) -> list[Metric]:
        return []  # declared after the registry was made: nothing to check names against


class PipelineMetrics:
    """The metrics of one pipeline, in their own registry (several pipelines may share a process)."""

    def __init__(self, *, plugin: str, server: str, source: Any = None, history_interval_s: float = 10.0,
                 clock: Callable[[], float] = time.time) -> None:
        """``plugin``: the label of Debezium's metrics (cdc.core.source.NamesItsMetrics, else the
        source's name); ``server``: topic.prefix."""
        self.registry = CollectorRegistry(auto_describe=True)
        self.plugin = plugin
        self.server = server
        self._source = source
        self._clock = clock
        self._lock = threading.Lock()  # the engine thread writes what the HTTP and monitor threads read
        self.history = History(history_interval_s)
        self.errors: deque[LoggedError] = deque(maxlen=MAX_ERRORS)
        self.tables: dict[str, TableSnapshot] = {}
        self.read_offset: dict[str, Any] | None = None  # of the last batch read
        self.committed_offset: dict[str, Any] | None = None  # stored, acknowledged to the source
        self.last_event: dict[str, Any] = {}
        self.closed = False
        self.streamed_total = 0  # change events streamed (TotalNumberOfEventsSeen, streaming)
        self.snapshot_total = 0  # snapshot rows
        self.behind_ms: float | None = None  # MilliSecondsBehindSource, None before the first streamed event
        self.lag: LagReport | None = None  # the source's lag watch's last look (cdc.metrics.lag)
        self.source_lag: dict[str, Any] = {}  # that look's state, for the status page
        self.explain: Callable[[BaseException], BaseException | None] | None = None  # a source's error explainer
        self.refresh: Callable[[], None] = lambda: None  # before a scrape: the monitor's pending look
        self._source_gauges = SourceGauges()
        self._last_event_at: float | None = None
        self._unacked_since: float | None = None  # first write after the last stored offset
        self._tx_field: str | None = None
        self._last_tx: Any = None
        self._snapshot_started: float | None = None
        self._snapshot_ended: float | None = None
        self._declare()

    # ---- declarations ------------------------------------------------------------------------

    def _dbz(self, attribute: str, doc: str, context: str) -> Gauge:
        """The child of Debezium's gauge ``attribute`` for ``context`` (one family per attribute)."""
        family = self._families.get(attribute)
        if family is None:
            family = Gauge(f"debezium_metrics_{attribute}", doc, ["plugin", "name", "context"], registry=self.registry)
            self._families[attribute] = family
        return family.labels(self.plugin, self.server, context)

    def _declare(self) -> None:
        r = self.registry
        self._families: dict[str, Gauge] = {}
        s = "streaming"
        self.events_seen = self._dbz("TotalNumberOfEventsSeen", "Change events seen since the start.", s)
        self.creates_seen = self._dbz("TotalNumberOfCreateEventsSeen", "Create events seen since the start.", s)
        self.updates_seen = self._dbz("TotalNumberOfUpdateEventsSeen", "Update events seen since the start.", s)
        self.deletes_seen = self._dbz("TotalNumberOfDeleteEventsSeen", "Delete events seen since the start.", s)
        self.transactions = self._dbz("NumberOfCommittedTransactions", "Transactions seen (each one committed).", s)
        self.behind_source = self._dbz("MilliSecondsBehindSource", "Time between the last change event's source."
                                       "ts_ms and its processing (includes the clock difference of both machines).", s)
        self._dbz("MilliSecondsSinceLastEvent", "Time since the last change event was processed (-1: none yet).",
                  s).set_function(self._since_last_event)
        self._dbz("Connected", "1 while the source reads its log (or takes a snapshot).", s).set_function(
            self.connected)
        self.last_event_info = Info("debezium_metrics_LastEvent", "The last change event seen.",
                                    ["plugin", "name", "context"], registry=r).labels(self.plugin, self.server, s)
        n = "snapshot"
        self.snapshot_events = self._dbz("TotalNumberOfEventsSeen", "", n)
        self.snapshot_running = self._dbz("SnapshotRunning", "1 while a snapshot runs.", n)
        self.snapshot_completed = self._dbz("SnapshotCompleted", "1 once a snapshot completed.", n)
        self._dbz("SnapshotDurationInSeconds", "Duration of the snapshot so far (or in total once done).",
                  n).set_function(self._snapshot_duration)
        self.rows_scanned = Gauge("debezium_metrics_RowsScanned", "Rows scanned per table by snapshots.",
                                  ["plugin", "name", "context", "table"], registry=r)
        # cdc's own
        self.table_events = Counter("cdc_table_events", "Change events per table and operation (c, u, d, r, t, m).",
                                    ["table", "op"], registry=r)
        self.records = Counter("cdc_source_records", "Records the source handed out (with tombstones, "
                               "transaction, heartbeat and schema change records).", registry=r)
        self.ack_latency = Histogram("cdc_sink_ack_latency_seconds", "Time from the first write after a stored "
                                     "offset to the flush that stored the next one.", buckets=_ACK_BUCKETS,
                                     registry=r)
        self.offsets_committed = Counter("cdc_offsets_committed", "Offsets stored after the sink flushed.",
                                         registry=r)
        self.last_commit = Gauge("cdc_last_commit_timestamp_seconds", "When an offset was last stored.", registry=r)
        self.errors_logged = Counter("cdc_errors", "Warnings and errors logged or raised.", ["level"], registry=r)
        self.last_error_time = Gauge("cdc_last_error_timestamp_seconds", "When the last warning or error happened.",
                                     registry=r)
        self.last_error = Info("cdc_last_error", "The last warning or error.", registry=r)
        # the source's own lag gauges: declared by its lag watch (gauge()), exported once sampled
        r.register(self._source_gauges)
        self.lag_query_errors = Counter("cdc_source_lag_query_errors", "Failed source lag queries.", registry=r)
        ProcessCollector(registry=r)
        GCCollector(registry=r)

    # ---- computed at scrape time --------------------------------------------------------------

    def _since_last_event(self) -> float:
        last = self._last_event_at
        return -1.0 if last is None else (self._clock() - last) * 1000

    def connected(self) -> float:
        if self.closed:
            return 0.0
        return 1.0 if self.streaming() or self._snapshot_started is not None and self._snapshot_ended is None else 0.0

    def streaming(self) -> bool:
        """Whether the source reads its log now (cdc.core.source.ReportsStreaming; a source that does not
        say is taken as reading it all along)."""
        source = self._source
        return source.streaming if isinstance(source, ReportsStreaming) else True

    @property
    def reading(self) -> bool:
        """The source reads its log and this run has read a batch with an offset from it: a guard may act
        on a backlog that grows from now on (cdc.metrics.lag.BacklogGuard), not on one it started with."""
        return self.read_offset is not None and self.streaming()

    # ---- the source's own gauges (its lag watch's) ------------------------------------------------

    def gauge(self, name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
        """A gauge of the running source (cdc_<source>_...), exported from the watch's first sample on."""
        gauge = Gauge(name, doc, list(labels), registry=None)
        self._source_gauges.gauges.append(gauge)
        return gauge

    def publish(self, kind: str, report: LagReport) -> None:
        """A look of the source's lag watch (after it set its gauges): the page's view of it, and from
        now on the source's gauges are exported."""
        self.lag = report
        self.source_lag = {"kind": kind, **report.state}
        self._source_gauges.sampled = True

    def _snapshot_duration(self) -> float:
        start = self._snapshot_started
        if start is None:
            return 0.0
        return (self._snapshot_ended or self._clock()) - start

    # ---- what the engine calls ------------------------------------------------------------------

    def batch(self, batch: Batch) -> None:
        """A batch from the source, before transforms and the sink. One loop over its events tallies
        them per (table, op); the metrics are then touched once each."""
        if batch.offset is not None:
            self.read_offset = batch.offset
        events = batch.events
        encoded = batch.encoded
        if not events and encoded is None:
            return
        now = self._clock()
        if self._unacked_since is None:
            self._unacked_since = now
        counts: dict[tuple[str, str], int] = {}  # per (table, op), counted in runs of the same pair
        prev_table, prev_op, run = "", "", 0
        marks: list[tuple[str, str]] = []  # (table, mark) of snapshot rows marked other than "true"
        plain = False  # rows marked "true": an initial or blocking snapshot runs
        streamed: dict[str, Any] | None = None  # source block of the last streamed change
        last: ChangeEvent | None = None
        tx_field, last_tx, txs = self._tx_field, self._last_tx, 0
        # rows the codec encoded (a snapshot's, a stream's run) are each a copy of their template but the row
        every = events if encoded is None or not encoded.rows else itertools.chain(events, (encoded.template,))
        for event in every:
            value = event.value
            if value is None:
                continue
            op = value.get("op")
            if op is None:  # transaction BEGIN/END, heartbeats, schema changes: not change events
                continue
            table = event.table_id
            if op == prev_op and table == prev_table:
                run += 1
            else:
                if run:
                    counts[(prev_table, prev_op)] = counts.get((prev_table, prev_op), 0) + run
                prev_table, prev_op, run = table, op, 1
            last = event
            source = value.get("source")
            if source is None:
                continue
            if op == "r":
                mark = source.get("snapshot")
                if mark == "true":
                    plain = True
                else:
                    marks.append((table, mark))
                continue
            streamed = source
            if tx_field is None:
                tx_field = next((f for f in TX_FIELDS if source.get(f) is not None), None)
            tx = source.get(tx_field) if tx_field is not None else None
            if tx != last_tx and tx is not None:
                txs += 1
                last_tx = tx
        if run:
            counts[(prev_table, prev_op)] = counts.get((prev_table, prev_op), 0) + run
        if encoded is not None and encoded.rows:  # the template went through the loop for one of its rows
            key = (encoded.template.table_id, (encoded.template.value or {}).get("op", "r"))
            counts[key] = counts.get(key, 0) + len(encoded.rows) - 1
        self._tx_field, self._last_tx = tx_field, last_tx
        self.records.inc(len(events) + (len(encoded.rows) if encoded is not None else 0))
        if not counts:
            return
        with self._lock:
            self._tally(counts, marks, plain, now)
        if txs:
            self.transactions.inc(txs)
        if streamed is not None and isinstance(streamed.get("ts_ms"), int):
            self.behind_ms = max(0.0, now * 1000 - streamed["ts_ms"])
            self.behind_source.set(self.behind_ms)
        if last is not None and last.value is not None:
            self._last_event_at = now
            value = last.value
            self.last_event = {"topic": last.topic, "table": last.table_id, "op": value.get("op"),
                               "source_ts_ms": str((value.get("source") or {}).get("ts_ms")),
                               "transaction": str(last_tx)}
            self.last_event_info.info(self.last_event)

    def _tally(self, counts: dict[tuple[str, str], int], marks: list[tuple[str, str]], plain: bool,
               now: float) -> None:
        streamed = 0
        by_op = {"c": 0, "u": 0, "d": 0}
        for (table, op), n in counts.items():
            self.table_events.labels(table, op).inc(n)
            if op == "r":
                self.rows_scanned.labels(self.plugin, self.server, "snapshot", table).inc(n)
                self.snapshot_events.inc(n)
                self.snapshot_total += n
                self.tables.setdefault(table, TableSnapshot()).rows += n
            else:
                streamed += n
                if op in by_op:
                    by_op[op] += n
        if plain and (self._snapshot_started is None or self._snapshot_ended is not None):
            self._start_snapshot(now)  # a snapshot resumed after a restart has no "first" mark
        for table, mark in marks:
            if mark == "incremental":  # counted as rows; the initial snapshot's state is not its
                continue
            if mark == "first" or self._snapshot_started is None or self._snapshot_ended is not None:
                self._start_snapshot(now)
            if mark in ("last_in_data_collection", "last"):
                self.tables.setdefault(table, TableSnapshot()).done = True
            if mark == "last":
                self._end_snapshot(now)
        if streamed:
            self.streamed_total += streamed
            self.events_seen.inc(streamed)
            self.creates_seen.inc(by_op["c"])
            self.updates_seen.inc(by_op["u"])
            self.deletes_seen.inc(by_op["d"])
            if self._snapshot_started is not None and self._snapshot_ended is None and not marks:
                self._end_snapshot(now)  # streaming goes on: the snapshot is over (its last mark was missed)

    def _start_snapshot(self, now: float) -> None:
        if self._snapshot_started is not None and self._snapshot_ended is None:
            return
        self._snapshot_started, self._snapshot_ended = now, None
        self.snapshot_running.set(1)
        self.snapshot_completed.set(0)

    def _end_snapshot(self, now: float) -> None:
        self._snapshot_ended = now
        self.snapshot_running.set(0)
        self.snapshot_completed.set(1)

    def committed(self, offset: dict[str, Any]) -> None:
        """An offset was stored after the sink flushed everything before it."""
        now = self._clock()
        self.committed_offset = offset
        self.offsets_committed.inc()
        self.last_commit.set(now)
        if self._unacked_since is not None:
            self.ack_latency.observe(now - self._unacked_since)
            self._unacked_since = None

    def failed(self, error: BaseException) -> BaseException | None:
        """The error that ends the run; returns a clearer cause when ``explain`` knows one."""
        cause = self.explain(error) if self.explain is not None else None
        self.record_error("ERROR", "cdc.engine", str(cause or error))
        return cause

    def record_error(self, level: str, logger: str, message: str) -> None:
        now = self._clock()
        self.errors.append(LoggedError(now, level, logger, message))
        self.errors_logged.labels(level.lower()).inc()
        self.last_error_time.set(now)
        self.last_error.info({"level": level, "logger": logger, "message": message[:300]})

    # ---- read by the status page and the history sampler ------------------------------------------

    def sample(self) -> None:
        """One point of the status page's charts."""
        lag = self.lag.lag_bytes if self.lag is not None else None
        self.history.add(self._clock(), self.streamed_total + self.snapshot_total, self.behind_ms, lag)

    def snapshot_state(self) -> dict[str, Any]:
        with self._lock:
            tables = {t: TableSnapshot(s.rows, s.done) for t, s in sorted(self.tables.items())}
        running = self._snapshot_started is not None and self._snapshot_ended is None
        return {"running": running, "completed": self._snapshot_ended is not None,
                "duration_s": self._snapshot_duration(), "tables": tables}


class ErrorLog(logging.Handler):
    """Warnings and errors of cdc's loggers into the metrics (last error, the status page's list)."""

    def __init__(self, metrics: PipelineMetrics) -> None:
        super().__init__(logging.WARNING)
        self.metrics = metrics

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.metrics.record_error(record.levelname, record.name, record.getMessage())
        except Exception:  # noqa: BLE001 - a metric must never break logging
            self.handleError(record)
