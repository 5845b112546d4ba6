"""Spark: the cdc source into a Delta table, next to ``spark.read.jdbc`` of the same table into Delta.

    python bench/bench_spark.py [--rows 1000000] [--changes 200000] [--runs 1]

The 10-million-step loop time of the machine is printed first (CPython's speed varies 3-4x between
machines of the same kind here): compare ratios, not rates, between runs.

In one run, on the same scratch table (bench_postgres.TABLE, six columns):
1. snapshot, at local[1] and local[2] (a Spark session each, in a child process, warmed up first on a
   1,000-row table, then the three ways alternately --snapshot-runs times): ROWS rows by
   ``readStream.format("cdc")`` (snapshot in 2 x cores key chunks, read by the executors) ->
   ``apply_changes`` (a new target: written, no MERGE), against ``spark.read.jdbc`` with ``partitionColumn``/
   ``numPartitions`` equal to the same number of chunks -> Delta; and by run_changes' snapshot
   (``snapshot_into``: Spark's JDBC reader over the same chunks in the slot's exported snapshot), timed
   until the snapshot is in the target, and until its stream has run a micro-batch; rows/s and the
   ratios, and the scaling from one core to two;
2. streaming (local[2]): CHANGES updates, 1,000 per transaction, made after the snapshot, applied
   to the same Delta table: changes/s from the first update to the last applied change. Before
   them, 1,000 other updates warm the session up (its first MERGE compiles for 5-9 s, once per
   session); their time is printed apart. Then the reference: the same updates applied by
   ``apply_changes``' own MERGE alone, with the query stopped. Both ways alternately,
   --streaming-runs times (each round on its own keys; the query restarted from its checkpoint
   and idle before the next round), so neither is measured alone in a colder JVM than the other.

The foreachBatch function is ``apply_changes`` as a user calls it: the micro-batch is not cached
first by the bench; the rows of each micro-batch are counted from the query's progress. Each MERGE's
begin and end are printed with each micro-batch's: the time between a batch's begin and its MERGE's
is its reading (and summing up) in Spark.
"""
from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_postgres import TABLE, load  # noqa: E402
from bench.common import loop_seconds, scratch_database  # noqa: E402

MAX_ROWS_PER_BATCH = [300_000]  # --max-rows-per-batch
MIN_ROWS_PER_BATCH = [0]  # --min-rows-per-batch (with maxTriggerDelay 5s)
STREAMING_RUNS = [2]  # --streaming-runs


def _reader(spark: Any, props: dict[str, str], slot: str, chunk_rows: int, table: str = "public.bench") -> Any:
    reader = spark.readStream.format("cdc").option("source", "postgres").option("table", table)
    for key in ("database.hostname", "database.port", "database.user", "database.dbname"):
        reader = reader.option(key, props[key])
    return (reader.option("slot.name", slot).option("publication.name", slot)
            .option("snapshotChunkRows", str(chunk_rows)).option("maxRowsPerBatch", str(MAX_ROWS_PER_BATCH[0]))
            .option("minRowsPerBatch", str(MIN_ROWS_PER_BATCH[0])).option("maxTriggerDelay", "5s"))


