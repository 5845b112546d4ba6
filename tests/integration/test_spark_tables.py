"""Several tables in one streaming query: ``.option("tables", ...)`` (Debezium's include list), each
table's rows typed in its own struct, and ``tables_applier`` folding each into its own Delta target.
The snapshot is read in parallel chunks (one table through the columnar path but for a row holding an
infinite date, one with a type only the Python path reads), then the stream; a table outside the list
never appears."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.integration.test_pg_stream import sql

pytestmark = pytest.mark.spark

# each table's columns compared, and the query reading them from the table (an infinite date is NULL in Spark)
QUERIES = {"public.orders": (["id", "customer", "total", "due"], "SELECT id, customer, total, "
                             "CASE WHEN due = 'infinity' THEN NULL ELSE due END FROM orders"),
           "public.order_lines": (["order_id", "line", "note", "tags"],
                                  "SELECT order_id, line, note, tags FROM order_lines")}


def _source(db: dict[str, str], table: str) -> list[tuple]:
    with psycopg.connect(db["dsn"]) as conn:
        return sorted(tuple(map(_hashable, r)) for r in conn.execute(QUERIES[table][1]).fetchall())


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _target(spark: Any, path: Path, columns: list[str]) -> list[tuple]:
    from delta.tables import DeltaTable

    if not (path / "_delta_log").exists() or not DeltaTable.isDeltaTable(spark, str(path)):
        return []
    return sorted(tuple(_hashable(r[c]) for c in columns)
                  for r in spark.read.format("delta").load(str(path)).collect())


def _wait(check: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        failures = check()
        if not failures:
            return
        assert time.monotonic() < deadline, failures
        time.sleep(1)


def test_two_tables_into_their_own_targets(spark: Any, pg_db: dict[str, str], tmp_path: Path) -> None:
    from cdc.spark.apply import tables_applier
    from cdc.spark.session import delta_available

    if not delta_available(spark):
        pytest.fail("Delta jars are not on the classpath (scripts/spark-jars.sh)")
    sql(pg_db, "CREATE TABLE orders (id int PRIMARY KEY, customer text, total numeric(10,2), due date)",
        "CREATE TABLE order_lines (order_id int, line int, note text, tags text[], PRIMARY KEY (order_id, line))",
        "CREATE TABLE audit (id int PRIMARY KEY)",
        # columnar, but for the row holding an infinite date (read again the Python way)
        "INSERT INTO orders SELECT g, 'c' || (g % 7), g * 1.5, CASE WHEN g = 1500 THEN 'infinity'::date "
        "ELSE '2024-01-01'::date + g END FROM generate_series(1, 3000) g",
        # an array: this table's chunks take the Python path
        "INSERT INTO order_lines SELECT g / 3, g % 3, 'n' || g, ARRAY['t' || (g % 5)] FROM generate_series(1, 3000) g",
        "INSERT INTO audit VALUES (1)")
    reader = spark.readStream.format("cdc").option("source", "postgres").option("tables", r"public\.order.*")
    for key in ("database.hostname", "database.port", "database.user", "database.dbname"):
        reader = reader.option(key, pg_db[key])
    events = (reader.option("slot.name", "tables_slot").option("publication.name", "tables_pub")
              .option("snapshotChunkRows", "1000").load())
    after = events.schema["after"].dataType
    assert after.fieldNames() == ["public.order_lines", "public.orders"]  # audit is not in the list
    assert after["public.orders"].dataType.fieldNames() == ["id", "customer", "total", "due"]
    targets = {t: str(tmp_path / t) for t in QUERIES}
    keys = {"public.orders": ["id"], "public.order_lines": ["order_id", "line"]}
    query = (events.writeStream.foreachBatch(tables_applier(targets, keys, format="delta"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="1 second").start())

    def differences() -> list[str]:
        out = []
        for table, (columns, _) in QUERIES.items():
            got, want = _target(spark, Path(targets[table]), columns), _source(pg_db, table)
            if got != want:
                out.append(f"{table}: {len(got)} rows in the target, {len(want)} in the table; "
                           f"missing {sorted(set(want) - set(got))[:3]}, extra {sorted(set(got) - set(want))[:3]}")
        return out

    try:
        _wait(differences)
        sql(pg_db, "UPDATE orders SET total = 0 WHERE id % 100 = 0", "DELETE FROM orders WHERE id > 2990",
            "INSERT INTO order_lines VALUES (2000, 1, 'new', '{a,b}')",
            "UPDATE order_lines SET note = 'changed' WHERE order_id = 7", "DELETE FROM order_lines WHERE order_id = 8",
            "INSERT INTO audit VALUES (2)", "UPDATE orders SET id = 5000 WHERE id = 1")
        _wait(differences)
    finally:
        query.stop()
    assert not (tmp_path / "public.audit").exists()
