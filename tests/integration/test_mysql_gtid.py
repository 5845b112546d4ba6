"""Resuming by GTID on a real MariaDB: a Debezium offset inside a transaction (its ``event`` counts every event from
the GTID event on), and a server that lacks transactions the offset delivered (refused, or snapshot.mode=when_needed
takes a new snapshot). The failover itself, on two servers: tests/faults/test_failover.py."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc.core.errors import SourceError
from tests.integration.test_mysql_failures import run_until_error
from tests.integration.test_mysql_stream import pipeline, sql

pytestmark = pytest.mark.mysql


def _stored(tmp_path: Path) -> dict[str, Any]:
    offsets: dict[str, Any] = json.loads((tmp_path / "offsets.json").read_text())["offsets"]["test"]
    return offsets


def _store(tmp_path: Path, offset: dict[str, Any]) -> None:
    (tmp_path / "offsets.json").write_text(json.dumps({"version": 1, "offsets": {"test": offset}}))


def _streaming(tmp_path: Path, props: dict[str, str], **more: str) -> None:
    """A pipeline that starts, stores a binlog position and stops: the schema history and an offset."""
    with pipeline(props, tmp_path, **more) as p:
        p.wait_ready()
        offsets = tmp_path / "offsets.json"
        deadline = time.monotonic() + 30
        while not (offsets.exists() and '"pos"' in offsets.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)


def test_debeziums_offset_inside_a_transaction_resumes_by_gtid(mysql_server: dict[str, Any],
                                                                mysql_db: dict[str, str], tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)")
    _streaming(tmp_path, mysql_db, **{"snapshot.mode": "no_data"})
    with pymysql.connect(**mysql_server, database=db, autocommit=False) as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, start = cur.fetchone()[:2]
        for key in (1, 2, 3):  # three statements: three Table_map + Write_rows pairs in one transaction
            cur.execute("INSERT INTO t VALUES (%s)", (key,))
        conn.commit()
        cur.execute("SELECT @@last_gtid")
        gtid = cur.fetchone()[0]
        cur.execute(f"SHOW BINLOG EVENTS IN '{file}' FROM {int(start)}")
        at = next(int(row[1]) for row in cur.fetchall() if row[2] == "Gtid" and row[5].endswith(f"GTID {gtid}"))
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, at))
        before = cur.fetchone()[0]
    # What Debezium's MariaDB connector stores with the record of row 1: its GTID and Table_map events done
    # (event=2), one row of the next rows event (row=1); no writer mark, no server identity.
    _store(tmp_path, {"file": file, "pos": at, "gtids": before, "event": 2, "row": 1, "server_id": 1,
                      "ts_sec": int(time.time())})
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data"}) as p:
        got = p.wait_count(2, topic=f"dbz.{db}.t")
        time.sleep(0.5)
        got = [r for r in p.sink.snapshot() if r["topic"] == f"dbz.{db}.t" and r["value"]]
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]["id"]) for r in got] == [("c", 2), ("c", 3)]
    assert {r["value"]["payload"]["source"]["gtid"] for r in got} == {gtid}


def test_a_server_without_the_delivered_transactions_is_refused_or_snapshotted(
        mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    _streaming(tmp_path, mysql_db)
    offset = _stored(tmp_path)
    domain, server, seq = offset["gtids"].split(",")[0].split("-")
    ahead = f"{domain}-{server}-{int(seq) + 1_000_000}"  # delivered, yet this server never logged it
    _store(tmp_path, {**offset, "gtids": ahead})
    error = run_until_error(mysql_db, tmp_path)
    assert isinstance(error, SourceError)
    assert f"does not have transactions this pipeline delivered already (GTIDs {ahead})" in str(error)
    assert "snapshot.mode=when_needed" in (error.fix or "")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "when_needed"}) as p:
        got = p.wait_count(1, topic=f"dbz.{db}.t")
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]) for r in got] == [("r", {"id": 1})]