class Applied:
    """A query's foreachBatch (``apply_changes`` into ``target``, as a user calls it: the micro-batch is
    not cached first) and what it applied: each micro-batch's rows (from the query's progress) and when
    its apply began and ended."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.stamps: dict[int, tuple[float, float]] = {}
        self.seen: dict[int, int] = {}

    def __call__(self, batch: Any, batch_id: int) -> None:
        from cdc.spark.apply import apply_changes

        began = time.perf_counter()
        apply_changes(batch, self.target, ["id"], format="delta")
        self.stamps[batch_id] = (began, time.perf_counter())

    def rows(self, query: Any) -> int:
        for progress in query.recentProgress:
            if progress["batchId"] in self.stamps:
                self.seen[progress["batchId"]] = int(progress["numInputRows"])
        if not query.isActive:
            raise RuntimeError(f"the query stopped: {query.exception()}")
        return sum(self.seen.values())

    def wait_for(self, query: Any, total: int) -> float:
        """Waits until ``total`` rows were applied in all; when the last of them was."""
        while self.rows(query) < total:
            time.sleep(0.1)
        return max(self.stamps[b][1] for b in self.seen)


def _jdbc_seconds(spark: Any, props: dict[str, str], table: str, rows: int, chunks: int, target: str) -> float:
    url = f"jdbc:postgresql://{props['database.hostname']}:{props['database.port']}/{props['database.dbname']}"
    started = time.perf_counter()
    (spark.read.format("jdbc").option("url", url).option("dbtable", table).option("user", props["database.user"])
     .option("driver", "org.postgresql.Driver").option("fetchsize", "10000")
     .option("partitionColumn", "id").option("lowerBound", "1").option("upperBound", str(rows))
     .option("numPartitions", str(chunks)).load()
     .write.format("delta").save(target))
    return time.perf_counter() - started


def _snapshot(spark: Any, props: dict[str, str], table: str, rows: int, chunks: int, slot: str,
              tmp: str) -> tuple[Any, Applied, float]:
    """format("cdc") of ``table`` into a new Delta target: the query (still running), its foreachBatch,
    and the seconds from its start to the last snapshot row applied."""
    applied = Applied(f"{tmp}/{slot}")
    started = time.perf_counter()
    query = _start(spark, props, slot, -(-rows // chunks), table, applied, tmp)
    return query, applied, applied.wait_for(query, rows) - started


def _start(spark: Any, props: dict[str, str], slot: str, chunk_rows: int, table: str, applied: Applied,
           tmp: str) -> Any:
    """The query (from its checkpoint when it ran before)."""
    return (_reader(spark, props, slot, chunk_rows, table).load().writeStream.foreachBatch(applied)
            .option("checkpointLocation", f"{tmp}/{slot}_ck").trigger(processingTime="1 second").start())


def merge_alone(spark: Any, target: str, first: int, changes: int, merge: Any) -> float:
    """The reference for streaming: ``changes`` updates (keys from ``first`` on) applied by apply_changes' own
    MERGE (``merge``, unwrapped), in batches of ``maxRowsPerBatch`` rows taken from the target itself, with
    nothing else running: what Delta alone does on this machine today."""
    from pyspark.sql import functions as F

    table = spark.read.format("delta").load(target)
    columns = table.columns
    started = time.perf_counter()
    step = MAX_ROWS_PER_BATCH[0]
    for low in range(first, first + changes, step):
        high = min(low + step - 1, first + changes - 1)
        batch = (table.where(F.col("id").between(low, high)).withColumn("note", F.lit("merged alone"))
                 .withColumn("_op", F.lit("u")).withColumn("_seq", F.col("id")).persist())
        batch.count()
        merge(spark, target, batch, ["id"], columns, (low, high))
        batch.unpersist()
    return changes / (time.perf_counter() - started)


class _JdbcSnapshotLog(logging.Handler):
    """The seconds cdc.spark.jdbc_snapshot logs its plan took (the slot, its exported snapshot, the chunks)."""

    planned_s = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("snapshot of %s planned in"):
            _JdbcSnapshotLog.planned_s = float(record.args[1])  # type: ignore[index]


PLANNED_S: list[float] = []


def _jdbc_snapshot(spark: Any, props: dict[str, str], table: str, rows: int, chunks: int, slot: str,
                   tmp: str) -> tuple[float, float]:
    """run_changes' snapshot of a new target (snapshot="auto": Spark's JDBC reader in the slot's exported snapshot,
    cdc.spark.jdbc_snapshot), then its stream: the seconds until the snapshot is in the target, and until the
    streaming query has run its first micro-batch after it."""
    from cdc.spark.jdbc_snapshot import log as snapshot_log
    from cdc.spark.jdbc_snapshot import snapshot_into
    from cdc.spark.options import STARTING_OFFSET

    if not any(isinstance(h, _JdbcSnapshotLog) for h in snapshot_log.handlers):
        snapshot_log.addHandler(_JdbcSnapshotLog())
        snapshot_log.setLevel(logging.INFO)

    options = {"source": "postgres", "table": table, "slot.name": slot, "publication.name": slot,
               "snapshotChunkRows": str(-(-rows // chunks)),
               **{k: props[k] for k in ("database.hostname", "database.port", "database.user", "database.dbname")}}
    applied = Applied(f"{tmp}/{slot}")
    started = time.perf_counter()
    options = snapshot_into(spark, options, applied.target, ["id"], checkpoint=f"{tmp}/{slot}_ck", mode="jdbc")
    in_target = time.perf_counter() - started
    PLANNED_S.append(_JdbcSnapshotLog.planned_s)
    assert STARTING_OFFSET.name in options
    query = (spark.readStream.format("cdc").options(**options).load().writeStream.foreachBatch(applied)
             .option("checkpointLocation", f"{tmp}/{slot}_ck").trigger(processingTime="1 second").start())
    _idle(query, applied)
    streaming = time.perf_counter() - started
    query.stop()
    _drop_slot(props, slot)
    return in_target, streaming


def _drop_slot(props: dict[str, str], slot: str) -> None:
    """A measured run's slot, once its query stopped (the server's max_replication_slots is 20 here)."""
    with psycopg.connect(props["dsn"], autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s "
                     "AND NOT active", (slot,))


def run_snapshot(props: dict[str, str], rows: int, master: str, changes: int, runs: int) -> dict[str, Any]:
    """In this process: one Spark session at ``master``. First a warm-up of both ways on a 1,000-row
    table (a session's first Delta write and first Python data source pay their start-up: seconds),
    then jdbc and ours alternately ``runs`` times, then (optionally) streaming into ours' last target."""
    from cdc.spark import local_session, register

    cores = int(master.removeprefix("local").strip("[]") or 1)
    chunks = 2 * cores
    spark = local_session("cdc-bench", conf={"spark.master": master, "spark.sql.shuffle.partitions": str(cores)})
    register(spark)
    out: dict[str, Any] = {"master": master, "chunks": chunks, "jdbc_rows_s": [], "cdc_rows_s": [],
                           "run_changes_rows_s": [], "run_changes_streaming_s": []}
    with psycopg.connect(props["dsn"], autocommit=True) as conn:
        conn.execute(f"CREATE TABLE warm_{cores} AS SELECT * FROM bench WHERE id <= 1000")
        conn.execute(f"ALTER TABLE warm_{cores} ADD PRIMARY KEY (id)")
    with tempfile.TemporaryDirectory() as tmp:
        _jdbc_seconds(spark, props, f"warm_{cores}", 1000, chunks, f"{tmp}/jdbc_warm")
        tag = props["database.dbname"].removeprefix("bench_")  # slots are the server's: one name per run
        _snapshot(spark, props, f"public.warm_{cores}", 1000, chunks, f"warm_{cores}_{tag}", tmp)[0].stop()
        _drop_slot(props, f"warm_{cores}_{tag}")
        _jdbc_snapshot(spark, props, f"public.warm_{cores}", 1000, chunks, f"warm_j{cores}_{tag}", tmp)
        for run in range(runs):
            out["jdbc_rows_s"].append(rows / _jdbc_seconds(spark, props, "bench", rows, chunks, f"{tmp}/jdbc{run}"))
            in_target, streaming = _jdbc_snapshot(spark, props, "public.bench", rows, chunks,
                                                  f"bench_j{cores}_{run}_{tag}", tmp)
            out["run_changes_rows_s"].append(rows / in_target)
            out["run_changes_streaming_s"].append(round(streaming, 2))
            out["run_changes_planned_s"] = [round(s, 2) for s in PLANNED_S[1:]]  # (the first: the warm-up's)
            slot = f"bench_{cores}_{run}_{tag}"
            query, applied, seconds = _snapshot(spark, props, "public.bench", rows, chunks, slot, tmp)
            out["cdc_rows_s"].append(rows / seconds)
            out["batches"] = [(b, applied.seen[b], round(applied.stamps[b][1] - applied.stamps[b][0], 1))
                              for b in sorted(applied.seen)]
            out["target_rows"] = spark.read.format("delta").load(applied.target).count()
            if run < runs - 1:
                query.stop()
                _drop_slot(props, slot)
        if changes:
            restart = lambda: _start(spark, props, slot, -(-rows // chunks), "public.bench", applied, tmp)  # noqa: E731
            out.update(_streaming(spark, props, query, applied, changes, STREAMING_RUNS[0], restart))
        else:
            query.stop()
    spark.stop()
    return out


def _streaming(spark: Any, props: dict[str, str], query: Any, applied: Applied, changes: int, rounds: int,
               restart: Callable[[], Any]) -> dict[str, Any]:
    """A warm-up of 1,000 updates, then ``rounds`` times: ``changes`` updates, 1,000 a transaction, through the
    running query (changes/s from the first update to the last applied change, and each micro-batch's
    times), then the query stopped and the same keys' updates by the MERGE alone; the query restarted."""
    from cdc.spark import apply as applying

    out: dict[str, Any] = {"streaming_changes_s": [], "merge_alone_changes_s": [], "changed_in_target": [],
                           "writer_s": [], "streaming_batches": [], "merges": []}
    merges: list[tuple[float, float]] = []  # each MERGE's begin and end (inside apply_changes)
    merge = applying._merge_delta_scd1

    def timed_merge(*args: Any, **kwargs: Any) -> None:
        began = time.perf_counter()
        merge(*args, **kwargs)
        merges.append((began, time.perf_counter()))
    applying._merge_delta_scd1 = timed_merge
    try:
        # The session's first MERGE compiles its code paths (5-9 s here, once per session): 1,000
        # updates beyond the measured ones go first, and their time is printed on its own.
        warm = applied.rows(query)
        started = time.perf_counter()
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            conn.execute("UPDATE bench SET note = 'warm-up' WHERE id > %s AND id <= %s",
                         (rounds * changes, rounds * changes + 1000))
        out["warm_up_s"] = round(applied.wait_for(query, warm + 1000) - started, 1)
        for round_ in range(rounds):
            if round_:
                query = _idle(restart(), applied)
            first = round_ * changes + 1
            before = applied.rows(query)
            started = time.perf_counter()

            def update(first: int = first, note: str = f"changed {round_}", started: float = started) -> None:
                with psycopg.connect(props["dsn"], autocommit=True) as conn:
                    for low in range(first, first + changes, 1000):
                        conn.execute("UPDATE bench SET note = %s WHERE id BETWEEN %s AND %s", (note, low, low + 999))
                out["writer_s"].append(round(time.perf_counter() - started, 1))
            writer = threading.Thread(target=update)
            writer.start()
            done = applied.wait_for(query, before + changes)
            writer.join()
            out["streaming_changes_s"].append(changes / (done - started))
            # per micro-batch: id, rows, when its apply began, when it was applied; each MERGE's begin and end
            # (between a batch's begin and its MERGE's, the batch is read and summed up)
            out["streaming_batches"].append([(b, applied.seen[b], *(round(t - started, 1) for t in applied.stamps[b]))
                                             for b in sorted(applied.seen) if applied.stamps[b][1] > started])
            out["merges"].append([(round(began - started, 1), round(end - started, 1))
                                  for began, end in merges if began > started])
            out["changed_in_target"].append(spark.read.format("delta").load(applied.target)
                                            .where(f"note = 'changed {round_}'").count())
            query.stop()
            out["merge_alone_changes_s"].append(merge_alone(spark, applied.target, first, changes, merge))
    finally:
        applying._merge_delta_scd1 = merge
    return out


def _idle(query: Any, applied: Applied) -> Any:
    """``query`` once it runs micro-batches again (a restarted query's first trigger starts its Python reader)."""
    seen = len(query.recentProgress)
    while len(query.recentProgress) <= seen:
        applied.rows(query)  # raises if the query stopped
        time.sleep(0.1)
    return query


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--snapshot-runs", type=int, default=2,
                        help="jdbc and ours alternately, this many times each, in each Spark session")
    parser.add_argument("--max-rows-per-batch", type=int, default=300_000,
                        help="the reader's maxRowsPerBatch (a MERGE costs about 3 s whatever its size)")
    parser.add_argument("--min-rows-per-batch", type=int, default=0,
                        help="format('cdc')'s minRowsPerBatch (a trigger with fewer rows waits up to 5 s)")
    parser.add_argument("--streaming-runs", type=int, default=2,
                        help="streaming and the MERGE alone alternately, this many times each (CHANGES updates each)")
    parser.add_argument("--streaming-only", action="store_true", help="only the local[2] run (snapshot + streaming)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # master, props json: one measurement
    args = parser.parse_args()
    MAX_ROWS_PER_BATCH[0] = args.max_rows_per_batch
    MIN_ROWS_PER_BATCH[0] = args.min_rows_per_batch
    STREAMING_RUNS[0] = args.streaming_runs
    if args.changes and args.streaming_runs * args.changes + 1000 > args.rows:
        parser.error("each streaming round updates its own keys, and 1,000 more warm up: "
                     "--rows must be at least --streaming-runs x --changes + 1,000")
    if args.child:
        master, props = args.child.split(" ", 1)
        print(json.dumps(run_snapshot(json.loads(props), args.rows, master, args.changes, args.snapshot_runs)))
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
                                        "--snapshot-runs", str(args.snapshot_runs),
                                        "--streaming-runs", str(args.streaming_runs),
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
                ratios = [c / j for c, j in zip(r["cdc_rows_s"], r["jdbc_rows_s"], strict=True)]
                print(f"run {run + 1} {r['master']}: snapshot {args.rows:,} rows in {r['chunks']} chunks -> Delta, "
                      f"alternately after a warm-up: cdc {_range(r['cdc_rows_s'])} rows/s, spark.read.jdbc "
                      f"{_range(r['jdbc_rows_s'])} rows/s, ratio {_range(ratios, '.2f')}; "
                      f"micro-batches (id, rows, s): {r['batches'][:4]}")
                jvm = [c / j for c, j in zip(r["run_changes_rows_s"], r["jdbc_rows_s"], strict=True)]
                print(f"run {run + 1} {r['master']}: run_changes' snapshot (Spark's JDBC reader in the exported "
                      f"snapshot) {_range(r['run_changes_rows_s'])} rows/s until the snapshot is in the target, "
                      f"ratio to spark.read.jdbc {_range(jvm, '.2f')} (of which planning "
                      f"{_range(r['run_changes_planned_s'], '.2f')} s); its stream running after "
                      f"{_range(r['run_changes_streaming_s'], '.1f')} s")
                print("  run by run, rows/s (spark.read.jdbc, format('cdc'), run_changes): " + ", ".join(
                    f"({j:,.0f}, {c:,.0f}, {k:,.0f})" for j, c, k in zip(r["jdbc_rows_s"], r["cdc_rows_s"],
                                                                       r["run_changes_rows_s"], strict=True)))
            if one:
                print(f"run {run + 1}: scaling local[1] -> local[2] (best of each): cdc "
                      f"{max(two['cdc_rows_s']) / max(one['cdc_rows_s']):.2f}x, run_changes "
                      f"{max(two['run_changes_rows_s']) / max(one['run_changes_rows_s']):.2f}x, "
                      f"jdbc {max(two['jdbc_rows_s']) / max(one['jdbc_rows_s']):.2f}x")
            if args.changes:
                assert two["changed_in_target"] == [args.changes] * args.streaming_runs, two
                ratios = [c / m for c, m in zip(two["streaming_changes_s"], two["merge_alone_changes_s"], strict=True)]
                print(f"run {run + 1} local[2]: streaming {args.changes:,} changes applied (Delta MERGE), "
                      f"{args.streaming_runs} rounds alternating with the MERGE alone (batches of "
                      f"{args.max_rows_per_batch:,} taken from the target, the query stopped): streaming "
                      f"{_range(two['streaming_changes_s'])} changes/s, the MERGE alone "
                      f"{_range(two['merge_alone_changes_s'])} changes/s; streaming end to end / MERGE alone, "
                      f"round by round: {', '.join(f'{r:.2f}' for r in ratios)} (before them, 1,000 updates took "
                      f"{two['warm_up_s']} s: the session's first MERGE; the writer took {two['writer_s']} s)")
                for round_, (batches, merges) in enumerate(zip(two["streaming_batches"], two["merges"], strict=True)):
                    print(f"  round {round_ + 1}: micro-batches (id, rows, apply began, applied; s): {batches}; "
                          f"their MERGEs (began, ended; s): {merges}")


def _range(values: list[float], form: str = ",.0f") -> str:
    low, high = min(values), max(values)
    return f"{low:{form}}" if f"{low:{form}}" == f"{high:{form}}" else f"{low:{form}}-{high:{form}}"


if __name__ == "__main__":
    main()
