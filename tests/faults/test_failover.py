"""A MariaDB failover under a writer, as an operator runs it: a primary and a replica with GTID replication and
log_slave_updates (scripts/mariadb-replica.sh: private servers on free ports, in a folder of their own under
/tmp, removed afterwards), ``cdc mysql`` streaming the primary, the primary killed with kill -9 once the replica
caught up, the replica promoted, the writer and cdc's ``--database-port`` pointed at it. cdc continues from
its stored offset by GTID on the promoted replica: the table rebuilt from the events equals the table, no
change lost, no new snapshot, duplicates only from the last unacknowledged batch.

    kill   cdc is killed (kill -9) mid-stream first, when its stored offset lies inside a transaction if it can
           be caught there (small batches): the resume skips what was delivered of that transaction on the
           other server; one replay of the unacknowledged tail allowed (in the test command)
    stop   cdc retries the dead primary until the operator stops it (SIGTERM): it ends with its clear error
           (cannot reach the server: a stop ends the retries), everything it wrote acknowledged and stored, so
           no duplicate at all (the full suite)
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import ROOT
from tests.faults.conftest import FULL, RecordProperty
from tests.faults.harness import Cdc, MariaDbSource, Writer, finish, seed, verify

pytestmark = [pytest.mark.faults, pytest.mark.mysql]

SHARED_PORTS = {54329, 53306, 53307, 53314, 53315, 53316, 53317}
ROWS = 1000


class ReplicatedSource(MariaDbSource):
    """The captured table on the primary, then on the promoted replica. A change's source position is its GTID
    (each server logs it at its own file and position): with the row key and the op it names the change, so a
    change delivered from the primary and again from the replica counts as a duplicate."""

    def position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        return (source.get("gtid"),)

    def point_at(self, port: int) -> None:
        """The application and the pipeline's configuration switch to another server (as after a DNS switch)."""
        self.server["port"] = port
        self.db["database.port"] = str(port)


@dataclass
class Pair:
    """The primary and the replica of scripts/mariadb-replica.sh."""

    env: dict[str, str]
    primary: int
    replica: int

    def run(self, command: str, timeout: float = 300) -> None:
        done = subprocess.run(["bash", str(ROOT / "scripts" / "mariadb-replica.sh"), command],
                              env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout)
        logs = "".join(f"\n{log}:\n{log.read_text(errors='replace')[-2000:]}"
                       for log in Path(self.env["CDC_REPLICA_DIR"]).rglob("server.log"))
        assert done.returncode == 0, f"mariadb-replica.sh {command}: {done.stderr[-3000:]}{logs}"

    def query(self, port: int, statement: str) -> Any:
        import pymysql

        with pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True,
                             connect_timeout=5) as conn, conn.cursor() as cur:
            cur.execute(statement)
            return cur.fetchone()[0]

    def wait_caught_up(self, timeout: float = 60) -> str:
        """The replica holds every transaction of the primary: their GTID positions."""
        deadline = time.monotonic() + timeout
        while True:
            primary = self.query(self.primary, "SELECT @@GLOBAL.gtid_binlog_pos")
            if self.query(self.replica, "SELECT @@GLOBAL.gtid_binlog_pos") == primary:
                return str(primary)
            assert time.monotonic() < deadline, "the replica did not catch up"
            time.sleep(0.1)


def _free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in SHARED_PORTS and port not in ports:
            ports.append(port)
    return ports


