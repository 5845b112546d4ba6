"""Shared set-up for the benchmarks: a scratch database on the local PostgreSQL."""
from __future__ import annotations

import os
import resource
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ROOT = Path(__file__).resolve().parent.parent


def admin_dsn() -> str:
    dsn = os.environ.get("CDC_TEST_PG_DSN")
    if dsn:
        return dsn
    subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "start"], check=True, capture_output=True)
    return subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "dsn"], check=True,
                          capture_output=True, text=True).stdout.strip()


def pg_bin() -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "bin"], capture_output=True, text=True)
    return Path(out.stdout.strip() or "/usr/lib/postgresql/15/bin")


@contextmanager
def scratch_database() -> Iterator[dict[str, str]]:
    admin = admin_dsn()
    name = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(admin)
    props = {"database.hostname": params.get("host", "127.0.0.1"), "database.port": str(params.get("port", 5432)),
             "database.user": params.get("user", "postgres"), "database.dbname": name,
             "dsn": make_conninfo(admin, dbname=name)}
    try:
        yield props
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            slots = conn.execute("SELECT slot_name FROM pg_replication_slots WHERE database = %s", (name,)).fetchall()
            for (slot,) in slots:
                conn.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                             "WHERE slot_name=%s AND active", (slot,))
                time.sleep(0.2)
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_run(engine: Any, target: int, profile: bool, html: str | None = None) -> float:
    """Seconds ``engine.run()`` took to write ``target`` events; with ``profile``, a pyinstrument
    profile of it is printed (and written as HTML to ``html`` when given)."""
    profiler = None
    if profile:
        from pyinstrument import Profiler

        profiler = Profiler()
        profiler.start()
    started = time.perf_counter()
    engine.run()
    elapsed = time.perf_counter() - started
    if profiler is not None:
        profiler.stop()
        if html:
            Path(html).write_text(profiler.output_html())
        print(profiler.output_text(unicode=False, color=False, show_all=False)[:6000])
    assert engine.events_written >= target, engine.events_written
    return elapsed


def loop_seconds() -> float:
    """The best of three 10-million-step loops: this machine's speed for plain Python, printed beside
    every ratio (CPython's speed varies 3-4x between machines of this kind, C tools' far less)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(10_000_000):
            pass
        best = min(best, time.perf_counter() - start)
    return best
