"""Shared fixtures: servers are found through an environment variable, then a locally started
server (scripts/*.sh), and only then containers (testcontainers, for users with Docker)."""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import ROOT, start_by_script

# Skips that say nothing is missing here: a report (the DDL corpus's parse rates), a server that
# cannot run on this machine (SQL Server: CDC_TEST_SQLSERVER_DSN), or a case of another server kind.
# CDC_REQUIRE_SERVERS=1 fails every other skip, at run time and at collection time alike.
EXPECTED_SKIPS = ("parsed ", "CDC_TEST_SQLSERVER_DSN", "CREATE OR REPLACE TABLE is MariaDB's",
                  "the reference output is MariaDB's",
                  "this server has TLS", "is not ours to stop", "not started by this checkout",
                  "restarts only the local server", "cannot make a folder read-only here",
                  "no Rust toolchain", "long case: scripts/long-suite.sh")

# Cases left out of the test command for its time, each with a shorter sibling that stays in it;
# scripts/long-suite.sh runs them (CDC_LONG=1).
LONG = pytest.mark.skipif(os.environ.get("CDC_LONG") != "1", reason="long case: scripts/long-suite.sh")


def _must_run(reason: str) -> bool:
    """Whether CDC_REQUIRE_SERVERS=1 (CI) turns a skip with this reason into a failure."""
    return os.environ.get("CDC_REQUIRE_SERVERS") == "1" and not any(expected in reason for expected in EXPECTED_SKIPS)


def _skip_reason(longrepr: object) -> str:
    """A skip report's reason (``Skipped: ...``): its longrepr is (path, line, reason)."""
    return str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """CDC_REQUIRE_SERVERS=1 (CI): a test skipped because a server, a jar or a library is missing
    fails instead, so that a broken set-up cannot pass as green."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report.longrepr)
    if _must_run(reason):
        report.outcome = "failed"
        report.longrepr = f"skipped, but CDC_REQUIRE_SERVERS=1 requires everything to run: {reason}"


class SkippedAtCollection(pytest.Item):
    """Stands in for a module (or class) that skipped itself while being collected (a module-level
    ``pytest.importorskip``, ``pytest.skip(allow_module_level=True)``) when CDC_REQUIRE_SERVERS=1
    does not accept the reason: one failing test in the run, reported like a run-time skip turned
    failure, where pytest would otherwise count the whole module as one quiet skip."""

    def __init__(self, *, reason: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.reason = reason

    def runtest(self) -> None:
        pytest.fail(f"skipped while collected, but CDC_REQUIRE_SERVERS=1 requires everything to run: {self.reason}",
                    pytrace=False)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"{self.parent.name if self.parent else ''}: skipped at collection"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """The same switch for skips at collection time, which pytest_runtest_makereport never sees."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.outcome != "skipped":
        return
    reason = _skip_reason(report.longrepr)
    if _must_run(reason):
        report.outcome = "passed"
        report.longrepr = None
        report.result = [SkippedAtCollection.from_parent(collector, name="skipped_at_collection", reason=reason)]


def require_native() -> object:
    """``cdc_native``; skips without a Rust toolchain, and (a failure under CDC_REQUIRE_SERVERS=1)
    when one is there but the codec was not built."""
    try:
        import cdc_native
    except ImportError:
        import shutil

        if shutil.which("cargo") is None:
            pytest.skip("no Rust toolchain (cargo): the compiled codec cannot be built here")
        pytest.skip("the compiled codec is not built: scripts/setup.sh builds it (see .local/native.log)")
    return cdc_native


# Debezium's real output (a copy of shared/reference/debezium, so that a clone alone can run the tests).
REFERENCE = ROOT / "tests" / "fixtures" / "reference"


def _local_postgres() -> str | None:
    dsn, _ = start_by_script("postgres.sh", timeout=600)
    return dsn


def _container_postgres() -> str | None:  # pragma: no cover - needs Docker
    try:
        from testcontainers.postgres import PostgresContainer  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        container = PostgresContainer("postgres:16").with_command("postgres -c wal_level=logical")
        container.start()
    except Exception:  # noqa: BLE001
        return None
    return container.get_connection_url().replace("postgresql+psycopg2", "postgresql")


