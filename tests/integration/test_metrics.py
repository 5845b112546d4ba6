"""Metrics of real pipelines, read back as Prometheus scrapes them (cdc/metrics): counts equal what was
written, lag grows behind a slow sink and comes back, the retained-WAL guard fires with the sink stopped and
lets a pipeline started far behind catch up, only the running source's gauges, the slot active on the first
scrape, the status page's headline lag live."""
from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cdc.core.errors import SourceError
from cdc.core.records import SinkRecord
from cdc.metrics import Monitoring
from tests.integration.harness import CollectingSink, Pipeline


def sql(db: dict[str, str], *statements: str) -> None:
    with psycopg.connect(db["dsn"], autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def scrape(monitoring: Monitoring) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """/metrics over HTTP, as {(sample name, sorted labels without plugin/name): value}."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{monitoring.port}/metrics", timeout=5).read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k not in ("plugin", "name")))
            out[(sample.name, labels)] = sample.value
    return out


def metric(monitoring: Monitoring, name: str, **labels: str) -> float | None:
    return scrape(monitoring).get((name, tuple(sorted(labels.items()))))


def wait_until(check: Callable[[], bool], what: str, pipeline: Pipeline | None = None, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pipeline is not None and pipeline.error is not None:
            raise pipeline.error
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def monitored(pipeline: Pipeline, source: str = "postgres", **props: Any) -> Monitoring:
    pipeline.config.properties.update({"metrics.lag.interval.ms": "200", "metrics.sample.interval.ms": "200",
                                       **props})
    return Monitoring(pipeline.engine, pipeline.config, source, port=0)


@pytest.mark.postgres
def test_postgres_metrics_equal_what_was_written(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, v int)", "CREATE TABLE other (id int PRIMARY KEY)",
        "INSERT INTO items SELECT g, 0 FROM generate_series(1, 50) g", "INSERT INTO other VALUES (1), (2)")
    p = Pipeline({**pg_db, "snapshot.mode": "initial"}, tmp_path / "o.json")
    m = monitored(p)
    try:
        with p:
            p.wait_count(52)
            p.wait_ready()
            for i in range(10):  # 10 transactions of 10 rows
                sql(pg_db, f"INSERT INTO items SELECT g, 1 FROM generate_series({100 + 10 * i}, {109 + 10 * i}) g")
            sql(pg_db, "UPDATE items SET v = 2 WHERE id <= 5", "DELETE FROM items WHERE id = 50")
            events = "debezium_metrics_TotalNumberOfEventsSeen"
            wait_until(lambda: metric(m, events, context="streaming") == 106, "106 streamed events", p)
            wait_until(lambda: (metric(m, "cdc_offsets_committed_total") or 0) > 0, "a stored offset", p)
            # an offset stored after streamed events (the snapshot's first offset precedes every write)
            wait_until(lambda: (metric(m, "cdc_sink_ack_latency_seconds_count") or 0) >= 1, "an acknowledged write", p)
            got = scrape(m)
    finally:
        m.close()

    def value(name: str, **labels: str) -> float | None:
        return got.get((name, tuple(sorted(labels.items()))))

    assert value("debezium_metrics_RowsScanned", context="snapshot", table="public.items") == 50
    assert value("debezium_metrics_RowsScanned", context="snapshot", table="public.other") == 2
    assert value("debezium_metrics_TotalNumberOfEventsSeen", context="snapshot") == 52
    assert value("debezium_metrics_SnapshotCompleted", context="snapshot") == 1
    assert value("debezium_metrics_SnapshotRunning", context="snapshot") == 0
    assert value("cdc_table_events_total", table="public.items", op="c") == 100
    assert value("cdc_table_events_total", table="public.items", op="u") == 5
    assert value("cdc_table_events_total", table="public.items", op="d") == 1
    assert value("debezium_metrics_TotalNumberOfCreateEventsSeen", context="streaming") == 100
    assert value("debezium_metrics_NumberOfCommittedTransactions", context="streaming") == 12  # 10 + UPDATE + DELETE
    assert value("debezium_metrics_Connected", context="streaming") == 1
    assert 0 <= (value("debezium_metrics_MilliSecondsBehindSource", context="streaming") or -1) < 10_000
    assert (value("cdc_sink_ack_latency_seconds_count") or 0) >= 1
    assert value("cdc_postgres_slot_active") == 1
    assert value("cdc_postgres_slot_lag_bytes") is not None
    assert m.metrics.committed_offset is not None and "lsn" in m.metrics.committed_offset
    assert not [name for name, _ in got if name.startswith(("cdc_mysql_", "cdc_sqlserver_"))]  # only its source's


@pytest.mark.postgres
def test_slot_active_on_the_first_scrape_while_streaming(pg_db: dict[str, str], tmp_path: Path) -> None:
    """The monitor's first look comes before the replication stream opens; with an hour between looks, the
    slot still reads active on the first scrape once the source streams (issue 27: it read 0)."""
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY)")
    p = Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json")
    m = monitored(p, **{"metrics.lag.interval.ms": "3600000"})
    try:
        with p:
            p.wait_ready()
            first = scrape(m)
    finally:
        m.close()
    assert first[("cdc_postgres_slot_active", ())] == 1
    assert not [name for name, _ in first if name.startswith("cdc_mysql_")]


class SlowSink(CollectingSink):
    """Each write waits ``delay`` seconds, or until ``gate`` opens when one is given (a stopped sink)."""

    def __init__(self, delay: float = 0.0, gate: threading.Event | None = None) -> None:
        super().__init__()
        self.delay, self.gate = delay, gate

    def write(self, records: Sequence[SinkRecord]) -> None:
        if self.gate is not None:
            self.gate.wait(60)
        elif self.delay:
            time.sleep(self.delay)
        super().write(records)


@pytest.mark.postgres
def test_lag_grows_behind_a_slow_sink_and_returns_to_zero(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE t (id serial PRIMARY KEY, pad text)")
    # 40 rows/s behind a writer of at most about 130 rows/s (~3 s on a slow machine): the lag passes 2 s by
    # the 200th row or so, however slow the writer is.
    sink = SlowSink(delay=0.5)
    p = Pipeline({**pg_db, "snapshot.mode": "no_data", "max.batch.size": "20"}, tmp_path / "o.json", sink=sink)
    m = monitored(p)
    behind = "debezium_metrics_MilliSecondsBehindSource"
    try:
        with p:
            p.wait_ready()
            with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:  # the writer: 400 transactions, ~2 s
                for _ in range(400):
                    conn.execute("INSERT INTO t (pad) VALUES (repeat('x', 200))")
                    time.sleep(0.005)
            peak_ms = peak_bytes = 0.0

            def lagging() -> bool:
                nonlocal peak_ms, peak_bytes
                peak_ms = max(peak_ms, metric(m, behind, context="streaming") or 0)
                peak_bytes = max(peak_bytes, metric(m, "cdc_postgres_slot_lag_bytes") or 0)
                return peak_ms > 2000 and peak_bytes > 20_000
            wait_until(lagging, "the lag to grow", p)
            sink.delay = 0  # the sink catches up; a trickle of new rows shows the lag of fresh events
            p.wait_count(400)

            def caught_up() -> bool:
                sql(pg_db, "INSERT INTO t (pad) VALUES ('y')")
                time.sleep(0.2)
                return (metric(m, behind, context="streaming") or 0) < 500 and \
                    (metric(m, "cdc_postgres_slot_lag_bytes") or 0) < 20_000
            wait_until(caught_up, "the lag to return to about zero", p)
    finally:
        m.close()
    samples = m.metrics.history.samples()
    assert max(s.behind_ms or 0 for s in samples) > 1000  # the page's chart saw it too
    assert m.metrics.registry.get_sample_value("cdc_sink_ack_latency_seconds_count")


@pytest.mark.postgres
@pytest.mark.parametrize("action", ["warn", "stop"])
def test_retained_wal_alarm_fires_with_the_sink_stopped(pg_db: dict[str, str], tmp_path: Path, action: str) -> None:
    sql(pg_db, "CREATE TABLE t (id serial PRIMARY KEY, pad text)")
    gate = threading.Event()
    p = Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json", sink=SlowSink(gate=gate))
    m = monitored(p, **{"slot.max.retained.wal.bytes": str(1 << 20), "slot.retained.wal.action": action})
    try:
        with p:
            p.wait_ready()
            sql(pg_db, "INSERT INTO t (pad) VALUES ('first')")  # the sink stops on this one's write
            wait_until(lambda: p.source.streaming and m.metrics.read_offset is not None, "the first batch", p)
            sql(pg_db, "INSERT INTO t (pad) SELECT repeat('x', 1000) FROM generate_series(1, 3000)")
            wait_until(lambda: metric(m, "cdc_postgres_slot_retained_wal_exceeded") == 1, "the WAL alarm", p)
            assert any("above slot.max.retained.wal.bytes=1048576" in e.message for e in m.metrics.errors)
            assert (metric(m, "cdc_errors_total", level="warning") or 0) >= 1
            if action == "warn":
                assert p.error is None and p.thread.is_alive()
            else:
                # The guard stops a pipeline whose backlog grows while it reads: keep writing (the sink still
                # stopped) until it decides so, whenever its looks fall between the writes.
                def stopping() -> bool:
                    sql(pg_db, "INSERT INTO t (pad) SELECT repeat('x', 1000) FROM generate_series(1, 100)")
                    return m.monitor.failed
                wait_until(stopping, "the guard to stop the pipeline", p)
            gate.set()
            if action == "stop":
                p.thread.join(30)
            else:
                p.wait_count(3001)
    finally:
        gate.set()
        m.close()
    if action == "stop":
        assert isinstance(p.error, SourceError)
        assert "above slot.max.retained.wal.bytes" in str(p.error) and "fix:" in str(p.error)
    else:
        assert p.error is None


@pytest.mark.postgres
def test_retained_wal_stop_lets_a_pipeline_started_far_behind_catch_up(pg_db: dict[str, str], tmp_path: Path) -> None:
    """slot.retained.wal.action=stop with the slot far above the limit when the pipeline starts: a warning, and
    the pipeline catches up (issue 27: it was stopped before it had read anything, and could never catch up)."""
    sql(pg_db, "CREATE TABLE t (id serial PRIMARY KEY, pad text)")
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as first:
        first.wait_ready()
        sql(pg_db, "INSERT INTO t (pad) VALUES ('first')")
        first.wait_count(1)
    sql(pg_db, "INSERT INTO t (pad) SELECT repeat('x', 1000) FROM generate_series(1, 3000)")  # ~3.5 MB of WAL kept
    p = Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json")
    m = monitored(p, **{"slot.max.retained.wal.bytes": str(1 << 20), "slot.retained.wal.action": "stop",
                        "metrics.lag.interval.ms": "50"})
    try:
        with p:
            p.wait_count(3000, topic="dbz.public.t")
            wait_until(lambda: (metric(m, "cdc_postgres_slot_lag_bytes") or 1 << 30) < 100_000, "caught up", p)
            assert p.error is None and p.thread.is_alive()
    finally:
        m.close()
    assert p.error is None
    assert any("above slot.max.retained.wal.bytes=1048576" in e.message for e in m.metrics.errors)  # warned


@pytest.mark.mysql
def test_mysql_metrics_and_binlog_lag(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    from cdc.sources.mysql.source import MySqlSource

    db = mysql_db["db"]
    conn = pymysql.connect(**mysql_server, database=db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE items (id int PRIMARY KEY, v int)")
        p = Pipeline({**mysql_db, "topic.prefix": "dbz", "snapshot.mode": "no_data",
                      "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")},
                     tmp_path / "offsets.json", source_cls=MySqlSource)
        m = monitored(p, "mysql")
        try:
            with p:
                p.wait_ready()
                with conn.cursor() as cur:
                    for i in range(100):
                        cur.execute("INSERT INTO items VALUES (%s, 0)", (i,))
                p.wait_count(100, topic=f"dbz.{db}.items")
                labels = {"table": f"{db}.items", "op": "c"}
                wait_until(lambda: metric(m, "cdc_table_events_total", **labels) == 100, "100 inserts", p)
                wait_until(lambda: metric(m, "cdc_mysql_binlog_behind_bytes") == 0, "no binlog lag", p)
                got = scrape(m)
        finally:
            m.close()
    finally:
        conn.close()
    assert got[("debezium_metrics_TotalNumberOfEventsSeen", (("context", "streaming"),))] == 100
    assert got[("debezium_metrics_NumberOfCommittedTransactions", (("context", "streaming"),))] == 100
    assert got[("cdc_mysql_binlog_position_purged", ())] == 0
    assert ("cdc_mysql_binlog_purge_in_seconds", ()) in got
    assert not [name for name, _ in got if name.startswith(("cdc_postgres_", "cdc_sqlserver_"))]  # only its source's


@pytest.mark.mysql
def test_mariadb_headline_lag_is_live_when_caught_up(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                     tmp_path: Path) -> None:
    """A caught-up MariaDB pipeline whose last events were read late: the status page's headline lag is 0 ms
    (the binlog's head against the position read), the last event's delay beside it (issue 27: the headline
    showed that delay, 35,833 ms, while cdc_mysql_binlog_behind_seconds was 0)."""
    import re

    from cdc.sources.mysql.source import MySqlSource

    db = mysql_db["db"]
    props = {**mysql_db, "topic.prefix": "dbz", "snapshot.mode": "no_data",
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")}
    conn = pymysql.connect(**mysql_server, database=db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE items (id int PRIMARY KEY)")
        with Pipeline(props, tmp_path / "offsets.json", source_cls=MySqlSource) as first:
            first.wait_ready()
            with conn.cursor() as cur:
                cur.execute("INSERT INTO items VALUES (0)")
            first.wait_count(1, topic=f"dbz.{db}.items")
            time.sleep(0.5)  # its offset stored
        with conn.cursor() as cur:
            for i in range(1, 6):
                cur.execute("INSERT INTO items VALUES (%s)", (i,))
        time.sleep(3)  # the events wait in the binlog, read late: a fixed time on purpose (their delay > 2 s, below)
        p = Pipeline(props, tmp_path / "offsets.json", source_cls=MySqlSource)
        m = monitored(p, "mysql")
        try:
            with p:
                p.wait_count(5, topic=f"dbz.{db}.items")
                wait_until(lambda: metric(m, "cdc_mysql_binlog_behind_bytes") == 0, "caught up", p)
                page = urllib.request.urlopen(f"http://127.0.0.1:{m.port}/", timeout=5).read().decode()
        finally:
            m.close()
    finally:
        conn.close()
    assert '<b class="lag">0 ms, 0 B</b>' in page, page
    delay = re.search(r"the last event's delay: ([\d,]+) ms", page)
    assert delay is not None and int(delay.group(1).replace(",", "")) > 2000, page


@pytest.mark.postgres
def test_cdc_run_serves_metrics_on_metrics_port(pg_db: dict[str, str], tmp_path: Path) -> None:
    """The command line: metrics.port starts the server; the options are not 'unknown properties'."""
    import json
    import signal
    import socket
    import subprocess
    import sys

    sql(pg_db, "CREATE TABLE orders (id int PRIMARY KEY)", "INSERT INTO orders SELECT generate_series(1, 25)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "shop.properties"
    config.write_text("\n".join([
        "source=postgres", "name=shop", "topic.prefix=shop", "slot.name=cli_metrics", "publication.name=cli_metrics",
        *(f"{k}={v}" for k, v in pg_db.items() if k != "dsn"),
        f"sink.files.directory={tmp_path / 'out'}", f"metrics.port={port}", "metrics.lag.interval.ms=200",
        "slot.max.retained.wal.bytes=1000000000",
    ]))
    proc = subprocess.Popen([sys.executable, "-m", "cdc.cli", "--log-format", "json", "-v", "run", str(config)],
                            stderr=subprocess.PIPE, text=True)
    try:
        def scraped() -> dict[str, float]:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            except OSError:
                return {}
            return {s.name + str(sorted(s.labels.items())): s.value
                    for f in text_string_to_metric_families(text) for s in f.samples}

        key = "debezium_metrics_RowsScanned" + str(sorted({"plugin": "postgres", "name": "shop", "context": "snapshot",
                                                            "table": "public.orders"}.items()))
        wait_until(lambda: scraped().get(key) == 25, "25 snapshot rows on /metrics")
        wait_until(lambda: "cdc_postgres_slot_retained_wal_bytes[]" in scraped(), "the slot's retained WAL")
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read().decode()
        assert "cdc pipeline shop" in page
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]  # every line is a JSON object
    assert lines and all(e["pipeline"] == "shop" for e in lines)
    assert not [e for e in lines if "unknown property" in e["message"]], err
    assert any(f"metrics on http://127.0.0.1:{port}/metrics" in e["message"] for e in lines)
