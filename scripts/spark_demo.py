"""End-to-end demo: a local PostgreSQL table replicated continuously into a Delta (or Parquet)
table by a Structured Streaming query over ``format("cdc")``, with counts and a sample.

    python scripts/spark_demo.py          (after scripts/postgres.sh start; scripts/spark-jars.sh for Delta)
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cdc.spark import local_session, register  # noqa: E402
from cdc.spark.apply import changes_applier  # noqa: E402
from cdc.spark.session import delta_available  # noqa: E402


def main() -> None:
    subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "start"], check=True)
    admin = subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "dsn"], check=True,
                           capture_output=True, text=True).stdout.strip()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS cdc_spark_demo WITH (FORCE)")
        conn.execute("CREATE DATABASE cdc_spark_demo")
    dsn = psycopg.conninfo.make_conninfo(admin, dbname="cdc_spark_demo")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY, customer text, total numeric(10,2), placed timestamptz)")
        conn.execute("INSERT INTO orders SELECT g, 'c' || (g % 7), g * 2.5, now() FROM generate_series(1, 1000) g")
    out = ROOT / "out" / "spark-demo"
    shutil.rmtree(out, ignore_errors=True)
    spark = local_session("cdc-demo")
    register(spark)
    fmt = "delta" if delta_available(spark) else "parquet"
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    events = (spark.readStream.format("cdc").option("source", "postgres").option("table", "public.orders")
              .option("database.hostname", params["host"]).option("database.port", params["port"])
              .option("database.user", params["user"]).option("database.dbname", "cdc_spark_demo")
              .option("slot.name", "spark_demo").option("publication.name", "spark_demo").load())
    query = (events.writeStream.foreachBatch(changes_applier(str(out / "orders"), ["id"], format=fmt))
             .option("checkpointLocation", str(out / "checkpoint")).trigger(processingTime="1 second").start())

    def show(title: str) -> None:
        time.sleep(6)
        table = spark.read.format(fmt).load(str(out / "orders"))
        with psycopg.connect(dsn) as conn:
            source_count = conn.execute("SELECT count(*) FROM orders").fetchone()[0]
        print(f"\n== {title}: PostgreSQL has {source_count} rows, the {fmt} table has {table.count()}")
        table.orderBy("id").show(5, truncate=False)

    try:
        show("after the snapshot")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("UPDATE orders SET total = total * 2 WHERE id <= 3")
            conn.execute("DELETE FROM orders WHERE id > 900")
            conn.execute("INSERT INTO orders VALUES (5000, 'new', 99.99, now())")
        show("after an update, 100 deletes and an insert")
    finally:
        query.stop()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot('spark_demo')")
        spark.stop()


if __name__ == "__main__":
    main()
