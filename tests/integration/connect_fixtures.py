"""Kafka Connect standalone workers running Debezium's own connectors (scripts/connect.sh).

The worker is configured at Connect's defaults: only the settings it requires
(``bootstrap.servers``, ``key.converter``/``value.converter`` = JsonConverter with schemas,
``offset.storage.file.filename``, ``plugin.path``), and two that change nothing a connector reads
or writes: a private REST port (``listeners``; two workers never fight over Connect's 8083) and
``plugin.discovery=service_load`` (every plugin here has ServiceLoader manifests; the default
``hybrid_warn`` scans the jars by reflection, ≈ 20 s of every start here, and then advises this).
No ``header.converter``: the worker's is Connect's default, ``SimpleHeaderConverter``; a connector
may set its own.

* :func:`jdbc_sink` + :meth:`ConnectWorker.wait_for`: Debezium's JDBC sink reading topics into a
  PostgreSQL database; a failed task stops the wait with the worker's ERROR lines
  (:class:`ConnectTaskFailed`).
* :func:`postgres_source`: Debezium's PostgreSQL connector writing real Debezium topics to the broker.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "connect.sh"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
JDBC_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
POSTGRES_SOURCE = "io.debezium.connector.postgresql.PostgresConnector"


class ConnectTaskFailed(AssertionError):
    """A connector or task of the worker failed (or the worker exited); the message holds the
    worker's ERROR lines with their exception messages."""


def connect_plugins() -> Path:
    """The plugin.path folder, fetched on first use (Maven, into $CDC_CACHE/connect); skips without
    Java or Maven (a failure under CDC_REQUIRE_SERVERS=1)."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"no Kafka Connect: {' and '.join(missing)} not found; install Java 17 and Maven so "
                    "scripts/connect.sh can fetch Connect and Debezium's connector plugins")
    done = subprocess.run(["bash", str(SCRIPT), "plugins"], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        pytest.fail(f"scripts/connect.sh plugins failed:\n{done.stderr[-3000:]}", pytrace=False)
    return Path(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def jdbc_url(db: Mapping[str, str]) -> str:
    return f"jdbc:postgresql://{db['database.hostname']}:{db['database.port']}/{db['database.dbname']}"


def worker_properties(bootstrap: str, plugin_path: Path, workdir: Path) -> dict[str, str]:
    """A standalone worker at Connect's defaults (see the module's docstring)."""
    return {
        "bootstrap.servers": bootstrap,
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "true",
        "offset.storage.file.filename": str(workdir / "worker.offsets"),
        "plugin.path": str(plugin_path),
        "plugin.discovery": "service_load",
        "listeners": f"http://127.0.0.1:{free_port()}",
    }


def jdbc_sink(name: str, target: Mapping[str, str], topics_regex: str,
              extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Debezium's JDBC sink into ``target`` (a ``pg_db``-like mapping), with the settings that make
    it a replica of the source: upserts by the record key, deletes applied, tables created and
    columns added from the records' schemas. ``extra`` adds or overrides connector settings, e.g.
    ``{"header.converter": "org.apache.kafka.connect.storage.StringConverter"}``."""
    props = {
        "name": name,
        "connector.class": JDBC_SINK,
        "tasks.max": "1",
        "topics.regex": topics_regex,
        "connection.url": jdbc_url(target),
        "connection.username": target["database.user"],
        "connection.password": target.get("database.password", ""),
        "insert.mode": "upsert",
        "delete.enabled": "true",
        "primary.key.mode": "record_key",
        "schema.evolution": "basic",
    }
    return {**props, **(extra or {})}