@pytest.fixture()
def pair() -> Iterator[Pair]:
    if shutil.which("mariadbd") is None and not Path("/usr/sbin/mariadbd").exists():
        pytest.skip("no MariaDB binaries (scripts/mariadb.sh installs them)")
    folder = Path(tempfile.mkdtemp(prefix="cdc-failover-", dir="/tmp"))
    folder.chmod(0o755)  # the servers run as mysql: it must get through
    primary, replica = _free_ports(2)
    servers = Pair({"CDC_REPLICA_DIR": str(folder), "CDC_REPLICA_PRIMARY_PORT": str(primary),
                    "CDC_REPLICA_PORT": str(replica)}, primary, replica)
    try:
        servers.run("start")
        yield servers
    finally:
        try:
            servers.run("destroy", 120)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _stored_offset(cdc: Cdc) -> dict[str, Any]:
    try:
        stored = orjson.loads(cdc.offsets.read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return {}
    offsets = stored.get("offsets", stored)
    return next(iter(offsets.values()), {}) if isinstance(offsets, dict) else {}


def _kill_inside_a_transaction(cdc: Cdc, timeout: float = 10) -> bool:
    """kill -9 the run, when its stored offset lies inside a transaction if that comes within ``timeout``."""
    deadline = time.monotonic() + timeout
    inside = False
    while time.monotonic() < deadline and not inside:
        inside = bool(_stored_offset(cdc).get("event"))
        if not inside:
            time.sleep(0.01)
    cdc.kill()
    return inside


def _quiet(writer: Writer) -> None:
    """Pause the writer and wait for its transaction in flight to end."""
    writer.pause(True)
    count = -1
    while count != len(writer.ops):
        count = len(writer.ops)
        time.sleep(0.3)


@pytest.mark.parametrize("ending", [pytest.param("kill", id="mariadb-kill"),
                                    pytest.param("stop", marks=FULL, id="mariadb-stop")])
def test_failover_to_a_promoted_replica(pair: Pair, ending: str, tmp_path: Path,
                                        record_property: RecordProperty) -> None:
    import pymysql

    args = {"host": "127.0.0.1", "port": pair.primary, "user": "root", "password": ""}
    with pymysql.connect(**args, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE faults CHARACTER SET utf8mb4")
    source = ReplicatedSource(args, {"database.hostname": "127.0.0.1", "database.port": str(pair.primary),
                                     "database.user": "root", "database.password": "", "db": "faults",
                                     "database.server.id": "5601"})
    source.create_table(ROWS)
    rng = random.Random(seed())
    # small batches: stored offsets often lie inside a transaction
    cdc = Cdc(source, tmp_path, props={"max.batch.size": "2", "errors.max.retries": "-1"})
    writer = Writer(source, range(1, ROWS + 1), rng)
    inside = False
    try:
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        writer.start()
        writer.wait_ops(300)
        if ending == "kill":
            inside = _kill_inside_a_transaction(cdc)
        _quiet(writer)
        at = pair.wait_caught_up()
        pair.run("kill-primary")
        if ending == "stop":
            assert cdc.wait_log("cannot reach the server", timeout=60), cdc.tail()  # retrying the dead primary
            cdc.run.proc.send_signal(signal.SIGTERM)
            assert "cannot reach the server" in cdc.wait_failed(60)
        pair.run("promote")
        source.point_at(pair.replica)
        writer.pause(False)
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        writer.wait_ops(len(writer.ops) + 300)
        finish(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verdict = verify(cdc, writer)
    second = cdc.runs[1].text()
    assert "start: stream (resuming from the stored offset)" in second, second[-3000:]
    resumed = next((line for line in second.splitlines() if "resuming by GTID" in line), "")
    assert "another server of the topology" in resumed, second[-3000:]
    snapshot_rows = sum(1 for e in cdc.events.events if e.op == "r")
    assert snapshot_rows == ROWS and not any(e.op == "t" for e in cdc.events.events)  # no new snapshot
    rows = len(source.rows())
    print(f"failover ({ending}) at GTID {at}, stored offset inside a transaction: {inside}: {rows} rows at the "
          f"source, {verdict.changes} changes written, {verdict.events} events, 0 lost, {verdict.duplicates} "
          f"duplicated, {snapshot_rows - ROWS} re-snapshotted; {verdict}\n{resumed}")
    record_property("outcome", f"{rows} rows, {verdict.events} events, 0 lost, {verdict.duplicates} duplicated, "
                               f"0 re-snapshotted" + (", offset inside a transaction" if inside else ""))
    if ending == "stop":
        assert verdict.duplicates == 0
