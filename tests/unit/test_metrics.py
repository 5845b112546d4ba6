"""Metrics from batches (cdc/metrics/registry.py), the engine's hooks, findings and the status page,
without a database: events shaped as the sources emit them."""
from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from cdc.core.converters import JsonConverter
from cdc.core.errors import SourceError
from cdc.core.records import Batch, ChangeEvent, EncodedRows, SinkRecord
from cdc.engine import Engine
from cdc.metrics.findings import ERROR, WARNING, exit_code
from cdc.metrics.lag import INF
from cdc.metrics.page import render
from cdc.metrics.registry import PipelineMetrics
from cdc.metrics.server import MetricsServer
from cdc.sources.mysql.lag import BinlogState, binlog_findings
from cdc.sources.postgres.guards import explain, slot_findings
from cdc.sources.postgres.lag import SlotState


def event(table: str, op: str | None, *, snapshot: str = "false", ts_ms: int = 0, tx: int | None = 1) -> ChangeEvent:
    value = None if op is None else {"op": op, "source": {"ts_ms": ts_ms, "snapshot": snapshot, "txId": tx}}
    return ChangeEvent(topic=f"dbz.{table}", key_schema=None, key={"id": 1}, value_schema=None, value=value,
                       table_id=table)


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def value(metrics: PipelineMetrics, name: str, **labels: str) -> float | None:
    if name.startswith("debezium_metrics_"):
        labels = {"plugin": "postgres", "name": "dbz", **labels}
    return metrics.registry.get_sample_value(name, labels)


def test_streamed_events_counted_per_table_and_op() -> None:
    clock = Clock()
    m = PipelineMetrics(plugin="postgres", server="dbz", clock=clock)
    batch = [event("public.a", "c", tx=1) for _ in range(3)] + [
        event("public.a", "u", tx=2), event("public.b", "d", tx=2), event("public.b", None)]  # a tombstone
    m.batch(Batch(batch, {"lsn": 10}))
    m.batch(Batch([event("public.a", "c", tx=3, ts_ms=int(clock.now * 1000) - 1500)], {"lsn": 20}))
    assert value(m, "debezium_metrics_TotalNumberOfEventsSeen", context="streaming") == 6
    assert value(m, "debezium_metrics_TotalNumberOfCreateEventsSeen", context="streaming") == 4
    assert value(m, "debezium_metrics_TotalNumberOfUpdateEventsSeen", context="streaming") == 1
    assert value(m, "debezium_metrics_TotalNumberOfDeleteEventsSeen", context="streaming") == 1
    assert value(m, "debezium_metrics_NumberOfCommittedTransactions", context="streaming") == 3
    assert value(m, "debezium_metrics_MilliSecondsBehindSource", context="streaming") == pytest.approx(1500)
    assert value(m, "cdc_table_events_total", table="public.a", op="c") == 4
    assert value(m, "cdc_table_events_total", table="public.b", op="d") == 1
    assert value(m, "cdc_source_records_total") == 7  # the tombstone is a record, not a change event
    assert m.read_offset == {"lsn": 20}
    assert m.last_event["table"] == "public.a" and m.last_event["op"] == "c"


def test_a_streamed_run_of_encoded_rows_counts_as_its_events() -> None:
    """A stream's run the codec encoded (cdc.sources.postgres.encoded_runs) counts as the events it stands
    for: per table and op, its transaction, the lag from its source block."""
    clock = Clock()
    m = PipelineMetrics(plugin="postgres", server="dbz", clock=clock)
    run = EncodedRows(event("public.a", "u", tx=7, ts_ms=int(clock.now * 1000) - 900), [b"{}"] * 5, None)
    m.batch(Batch([event("public.b", "c", tx=6)], {"lsn": 10}, encoded=run))
    assert value(m, "debezium_metrics_TotalNumberOfEventsSeen", context="streaming") == 6
    assert value(m, "debezium_metrics_TotalNumberOfUpdateEventsSeen", context="streaming") == 5
    assert value(m, "debezium_metrics_NumberOfCommittedTransactions", context="streaming") == 2
    assert value(m, "debezium_metrics_MilliSecondsBehindSource", context="streaming") == pytest.approx(900)
    assert value(m, "cdc_table_events_total", table="public.a", op="u") == 5
    assert value(m, "cdc_source_records_total") == 6
    assert m.last_event["table"] == "public.a" and m.last_event["op"] == "u"


