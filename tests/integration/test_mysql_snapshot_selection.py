"""snapshot.include.collection.list, snapshot.select.statement.overrides and the start-up waits on a real
MariaDB beyond the conformance workload (mariadb_snapshot_selection, checked against Debezium): the
resumable snapshot (chunks while streaming) reads only the listed tables and refuses overrides, Spark's
parallel snapshot plans the listed tables and refuses overrides, and a stop ends snapshot.delay.ms."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from cdc.core.errors import ConfigError
from tests.integration.test_mysql_incremental import SIGNALS, signal_props
from tests.integration.test_mysql_stream import pipeline, sql

pytestmark = pytest.mark.mysql


def tables(server: dict[str, Any], db: str) -> None:
    sql(server, db, SIGNALS, "CREATE TABLE orders (id int PRIMARY KEY, status varchar(10))",
        "INSERT INTO orders VALUES (1, 'open'), (2, 'deleted'), (3, 'open')",
        "CREATE TABLE audit (id int PRIMARY KEY)", "INSERT INTO audit VALUES (1)")


def read_ids(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for r in records:
        payload = r["value"]["payload"] if r["value"] and "op" in r["value"]["payload"] else None
        if payload and payload["op"] == "r":
            out.setdefault(r["topic"].rsplit(".", 1)[1], []).append(payload["after"]["id"])
    return out


def test_a_resumable_snapshot_reads_the_listed_tables_only(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                           tmp_path: Path) -> None:
    db = mysql_db["db"]
    tables(mysql_server, db)
    props = {**signal_props(mysql_db), "snapshot.mode": "initial", "snapshot.resumable": "true",
             "snapshot.include.collection.list": rf"{db}\.orders"}
    with pipeline(mysql_db, tmp_path, **props) as p:
        p.wait_for(lambda rs: read_ids(rs).get("orders") == [1, 2, 3])
        sql(mysql_server, db, "INSERT INTO audit VALUES (2)")
        records = p.wait_for(lambda rs: any(r["topic"].endswith(".audit") for r in rs))
    assert "audit" not in read_ids(records)


def test_a_resumable_snapshot_refuses_overrides(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                tmp_path: Path) -> None:
    db = mysql_db["db"]
    tables(mysql_server, db)
    props = {**signal_props(mysql_db), "snapshot.mode": "initial", "snapshot.resumable": "true",
             "snapshot.select.statement.overrides": f"{db}.orders",
             f"snapshot.select.statement.overrides.{db}.orders": f"SELECT * FROM {db}.orders WHERE id > 1"}
    p = pipeline(mysql_db, tmp_path, **props)
    with p:
        p.thread.join(30)
    assert isinstance(p.error, ConfigError)
    assert "is not applied by snapshot.resumable" in p.error.message and p.sink.snapshot() == []


def test_spark_plans_the_listed_tables_and_refuses_overrides(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                             tmp_path: Path) -> None:
    db = mysql_db["db"]
    tables(mysql_server, db)
    planner = pipeline(mysql_db, tmp_path, **{"snapshot.include.collection.list": rf"{db}\.audit"}).source
    try:
        plan = planner.plan_parallel_snapshot(2)
        assert plan is not None and {c["table"] for c in plan["chunks"]} == {f"{db}.audit"}
    finally:
        planner.close()
    refused = pipeline(mysql_db, tmp_path / "2", **{"snapshot.select.statement.overrides": f"{db}.orders",
                                                     f"snapshot.select.statement.overrides.{db}.orders": "SELECT 1"})
    try:
        with pytest.raises(ConfigError, match="is not applied by Spark's parallel snapshot"):
            refused.source.plan_parallel_snapshot(2)
    finally:
        refused.source.close()


def test_a_stop_ends_the_snapshot_delay(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path,
                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cdc.core.delays")
    tables(mysql_server, mysql_db["db"])
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "initial", "snapshot.delay.ms": "600000"}) as p:
        deadline = time.monotonic() + 30
        while "before the snapshot (snapshot.delay.ms)" not in caplog.text:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        started = time.monotonic()
        p.stop()
        assert time.monotonic() - started < 5
    assert p.error is None and p.sink.snapshot() == []
