"""SQL Server's lag, as the metrics monitor and ``cdc status`` read it, against recorded server state:
the newest LSN in the change tables, its commit time and the stored offset's (a fake query layer
that answers the same statement the real server gets)."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from cdc.metrics.registry import PipelineMetrics
from cdc.sources.sqlserver.lag import SqlServerWatch, sqlserver_lag, sqlserver_offsets
from tests.fixtures.sqlserver.fake import FakeServer
from tests.fixtures.sqlserver.testdb import RecordedDatabase

OLD, NEW = "00000027:00000758:0005", "00000028:00000010:0002"
T0 = datetime(2024, 5, 1, 12, 0, 0)


def _db(name: str = "testDB", **kw: Any) -> RecordedDatabase:
    return RecordedDatabase(name=name, max_lsn=NEW, lsn_times={OLD: T0, NEW: T0 + timedelta(seconds=95)}, **kw)


def test_behind_by_lsn_distance_and_commit_time() -> None:
    conn = FakeServer(_db()).connect("testDB")
    state = sqlserver_lag(conn, "testDB", {"commit_lsn": OLD})
    assert (state.max_lsn, state.commit_lsn) == (NEW, OLD)
    assert state.lsn_distance == int(NEW.replace(":", ""), 16) - int(OLD.replace(":", ""), 16)
    assert state.behind_seconds == 95.0


def test_caught_up_and_no_offset_and_no_capture_job() -> None:
    conn = FakeServer(_db()).connect("testDB")
    caught_up = sqlserver_lag(conn, "testDB", {"commit_lsn": NEW})
    assert (caught_up.lsn_distance, caught_up.behind_seconds) == (0, 0.0)
    fresh = sqlserver_lag(conn, "testDB", None)
    assert (fresh.max_lsn, fresh.commit_lsn, fresh.lsn_distance) == (NEW, None, None)
    idle = sqlserver_lag(FakeServer(RecordedDatabase(max_lsn=None)).connect("testDB"), "testDB", {"commit_lsn": OLD})
    assert idle.max_lsn is None and idle.lsn_distance is None


def test_offsets_of_both_shapes() -> None:
    assert sqlserver_offsets({"commit_lsn": OLD}, ["testDB"]) == {"testDB": {"commit_lsn": OLD}}
    assert sqlserver_offsets({"databases": {"a": {"commit_lsn": OLD}}}, ["a", "b"]) == {"a": {"commit_lsn": OLD}}
    assert sqlserver_offsets(None, ["a"]) == {}


def test_watch_sets_a_gauge_per_database() -> None:
    server = FakeServer(_db("a"), _db("b"))
    metrics = PipelineMetrics(plugin="sqlserver", server="dbz")
    metrics.committed_offset = {"databases": {"a": {"commit_lsn": OLD}, "b": {"commit_lsn": NEW}}}
    watch = SqlServerWatch(server.connect, metrics, ["a", "b"])
    assert watch.poll() == []
    text = _scrape(metrics)
    assert 'cdc_sqlserver_behind_seconds{database="a"} 95.0' in text
    assert 'cdc_sqlserver_behind_seconds{database="b"} 0.0' in text
    assert 'cdc_sqlserver_lsn_distance{database="b"} 0.0' in text
    assert metrics.source_lag["kind"] == "sqlserver" and [d["database"] for d in metrics.source_lag["databases"]] \
        == ["a", "b"]
    watch.close()
    assert all(c.closed for c in server.connections)


def _scrape(metrics: PipelineMetrics) -> str:
    from prometheus_client import generate_latest

    return generate_latest(metrics.registry).decode()


def test_status_reports_each_database(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    import json

    from cdc import status as status_module
    from cdc.sources.sqlserver import connection

    server = FakeServer(_db())
    monkeypatch.setattr(connection, "OdbcConnection", lambda settings, database: server.connect(database))
    offsets = tmp_path / "offsets.json"
    props = {"database.hostname": "sql.example", "database.user": "sa", "database.password": "x",
             "database.names": "testDB", "topic.prefix": "dbz", "offset.storage.file.filename": str(offsets)}
    from cdc.status import pipeline_config, stored_offset

    config = pipeline_config("sqlserver", props)
    assert stored_offset(config) is None
    report = status_module.status("sqlserver", props)
    assert [f.code for f in report.findings] == ["no_offset"]
    # a stored offset, written as the pipeline writes it
    from cdc.pipeline import offset_store

    offset_store(config).save({"databases": {"testDB": {"commit_lsn": OLD, "change_lsn": None,
                                                         "event_serial_no": None}}})
    report = status_module.status("sqlserver", props)
    assert report.findings == [] and report.lag_seconds == 95.0
    assert report.position == f"testDB {NEW}" and report.stored == f"testDB {OLD}"
    assert "testDB          LSN distance 281474854551549, 95 s of changes not read" in report.text()
    assert json.loads(json.dumps(report.as_dict()))["state"]["databases"][0]["lsn_distance"] > 0
    # a snapshot interrupted half way: its restart marker, not "no stored offset"
    offset_store(config).save({"databases": {"testDB": {"snapshot_attempt": 2}}})
    report = status_module.status("sqlserver", props)
    assert [f.code for f in report.findings] == ["snapshot_interrupted"]
    assert "snapshot was interrupted (attempt 2)" in report.text()
