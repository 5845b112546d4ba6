"""MySQL / MariaDB benchmarks, printed as ratios against a reference measured in the same run.

    python bench/bench_mysql.py stream [--rows 200000]   ours -> file sink vs a bare BinLogStreamReader
                                                         loop over the same binlog range (the library's ceiling)
    python bench/bench_mysql.py ddl    [--statements 2000]  DDL statements parsed into tableChanges per second
    python bench/bench_mysql.py snapshot [--rows 5000] [--columns 1000]
                                                         a wide table's initial snapshot into the file sink vs
                                                         a bare SELECT * through pymysql's unbuffered cursor
                                                         (the library's ceiling) and the mariadb client (C),
                                                         with and without the compiled codec; peak RSS
    add --profile to print a pyinstrument profile of our side

Target (an aim, not a gate): stream >= 0.6 of the bare loop.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import debezium  # noqa: E402
from bench.bench_postgres import CountingEngine  # noqa: E402
from bench.common import loop_seconds, peak_rss_mb, timed_run  # noqa: E402
from cdc.config import CORE_OPTIONS, Config  # noqa: E402
from cdc.core.converters import JsonConverter  # noqa: E402
from cdc.core.offsets import MemoryOffsetStore  # noqa: E402
from cdc.engine import tune_garbage_collector  # noqa: E402
from cdc.sinks.files import FileSink  # noqa: E402
from cdc.sources.mysql.ddl import MySqlSchema  # noqa: E402
from cdc.sources.mysql.source import MySqlSource  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TABLE = """CREATE TABLE bench (id bigint PRIMARY KEY, name varchar(64) NOT NULL, amount decimal(12,2),
           created timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), flag boolean, note varchar(64))"""


def server() -> dict[str, Any]:
    subprocess.run(["bash", str(ROOT / "scripts" / "mariadb.sh"), "start"], check=True, capture_output=True)
    return {"host": "127.0.0.1", "port": 53306, "user": "root", "password": ""}


def load(conn: pymysql.connections.Connection, rows: int, per_tx: int) -> None:
    with conn.cursor() as cur:
        for start in range(0, rows, per_tx):
            cur.execute(
                "INSERT INTO bench (id, name, amount, flag, note) SELECT seq, CONCAT('name-', seq), seq * 1.25, "
                f"MOD(seq, 2) = 0, 'note' FROM seq_{start + 1}_to_{min(start + per_tx, rows)}")
            conn.commit()


def bare_loop(args: dict[str, Any], file: str, pos: int, end_file: str, end_pos: int, rows: int) -> float:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    stream = BinLogStreamReader(
        connection_settings={"host": args["host"], "port": args["port"], "user": args["user"],
                             "password": args["password"]},
        server_id=7001, log_file=file, log_pos=pos, resume_stream=True, blocking=False,
        only_events=[WriteRowsEvent], enable_logging=False)
    started = time.perf_counter()
    seen = 0
    for event in stream:
        for _row in event.rows:
            seen += 1
        if seen >= rows:
            break
    elapsed = time.perf_counter() - started
    stream.close()
    assert seen == rows, seen
    return elapsed


def our_source(args: dict[str, Any], db: str, out: str, *, native: bool, **props: str) -> tuple[Config, MySqlSource]:
    """Our source on the bench database, writing into ``out``; ``native``: the compiled codec's rows
    and encoded batches, as the pipeline sets them (when the codec is installed)."""
    config = Config({"database.hostname": args["host"], "database.port": str(args["port"]),
                     "database.user": args["user"], "database.password": args["password"],
                     "database.include.list": db, "topic.prefix": "bench", "sink.files.directory": out,
                     "schema.history.internal": "memory", "snapshot.progress": "off", **props}).declare(CORE_OPTIONS)
    source = MySqlSource(config)
    source.native_rows = source.encoded_batches = native
    return config, source


def run_ours(args: dict[str, Any], db: str, conn: Any, file: str, pos: int, rows: int, profile: bool, *,
             native: bool) -> float:
    """Our source from ``file:pos`` into the file sink until ``rows`` events; seconds taken."""
    with tempfile.TemporaryDirectory() as tmp:
        config, source = our_source(args, db, tmp, native=native, **{"tombstones.on.delete": "false",
                                                                     "database.server.id": "7002"})
        history = source.history
        schema = MySqlSchema()
        with conn.cursor() as cur:
            cur.execute(f"SHOW CREATE TABLE {db}.bench")
            ddl = cur.fetchone()[1]
        schema.apply(f"CREATE DATABASE {db}")
        changes = schema.apply(ddl, db)
        history.record({"source": {"server": "bench"}, "position": {"file": file, "pos": pos},
                        "databaseName": db, "ddl": ddl, "tableChanges": changes})
        engine = CountingEngine(source, FileSink(config), JsonConverter(True),
                                MemoryOffsetStore({"file": file, "pos": pos, "event": 0, "row": 0}),
                                flush_interval_s=0.5, target=rows)
        return timed_run(engine, rows, profile)


def _codec() -> bool:
    try:
        import cdc_native  # noqa: F401
    except ImportError:
        return False
    return True


def stream(rows: int, profile: bool) -> None:
    args = server()
    db = "bench_" + uuid.uuid4().hex[:8]
    conn = pymysql.connect(**args, autocommit=False)
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"USE {db}")
        cur.execute(TABLE)
    loaded: dict[str, float] = {}

    def workload() -> None:  # our runs replay its binlog range; Debezium streams it as it is written
        with conn.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            loaded["file"], loaded["pos"] = cur.fetchone()[:2]
        started = time.perf_counter()
        load(conn, rows, 1000)
        loaded["seconds"] = time.perf_counter() - started

    dbz = debezium.rate("mariadb", {
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector", "name": "bench", "topic.prefix": "bench",
        "database.server.id": "7003", "database.include.list": db, "snapshot.mode": "no_data",
        "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
        "tombstones.on.delete": "false", "database.hostname": args["host"], "database.port": str(args["port"]),
        "database.user": args["user"], "database.password": args["password"]}, f"bench.{db}.bench", rows, workload)
    if dbz is None:
        workload()
    file, pos = loaded["file"], loaded["pos"]
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        end_file, end_pos = cur.fetchone()[:2]
    # Each twice, alternating, best of two: the first run in a process pays for warming up, which
    # would otherwise fall on whichever runs first. Every run is printed.
    loops: list[float] = []
    codec: list[float] = []
    plain: list[float] = []
    try:
        for attempt in range(2):
            loops.append(bare_loop(args, file, pos, end_file, end_pos, rows))
            codec.append(run_ours(args, db, conn, file, pos, rows, profile and attempt == 1, native=True))
            plain.append(run_ours(args, db, conn, file, pos, rows, False, native=False))
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE {db}")
        conn.close()
    print("runs, seconds: loop " + ", ".join(f"{t:.2f}" for t in loops) + "; codec "
          + ", ".join(f"{t:.2f}" for t in codec) + "; Python " + ", ".join(f"{t:.2f}" for t in plain))
    reference, ours, python = min(loops), min(codec), min(plain)
    for name, seconds in (("with the compiled row codec" if _codec() else "cdc_native NOT installed", ours),
                          ("Python path", python)):
        print(f"stream ({name}): {rows} rows ({rows // 1000} transactions); ours {seconds:.2f} s = "
              f"{rows / seconds:,.0f} rows/s (best of two); bare BinLogStreamReader loop {reference:.2f} s = "
              f"{rows / reference:,.0f} rows/s; ratio {reference / seconds:.2f} (target 1.0)")
    if dbz is None:
        print("stream: Debezium's rate not measured (no Java, or its jars could not be fetched)")
    else:
        print(f"stream: Debezium 3.5 (embedded engine, JsonConverter into a buffered file, first record to last, "
              f"streaming while the rows were written in {loaded['seconds']:.1f} s) {dbz:,.0f} rows/s; "
              f"ours / Debezium {rows / ours / dbz:.2f}")


# In rotation, columns c1 .. cN; small types, so that 1,000 of them fit InnoDB's 8 kB row.
WIDE_TYPES = ("int", "smallint", "decimal(6,2)", "datetime", "varchar(8) CHARACTER SET latin1")
WIDE_VALUES = ("seq * {n}", "MOD(seq, 30000)", "MOD(seq, 9999) / 100", "TIMESTAMP'2024-01-01 00:00:00' + "
               "INTERVAL seq SECOND", "CONCAT('v', MOD(seq, 999999))")


def wide_table(conn: pymysql.connections.Connection, db: str, rows: int, columns: int) -> None:
    names = [f"c{n}" for n in range(1, columns + 1)]
    kinds = [WIDE_TYPES[n % len(WIDE_TYPES)] for n in range(columns)]
    with conn.cursor() as cur:
        cur.execute(f"USE {db}")  # the seq_1_to_n tables (MariaDB's SEQUENCE engine) need a database
        cur.execute(f"CREATE TABLE {db}.wide (id bigint PRIMARY KEY, "
                    + ", ".join(f"{name} {kind}" for name, kind in zip(names, kinds, strict=True))
                    + ") ROW_FORMAT=DYNAMIC")
        values = ", ".join(WIDE_VALUES[n % len(WIDE_VALUES)].format(n=n) for n in range(columns))
        for start in range(0, rows, 1000):
            cur.execute(f"INSERT INTO {db}.wide SELECT seq, {values} FROM seq_{start + 1}_to_"
                        f"{min(start + 1000, rows)}")
            conn.commit()


def client_select(args: dict[str, Any], db: str) -> float:
    """The C reference: the mariadb client reading every row (--quick: unbuffered) to /dev/null."""
    started = time.perf_counter()
    subprocess.run(["mariadb", "-h", args["host"], "-P", str(args["port"]), "-u", args["user"], "--quick", "--batch",
                    "-e", f"SELECT * FROM {db}.wide"], check=True, stdout=subprocess.DEVNULL,
                   env={"MYSQL_PWD": args["password"], "PATH": "/usr/bin:/bin"})
    return time.perf_counter() - started


def bare_select(args: dict[str, Any], db: str, fetch: int) -> tuple[float, int]:
    """The library's ceiling: every row of the table through pymysql's unbuffered cursor."""
    conn = pymysql.connect(**args)
    started = time.perf_counter()
    seen = 0
    with conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute(f"SELECT * FROM {db}.wide")
        while batch := cur.fetchmany(fetch):
            seen += len(batch)
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed, seen


def snapshot_ours(args: dict[str, Any], db: str, rows: int, profile: bool, *, native: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        config, source = our_source(args, db, tmp, native=native, **{"snapshot.mode": "initial_only",
                                                                     "database.server.id": "7004"})
        engine = CountingEngine(source, FileSink(config), JsonConverter(True), MemoryOffsetStore(),
                                flush_interval_s=0.5, target=rows)
        return timed_run(engine, rows, profile)


def snapshot(rows: int, columns: int, profile: bool) -> None:
    """A wide table's snapshot: ours (best of two) against the bare SELECT, alternating; the peak RSS."""
    args = server()
    db = "bench_" + uuid.uuid4().hex[:8]
    conn = pymysql.connect(**args, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {db}")
        wide_table(conn, db, rows, columns)
        bare, ours, python, client = [], [], [], []
        for attempt in range(2):
            client.append(client_select(args, db))
            seconds, seen = bare_select(args, db, 2000)
            assert seen == rows, seen
            bare.append(seconds)
            before = peak_rss_mb()
            ours.append(snapshot_ours(args, db, rows, profile and attempt == 1, native=True))
            if attempt == 0:
                print(f"snapshot: peak RSS {peak_rss_mb():,.0f} MB after our first run (before it {before:,.0f} MB)")
            python.append(snapshot_ours(args, db, rows, False, native=False))
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE {db}")
        conn.close()
    print("runs, seconds: mariadb client " + ", ".join(f"{t:.2f}" for t in client)
          + "; bare SELECT " + ", ".join(f"{t:.2f}" for t in bare) + "; ours "
          + ", ".join(f"{t:.2f}" for t in ours) + "; ours without the codec " + ", ".join(f"{t:.2f}" for t in python))
    codec = "with the compiled row codec" if _codec() else "cdc_native NOT installed"
    print(f"snapshot: {rows:,} rows of {columns + 1} columns; ours ({codec}) {rows / min(ours):,.0f} rows/s "
          f"({rows * (columns + 1) / min(ours):,.0f} values/s), without it {rows / min(python):,.0f} rows/s; "
          f"bare SELECT through pymysql {rows / min(bare):,.0f} rows/s; ratio {min(bare) / min(ours):.2f} "
          f"(without the codec {min(bare) / min(python):.2f}); the mariadb client (C) {rows / min(client):,.0f} "
          f"rows/s, ours {min(client) / min(ours):.2f} of it")


DDL = [
    "CREATE TABLE t{n} (id int NOT NULL AUTO_INCREMENT, name varchar(255) NOT NULL DEFAULT 'x' COMMENT 'who', "
    "price decimal(10,2), kind enum('a','b','c') NOT NULL, tags set('x','y'), created datetime(3) DEFAULT "
    "CURRENT_TIMESTAMP(3), PRIMARY KEY (id), UNIQUE KEY uk_name (name)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
    "ALTER TABLE t{n} ADD COLUMN extra json AFTER name, MODIFY COLUMN price decimal(12,4) NOT NULL",
    "ALTER TABLE t{n} RENAME COLUMN extra TO info, DROP COLUMN tags",
    "RENAME TABLE t{n} TO u{n}",
    "DROP TABLE u{n}",
]


def ddl(statements: int) -> None:
    schema = MySqlSchema()
    schema.apply("CREATE DATABASE d")
    texts = [DDL[i % len(DDL)].format(n=i // len(DDL)) for i in range(statements)]
    started = time.perf_counter()
    changes = 0
    for text in texts:
        changes += len(schema.apply(text, "d"))
    elapsed = time.perf_counter() - started
    print(f"ddl: {statements} statements ({changes} tableChanges) in {elapsed:.2f} s = "
          f"{statements / elapsed:,.0f} statements/s")


def main() -> None:
    tune_garbage_collector()  # as the cdc command does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("stream", "ddl", "snapshot", "all"))
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--statements", type=int, default=2000)
    parser.add_argument("--columns", type=int, default=1000, help="snapshot: the wide table's columns")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; 10-million-step loop: {loop_seconds():.3f} s")
    if args.mode in ("stream", "all"):
        stream(args.rows, args.profile)
    if args.mode in ("ddl", "all"):
        ddl(args.statements)
    if args.mode == "snapshot":
        snapshot(args.rows, args.columns, args.profile)


if __name__ == "__main__":
    main()
