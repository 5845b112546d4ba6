"""Our events for shared/reference/debezium/mariadb-types.sql equal Debezium's, field for field.

Left out of the comparison: what the reference README lists as varying (ts_ms/ts_us/ts_ns,
source.version, transaction ids, __debezium.context.* headers), the database name (``source.db``
and topics use this run's database) and the binlog coordinates (``server_id``, ``gtid``, ``file``,
``pos``), which depend on the server's history; those are checked against the binlog instead.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc.sources.mysql.source import MySqlSource
from tests.conftest import REFERENCE
from tests.integration.harness import JSON_HEADERS, Pipeline

DEBEZIUM = REFERENCE / "debezium"
VARYING_SOURCE = {"ts_ms", "ts_us", "ts_ns", "version", "server_id", "gtid", "file", "pos"}

pytestmark = pytest.mark.mysql


def _scrub(record: dict[str, Any], db: str) -> dict[str, Any]:
    text = json.dumps(record).replace(f'"{db}"', '"lab"').replace(f"dbz.{db}.", "dbz.lab.")
    record = json.loads(text)
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


def _run_sql(server: dict[str, Any], db: str, sql: str) -> None:
    conn = pymysql.connect(**server, database=db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            for statement in sql.split(";\n"):
                statement = "\n".join(line for line in statement.splitlines() if not line.startswith("--"))
                statement = statement.strip().rstrip(";")
                if statement:
                    cur.execute(statement)
    finally:
        conn.close()


def test_mariadb_types_match_debezium(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    expected = [json.loads(line) for line in (DEBEZIUM / "mariadb-types.jsonl").read_text().splitlines()
                if line.strip()]
    setup, capture = (DEBEZIUM / "mariadb-types.sql").read_text().split("-- @@CAPTURE")
    db = mysql_db["db"]
    _run_sql(mysql_server, db, setup)
    props = {**mysql_db, "snapshot.mode": "no_data", "topic.prefix": "dbz", "include.schema.changes": "false",
             "header.converter": JSON_HEADERS,
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")}
    with Pipeline(props, tmp_path / "offsets.json", source_cls=MySqlSource) as pipeline:
        pipeline.wait_ready()
        _run_sql(mysql_server, db, capture)
        got = pipeline.wait_count(len(expected), topic=f"dbz.{db}.types")
    assert len(got) == len(expected)
    for index, (ours, theirs) in enumerate(zip(got, expected, strict=True)):
        ours, theirs = _scrub(ours, db), _scrub(theirs, db)
        assert ours == theirs, index
    # The binlog coordinates: one transaction per statement, rows numbered inside their event.
    sources = [r["value"]["payload"]["source"] for r in got if r["value"] is not None]
    assert [s["row"] for s in sources] == [0, 1, 2, 0, 0]
    assert sources[0]["pos"] == sources[1]["pos"] == sources[2]["pos"] < sources[3]["pos"] < sources[4]["pos"]
    assert all(s["file"].startswith("mariadb-bin.") and s["server_id"] == 1 for s in sources)
    assert [s["gtid"].split("-")[:2] for s in sources] == [["0", "1"]] * 5
    assert len({s["gtid"] for s in sources}) == 3
