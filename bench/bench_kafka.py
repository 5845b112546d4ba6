"""PostgreSQL -> Kafka end to end, next to the file sink in the same run.

    python bench/bench_kafka.py [--rows 200000] [--rounds 5] [--rate 1000] [--seconds 20]

1. throughput: ROWS changes (1,000 per transaction) already in the WAL, streamed into Kafka
   (acks=all, idempotent) and, from a twin slot, into the file sink: rows/s and their ratio;
2. exactly once: the same changes from more twin slots into Kafka with offsets in a Kafka topic,
   at least once and with exactly.once.support=required (records and offset in one transaction
   per offset flush, every 0.5 s), ROUNDS times alternately: rows/s, and the ratio
   exactly-once / at-least-once of each round;
3. latency at a steady RATE transactions/s (one row each) for SECONDS: commit time in
   PostgreSQL (source.ts_ms) to the broker's append time of the record (LogAppendTime), p50/p99.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_postgres import TABLE, CountingEngine, load  # noqa: E402
from bench.common import ROOT, loop_seconds, scratch_database  # noqa: E402
from cdc.config import CORE_OPTIONS, Config  # noqa: E402
from cdc.core.converters import JsonConverter  # noqa: E402
from cdc.core.offsets import MemoryOffsetStore  # noqa: E402
from cdc.kafka import exactly_once  # noqa: E402
from cdc.kafka.stores import KafkaOffsetStore  # noqa: E402
from cdc.sinks.files import FileSink  # noqa: E402
from cdc.sinks.kafka import KafkaSink  # noqa: E402
from cdc.sources.postgres.source import PostgresSource  # noqa: E402


def bootstrap() -> str:
    subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), "start"], check=True, capture_output=True)
    return subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), "bootstrap"], check=True,
                          capture_output=True, text=True).stdout.strip()


def engine(props: dict[str, str], slot: str, sink_name: str, target: int, extra: dict[str, str]) -> CountingEngine:
    config = Config({**{k: v for k, v in props.items() if k != "dsn"}, "snapshot.mode": "no_data", "slot.name": slot,
                     "publication.name": "bench_pub", "tombstones.on.delete": "false",
                     "slot.takeover": "true",  # the slot was made before the load, so no offset names it ours
                     **extra}).declare(CORE_OPTIONS)
    sink = KafkaSink(config) if sink_name == "kafka" else FileSink(config)
    return CountingEngine(PostgresSource(config), sink, JsonConverter(True), MemoryOffsetStore(),
                          flush_interval_s=0.5, target=target)


def kafka_engine(props: dict[str, str], slot: str, target: int, servers: str, exactly: bool) -> CountingEngine:
    """Kafka sink, offsets in a Kafka topic; with ``exactly``, joined in transactions as the pipeline joins them."""
    prefix = "eos" + uuid.uuid4().hex[:6]
    config = Config({**{k: v for k, v in props.items() if k != "dsn"}, "snapshot.mode": "no_data", "slot.name": slot,
                     "publication.name": "bench_pub", "tombstones.on.delete": "false", "topic.prefix": prefix,
                     "slot.takeover": "true",  # the slot was made before the load, so no offset names it ours
                     "name": prefix, "kafka.bootstrap.servers": servers, "offset.storage.topic": f"{prefix}-offsets",
                     **({"exactly.once.support": "required"} if exactly else {})}).declare(CORE_OPTIONS)
    sink, store = KafkaSink(config), KafkaOffsetStore(config, prefix)
    if exactly:
        assert exactly_once.enable("required", config, sink, store)
    return CountingEngine(PostgresSource(config), sink, JsonConverter(True), store, flush_interval_s=0.5,
                          target=target)


def exactly_once_throughput(rows: int, rounds: int, servers: str) -> None:
    modes = ("at-least-once", "exactly-once")
    with scratch_database() as props:
        slots = {(mode, i): f"bench_{'eos' if mode == 'exactly-once' else 'alo'}_{i}" for i in range(rounds)
                 for mode in modes}
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            conn.execute(TABLE)
            conn.execute("CREATE PUBLICATION bench_pub FOR ALL TABLES")
            for slot in slots.values():
                conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
            load(conn, rows, 1000)
        results: dict[str, list[float]] = {mode: [] for mode in modes}
        for i in range(rounds):
            for mode in modes if i % 2 == 0 else reversed(modes):  # alternate which goes first
                run = kafka_engine(props, slots[mode, i], rows, servers, mode == "exactly-once")
                started = time.perf_counter()
                run.run()
                results[mode].append(rows / (time.perf_counter() - started))
    ratios = [eos / alo for alo, eos in zip(results["at-least-once"], results["exactly-once"], strict=True)]
    for mode in modes:
        print(f"{mode}, offsets in Kafka: " + ", ".join(f"{r:,.0f}" for r in results[mode]) + " rows/s")
    print(f"ratio exactly-once / at-least-once: median {statistics.median(ratios):.2f}, range "
          f"{min(ratios):.2f}-{max(ratios):.2f} over {rounds} rounds ({', '.join(f'{r:.2f}' for r in ratios)})")


def throughput(rows: int, servers: str) -> None:
    with scratch_database() as props, tempfile.TemporaryDirectory() as tmp:
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            conn.execute(TABLE)
            conn.execute("CREATE PUBLICATION bench_pub FOR ALL TABLES")
            for slot in ("bench_kafka", "bench_file"):
                conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
            load(conn, rows, 1000)
        prefix = "bench" + uuid.uuid4().hex[:6]
        results = {}
        for name, slot, extra in (("kafka", "bench_kafka", {"topic.prefix": prefix,
                                                             "kafka.bootstrap.servers": servers}),
                                  ("file", "bench_file", {"topic.prefix": prefix, "sink.files.directory": tmp})):
            run = engine(props, slot, name, rows, extra)
            started = time.perf_counter()
            run.run()
            results[name] = rows / (time.perf_counter() - started)
    print(f"throughput: {rows} rows; kafka {results['kafka']:,.0f} rows/s; file sink {results['file']:,.0f} rows/s; "
          f"ratio kafka/file {results['kafka'] / results['file']:.2f}")


def latency(rate: int, seconds: int, servers: str) -> None:
    from confluent_kafka import Consumer

    with scratch_database() as props:
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            conn.execute(TABLE)
            conn.execute("CREATE PUBLICATION bench_pub FOR ALL TABLES")
        prefix = "lat" + uuid.uuid4().hex[:6]
        total = rate * seconds
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": servers})  # the broker stamps each record as it appends it
        topic = NewTopic(f"{prefix}.public.bench", 1, 1, config={"message.timestamp.type": "LogAppendTime"})
        admin.create_topics([topic])[topic.topic].result(30)
        run = engine(props, "bench_lat", "kafka", total,
                     {"topic.prefix": prefix, "kafka.bootstrap.servers": servers, "offset.flush.interval.ms": "200",
                      "topic.creation.default.cleanup.policy": "delete"})
        thread = threading.Thread(target=run.run)
        thread.start()
        while not run.source.streaming:
            time.sleep(0.05)
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            start = time.perf_counter()
            for i in range(total):  # one row per transaction, paced
                conn.execute("INSERT INTO bench VALUES (%s, 'x', 1, now(), true, 'n')", (i + 1,))
                delay = start + (i + 1) / rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            achieved = total / (time.perf_counter() - start)
        thread.join(120)
        consumer = Consumer({"bootstrap.servers": servers, "group.id": uuid.uuid4().hex,
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([f"{prefix}.public.bench"])
        lags = []
        deadline = time.monotonic() + 60
        while len(lags) < total and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            _, append_ms = message.timestamp()
            commit_ms = json.loads(message.value())["payload"]["source"]["ts_ms"]
            lags.append(append_ms - commit_ms)
        consumer.close()
    q = statistics.quantiles(lags, n=100)
    print(f"latency at {achieved:,.0f} tx/s for {seconds} s: commit -> broker p50 {q[49]:.0f} ms, p99 {q[98]:.0f} ms "
          f"({len(lags)} records)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5, help="alternations of at-least-once and exactly-once")
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=20)
    args = parser.parse_args()
    servers = bootstrap()
    print(f"python {sys.version.split()[0]}; 10-million-step loop: {loop_seconds():.3f} s")
    throughput(args.rows, servers)
    exactly_once_throughput(args.rows, args.rounds, servers)
    latency(args.rate, args.seconds, servers)


if __name__ == "__main__":
    main()