def postgres_source(name: str, source: Mapping[str, str], topic_prefix: str,
                    extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Debezium's PostgreSQL connector on ``source`` (a ``pg_db``-like mapping): pgoutput, its own
    slot and publication (so it can run beside a cdc pipeline on the same database), topics created
    by the worker with one partition (the broker does not create topics itself)."""
    props = {
        "name": name,
        "connector.class": POSTGRES_SOURCE,
        "tasks.max": "1",
        "database.hostname": source["database.hostname"],
        "database.port": source["database.port"],
        "database.user": source["database.user"],
        "database.password": source.get("database.password", ""),
        "database.dbname": source["database.dbname"],
        "topic.prefix": topic_prefix,
        "plugin.name": "pgoutput",
        "slot.name": f"dbz_{uuid.uuid4().hex[:8]}",
        "publication.name": f"dbz_{uuid.uuid4().hex[:8]}",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
    }
    return {**props, **(extra or {})}


def write_properties(path: Path, props: Mapping[str, str]) -> Path:
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("\n", "\\n")

    path.write_text("".join(f"{escape(k)}={escape(v)}\n" for k, v in props.items()))
    return path


# The start of a log line (scripts/connect.sh's pattern: "[%d] %p %m (%c)%n").
_LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d ")
# Lines that carry an exception's message in a log4j stack trace (not its frames).
_TRACE_MESSAGE = re.compile(r"^(Caused by: |[\w.$]+(Exception|Error)\b)")


class ConnectWorker:
    """``scripts/connect.sh run`` as a subprocess, its output in ``workdir/worker.log``. Use as a
    context manager; :meth:`wait_for` polls a condition and fails fast when a task failed."""

    def __init__(self, workdir: Path, bootstrap: str, connectors: list[dict[str, str]],
                 plugin_path: Path | None = None) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.worker = worker_properties(bootstrap, plugin_path or connect_plugins(), workdir)
        self.connectors = connectors
        self.rest = self.worker["listeners"]
        self.log = workdir / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> ConnectWorker:
        files = [write_properties(self.workdir / "worker.properties", self.worker)]
        files += [write_properties(self.workdir / f"{c['name']}.properties", c) for c in self.connectors]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(["bash", str(SCRIPT), "run", *map(str, files)], stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir)
        return self

    def stop(self) -> None:
        """SIGTERM (Connect stops its tasks and commits offsets), SIGKILL after 30 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def __enter__(self) -> ConnectWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- state -------------------------------------------------------------------------------

    def status(self, name: str) -> dict[str, Any] | None:
        """Connect's ``GET /connectors/<name>/status``, None while the REST server is not up."""
        try:
            with urllib.request.urlopen(f"{self.rest}/connectors/{name}/status", timeout=5) as answer:
                return json.loads(answer.read())  # type: ignore[no-any-return]
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def running(self, name: str) -> bool:
        """The connector and all of its tasks (at least one) are RUNNING."""
        status = self.status(name)
        return (status is not None and status["connector"]["state"] == "RUNNING" and bool(status["tasks"])
                and all(task["state"] == "RUNNING" for task in status["tasks"]))

    def failure(self) -> str | None:
        """Why the worker cannot make progress, else None: it exited, a connector or task is FAILED,
        or it logged an ERROR. The last matters for the JDBC sink: it logs a record it could not
        write at once ("Failed to process record") but fails its task only at the next put or offset
        commit, up to a minute later (offset.flush.interval.ms)."""
        assert self.process is not None, "the worker was not started"
        if self.process.poll() is not None:
            return f"the Connect worker exited with code {self.process.returncode}"
        errors = [line for line in self.error_lines() if not line.startswith(" ")]
        if errors:
            return f"the Connect worker logged {len(errors)} ERROR line(s)"
        for connector in self.connectors:
            status = self.status(connector["name"])
            if status is None:
                continue
            states = [("connector", status["connector"])] + [(f"task {t['id']}", t) for t in status["tasks"]]
            for what, state in states:
                if state["state"] == "FAILED":
                    trace = state.get("trace", "").splitlines()
                    return f"{connector['name']} {what} FAILED: {trace[0] if trace else '(no trace)'}"
        return None

    def error_lines(self, limit: int = 40) -> list[str]:
        """The log's ERROR lines, each followed by the messages of its exception chain (frames left out)."""
        if not self.log.exists():
            return []
        lines: list[str] = []
        in_error = False
        for line in self.log.read_text(errors="replace").splitlines():
            if _LOG_LINE.match(line):
                in_error = " ERROR " in line[:40]
                if in_error:
                    lines.append(line)
            elif in_error and _TRACE_MESSAGE.match(line) and "    " + line not in lines[-8:]:
                lines.append("    " + line)
        return lines[:limit]

    def log_tail(self, count: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-count:]) if self.log.exists() else ""

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 120,
                 describe: Callable[[], str] | None = None) -> None:
        """Until ``condition()`` holds; :class:`ConnectTaskFailed` (with the ERROR lines) as soon as a
        task fails, AssertionError at the time-out (with ``describe()`` and the log's end)."""
        deadline = time.monotonic() + timeout
        while True:
            failed = self.failure()
            if failed is not None:
                errors = "\n".join(self.error_lines()) or self.log_tail()
                raise ConnectTaskFailed(f"{failed} while waiting for {what}; its ERROR lines ({self.log}):\n{errors}")
            if condition():
                return
            if time.monotonic() > deadline:
                detail = describe() if describe is not None else ""
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{detail}\n"
                                     f"the end of {self.log}:\n{self.log_tail()}")
            time.sleep(0.5)


def run_jdbc_sink(workdir: Path, bootstrap: str, connector: dict[str, str], done: Callable[[], bool], what: str,
                  timeout: float = 120, describe: Callable[[], str] | None = None) -> ConnectWorker:
    """One worker running the sink ``connector`` until ``done()`` holds (say, the target tables hold
    the expected rows), then stopped. Raises :class:`ConnectTaskFailed` with the worker's ERROR
    lines if the task fails first."""
    with ConnectWorker(workdir, bootstrap, [connector]) as worker:
        worker.wait_for(done, what, timeout, describe)
    return worker


def tables_hold(dsn: str, expected: Mapping[str, int]) -> Callable[[], bool]:
    """A ``done`` for :func:`run_jdbc_sink`: the tables of ``expected`` hold that many rows each."""
    def done() -> bool:
        counts = row_counts(dsn)
        return all(counts.get(table) == count for table, count in expected.items())
    return done


def row_counts(dsn: str) -> dict[str, int]:
    """Rows per table of the public schema of the database at ``dsn``."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "AND table_type = 'BASE TABLE' ORDER BY 1")]
        return {t: conn.execute(f'SELECT count(*) FROM public."{t}"').fetchone()[0] for t in tables}  # type: ignore[index]


def env_timeout(default: float) -> float:
    """CDC_CONNECT_TIMEOUT overrides the waits (a slow machine)."""
    return float(os.environ.get("CDC_CONNECT_TIMEOUT", default))