def test_snapshot_marks_drive_running_completed_and_rows_per_table() -> None:
    clock = Clock()
    m = PipelineMetrics(plugin="postgres", server="dbz", clock=clock)
    m.batch(Batch([event("public.a", "r", snapshot="first"), event("public.a", "r", snapshot="true"),
                   event("public.a", "r", snapshot="last_in_data_collection"),
                   event("public.b", "r", snapshot="first_in_data_collection")]))
    assert value(m, "debezium_metrics_SnapshotRunning", context="snapshot") == 1
    assert value(m, "debezium_metrics_SnapshotCompleted", context="snapshot") == 0
    state = m.snapshot_state()
    assert state["tables"]["public.a"].done and not state["tables"]["public.b"].done
    clock.now += 5
    m.batch(Batch([event("public.b", "r", snapshot="true"), event("public.b", "r", snapshot="last")], {"lsn": 1}))
    assert value(m, "debezium_metrics_SnapshotRunning", context="snapshot") == 0
    assert value(m, "debezium_metrics_SnapshotCompleted", context="snapshot") == 1
    assert value(m, "debezium_metrics_SnapshotDurationInSeconds", context="snapshot") == 5
    assert value(m, "debezium_metrics_RowsScanned", context="snapshot", table="public.a") == 3
    assert value(m, "debezium_metrics_RowsScanned", context="snapshot", table="public.b") == 3
    assert value(m, "debezium_metrics_TotalNumberOfEventsSeen", context="snapshot") == 6
    assert value(m, "debezium_metrics_TotalNumberOfEventsSeen", context="streaming") == 0
    m.batch(Batch([event("public.a", "r", snapshot="incremental")]))  # an incremental snapshot's row
    assert value(m, "debezium_metrics_SnapshotRunning", context="snapshot") == 0
    assert value(m, "debezium_metrics_RowsScanned", context="snapshot", table="public.a") == 4


def test_ack_latency_is_first_write_to_stored_offset() -> None:
    clock = Clock()
    m = PipelineMetrics(plugin="mysql", server="dbz", clock=clock)
    m.batch(Batch([event("db.a", "c")]))
    clock.now += 0.3
    m.batch(Batch([event("db.a", "c")]))
    clock.now += 0.2
    m.committed({"file": "b.1", "pos": 4})
    m.committed({"file": "b.1", "pos": 4})  # nothing written since: no latency observed
    assert m.registry.get_sample_value("cdc_sink_ack_latency_seconds_count") == 1
    assert m.registry.get_sample_value("cdc_sink_ack_latency_seconds_sum") == pytest.approx(0.5)
    assert m.registry.get_sample_value("cdc_offsets_committed_total") == 2


# ---- the engine's hooks ---------------------------------------------------------------------------

class Source:
    def __init__(self, batches: list[Batch], error: Exception | None = None, gate: threading.Event | None = None):
        self.batches, self.error, self.gate = batches, error, gate
        self.stopped = False

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        yield from self.batches
        if self.gate is not None:
            while not self.stopped:
                self.gate.wait(0.01)
                yield Batch()
        if self.error is not None:
            raise self.error

    def acknowledge(self, offset: dict[str, Any]) -> None:
        pass

    def stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        pass


class Sink:
    def write(self, records: Sequence[SinkRecord]) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class Store:
    def __init__(self) -> None:
        self.saved: list[dict[str, Any]] = []

    def load(self) -> None:
        return None

    def save(self, offset: dict[str, Any]) -> None:
        self.saved.append(offset)

    def close(self) -> None:
        pass


def engine(source: Source) -> Engine:
    return Engine(source, Sink(), JsonConverter(False), Store(), flush_interval_s=0)  # type: ignore[arg-type]


def test_engine_feeds_batches_and_commits_to_its_observer() -> None:
    e = engine(Source([Batch([event("public.a", "c", tx=i)], {"lsn": i}) for i in range(1, 6)]))
    metrics = PipelineMetrics(plugin="postgres", server="dbz")
    e.observer = metrics
    e.run()
    assert value(metrics, "debezium_metrics_TotalNumberOfEventsSeen", context="streaming") == 5
    assert metrics.committed_offset == {"lsn": 5}
    assert metrics.registry.get_sample_value("cdc_offsets_committed_total") == 5


def test_engine_error_is_recorded_and_explained() -> None:
    e = engine(Source([], error=SourceError('replication stream broke: ERROR: cannot read from logical replication '
                                            'slot "s" DETAIL: This slot has been invalidated because it exceeded '
                                            'the maximum reserved size.')))
    metrics = PipelineMetrics(plugin="postgres", server="dbz")
    metrics.explain = lambda error: explain(error, "s")
    e.observer = metrics
    with pytest.raises(SourceError, match="PostgreSQL invalidated replication slot 's'") as info:
        e.run()
    assert "max_slot_wal_keep_size" in str(info.value) and "--drop s" in str(info.value)
    assert metrics.errors[-1].message.startswith("PostgreSQL invalidated")


