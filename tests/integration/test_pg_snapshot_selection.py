"""snapshot.include.collection.list and snapshot.select.statement.overrides on a real PostgreSQL beyond the
conformance workload (pg_snapshot_selection, checked against Debezium): with snapshot.resumable (a table
read by its SELECT is read whole, not in key chunks), through the compiled codec, and in Spark's parallel
snapshot (the collection list planned, overrides refused before anything is made)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.core.errors import ConfigError
from cdc.sources.postgres.source import PostgresSource
from tests.integration.harness import Pipeline
from tests.integration.test_pg_stream import sql

SELECTION = {
    "snapshot.mode": "initial",
    "snapshot.include.collection.list": r"public\.orders,public\.customers",
    "snapshot.select.statement.overrides": "public.orders",
    "snapshot.select.statement.overrides.public.orders": "SELECT * FROM public.orders WHERE status <> 'deleted'",
}


def tables(pg_db: dict[str, str]) -> None:
    sql(pg_db, "CREATE TABLE orders (id int PRIMARY KEY, status text)",
        "INSERT INTO orders SELECT g, CASE WHEN g % 3 = 0 THEN 'deleted' ELSE 'open' END FROM generate_series(1, 50) g",
        "CREATE TABLE customers (id int PRIMARY KEY, name text)",
        "INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 7) g",
        "CREATE TABLE audit (id int PRIMARY KEY)", "INSERT INTO audit VALUES (1)")


def read(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for r in records:
        payload = r["value"]["payload"] if r["value"] else None
        if payload and payload["op"] == "r":
            out.setdefault(r["topic"], []).append(payload["after"]["id"])
    return out


@pytest.mark.parametrize("extra", [{"snapshot.resumable": "true", "snapshot.fetch.size": "4"},
                                   {"native.rows": "true"}], ids=["resumable", "native"])
def test_the_snapshot_reads_the_listed_tables_an_override_by_its_select(pg_db: dict[str, str], tmp_path: Path,
                                                                        extra: dict[str, str]) -> None:
    tables(pg_db)
    with Pipeline({**pg_db, **SELECTION, **extra}, tmp_path / "o.json") as p:
        p.wait_count(len([g for g in range(1, 51) if g % 3]) + 7)
        p.wait_ready()
        sql(pg_db, "INSERT INTO audit VALUES (2)")
        records = p.wait_for(lambda rs: any(r["topic"] == "dbz.public.audit" for r in rs))
    got = read(records)
    assert sorted(got["dbz.public.orders"]) == [g for g in range(1, 51) if g % 3]
    assert sorted(got["dbz.public.customers"]) == list(range(1, 8))
    assert "dbz.public.audit" not in got  # streamed only
    assert [r["value"]["payload"]["op"] for r in records if r["topic"] == "dbz.public.audit"] == ["c"]


def test_an_override_that_does_not_run_stops_the_snapshot_naming_it(pg_db: dict[str, str], tmp_path: Path) -> None:
    tables(pg_db)
    props = {**pg_db, **SELECTION, "snapshot.select.statement.overrides.public.orders": "SELECT * FROM nowhere"}
    p = Pipeline(props, tmp_path / "o.json")
    with p:
        p.thread.join(30)
    assert p.error is not None
    assert "snapshot.select.statement.overrides.public.orders cannot be run" in str(p.error)
    assert 'relation "nowhere" does not exist' in str(p.error)


def source(pg_db: dict[str, str], **props: str) -> PostgresSource:
    base = {"topic.prefix": "dbz", "slot.name": "cdc_test", "publication.name": "cdc_test_pub"}
    return PostgresSource(Config({**base, **{k: v for k, v in pg_db.items() if k != "dsn"}, **props})
                          .declare(CORE_OPTIONS))


def test_spark_plans_the_collection_list_and_refuses_overrides(pg_db: dict[str, str]) -> None:
    tables(pg_db)
    planner = source(pg_db, **{"snapshot.include.collection.list": r"public\.customers"})
    try:
        plan = planner.plan_parallel_snapshot(3)
        assert plan is not None and {c["table"] for c in plan["chunks"]} == {"public.customers"}
    finally:
        planner.release_parallel_snapshot()
        planner.close()
    refused = source(pg_db, **SELECTION, **{"slot.name": "cdc_test2"})
    try:
        with pytest.raises(ConfigError) as caught:
            refused.plan_parallel_snapshot(3)
    finally:
        refused.close()
    assert "is not applied by Spark's parallel snapshot" in caught.value.message
