"""Operating a pipeline (issue 27, item 7), without a database: the guard stops only a pipeline that falls
further behind while it reads; only the running source's gauges are exported, never before they were
read, and a scrape right after the source starts streaming sees it; the status page's headline lag is
the source's position against ours, with the last event's delay beside it."""
from __future__ import annotations

import json
import urllib.request
from typing import Any

from cdc.core.records import Batch, ChangeEvent
from cdc.metrics.findings import ERROR, WARNING
from cdc.metrics.lag import BacklogGuard, LagReport, Monitor
from cdc.metrics.page import render
from cdc.metrics.registry import PipelineMetrics
from cdc.metrics.server import MetricsServer
from cdc.sources.mysql.lag import MySqlWatch
from cdc.sources.postgres.lag import PostgresWatch
from cdc.sources.postgres.pgoutput import format_lsn

MB = 1 << 20


class FakeSlot:
    """A psycopg connection that answers the slot query (cdc.sources.postgres.lag) with ``state``."""

    def __init__(self) -> None:
        self.current, self.confirmed, self.restart, self.active = 10 * MB, 10 * MB, 10 * MB, False
        self.closed = False

    def execute(self, query: str, params: Any = None) -> FakeSlot:
        self._row = (json.dumps({"slot_name": "s", "active": self.active, "active_pid": 7 if self.active else None,
                                 "wal_status": "reserved", "confirmed_flush_lsn": format_lsn(self.confirmed),
                                 "restart_lsn": format_lsn(self.restart)}), format_lsn(self.current))
        return self

    def fetchone(self) -> tuple[str, str]:
        return self._row

    def close(self) -> None:
        self.closed = True


class Streaming:
    """A source that says when it reads its log (cdc.core.source.ReportsStreaming)."""

    def __init__(self) -> None:
        self.streaming = False


def scrape(metrics: PipelineMetrics) -> str:
    from prometheus_client import generate_latest

    return generate_latest(metrics.registry).decode()


# ---- the guard's stop ------------------------------------------------------------------------------

def test_the_guard_stops_only_a_backlog_that_grows_while_the_pipeline_reads() -> None:
    guard = BacklogGuard(MB, "stop")
    assert not guard.stops(50 * MB, 40 * MB, reading=False)  # far behind before reading: never
    assert not guard.stops(50 * MB, 40 * MB, reading=True)  # the first look while reading: the baseline
    assert not guard.stops(52 * MB, 30 * MB, reading=True)  # catching up: what it has not confirmed shrinks
    assert not guard.stops(52 * MB, 30 * MB + 100, reading=True)  # noise (under 1% of the limit)
    assert guard.stops(60 * MB, 35 * MB, reading=True)  # falls further behind while it reads: stop
    assert not guard.stops(0, 40 * MB, reading=True)  # under the limit: whatever the backlog does
    assert not BacklogGuard(MB, "warn").stops(60 * MB, 35 * MB, reading=True)
    assert not BacklogGuard(0, "stop").stops(60 * MB, 35 * MB, reading=True)  # no limit set
    caught_up = BacklogGuard(MB, "stop")
    assert not caught_up.stops(3 * MB, 0, reading=True)
    # Caught up, the server still keeps WAL above the limit (the slot's restart_lsn moves on later) while a
    # few kB are written between confirmations: not a backlog to stop on (it was, before).
    assert not caught_up.stops(3 * MB, 26_000, reading=True)
    assert not caught_up.stops(3 * MB, MB, reading=True)  # at the limit, not above it
    assert caught_up.stops(4 * MB, 2 * MB, reading=True)  # its own backlog above the limit and growing


def test_a_postgres_pipeline_started_far_behind_is_warned_not_stopped_and_stopped_once_it_falls_further() -> None:
    source = Streaming()
    metrics = PipelineMetrics(plugin="postgres", server="dbz", source=source)
    slot = FakeSlot()
    slot.current, slot.confirmed, slot.restart = 60 * MB, 10 * MB, 10 * MB  # 50 MB kept while it was stopped
    watch = PostgresWatch(lambda: slot, metrics, "s", MB, "stop")
    assert [(f.level, f.code) for f in watch.poll()] == [(WARNING, "wal_retained")]  # before reading anything
    source.streaming, metrics.read_offset = True, {"lsn": 10 * MB}
    assert [(f.level, f.code) for f in watch.poll()] == [(WARNING, "wal_retained")]  # reading: the baseline
    slot.confirmed = 30 * MB  # it catches up
    assert [(f.level, f.code) for f in watch.poll()] == [(WARNING, "wal_retained")]
    slot.current = 80 * MB  # the sink stalls, writes go on: what it has not confirmed grows
    [finding] = watch.poll()
    assert (finding.level, finding.code) == (ERROR, "wal_retained")
    assert "grew while the pipeline ran" in finding.message and "slot.retained.wal.action=stop" in finding.message


