"""apply_changes with values the source did not send (unchanged TOASTed values) into a large Delta target.

    python bench/bench_spark_unavailable.py [--rows 1000000] [--rounds 4]

A Delta SCD1 target of ROWS rows with 5 kB text bodies, written in key order (as cdc's snapshot
writes it), then micro-batches of 3 updates of keys far apart, applied by ``apply_changes``, in two
ways alternately: the updates with their body (the reference: a MERGE), and the same updates without it
(``_unavailable`` = body: the body comes from the target's row). Seconds per micro-batch of each way
and their ratio; the first round warms the session up and is left out. No server: Spark and Delta only.
"""
from __future__ import annotations

import argparse
import hashlib
import tempfile
import time

from bench.common import loop_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    print(f"loop time: {loop_seconds():.2f} s")

    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from cdc.spark import local_session
    from cdc.spark.apply import apply_changes
    from cdc.spark.schema import event_schema

    spark = local_session("bench-unavailable")
    n = args.rows
    row = T.StructType([T.StructField("id", T.IntegerType(), False), T.StructField("title", T.StringType()),
                        T.StructField("body", T.StringType()), T.StructField("n", T.IntegerType())])
    schema = event_schema(row)
    target = tempfile.mkdtemp(prefix="bench-unavailable-") + "/t"
    (spark.range(1, n + 1).select(F.col("id").cast("int").alias("id"), F.concat(F.lit("t"), F.col("id")).alias("title"),
                                  F.repeat(F.md5(F.col("id").cast("string")), 160).alias("body"), F.lit(0).alias("n"))
     .write.format("delta").option("delta.enableDeletionVectors", "true").save(target))
    keys = (7, n // 2, n - 3)
    seconds: dict[str, list[float]] = {"with the body": [], "without it": []}
    seq = 10
    for round_ in range(args.rounds):
        for way in seconds:
            events = []
            for key in keys:
                seq += 1
                lacking = way == "without it"
                body = "__debezium_unavailable_value" if lacking else hashlib.md5(str(key).encode()).hexdigest() * 160
                events.append(("u", None, (key, f"t{key}", body, round_ + 1), None, 0, "public.docs", seq,
                               ["body"] if lacking else None, None))
            batch = spark.createDataFrame(events, schema)
            started = time.perf_counter()
            apply_changes(batch, target, ["id"], format="delta")
            if round_:
                seconds[way].append(time.perf_counter() - started)
    rows = spark.read.format("delta").load(target).where(F.col("id").isin(*keys)).collect()
    assert all(r["n"] == args.rounds and len(r["body"]) == 5120 for r in rows), rows  # the target's body kept
    for way, times in seconds.items():
        print(f"{way}: {min(times):.2f}-{max(times):.2f} s a micro-batch of 3 updates into {n:,} rows")
    ratio = [a / b for a, b in zip(seconds["without it"], seconds["with the body"], strict=True)]
    print(f"without / with: {min(ratio):.2f}-{max(ratio):.2f}x")
    spark.stop()


if __name__ == "__main__":
    main()
