"""The conformance workloads: SQL files run the same way through Debezium and through cdc.

A workload is ``workloads/<name>.sql``; its name starts with the database it runs on
(``pg_`` or ``mariadb_``). Everything above ``-- @@CAPTURE`` is set-up (run before the connector
starts, never captured); below it, the captured statements, in steps separated by
``-- @@STEP`` (each step runs in its own round trip; ``-- @@SLEEP 0.5`` pauses). Lines
``-- @@property key=value`` add connector properties to the base ones (``base-<db>.properties``).

Both sides run against the same servers and a database named ``lab``, dropped and created again
for every run, so topics and ``source.db`` are the same.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from tests.servers import start_by_script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WORKLOADS = HERE / "workloads"
FIXTURES = HERE / "fixtures"
DATABASE = "lab"


@dataclass
class Workload:
    name: str
    db: str  # "postgres" | "mariadb"
    setup: str
    steps: list[str]
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def fixture(self) -> Path:
        return FIXTURES / f"{self.name}.jsonl"


def load(name: str) -> Workload:
    text = (WORKLOADS / f"{name}.sql").read_text(encoding="utf-8")
    db = "postgres" if name.startswith("pg_") else "mariadb"
    properties = dict(_read_properties(HERE / f"base-{db}.properties"))
    for match in re.finditer(r"^--\s*@@property\s+([^=\s]+)\s*=\s*(.*?)\s*$", text, re.M):
        properties[match.group(1)] = match.group(2)
    setup, _, capture = text.partition("-- @@CAPTURE")
    steps = [s.strip() for s in re.split(r"^--\s*@@STEP\s*$", capture, flags=re.M) if s.strip()]
    return Workload(name, db, setup, steps, properties)


def names(db: str | None = None) -> list[str]:
    found = sorted(p.stem for p in WORKLOADS.glob("*.sql"))
    prefix = {"postgres": "pg_", "mariadb": "mariadb_"}.get(db or "", "")
    return [n for n in found if n.startswith(prefix)]


def _read_properties(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        out.append((key.strip(), value.strip()))
    return out


# ---- servers ----------------------------------------------------------------------------------

def _script_dsn(script: str, env: dict[str, str] | None = None) -> str:
    dsn, why = start_by_script(script, env)
    if dsn is None:
        raise RuntimeError(why)
    return dsn


def postgres_dsn() -> str:
    """The admin DSN of the PostgreSQL the suite runs on (CDC_TEST_PG_DSN, else scripts/postgres.sh)."""
    return os.environ.get("CDC_TEST_PG_DSN") or _script_dsn("postgres.sh")


def mariadb_dsn() -> str:
    """A MariaDB at its default settings (CDC_TEST_MARIADB_DEFAULTS_DSN, else scripts/mariadb.sh with
    CDC_MARIADB_DEFAULTS=1): binlog_row_metadata=NO_LOG, latin1, as most production servers run."""
    return os.environ.get("CDC_TEST_MARIADB_DEFAULTS_DSN") or _script_dsn("mariadb.sh", {"CDC_MARIADB_DEFAULTS": "1"})


def connection_properties(db: str, dsn: str) -> dict[str, str]:
    """Debezium's connection properties for the suite's database on that server."""
    if db == "postgres":
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(dsn)
        props = {"database.hostname": str(params.get("host", "127.0.0.1")),
                 "database.port": str(params.get("port", 5432)),
                 "database.user": str(params.get("user", "postgres")), "database.dbname": DATABASE}
        props["database.password"] = str(params.get("password") or "")
        return props
    url = urlparse(dsn)
    return {"database.hostname": url.hostname or "127.0.0.1", "database.port": str(url.port or 3306),
            "database.user": unquote(url.username or "root"), "database.password": unquote(url.password or "")}


# ---- running SQL ------------------------------------------------------------------------------

def reset_database(db: str, dsn: str) -> None:
    """Drop the suite's database (and PostgreSQL slots on it) and create it empty."""
    if db == "postgres":
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            for (slot,) in conn.execute("SELECT slot_name FROM pg_replication_slots WHERE database = %s",
                                        (DATABASE,)).fetchall():
                conn.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                             "WHERE slot_name = %s AND active_pid IS NOT NULL", (slot,))
                for _ in range(50):
                    try:
                        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                        break
                    except psycopg.errors.ObjectInUse:
                        time.sleep(0.1)
            conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {DATABASE}")
        return
    with _mariadb(dsn, None) as conn, conn.cursor() as cur:
        # Both connectors snapshot the schema of every database: the other databases a workload made
        # (mariadb_crossdb's lab2, lab3), left by an aborted run, would add events to the next one.
        cur.execute("SHOW DATABASES LIKE 'lab%'")
        for (name,) in cur.fetchall():
            if name == DATABASE or (name.startswith(DATABASE) and name[len(DATABASE):].isdigit()):
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cur.execute(f"CREATE DATABASE {DATABASE}")


def run_sql(db: str, dsn: str, sql: str) -> None:
    """Run one step: PostgreSQL takes it whole (simple query protocol); MariaDB statement by statement."""
    if not sql.strip():
        return
    if db == "postgres":
        import psycopg
        from psycopg.conninfo import make_conninfo

        with psycopg.connect(make_conninfo(dsn, dbname=DATABASE), autocommit=True) as conn:
            for part in re.split(r"^--\s*@@SLEEP\s+([0-9.]+)\s*$", sql, flags=re.M):
                if re.fullmatch(r"[0-9.]+", part.strip()):
                    time.sleep(float(part))
                elif part.strip():
                    conn.execute(part)
        return
    with _mariadb(dsn, DATABASE) as conn, conn.cursor() as cur:
        for statement in split_statements(sql):
            sleep = re.fullmatch(r"--\s*@@SLEEP\s+([0-9.]+)", statement)
            if sleep:
                time.sleep(float(sleep.group(1)))
            else:
                cur.execute(statement)


def set_global(dsn: str, assignments: dict[str, str]) -> None:
    with _mariadb(dsn, None) as conn, conn.cursor() as cur:
        for name, value in assignments.items():
            cur.execute(f"SET GLOBAL {name} = {value}")


def _mariadb(dsn: str, database: str | None) -> Any:
    import pymysql

    url = urlparse(dsn)
    return pymysql.connect(host=url.hostname or "127.0.0.1", port=url.port or 3306,
                           user=unquote(url.username or "root"), password=unquote(url.password or ""),
                           database=database, autocommit=True,
                           charset="utf8mb4", init_command="SET time_zone = '+00:00'")


def split_statements(sql: str) -> list[str]:
    """Statements separated by ``;`` outside quotes and comments; ``-- @@SLEEP n`` kept as its own item."""
    out: list[str] = []
    current: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(sql):
        ch = sql[i]
        if quote:
            current.append(ch)
            if ch == "\\" and quote != "`":
                current.append(sql[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
            current.append(ch)
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = len(sql) if end < 0 else end
            comment = sql[i:end].strip()
            if comment.startswith("-- @@SLEEP"):
                if "".join(current).strip():
                    out.append("".join(current).strip())
                current = []
                out.append(comment)
            i = end
            continue
        elif ch == ";":
            if "".join(current).strip():
                out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    if "".join(current).strip():
        out.append("".join(current).strip())
    return out