# ---- only the running source's metrics, sampled before the first scrape ----------------------------------

def test_only_the_running_sources_gauges_and_only_once_read() -> None:
    metrics = PipelineMetrics(plugin="postgres", server="dbz", source=Streaming())
    watch = PostgresWatch(lambda: FakeSlot(), metrics, "s")
    assert "cdc_postgres_" not in scrape(metrics)  # declared, not read yet: no 0 that was never read
    watch.poll()
    text = scrape(metrics)
    assert "cdc_postgres_slot_active 0.0" in text and "cdc_postgres_slot_lag_bytes 0.0" in text
    assert "cdc_mysql_" not in text and "cdc_sqlserver_" not in text
    mysql = PipelineMetrics(plugin="mysql", server="dbz")
    MySqlWatch(lambda: None, mysql)
    assert "cdc_postgres_" not in scrape(mysql) and "cdc_mysql_" not in scrape(mysql)


def test_a_scrape_right_after_the_source_starts_streaming_sees_the_slot_active() -> None:
    """The monitor's first look comes before the source streams (the slot is not active yet); the next
    one, metrics.lag.interval.ms later, would leave a scrape in between with slot_active 0. The monitor
    looks again as soon as the source streams, and a scrape that comes first takes that look itself."""
    source = Streaming()
    metrics = PipelineMetrics(plugin="postgres", server="dbz", source=source)
    slot = FakeSlot()
    monitor = Monitor(metrics, PostgresWatch(lambda: slot, metrics, "s"), lambda error: None,
                      lag_interval_s=3600, sample_interval_s=None)
    monitor.poll()  # the first look, before streaming
    server = MetricsServer(metrics, "127.0.0.1", 0, "shop").start()
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5).read().decode()
        assert "cdc_postgres_slot_active 0.0" in text
        source.streaming, slot.active = True, True  # the replication stream opens (the monitor thread is not run)
        text = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5).read().decode()
        assert "cdc_postgres_slot_active 1.0" in text
    finally:
        server.close()
        monitor.close()


def test_the_monitor_looks_again_when_the_source_starts_streaming() -> None:
    import time

    source = Streaming()
    metrics = PipelineMetrics(plugin="postgres", server="dbz", source=source)
    slot = FakeSlot()
    monitor = Monitor(metrics, PostgresWatch(lambda: slot, metrics, "s"), lambda error: None,
                      lag_interval_s=3600, sample_interval_s=None).start()
    try:
        deadline = time.monotonic() + 5
        while metrics.lag is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert metrics.source_lag["active"] is False
        source.streaming, slot.active = True, True
        while not metrics.source_lag["active"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert metrics.source_lag["active"] is True  # well before the hour of metrics.lag.interval.ms
    finally:
        monitor.close()
    assert slot.closed


# ---- the status page's headline lag -------------------------------------------------------------------

def test_the_headline_lag_is_the_live_lag_with_the_last_events_delay_beside_it() -> None:
    """A caught-up MariaDB pipeline whose last event came 35,833 ms late: the headline says 0 ms (the
    binlog's head against the position read), the delay stays beside it."""
    metrics = PipelineMetrics(plugin="mysql", server="dbz", clock=lambda: 1_700_000_100.0)
    event_ms = int(1_700_000_100.0 * 1000) - 35_833

    value = {"op": "c", "source": {"ts_ms": event_ms, "pos": 4}}
    metrics.batch(Batch([ChangeEvent("dbz.db.t", None, {"id": 1}, None, value, table_id="db.t")],
                        {"file": "b.000001", "pos": 400}))
    page = render(metrics, "shop")
    assert '<b class="lag">-</b>' in page and "the last event's delay: 35,833 ms" in page  # not looked yet
    metrics.publish("mysql", LagReport(lag_bytes=0, lag_seconds=0.0))
    page = render(metrics, "shop")
    assert '<b class="lag">0 ms, 0 B</b>' in page and "35,833 ms" in page
    metrics.publish("mysql", LagReport(lag_bytes=3 * MB, lag_seconds=12.5))
    assert '<b class="lag">12,500 ms, 3.0 MB</b>' in render(metrics, "shop")
    metrics.publish("postgres", LagReport(lag_bytes=2048))  # PostgreSQL: WAL not confirmed, no time
    assert '<b class="lag">2.0 kB</b>' in render(metrics, "shop")