def test_fail_stops_the_run_with_its_error() -> None:
    gate = threading.Event()
    e = engine(Source([Batch([event("public.a", "c")], {"lsn": 1})], gate=gate))
    store = e.offsets
    errors: list[BaseException] = []

    def run() -> None:
        try:
            e.run()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    e.fail(SourceError("the guard says stop"))
    gate.set()
    thread.join(10)
    assert [str(x) for x in errors] == ["the guard says stop"]
    assert store.saved[-1] == {"lsn": 1}  # what was written is stored before it stops


def test_no_observer_costs_nothing_and_changes_nothing() -> None:
    e = engine(Source([Batch([event("public.a", "c")], {"lsn": 1})]))
    e.run()
    assert e.events_written == 1


def test_metrics_cost_per_event_is_small() -> None:
    """The per-batch tally stays well under a microsecond per event (a pipeline spends several)."""
    m = PipelineMetrics(plugin="postgres", server="dbz")
    batches = [Batch([event("public.a", "c", tx=i // 10) for i in range(2048)], {"lsn": 1}) for _ in range(20)]
    start = time.perf_counter()
    for b in batches:
        m.batch(b)
    per_event = (time.perf_counter() - start) / (20 * 2048)
    assert value(m, "debezium_metrics_TotalNumberOfEventsSeen", context="streaming") == 20 * 2048
    assert per_event < 2e-6, f"{per_event * 1e9:.0f} ns per event"


# ---- findings -------------------------------------------------------------------------------------

def test_slot_findings() -> None:
    healthy = SlotState("s", True, 1000, active=True, wal_status="reserved", confirmed_flush_lsn=900,
                        restart_lsn=800, lag_bytes=100, retained_bytes=200)
    assert slot_findings(healthy, 1000) == []
    over = SlotState("s", True, 10_000, active=True, wal_status="extended", restart_lsn=0, retained_bytes=10_000)
    assert [(f.level, f.code) for f in slot_findings(over, 1000)] == [(WARNING, "wal_retained")]
    assert [(f.level, f.code) for f in slot_findings(over, 1000, action="stop")] == [(ERROR, "wal_retained")]
    idle = SlotState("s", True, 10, active=False, wal_status="reserved", retained_bytes=5)
    assert [f.code for f in slot_findings(idle)] == ["slot_inactive"]
    assert slot_findings(idle, running=True) == []
    lost = SlotState("s", True, 10, wal_status="lost")
    assert [(f.level, f.code) for f in slot_findings(lost)] == [(ERROR, "slot_lost")]
    assert exit_code(slot_findings(lost)) == 2 and exit_code(slot_findings(idle)) == 1 and exit_code([]) == 0


def test_binlog_findings() -> None:
    soon = BinlogState("b.000009", 100, [("b.000008", 500), ("b.000009", 100)], "b.000008", 400, 200, 30.0, 7200,
                       1200.0)
    assert [(f.level, f.code) for f in binlog_findings(soon)] == [(WARNING, "binlog_purge_soon")]
    later = BinlogState("b.000009", 100, [], "b.000008", 400, 200, 30.0, 7200, 5000.0)
    never = BinlogState("b.000009", 100, [], "b.000008", 400, 200, 30.0, 0, INF)
    assert binlog_findings(later) == [] and binlog_findings(never) == []
    gone = BinlogState("b.000009", 100, [("b.000009", 100)], "b.000003", 4, position_purged=True)
    assert [(f.level, f.code) for f in binlog_findings(gone)] == [(ERROR, "binlog_purged")]


# ---- the HTTP server and the page -------------------------------------------------------------------

def test_server_serves_metrics_and_the_page() -> None:
    clock = Clock()
    m = PipelineMetrics(plugin="postgres", server="dbz", clock=clock)
    for i in range(5):
        m.batch(Batch([event("public.a", "c", tx=i) for _ in range(10)]))
        m.sample()
        clock.now += 10
    m.record_error("WARNING", "cdc.test", "something <odd> happened")
    server = MetricsServer(m, "127.0.0.1", 0, "shop").start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        text = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
        page = urllib.request.urlopen(base + "/", timeout=5).read().decode()
    finally:
        server.close()
    assert 'debezium_metrics_TotalNumberOfEventsSeen{context="streaming",name="dbz",plugin="postgres"} 50.0' in text
    assert "<title>cdc shop</title>" in page and "<polyline" in page
    assert "something &lt;odd&gt; happened" in page


def test_page_without_samples() -> None:
    page = render(PipelineMetrics(plugin="mysql", server="x"), "p")
    assert "no samples yet" in page and "no snapshot in this run" in page
