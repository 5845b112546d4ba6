"""Spark: the cdc source into a table, next to a plain ``spark.read.jdbc`` of the same table.

    python bench/bench_spark.py [--rows 1000000] [--changes 200000]

1. snapshot: ROWS rows read by ``readStream.format("cdc")`` (snapshot.mode=initial) and folded
   into a Parquet table by apply_changes, vs ``spark.read.jdbc(...).write.parquet`` (rows/s, ratio);
2. streaming: CHANGES updates (1,000 per transaction) made after the snapshot, applied to the
   same table: rows/s from the first to the last applied change.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_postgres import TABLE, load  # noqa: E402
from bench.common import scratch_database  # noqa: E402
from cdc.spark import local_session, register  # noqa: E402
from cdc.spark.apply import changes_applier  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=200_000)
    args = parser.parse_args()
    spark = local_session("cdc-bench", delta=False)
    register(spark)
    with scratch_database() as props, tempfile.TemporaryDirectory() as tmp:
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            conn.execute(TABLE)
            load(conn, args.rows, 100_000)
            conn.execute("VACUUM ANALYZE bench")
        url = f"jdbc:postgresql://{props['database.hostname']}:{props['database.port']}/{props['database.dbname']}"
        started = time.perf_counter()
        (spark.read.format("jdbc").option("url", url).option("dbtable", "bench").option("user", props["database.user"])
         .option("driver", "org.postgresql.Driver").option("fetchsize", "10000").load()
         .write.parquet(f"{tmp}/jdbc"))
        jdbc = time.perf_counter() - started

        target = f"{tmp}/target"
        reader = spark.readStream.format("cdc").option("source", "postgres").option("table", "public.bench")
        for key in ("database.hostname", "database.port", "database.user", "database.dbname"):
            reader = reader.option(key, props[key])
        reader = reader.option("slot.name", "bench_spark").option("publication.name", "bench_spark")
        started = time.perf_counter()
        query = (reader.load().writeStream.foreachBatch(changes_applier(target, ["id"], format="parquet"))
                 .option("checkpointLocation", f"{tmp}/ck").trigger(processingTime="1 second").start())

        def count() -> int:
            try:
                return spark.read.parquet(target).count()
            except Exception:  # noqa: BLE001 - not written yet, or being swapped
                return -1

        while count() < args.rows:
            time.sleep(1)
        snapshot = time.perf_counter() - started
        print(f"snapshot: {args.rows} rows; cdc source -> apply_changes {args.rows / snapshot:,.0f} rows/s; "
              f"spark.read.jdbc -> parquet {args.rows / jdbc:,.0f} rows/s; ratio {jdbc / snapshot:.2f}")

        def changed() -> int:
            try:
                return spark.read.parquet(target).where("note = 'changed'").count()
            except Exception:  # noqa: BLE001
                return -1

        started = time.perf_counter()
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            for first in range(1, args.changes + 1, 1000):
                conn.execute("UPDATE bench SET note = 'changed' WHERE id BETWEEN %s AND %s", (first, first + 999))
        while changed() < args.changes:
            time.sleep(1)
        streaming = time.perf_counter() - started
        query.stop()
        print(f"streaming: {args.changes} changes applied at {args.changes / streaming:,.0f} rows/s")
    spark.stop()


if __name__ == "__main__":
    main()
