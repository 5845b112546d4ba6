"""PostgreSQL benchmarks, each printed as a ratio against a reference measured in the same run.

    python bench/bench_postgres.py stream   [--rows 200000]   ours -> file sink vs pg_recvlogical (twin slot)
    python bench/bench_postgres.py snapshot [--rows 200000]   ours -> file sink vs COPY (SELECT ...) TO STDOUT
    python bench/bench_postgres.py memory   [--rows 1000000]  one big transaction streamed: peak RSS
    add --profile to write a pyinstrument profile of our side (bench/profile-<mode>.html)
    add --no-schemas for JSON without the schema in each record (schemas.enable=false)

Targets (aims, not gates): stream >= 0.5, snapshot >= 0.25, memory < 300 MB.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import debezium  # noqa: E402
from bench.common import loop_seconds, peak_rss_mb, pg_bin, scratch_database, timed_run  # noqa: E402
from cdc.config import CORE_OPTIONS, Config  # noqa: E402
from cdc.core.converters import JsonConverter  # noqa: E402
from cdc.core.offsets import MemoryOffsetStore  # noqa: E402
from cdc.engine import Engine  # noqa: E402
from cdc.sinks.files import FileSink  # noqa: E402
from cdc.sources.postgres.source import PostgresSource  # noqa: E402

TABLE = """CREATE TABLE bench (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(12,2),
           created timestamptz NOT NULL, flag boolean, note varchar(64))"""


SCHEMAS = {"enable": True}  # --no-schemas: schemas.enable=false


def load(conn: psycopg.Connection, rows: int, per_tx: int) -> None:
    for start in range(0, rows, per_tx):
        conn.execute(
            "INSERT INTO bench SELECT g, 'name-' || g, g * 1.25, now(), g %% 2 = 0, 'note' "
            "FROM generate_series(%s::bigint, %s::bigint) g", (start + 1, min(start + per_tx, rows)))


class CountingEngine(Engine):
    """Stops once ``target`` events were written and acknowledged."""

    def __init__(self, *args, target: int, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.target = target

    def _commit(self, offset):  # type: ignore[no-untyped-def]
        super()._commit(offset)
        if self.events_written >= self.target:
            self.stop()


def run_ours(props: dict[str, str], out: Path, target: int, mode: str, profile: str | None, *,
             slot: str = "bench_cdc", native: bool = True) -> float:
    config = Config({**{k: v for k, v in props.items() if k != "dsn"}, "topic.prefix": "bench",
                     "snapshot.mode": mode, "slot.name": slot, "publication.name": "bench_pub",
                     "slot.takeover": "true",  # the slot is made before the load, so no offset names it ours
                     "sink.files.directory": str(out), "tombstones.on.delete": "false",
                     "snapshot.progress": "off"}).declare(CORE_OPTIONS)
    source = PostgresSource(config)
    source.native_rows = source.encoded_batches = native  # the compiled row codec, as the pipeline does
    engine = CountingEngine(source, FileSink(config), JsonConverter(SCHEMAS["enable"]), MemoryOffsetStore(),
                            flush_interval_s=0.5, target=target)
    return timed_run(engine, target, bool(profile), profile)


def stream(rows: int, profile: bool) -> None:
    with scratch_database() as props, tempfile.TemporaryDirectory() as tmp:
        dsn = props["dsn"]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(TABLE)
            conn.execute("CREATE PUBLICATION bench_pub FOR ALL TABLES")
            conn.execute("SELECT pg_create_logical_replication_slot('bench_cdc', 'pgoutput')")
            conn.execute("SELECT pg_create_logical_replication_slot('bench_ref', 'pgoutput')")
            conn.execute("SELECT pg_create_logical_replication_slot('bench_py', 'pgoutput')")
            conn.execute("SELECT pg_create_logical_replication_slot('bench_dbz', 'pgoutput')")
            load(conn, rows, 1000)
            end = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        started = time.perf_counter()
        subprocess.run([str(pg_bin() / "pg_recvlogical"), "-d", dsn, "--slot", "bench_ref", "--start",
                        "--endpos", end, "-o", "proto_version=1", "-o", "publication_names=bench_pub",
                        "--no-loop", "-f", "/dev/null"], check=True)
        reference = time.perf_counter() - started
        ours = run_ours(props, Path(tmp) / "out", rows, "no_data", "bench/profile-stream.html" if profile else None)
        python = run_ours(props, Path(tmp) / "out-py", rows, "no_data", None, slot="bench_py", native=False)
        dbz = debezium_rate(props, rows, "no_data", "bench_dbz")
    report(f"stream ({_codec()})", rows, ours, reference, "pg_recvlogical")
    report("stream (Python path)", rows, python, reference, "pg_recvlogical")
    report_debezium("stream", dbz, rows / ours)


def debezium_rate(props: dict[str, str], rows: int, mode: str, slot: str) -> float | None:
    """Debezium's PostgreSQL connector on the same table and slot kind (None without its jars)."""
    return debezium.rate("postgres", {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector", "name": "bench",
        "topic.prefix": "bench", "plugin.name": "pgoutput", "slot.name": slot, "publication.name": "bench_pub",
        "publication.autocreate.mode": "all_tables", "snapshot.mode": mode, "slot.drop.on.stop": "true",
        "tombstones.on.delete": "false", "database.password": "",
        "bench.schemas.enable": str(SCHEMAS["enable"]).lower(),
        **{k: v for k, v in props.items() if k.startswith("database.")}}, "bench.public.bench", rows)


