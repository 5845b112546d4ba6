"""publish.via.partition.root: the publication publishes partitions' changes as their partitioned table's.
(The events themselves are checked against Debezium: tests/conformance/workloads/pg_partition*.sql.)"""
from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.integration.harness import Pipeline
from tests.integration.test_pg_stream import sql

PARTITIONED = ("CREATE TABLE m (id int, region text, v int, PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
               "CREATE TABLE m_eu PARTITION OF m FOR VALUES IN ('eu')")


def via_root(db: dict[str, str]) -> bool:
    with psycopg.connect(db["dsn"]) as conn:
        row = conn.execute("SELECT pubviaroot FROM pg_publication WHERE pubname = 'cdc_test_pub'").fetchone()
    assert row is not None, "no publication"
    return bool(row[0])


def test_the_publication_cdc_creates_publishes_via_the_root(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, *PARTITIONED)
    props = {**pg_db, "snapshot.mode": "no_data", "publish.via.partition.root": "true"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
        assert via_root(pg_db)
        sql(pg_db, "INSERT INTO m_eu VALUES (1, 'eu', 10)")
        [record] = p.wait_count(1)
    assert record["topic"] == "dbz.public.m" and record["value"]["payload"]["source"]["table"] == "m"


def test_turned_on_later_for_the_pipelines_own_publication(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, *PARTITIONED)
    props = {**pg_db, "snapshot.mode": "no_data"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
    assert not via_root(pg_db)
    with Pipeline({**props, "publish.via.partition.root": "true"}, tmp_path / "o.json") as p:  # its offset: its own
        p.wait_ready()
        assert via_root(pg_db)
        sql(pg_db, "INSERT INTO m_eu VALUES (1, 'eu', 10)")
        [record] = p.wait_count(1)
    assert record["topic"] == "dbz.public.m"


def test_another_consumers_publication_is_left_as_it_is(pg_db: dict[str, str], tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    sql(pg_db, *PARTITIONED, "CREATE PUBLICATION cdc_test_pub FOR ALL TABLES")
    props = {**pg_db, "snapshot.mode": "no_data", "publish.via.partition.root": "true"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
    assert not via_root(pg_db)
    assert "SET (publish_via_partition_root = true)" in caplog.text
