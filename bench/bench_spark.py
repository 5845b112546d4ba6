"""Spark: the cdc source into a Delta table, next to ``spark.read.jdbc`` of the same table into Delta.

    python bench/bench_spark.py [--rows 1000000] [--changes 200000] [--runs 1]

The 10-million-step loop time of the machine is printed first (CPython's speed varies 3-4x between
machines of the same kind here): compare ratios, not rates, between runs.

In one run, on the same scratch table (bench_postgres.TABLE, six columns):
1. snapshot, at local[1] and local[2] (a Spark session each, in a child process): ROWS rows by
   ``readStream.format("cdc")`` (snapshot in 2 x cores key chunks, read by the executors) ->
   ``apply_changes`` (Delta MERGE), against ``spark.read.jdbc`` with ``partitionColumn``/
   ``numPartitions`` equal to the same number of chunks -> Delta; rows/s and the ratio, and the
   scaling from one core to two;
2. streaming (local[2]): CHANGES updates, 1,000 per transaction, made after the snapshot, applied
   to the same Delta table: changes/s from the first update to the last applied change. Before
   them, 1,000 other updates warm the session up (its first MERGE compiles for 5-9 s, once per
   session); their time is printed apart. Then the reference: the same number of updates applied
   by ``apply_changes``' own MERGE alone, with nothing else running.

The foreachBatch function is ``apply_changes`` as a user calls it: the micro-batch is not cached
first by the bench (a snapshot written by append reads its source once); the rows of each
micro-batch are counted from the query's progress. Streamed micro-batches are cached and counted
first, so each one's read and its MERGE are timed apart.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_postgres import TABLE, load  # noqa: E402
from bench.common import loop_seconds, scratch_database  # noqa: E402

MAX_ROWS_PER_BATCH = [300_000]  # --max-rows-per-batch
MIN_ROWS_PER_BATCH = [0]  # --min-rows-per-batch (with maxTriggerDelay 5s)


def _reader(spark: Any, props: dict[str, str], slot: str, chunk_rows: int) -> Any:
    reader = spark.readStream.format("cdc").option("source", "postgres").option("table", "public.bench")
    for key in ("database.hostname", "database.port", "database.user", "database.dbname"):
        reader = reader.option(key, props[key])
    return (reader.option("slot.name", slot).option("publication.name", slot)
            .option("snapshotChunkRows", str(chunk_rows)).option("maxRowsPerBatch", str(MAX_ROWS_PER_BATCH[0]))
            .option("minRowsPerBatch", str(MIN_ROWS_PER_BATCH[0])).option("maxTriggerDelay", "5s"))


def merge_alone(spark: Any, target: str, changes: int, merge: Any) -> float:
    """The reference for streaming: the same number of updates applied by apply_changes' own MERGE
    (``merge``, unwrapped), in batches of ``maxRowsPerBatch`` rows taken from the target itself, with
    nothing else running: what Delta alone does on this machine today."""
    from pyspark.sql import functions as F

    table = spark.read.format("delta").load(target)
    columns = table.columns
    started = time.perf_counter()
    step = MAX_ROWS_PER_BATCH[0]
    for low in range(1, changes + 1, step):
        high = min(low + step - 1, changes)
        batch = (table.where(F.col("id").between(low, high)).withColumn("note", F.lit("merged alone"))
                 .withColumn("_op", F.lit("u")).withColumn("_seq", F.col("id")).persist())
        batch.count()
        merge(spark, target, batch, ["id"], columns, (low, high))
        batch.unpersist()
    return changes / (time.perf_counter() - started)


def run_snapshot(props: dict[str, str], rows: int, master: str, changes: int) -> dict[str, Any]:
    """In this process: one Spark session at ``master``; jdbc, then ours (then, optionally, streaming)."""
    from cdc.spark import local_session, register
    from cdc.spark.apply import apply_changes

    cores = int(master.removeprefix("local").strip("[]") or 1)
    chunks = 2 * cores
    spark = local_session("cdc-bench", conf={"spark.master": master, "spark.sql.shuffle.partitions": str(cores)})
    register(spark)
    out: dict[str, Any] = {"master": master, "chunks": chunks}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"jdbc:postgresql://{props['database.hostname']}:{props['database.port']}/{props['database.dbname']}"
        started = time.perf_counter()
        (spark.read.format("jdbc").option("url", url).option("dbtable", "bench").option("user", props["database.user"])
         .option("driver", "org.postgresql.Driver").option("fetchsize", "10000")
         .option("partitionColumn", "id").option("lowerBound", "1").option("upperBound", str(rows))
         .option("numPartitions", str(chunks)).load()
         .write.format("delta").save(f"{tmp}/jdbc"))
        out["jdbc_rows_s"] = rows / (time.perf_counter() - started)

        stamps: dict[int, tuple[float, float, float]] = {}  # batch id -> began, read (counted), applied
        streaming = [False]  # streamed micro-batches are cached and counted first (timed apart from the MERGE)

        from cdc.spark import apply as applying
        merge_s: list[float] = []  # each MERGE's own time (inside apply_changes)
        merge = applying._merge_delta_scd1

        def timed_merge(*args: Any, **kwargs: Any) -> None:
            began = time.perf_counter()
            merge(*args, **kwargs)
            merge_s.append(round(time.perf_counter() - began, 1))
        applying._merge_delta_scd1 = timed_merge

        def apply(batch: Any, batch_id: int) -> None:
            began = counted = time.perf_counter()
            if streaming[0]:
                batch = batch.persist()  # counted here, then applied: the source is read once
                batch.count()
                counted = time.perf_counter()
            apply_changes(batch, f"{tmp}/target", ["id"], format="delta")
            if streaming[0]:
                batch.unpersist()
            stamps[batch_id] = (began, counted, time.perf_counter())

        seen: dict[int, int] = {}  # batch id -> rows, from the query's progress

        def applied_rows(query: Any) -> int:
            for progress in query.recentProgress:
                if progress["batchId"] in stamps:
                    seen[progress["batchId"]] = int(progress["numInputRows"])
            if not query.isActive:
                raise RuntimeError(f"the query stopped: {query.exception()}")
            return sum(seen.values())

        def wait_for(query: Any, total: int) -> float:
            """Waits until ``total`` rows were applied in all; when the last of them was."""
            while applied_rows(query) < total:
                time.sleep(0.1)
            return max(stamps[b][2] for b in seen)

        slot = f"bench_{cores}"
        started = time.perf_counter()
        query = (_reader(spark, props, slot, -(-rows // chunks)).load().writeStream.foreachBatch(apply)
                 .option("checkpointLocation", f"{tmp}/ck").trigger(processingTime="1 second").start())
        out["cdc_rows_s"] = rows / (wait_for(query, rows) - started)
        out["batches"] = [(b, seen[b], round(stamps[b][2] - started, 1)) for b in sorted(seen)]
        out["target_rows"] = spark.read.format("delta").load(f"{tmp}/target").count()
        streaming[0] = True
        if changes:
            # The session's first MERGE compiles its code paths (5-9 s here, once per session): 1,000
            # updates beyond the measured ones go first, and their time is printed on its own.
            warm = applied_rows(query)
            started = time.perf_counter()
            with psycopg.connect(props["dsn"], autocommit=True) as conn:
                conn.execute("UPDATE bench SET note = 'warm-up' WHERE id > %s AND id <= %s", (changes, changes + 1000))
            out["warm_up_s"] = round(wait_for(query, warm + 1000) - started, 1)
            before = applied_rows(query)
            merges_before = len(merge_s)
            started = time.perf_counter()

            def update() -> None:
                with psycopg.connect(props["dsn"], autocommit=True) as conn:
                    for first in range(1, changes + 1, 1000):
                        conn.execute("UPDATE bench SET note = 'changed' WHERE id BETWEEN %s AND %s",
                                     (first, first + 999))
                out["writer_s"] = round(time.perf_counter() - started, 1)
            writer = threading.Thread(target=update)
            writer.start()
            done = wait_for(query, before + changes)
            writer.join()
            out["streaming_changes_s"] = changes / (done - started)
            # per micro-batch: id, rows, when its apply began, when the batch was read (counted), when applied
            out["streaming_batches"] = [(b, seen[b], *(round(t - started, 1) for t in stamps[b]))
                                        for b in sorted(seen) if stamps[b][2] > started]
            out["merge_s"] = merge_s[merges_before:]
            out["changed_in_target"] = (spark.read.format("delta").load(f"{tmp}/target")
                                        .where("note = 'changed'").count())
        query.stop()
        if changes:
            out["merge_alone_changes_s"] = merge_alone(spark, f"{tmp}/target", changes, merge)
    spark.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--max-rows-per-batch", type=int, default=300_000,
                        help="the reader's maxRowsPerBatch (a MERGE costs about 3 s whatever its size)")
    parser.add_argument("--min-rows-per-batch", type=int, default=0,
                        help="format('cdc')'s minRowsPerBatch (a trigger with fewer rows waits up to 5 s)")
    parser.add_argument("--streaming-only", action="store_true", help="only the local[2] run (snapshot + streaming)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # master, props json: one measurement
    args = parser.parse_args()
    MAX_ROWS_PER_BATCH[0] = args.max_rows_per_batch
    MIN_ROWS_PER_BATCH[0] = args.min_rows_per_batch
    if args.child:
        master, props = args.child.split(" ", 1)
        print(json.dumps(run_snapshot(json.loads(props), args.rows, master, args.changes)))
        return
    print(f"python {sys.version.split()[0]}; 10-million-step loop: {loop_seconds():.2f} s; code at {ROOT}")
    for run in range(args.runs):
        with scratch_database() as props:
            with psycopg.connect(props["dsn"], autocommit=True) as conn:
                conn.execute(TABLE)
                load(conn, args.rows, 100_000)
                conn.execute("VACUUM ANALYZE bench")
            results = {}
            runs = ((("local[2]", args.changes),) if args.streaming_only
                    else (("local[1]", 0), ("local[2]", args.changes)))
            for master, changes in runs:
                child = subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--changes", str(changes),
                                        "--max-rows-per-batch", str(args.max_rows_per_batch),
                                        "--min-rows-per-batch", str(args.min_rows_per_batch),
                                        "--child", f"{master} {json.dumps(props)}"],
                                       capture_output=True, text=True, check=False)
                if child.returncode != 0:
                    print(child.stderr[-3000:])
                    raise SystemExit(f"the {master} run failed")
                results[master] = json.loads(child.stdout.strip().splitlines()[-1])
            two = results["local[2]"]
            one = results.get("local[1]")
            for r in (one, two) if one else (two,):
                assert r["target_rows"] == args.rows, r
                print(f"run {run + 1} {r['master']}: snapshot {args.rows:,} rows in {r['chunks']} chunks -> Delta: "
                      f"cdc {r['cdc_rows_s']:,.0f} rows/s, spark.read.jdbc {r['jdbc_rows_s']:,.0f} rows/s, "
                      f"ratio {r['cdc_rows_s'] / r['jdbc_rows_s']:.2f}; "
                      f"micro-batches (id, rows, s): {r['batches'][:4]}")
            if one:
                print(f"run {run + 1}: scaling local[1] -> local[2]: cdc {two['cdc_rows_s'] / one['cdc_rows_s']:.2f}x, "
                      f"jdbc {two['jdbc_rows_s'] / one['jdbc_rows_s']:.2f}x")
            if args.changes:
                assert two["changed_in_target"] == args.changes, two
                print(f"run {run + 1} local[2]: streaming {args.changes:,} changes applied (Delta MERGE) at "
                      f"{two['streaming_changes_s']:,.0f} changes/s (the writer took {two['writer_s']} s; "
                      f"before them, 1,000 "
                      f"updates took {two['warm_up_s']} s: the session's first MERGE); "
                      f"micro-batches (id, rows, apply began, read, applied; s): {two['streaming_batches']}; "
                      f"of which the MERGEs: {two['merge_s']} s")
                print(f"run {run + 1} local[2]: the same {args.changes:,} updates by the MERGE alone (batches of "
                      f"{args.max_rows_per_batch:,} taken from the target, nothing else running): "
                      f"{two['merge_alone_changes_s']:,.0f} changes/s; streaming end to end / MERGE alone: "
                      f"{two['streaming_changes_s'] / two['merge_alone_changes_s']:.2f}")


if __name__ == "__main__":
    main()
