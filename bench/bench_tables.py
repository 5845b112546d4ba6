"""Costs with many tables: does a pipeline's cost stay flat as the number of captured tables grows?

    python bench/bench_tables.py [--tables 100,1000,5000] [--transactions 2000] [--runs 2]

For each table count, a fresh PostgreSQL database gets that many small tables (one row each); cdc
(files sink, fsync on, as by default) snapshots them, then streams one-row transactions spread over the
tables. Printed per count: start-up to streaming (the snapshot included), the first change of each table
(which describes it: a cost per table, once), then the streamed transactions per second with every table
open and their ratio to the run with the fewest tables (the aim: the largest count within 2x of the
smallest), and the peak RSS growth. The 10-million-step loop time of this machine is printed first, as other benches
do, since CPython's speed varies a lot between machines of this kind.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import loop_seconds, peak_rss_mb, scratch_database  # noqa: E402
from cdc import pipeline  # noqa: E402


def run(tables: int, transactions: int) -> dict[str, float]:
    with scratch_database() as db, tempfile.TemporaryDirectory() as out:
        with psycopg.connect(db["dsn"], autocommit=True) as conn:
            for start in range(0, tables, 500):
                conn.execute("".join(f"CREATE TABLE t{i} (id int PRIMARY KEY, v int); INSERT INTO t{i} VALUES (1, 0);"
                                     for i in range(start, min(tables, start + 500))))
        props = {k: v for k, v in db.items() if k != "dsn"}
        props.update({"topic.prefix": "b", "slot.name": "bench_tables", "publication.name": "bench_tables",
                      "slot.drop.on.stop": "true", "sink.files.directory": out,
                      "offset.storage.file.filename": f"{out}/offsets.json", "snapshot.progress": "off"})
        rss_before = peak_rss_mb()
        started = time.perf_counter()
        engine = pipeline.build("postgres", props)
        thread = threading.Thread(target=engine.run, daemon=True)
        thread.start()
        while not engine.source_streaming():
            time.sleep(0.01)
        streaming = time.perf_counter() - started
        with psycopg.connect(db["dsn"], autocommit=True) as conn:
            # every table touched once first: its first change after a start pays for describing it (a
            # cost per table, once); what is measured next is the cost per change with that many tables open
            target = engine.events_written + tables
            began = time.perf_counter()
            for i in range(tables):
                conn.execute(f"UPDATE t{i} SET v = -1 WHERE id = 1")
            while engine.events_written < target:
                time.sleep(0.005)
            first_touch = time.perf_counter() - began
            target = engine.events_written + transactions
            began = time.perf_counter()
            for n in range(transactions):
                conn.execute(f"UPDATE t{random.randrange(tables)} SET v = %s WHERE id = 1", (n,))
            while engine.events_written < target:
                time.sleep(0.005)
            streamed = time.perf_counter() - began
        engine.stop()
        thread.join(60)
        return {"start": streaming, "first": tables / first_touch, "tps": transactions / streamed,
                "rss": peak_rss_mb() - rss_before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", default="100,1000,5000")
    parser.add_argument("--transactions", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    counts = [int(c) for c in args.tables.split(",")]
    print(f"10-million-step loop: {loop_seconds():.2f} s")
    results: dict[int, list[dict[str, float]]] = {c: [] for c in counts}
    for _ in range(args.runs):  # alternately, so that the machine's mood touches every count alike
        for count in counts:
            results[count].append(run(count, args.transactions))
    base = min(r["tps"] for r in results[counts[0]])
    print(f"{'tables':>7} {'start-up s':>12} {'first touch tx/s':>17} {'streamed tx/s':>14} {'vs fewest':>10} "
          f"{'peak RSS +MB':>13}")
    for count in counts:
        runs = results[count]
        start = f"{min(r['start'] for r in runs):.1f}-{max(r['start'] for r in runs):.1f}"
        tps = f"{min(r['tps'] for r in runs):.0f}-{max(r['tps'] for r in runs):.0f}"
        ratio = f"{min(r['tps'] for r in runs) / base:.2f}-{max(r['tps'] for r in runs) / base:.2f}"
        first = f"{min(r['first'] for r in runs):.0f}-{max(r['first'] for r in runs):.0f}"
        print(f"{count:>7} {start:>12} {first:>17} {tps:>14} {ratio:>10} {max(r['rss'] for r in runs):>13.0f}")


if __name__ == "__main__":
    main()