@pytest.fixture(scope="session")
def pg_admin_dsn() -> str:
    dsn = os.environ.get("CDC_TEST_PG_DSN")
    if not dsn:
        dsn = _local_postgres()
        if dsn:
            _drop_stale_test_databases(dsn)
    dsn = dsn or _container_postgres()
    if not dsn:
        pytest.skip("no PostgreSQL: set CDC_TEST_PG_DSN, or let scripts/postgres.sh install one (needs root)")
    return dsn


STALE_TEST_DATABASE_S = 2 * 3600  # longer than any test: its session was killed before it dropped its database


def _drop_stale_test_databases(admin_dsn: str) -> None:
    """Databases of pg_db (t_ and ten hex digits) that a killed test session left on the local server, with
    their slots: such a slot holds WAL without end (5.7 GB was found), and slot names are the cluster's, so
    a test that names its slot as the left one would find it taken. Only on the server the project's
    script runs, never on one given by CDC_TEST_PG_DSN."""
    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        stale = [row[0] for row in conn.execute(
            "SELECT datname FROM pg_database WHERE datname ~ '^t_[0-9a-f]{10}$' AND now() - "
            "(pg_stat_file('base/' || oid || '/PG_VERSION')).modification > make_interval(secs => %s)",
            (STALE_TEST_DATABASE_S,)).fetchall()]
    for name in stale:
        _drop_database(admin_dsn, name)


@pytest.fixture()
def pg_db(pg_admin_dsn: str) -> Iterator[dict[str, str]]:
    """A fresh database per test; yields its connection properties (Debezium names)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = "t_" + uuid.uuid4().hex[:10]
    with psycopg.connect(pg_admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(pg_admin_dsn)
    props = {
        "database.hostname": params.get("host", "127.0.0.1"),
        "database.port": str(params.get("port", 5432)),
        "database.user": params.get("user", "postgres"),
        "database.dbname": name,
        "dsn": make_conninfo(pg_admin_dsn, dbname=name),
    }
    if params.get("password"):
        props["database.password"] = params["password"]
    yield props
    _drop_database(pg_admin_dsn, name)


def _drop_database(admin_dsn: str, name: str) -> None:
    """Drop a test database and its slots. A pipeline still winding down (a Spark worker, say)
    may reconnect after its backend is terminated, so this tries a few times."""
    import time

    import psycopg

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for attempt in range(20):
            slots = conn.execute("SELECT slot_name, active_pid FROM pg_replication_slots WHERE database = %s",
                                 (name,)).fetchall()
            for _slot, pid in slots:
                if pid is not None:
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            for slot, _ in slots:
                try:
                    conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                except psycopg.Error:
                    pass
            try:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                return
            except psycopg.errors.ObjectInUse:
                if attempt == 19:
                    raise
                time.sleep(0.5)


# ---- MySQL / MariaDB ---------------------------------------------------------------------------

def _local_mariadb() -> str | None:
    dsn, _ = start_by_script("mariadb.sh")
    return dsn


@pytest.fixture(scope="session")
def mysql_server() -> dict[str, object]:
    """Connection arguments of a MySQL/MariaDB: CDC_TEST_MYSQL_DSN, else scripts/mariadb.sh."""
    from urllib.parse import unquote, urlparse

    pymysql = pytest.importorskip("pymysql")
    dsn = os.environ.get("CDC_TEST_MYSQL_DSN") or _local_mariadb()
    if not dsn:
        pytest.skip("no MySQL/MariaDB: set CDC_TEST_MYSQL_DSN=mysql://user:pass@host:port/, or let "
                    "scripts/mariadb.sh install one (needs root and Debian's packages)")
    url = urlparse(dsn)
    args = {"host": url.hostname or "127.0.0.1", "port": url.port or 3306,
            "user": unquote(url.username or "root"), "password": unquote(url.password or "")}
    pymysql.connect(**args).close()
    return args


@pytest.fixture()
def mysql_db(mysql_server: dict[str, object]) -> Iterator[dict[str, str]]:
    """A fresh database and the source properties that capture only it."""
    import pymysql

    name = f"cdc_{uuid.uuid4().hex[:10]}"
    with pymysql.connect(**mysql_server, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    props = {
        "database.hostname": str(mysql_server["host"]), "database.port": str(mysql_server["port"]),
        "database.user": str(mysql_server["user"]), "database.password": str(mysql_server["password"]),
        "database.include.list": name, "database.server.id": str(5400 + uuid.uuid4().int % 1000),
        "name": name, "db": name,
    }
    yield props
    # the server may have restarted
    with pymysql.connect(**mysql_server, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
