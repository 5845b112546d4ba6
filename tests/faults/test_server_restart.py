"""The database server stopped and started again while a pipeline streams from it under a writer. Never
the shared servers (54329, 53306, 53307): each case starts a private PostgreSQL or MariaDB of its own with
the project's scripts (scripts/postgres.sh, scripts/mariadb.sh) on a free port, in a folder of its own
under /tmp, and removes it afterwards. The pipeline should reconnect by itself under its retry policy, or
fail clearly and resume on restart; the writer reconnects too and finds out whether a transaction the
stop cut off was committed."""
from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.faults.conftest import FULL, RecordProperty
from tests.faults.harness import (
    Cdc,
    MariaDbSource,
    PostgresSource,
    Source,
    Writer,
    finish,
    recover,
    seed,
    verify,
)
from tests.waits import wait_until

pytestmark = [pytest.mark.faults, FULL]

SHARED_PORTS = {54329, 53306, 53307}


def _free_port() -> int:
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in SHARED_PORTS:
            return port


@dataclass
class PrivateServer:
    """A server of the case's own, run by one of the project's scripts with its port and folder."""

    script: Path
    env: dict[str, str]
    port: int
    folder: Path

    def _run(self, command: str, timeout: float) -> None:
        done = subprocess.run(["bash", str(self.script), command], env={**os.environ, **self.env},
                              capture_output=True, text=True, timeout=timeout)
        logs = "".join(f"\n{log}:\n{log.read_text(errors='replace')[-2000:]}"
                       for log in self.folder.rglob("server.log"))
        assert done.returncode == 0, f"{self.script.name} {command}: {done.stderr[-3000:]}{logs}"

    def start(self) -> None:
        self._run("start", 600)

    def stop(self) -> None:
        self._run("stop", 120)


@pytest.fixture()
def private_source(request: pytest.FixtureRequest) -> Iterator[tuple[Source, PrivateServer]]:
    kind = request.param
    folder = Path(tempfile.mkdtemp(prefix=f"cdc-fault-{kind}-", dir="/tmp"))
    folder.chmod(0o755)  # the server runs as postgres / mysql: it must get through
    port = _free_port()
    if kind == "postgres":
        if not Path("/usr/lib/postgresql").exists():
            pytest.skip("no PostgreSQL binaries (scripts/postgres.sh installs them)")
        env = {"CDC_PG_PORT": str(port), "CDC_PG_DIR": str(folder / "pg"), "CDC_PG_VERSION": "15"}
        server = PrivateServer(ROOT / "scripts" / "postgres.sh", env, port, folder)
    else:
        if shutil.which("mariadbd") is None and not Path("/usr/sbin/mariadbd").exists():
            pytest.skip("no MariaDB binaries (scripts/mariadb.sh installs them)")
        server = PrivateServer(ROOT / "scripts" / "mariadb.sh",
                               {"CDC_MARIADB_PORT": str(port), "CDC_MARIADB_DIR": str(folder / "mariadb")}, port,
                               folder)
    try:
        server.start()
        source: Source
        if kind == "postgres":
            import psycopg

            admin = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("CREATE DATABASE faults")
            source = PostgresSource({"database.hostname": "127.0.0.1", "database.port": str(port),
                                     "database.user": "postgres", "database.dbname": "faults",
                                     "dsn": f"postgresql://postgres@127.0.0.1:{port}/faults"})
        else:
            import pymysql

            args = {"host": "127.0.0.1", "port": port, "user": "root", "password": ""}
            with pymysql.connect(**args, autocommit=True) as conn, conn.cursor() as cur:
                cur.execute("CREATE DATABASE faults CHARACTER SET utf8mb4")
            source = MariaDbSource(args, {"database.hostname": "127.0.0.1", "database.port": str(port),
                                          "database.user": "root", "database.password": "", "db": "faults",
                                          "database.server.id": "5501"})
        yield source, server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("private_source", [pytest.param("postgres", marks=pytest.mark.postgres, id="postgres"),
                                            pytest.param("mariadb", marks=pytest.mark.mysql, id="mariadb")],
                         indirect=True)
def test_server_restart_mid_stream(private_source: tuple[Source, PrivateServer], tmp_path: Path,
                                   record_property: RecordProperty) -> None:
    source, server = private_source
    rng = random.Random(seed())
    source.create_table(1000)
    cdc = Cdc(source, tmp_path)
    writer = Writer(source, range(1, 1001), rng)
    try:
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        writer.start()
        writer.wait_ops(300)
        server.stop()
        wait_until(lambda: writer.errors > 0, 30, "the writer to lose its connection to the stopped server")
        server.start()
        writer.wait_ops(len(writer.ops) + 300)
        record_property("outcome", recover(cdc, writer))
        finish(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verify(cdc, writer)
    print(f"the writer lost its connection {writer.errors} times")
    assert writer.errors > 0, "the server restart went unnoticed by the writer"
