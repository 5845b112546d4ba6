"""Incremental snapshot vs initial snapshot of the same table, in one run, while changes stream.

    python bench/bench_incremental.py [--rows 200000] [--rate 500] [--chunk 1024]

Both read the same table into the JSON-lines file sink (schemas on, fsync on flush) while a
writer updates random rows at ``--rate`` changes/s:
  initial       snapshot.mode=initial: COPY inside the slot's exported snapshot
  incremental   snapshot.mode=no_data, then an execute-snapshot signal: chunks of --chunk rows,
                each between two watermarks and de-duplicated against the stream
Printed: rows/s of each and their ratio (incremental / initial; target >= 0.5).
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_postgres import TABLE, load  # noqa: E402
from bench.common import scratch_database  # noqa: E402
from cdc.config import CORE_OPTIONS, Config  # noqa: E402
from cdc.core.converters import JsonConverter  # noqa: E402
from cdc.core.offsets import MemoryOffsetStore  # noqa: E402
from cdc.engine import Engine  # noqa: E402
from cdc.sinks.files import FileSink  # noqa: E402
from cdc.sources.postgres.source import PostgresSource  # noqa: E402


class CountingConverter(JsonConverter):
    """Counts snapshot reads (op r) and notes when the last one went by."""

    def __init__(self) -> None:
        super().__init__(True)
        self.reads = 0
        self.changes = 0
        self.last_read = 0.0

    def to_record(self, event):  # type: ignore[no-untyped-def]
        if event.value is not None and event.value.get("op") == "r":
            self.reads += 1
            self.last_read = time.perf_counter()
        elif event.value is not None:
            self.changes += 1
        return super().to_record(event)


def writer(dsn: str, rows: int, rate: int, stop: threading.Event, counter: list[int]) -> None:
    rng = random.Random(5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.perf_counter()
        while not stop.is_set():
            conn.execute("UPDATE bench SET amount = amount + 1 WHERE id = %s", (rng.randint(1, rows),))
            counter[0] += 1
            ahead = counter[0] / rate - (time.perf_counter() - started)
            if ahead > 0:
                time.sleep(ahead)


def pipeline(props: dict[str, str], out: Path,
             extra: dict[str, Any]) -> tuple[Engine, PostgresSource, CountingConverter]:
    config = Config({**{k: v for k, v in props.items() if k != "dsn"}, "topic.prefix": "bench",
                     "publication.name": "bench_pub", "sink.files.directory": str(out), "snapshot.progress": "off",
                     "tombstones.on.delete": "false", **extra}).declare(CORE_OPTIONS)
    source = PostgresSource(config)
    converter = CountingConverter()
    return Engine(source, FileSink(config), converter, MemoryOffsetStore(), flush_interval_s=0.5), source, converter


def run(rows: int, rate: int, chunk: int) -> None:
    with scratch_database() as props, tempfile.TemporaryDirectory() as tmp:
        dsn = props["dsn"]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(TABLE)
            conn.execute("CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32), data text)")
            conn.execute("CREATE PUBLICATION bench_pub FOR ALL TABLES")
            load(conn, rows, 50_000)
            conn.execute("VACUUM ANALYZE bench")
        stop = threading.Event()
        counter = [0]
        thread = threading.Thread(target=writer, args=(dsn, rows, rate, stop, counter), daemon=True)
        thread.start()
        time.sleep(1)
        try:
            # initial snapshot (the signal table is left out by table.exclude.list)
            engine, source, conv = pipeline(props, Path(tmp) / "a", {
                "snapshot.mode": "initial", "slot.name": "bench_initial", "slot.drop.on.stop": "true",
                "table.exclude.list": "public.debezium_signal"})
            thread_a = threading.Thread(target=engine.run)
            started = time.perf_counter()
            thread_a.start()
            while not source.streaming and thread_a.is_alive():
                time.sleep(0.01)
            initial_s = conv.last_read - started
            initial_rows = conv.reads
            engine.stop()
            thread_a.join()
            # incremental snapshot
            engine, source, conv = pipeline(props, Path(tmp) / "b", {
                "snapshot.mode": "no_data", "slot.name": "bench_incremental", "slot.drop.on.stop": "true",
                "signal.data.collection": "public.debezium_signal", "incremental.snapshot.chunk.size": str(chunk)})
            thread_b = threading.Thread(target=engine.run)
            thread_b.start()
            while not source.streaming and thread_b.is_alive():
                time.sleep(0.01)
            changes_before = counter[0]
            started = time.perf_counter()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("INSERT INTO debezium_signal VALUES ('bench', 'execute-snapshot', "
                             "'{\"data-collections\": [\"public.bench\"]}')")
            while (conv.reads == 0 or source.incremental.active) and thread_b.is_alive():
                time.sleep(0.01)
            incremental_s = conv.last_read - started
            incremental_rows = conv.reads
            streamed = counter[0] - changes_before
            dropped = source.incremental.rows_dropped
            engine.stop()
            thread_b.join()
        finally:
            stop.set()
            thread.join()
    a = initial_rows / initial_s
    b = incremental_rows / incremental_s
    print(f"initial snapshot:     {initial_rows} rows in {initial_s:.2f} s = {a:,.0f} rows/s")
    print(f"incremental snapshot: {incremental_rows} rows in {incremental_s:.2f} s = {b:,.0f} rows/s "
          f"(chunk {chunk}; {streamed} changes streamed meanwhile = {streamed / incremental_s:,.0f}/s; "
          f"{dropped} chunk rows superseded by streamed changes)")
    print(f"ratio incremental/initial: {b / a:.2f} (target >= 0.5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rate", type=int, default=500, help="changes per second while both snapshots run")
    parser.add_argument("--chunk", type=int, default=1024, help="incremental.snapshot.chunk.size")
    args = parser.parse_args()
    run(args.rows, args.rate, args.chunk)


if __name__ == "__main__":
    main()
