"""A probe of where the Spark snapshot's gap to JDBC lies: what the shape of the rows costs.

    python bench/probe_spark_shapes.py [--rows 1000000] [--master local[2]] [--runs 3]

The same key-range chunks of ``bench_postgres.TABLE`` (2 x cores of them, as bench_spark.py cuts them)
are read through ADBC by a *batch* Python data source (no streaming query, no plan, no slot) and
written into a new Delta table, as:
- ``flat``: the row's six columns, nothing else (what a reader without the envelope would hand over);
- ``envelope``: format("cdc")'s read events (cdc.spark.arrow_events.snapshot_batches), ``after.*`` written;
- ``no-source``: the same envelope with a null ``source`` block (what the constant block costs Spark);
beside ``spark.read.jdbc`` of the same table with as many partitions. Each way ``--runs`` times,
alternately, after a first round that warms the session up (printed too). A Python data source has
no column pruning: Spark turns every column of what it yields into rows, read or not.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_postgres import TABLE, load  # noqa: E402
from bench.common import loop_seconds, scratch_database  # noqa: E402

SHAPES = ("flat", "envelope", "no-source")
SOURCE_BLOCK = {"connector": "postgresql", "name": "cdc", "db": "bench", "schema": "public", "table": "bench",
                "snapshot": "true", "ts_ms": 1, "txId": None, "lsn": 1}


def _data_source(envelope: Any) -> type:
    """The probe's data source class; ``envelope``: format("cdc")'s schema of the bench table."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Range(InputPartition):
        def __init__(self, low: int, high: int) -> None:
            self.low, self.high = low, high

    class Reader(DataSourceReader):
        def __init__(self, options: dict[str, str]) -> None:
            self.options = options

        def partitions(self) -> list[Range]:
            rows, chunks = int(self.options["rows"]), int(self.options["chunks"])
            step = -(-rows // chunks)
            return [Range(low, min(low + step - 1, rows)) for low in range(1, rows + 1, step)]

        def read(self, partition: Range) -> Iterator[Any]:  # type: ignore[override]
            import adbc_driver_postgresql.dbapi as adbc
            import pyarrow as pa

            from cdc.spark.arrow_events import arrow_schema, snapshot_batches

            schema = arrow_schema(envelope)
            with adbc.connect(self.options["uri"]) as conn, conn.cursor() as cur:
                cur.execute("SELECT id, name, amount, created, flag, note FROM bench "
                            f"WHERE id BETWEEN {partition.low} AND {partition.high}")
                table = cur.fetch_arrow_table()
            shape = self.options["shape"]
            if shape == "flat":
                after = pa.schema(list(schema.field("after").type))
                for batch in table.to_batches():
                    yield pa.RecordBatch.from_arrays([batch.column(i).cast(after.field(i).type)
                                                      for i in range(len(after))], schema=after)
                return
            for batch in snapshot_batches(table, schema, SOURCE_BLOCK, 1, "public.bench"):
                if shape == "no-source":
                    index = batch.schema.get_field_index("source")
                    batch = batch.set_column(index, batch.schema.field(index),
                                             pa.nulls(batch.num_rows, batch.schema.field(index).type))
                yield batch

    class Shapes(DataSource):
        @classmethod
        def name(cls) -> str:
            return "cdc_probe_shapes"

        def schema(self) -> Any:
            return envelope["after"].dataType if self.options["shape"] == "flat" else envelope

        def reader(self, schema: Any) -> Reader:
            return Reader(dict(self.options))

    return Shapes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from cdc.spark import local_session, register

    cores = int(args.master.removeprefix("local").strip("[]") or 1)
    chunks = 2 * cores
    print(f"python {sys.version.split()[0]}; 10-million-step loop: {loop_seconds():.2f} s; {args.master}, "
          f"{args.rows:,} rows in {chunks} chunks")
    spark = local_session("cdc-probe", conf={"spark.master": args.master, "spark.sql.shuffle.partitions": str(cores)})
    register(spark)
    with scratch_database() as props, tempfile.TemporaryDirectory() as tmp:
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            conn.execute(TABLE)
            load(conn, args.rows, 100_000)
            conn.execute("VACUUM ANALYZE bench")
        reader = spark.readStream.format("cdc").option("source", "postgres").option("table", "public.bench")
        for key in ("database.hostname", "database.port", "database.user", "database.dbname"):
            reader = reader.option(key, props[key])
        spark.dataSource.register(_data_source(reader.load().schema))
        url = f"jdbc:postgresql://{props['database.hostname']}:{props['database.port']}/{props['database.dbname']}"

        def jdbc(target: str) -> None:
            (spark.read.format("jdbc").option("url", url).option("dbtable", "bench")
             .option("user", props["database.user"]).option("driver", "org.postgresql.Driver")
             .option("fetchsize", "10000").option("partitionColumn", "id").option("lowerBound", "1")
             .option("upperBound", str(args.rows)).option("numPartitions", str(chunks)).load()
             .write.format("delta").save(target))

        def shaped(shape: str) -> Callable[[str], None]:
            def write(target: str) -> None:
                rows = (spark.read.format("cdc_probe_shapes").option("shape", shape).option("rows", str(args.rows))
                        .option("chunks", str(chunks)).option("uri", props["dsn"]).load())
                (rows if shape == "flat" else rows.select("after.*")).write.format("delta").save(target)
            return write

        ways: dict[str, Callable[[str], None]] = {"jdbc": jdbc, **{shape: shaped(shape) for shape in SHAPES}}
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        for run in range(args.runs + 1):  # the first round warms the session up
            for way, write in ways.items():
                started = time.perf_counter()
                write(f"{tmp}/{way}{run}")
                seconds[way].append(round(time.perf_counter() - started, 2))
    spark.stop()
    print("seconds (the first: warming up):", json.dumps(seconds))
    jdbc_best = min(seconds["jdbc"][1:])
    for way in ways:
        measured = seconds[way][1:]
        print(f"  {way:10s} {min(measured):.2f}-{max(measured):.2f} s; JDBC's best / its best: "
              f"{jdbc_best / min(measured):.2f}")


if __name__ == "__main__":
    main()