def report_debezium(name: str, dbz: float | None, ours: float) -> None:
    if dbz is None:
        print(f"{name}: Debezium's rate not measured (no Java, or its jars could not be fetched)")
        return
    print(f"{name}: Debezium 3.6 (embedded engine, JsonConverter into a buffered file, first record to last) "
          f"{dbz:,.0f} rows/s; ours / Debezium {ours / dbz:.2f}")


def _codec() -> str:
    try:
        import cdc_native  # noqa: F401
    except ImportError:
        return "cdc_native NOT installed: both runs are the Python path"
    return "with the compiled row codec"


def snapshot(rows: int, profile: bool) -> None:
    with scratch_database() as props, tempfile.TemporaryDirectory() as tmp:
        dsn = props["dsn"]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(TABLE)
            load(conn, rows, 50_000)
            conn.execute("VACUUM ANALYZE bench")
        started = time.perf_counter()
        subprocess.run([str(pg_bin() / "psql"), dsn, "-q", "-c", "COPY (SELECT * FROM bench) TO STDOUT"],
                       check=True, stdout=subprocess.DEVNULL)
        reference = time.perf_counter() - started
        # Each path twice, alternating, best of two: the first run in a process pays for warming up
        # (imports, the heap growing, the page cache taking the last run's files), which would
        # otherwise fall on whichever path runs first. Every run is printed.
        ours, python, written = [], [], 0
        for attempt in range(2):
            out = Path(tmp) / f"out{attempt}"
            ours.append(run_ours(props, out, rows, "initial_only",
                                 "bench/profile-snapshot.html" if profile and attempt else None,
                                 slot=f"bench_cdc{attempt}"))
            written = sum(f.stat().st_size for f in out.glob("*.jsonl"))
            shutil.rmtree(out)  # its pages leave the cache now, not while the next run writes
            python.append(run_ours(props, Path(tmp) / "out-py", rows, "initial_only", None,
                                   slot=f"bench_py{attempt}", native=False))
            shutil.rmtree(Path(tmp) / "out-py")
        disk = write_alone(Path(tmp) / "disk-reference", written)
        dbz = debezium_rate(props, rows, "initial_only", "bench_dbz")
    print(f"runs, seconds: codec {', '.join(f'{t:.2f}' for t in ours)}; "
          f"Python {', '.join(f'{t:.2f}' for t in python)}")
    report(f"snapshot ({_codec()}, best of two)", rows, min(ours), reference, "COPY TO STDOUT (psql)")
    report("snapshot (Python path, best of two)", rows, min(python), reference, "COPY TO STDOUT (psql)")
    print(f"snapshot: the files hold {written / 1e6:,.0f} MB ({written / rows:,.0f} bytes a record); writing as "
          f"many bytes from memory to a file with one fsync takes {disk:.2f} s here: "
          f"ours / that {disk / min(ours):.2f}")
    report_debezium("snapshot", dbz, rows / min(ours))


def write_alone(path: Path, size: int) -> float:
    """Seconds to write ``size`` bytes from memory to a file and fsync it: the disk's part of a run."""
    block = b"x" * (1 << 20)
    started = time.perf_counter()
    with open(path, "wb", buffering=0) as handle:
        for _ in range(size >> 20):
            handle.write(block)
        handle.write(block[: size & ((1 << 20) - 1)])
        os.fsync(handle.fileno())
    elapsed = time.perf_counter() - started
    path.unlink()
    return elapsed


def memory(rows: int) -> None:
    with scratch_database() as props, tempfile.TemporaryDirectory() as tmp:
        with psycopg.connect(props["dsn"], autocommit=True) as conn:
            conn.execute(TABLE)
            conn.execute("CREATE PUBLICATION bench_pub FOR ALL TABLES")
            conn.execute("SELECT pg_create_logical_replication_slot('bench_cdc', 'pgoutput')")
            load(conn, rows, rows)  # one transaction
        baseline = peak_rss_mb()
        ours = run_ours(props, Path(tmp) / "out", rows, "no_data", None)
        print(f"memory: {rows} rows in one transaction streamed in {ours:.1f} s "
              f"({rows / ours:,.0f} rows/s); peak RSS {peak_rss_mb():.0f} MB (before the run {baseline:.0f} MB); "
              f"target < 300 MB")


def report(name: str, rows: int, ours: float, reference: float, what: str) -> None:
    print(f"{name}: {rows} rows; ours {ours:.2f} s = {rows / ours:,.0f} rows/s; "
          f"{what} {reference:.2f} s = {rows / reference:,.0f} rows/s; ratio {reference / ours:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("stream", "snapshot", "memory", "all"))
    parser.add_argument("--rows", type=int)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-schemas", action="store_true", help="JsonConverter with schemas.enable=false")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; 10-million-step loop: {loop_seconds():.3f} s")
    SCHEMAS["enable"] = not args.no_schemas
    if args.no_schemas:
        print("schemas.enable=false: records without their schema (Debezium's too)")
    if shutil.which("psql") is None:
        sys.exit("psql is needed (scripts/postgres.sh installs it)")
    if args.mode in ("stream", "all"):
        stream(args.rows or 200_000, args.profile)
    if args.mode in ("snapshot", "all"):
        snapshot(args.rows or 200_000, args.profile)
    if args.mode in ("memory", "all"):
        memory(args.rows or 1_000_000)


if __name__ == "__main__":
    main()
