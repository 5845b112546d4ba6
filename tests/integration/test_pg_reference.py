"""Our events for shared/reference/debezium/pg-types.sql equal Debezium's, field for field.

Fields that differ from run to run (README of the reference) are left out of the comparison:
ts_ms/ts_us/ts_ns, source.txId/lsn/sequence/version, transaction ids, __debezium.context.* headers.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg

from tests.conftest import REFERENCE
from tests.integration.harness import JSON_HEADERS, Pipeline

DEBEZIUM = REFERENCE / "debezium"
VARYING_SOURCE = {"ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence", "version"}


def _scrub(record: dict[str, Any]) -> dict[str, Any]:
    record = json.loads(json.dumps(record))
    value = record.get("value")
    if value is not None:
        payload = value["payload"]
        for name in ("ts_ms", "ts_us", "ts_ns"):
            payload.pop(name, None)
        for name in VARYING_SOURCE:
            payload["source"].pop(name, None)
    headers = {k: v for k, v in (record.get("headers") or {}).items() if not k.startswith("__debezium.context.")}
    record["headers"] = headers or None
    return record


def _workload() -> tuple[str, str]:
    text = (DEBEZIUM / "pg-types.sql").read_text()
    setup, capture = text.split("-- @@CAPTURE")
    return setup, capture


def test_pg_types_match_debezium(pg_db: dict[str, str], tmp_path: Path) -> None:
    expected = [json.loads(line) for line in (DEBEZIUM / "pg-types.jsonl").read_text().splitlines() if line.strip()]
    setup, capture = _workload()
    with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        conn.execute(setup)
    props = {**pg_db, "snapshot.mode": "no_data", "topic.prefix": "dbz", "header.converter": JSON_HEADERS}
    with Pipeline(props, tmp_path / "offsets.json") as pipeline:
        pipeline.wait_ready()
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            conn.execute(capture)
        got = pipeline.wait_count(len(expected), topic="dbz.public.types")
    assert len(got) == len(expected)
    for index, (ours, theirs) in enumerate(zip(got, expected, strict=True)):
        ours, theirs = _scrub(ours), _scrub(theirs)
        if theirs["value"] is not None:  # Debezium's run used a database named "lab"
            assert ours["value"]["payload"]["source"]["db"] == pg_db["database.dbname"]
            theirs["value"]["payload"]["source"]["db"] = pg_db["database.dbname"]
        assert ours["topic"] == theirs["topic"], index
        assert ours["key"] == theirs["key"], index
        if theirs["value"] is None:
            assert ours["value"] is None, index
            continue
        # schema first (exact, key order included), then payload values one field at a time
        assert json.dumps(ours["value"]["schema"]) == json.dumps(theirs["value"]["schema"]), index
        for name in ("before", "after"):
            if theirs["value"]["payload"][name] is None:
                assert ours["value"]["payload"][name] is None, (index, name)
                continue
            for column, value in theirs["value"]["payload"][name].items():
                assert ours["value"]["payload"][name][column] == value, (index, name, column)
        assert ours["value"]["payload"] == theirs["value"]["payload"], index
        assert ours["headers"] == theirs["headers"], index
