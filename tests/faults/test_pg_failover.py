"""A PostgreSQL failover under a writer, as an operator runs it, and reading from a standby: a PostgreSQL 17
primary and a streaming standby that synchronises failover slots (scripts/postgres-standby.sh: private servers
on free ports, in a folder of their own under /tmp, removed afterwards; synchronous replication, so that no
committed transaction is lost with the primary).

    failover   ``cdc postgres`` streams the primary with slot.failover=true; once the standby holds a
               synchronised copy of the slot the primary is killed (kill -9) under the writer, the standby
               promoted, and the writer and cdc's ``--database-port`` pointed at it. cdc streams on from the copy
               of its slot: the table rebuilt from the events equals the table, no change lost, no new snapshot,
               duplicates only from the last unacknowledged batch.
                 kill   cdc retrying the dead primary is killed (kill -9) and started on the standby before its
                        promotion, which it waits for (retrying): one replay allowed (the test command)
                 stop   it is stopped (SIGTERM): it ends with its clear error, everything it wrote stored, so no
                        duplicate at all (the full suite)
                 switch cdc connects through a forwarder standing for a DNS name, which is switched to the
                        promoted standby: the running cdc reconnects, sees another server and starts its source
                        again from its stored offset (the full suite)
    standby    ``cdc postgres`` reads from the standby (slot and snapshot there) while the writer writes to the
               primary; what it cannot do there is refused with the fix.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.faults.conftest import FULL, RecordProperty
from tests.faults.harness import Cdc, PostgresSource, Writer, finish, seed, verify

pytestmark = [pytest.mark.faults, pytest.mark.postgres]

SHARED_PORTS = {54329, 54317, 54318, 54337, 54338, 53306, 53307, 53314, 53315, 53316, 53317}
ROWS = 1000
# Status updates often: the primary's slot, and so its synchronised copy, follows cdc closely.
PROPS = {"status.update.interval.ms": "300"}


class FailoverSource(PostgresSource):
    def point_at(self, port: int) -> None:
        """The application and the pipeline's configuration switch to another server (as after a DNS switch)."""
        self.db["database.port"] = str(port)
        self.dsn = self.db["dsn"] = f"postgresql://postgres@127.0.0.1:{port}/faults"


@dataclass
class Pair:
    """The primary and the standby of scripts/postgres-standby.sh."""

    env: dict[str, str]
    primary: int
    standby: int

    def run(self, command: str, timeout: float = 600) -> None:
        done = subprocess.run(["bash", str(ROOT / "scripts" / "postgres-standby.sh"), command],
                              env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout)
        logs = "".join(f"\n{log}:\n{log.read_text(errors='replace')[-2000:]}"
                       for log in Path(self.env["CDC_STANDBY_DIR"]).rglob("server.log"))
        assert done.returncode == 0, f"postgres-standby.sh {command}: {done.stderr[-3000:]}{logs}"

    def query(self, port: int, statement: str, params: tuple[Any, ...] = (), dbname: str = "postgres") -> Any:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/{dbname}", autocommit=True,
                             connect_timeout=5) as conn:
            cursor = conn.execute(statement.encode(), params)
            row = cursor.fetchone() if cursor.description else None
            return row[0] if row else None

    def source(self, port: int, writes_to: int | None = None) -> FailoverSource:
        """cdc reads the server on ``port``; the application (the writer, the checks) uses ``writes_to``."""
        return FailoverSource({"database.hostname": "127.0.0.1", "database.port": str(port),
                               "database.user": "postgres", "database.dbname": "faults",
                               "dsn": f"postgresql://postgres@127.0.0.1:{writes_to or port}/faults"})

    def wait_synchronised(self, slot: str, timeout: float = 60) -> str:
        """The standby holds a copy of ``slot`` that survives its promotion (synced, not temporary), at least
        as far as the primary's slot is now: that position."""
        target = self.query(self.primary, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                                          "WHERE slot_name = %s", (slot,))
        deadline = time.monotonic() + timeout
        while True:
            synced = self.query(self.standby, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE "
                                              "slot_name = %s AND synced AND NOT temporary AND confirmed_flush_lsn "
                                              ">= %s::pg_lsn", (slot, target))
            if synced is not None:
                return str(synced)
            assert time.monotonic() < deadline, f"the standby did not synchronise slot {slot} past {target}"
            self.query(self.standby, "SELECT pg_reload_conf()")  # wakes the slot sync worker from its nap
            time.sleep(0.2)

    def wait_caught_up(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        target = self.query(self.primary, "SELECT pg_current_wal_lsn()::text")
        while not self.query(self.standby, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)):
            assert time.monotonic() < deadline, "the standby did not catch up"
            time.sleep(0.05)


class Switch:
    """A TCP forwarder standing for a DNS name or a virtual IP: cdc connects to it, it connects to ``target``;
    switched, it cuts the connections it carries and forwards new ones to the new target."""

    def __init__(self, target: int) -> None:
        import threading

        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="switch").start()

    def switch(self, target: int) -> None:
        with self.lock:
            self.target = target
            for conn in self.open:
                _close(conn)
            self.open.clear()

    def close(self) -> None:
        self.switch(0)
        _close(self.listener)

    def _accept(self) -> None:
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self.lock:
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    _close(source)
    _close(sink)


def _close(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


def _free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port not in SHARED_PORTS and port not in ports:
            ports.append(port)
    return ports


def _pair(version: str) -> Iterator[Pair]:
    if not Path("/usr/lib/postgresql").exists():
        pytest.skip("no PostgreSQL client (scripts/postgres.sh installs it)")
    folder = Path(tempfile.mkdtemp(prefix="cdc-pg-failover-", dir="/tmp"))
    folder.chmod(0o755)  # the servers run as postgres: it must get through
    primary, standby = _free_ports(2)
    pair = Pair({"CDC_STANDBY_DIR": str(folder), "CDC_STANDBY_PRIMARY_PORT": str(primary),
                 "CDC_STANDBY_PORT": str(standby), "CDC_PG_VERSION": version}, primary, standby)
    try:
        try:
            pair.run("start")
        except AssertionError as exc:
            pytest.skip(f"PostgreSQL {version} primary and standby did not start (scripts/postgres-standby.sh): "
                        f"{str(exc)[-500:]}")
        pair.query(primary, "CREATE DATABASE faults")
        yield pair
    finally:
        try:
            pair.run("destroy", 120)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    yield from _pair(getattr(request, "param", "17"))


@pytest.fixture(scope="module")
def shared_pair() -> Iterator[Pair]:
    """One pair for the cases that leave it as it was (no failover)."""
    yield from _pair("17")


# ---- the failover --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("pair", "ending"), [
    pytest.param("17", "kill", id="postgres-17-kill"),
    pytest.param("17", "stop", marks=FULL, id="postgres-17-stop"),
    pytest.param("17", "switch", marks=FULL, id="postgres-17-switch"),
    pytest.param("18", "kill", marks=FULL, id="postgres-18-kill"),
], indirect=["pair"])
def test_failover_to_a_promoted_standby(pair: Pair, ending: str, tmp_path: Path,
                                        record_property: RecordProperty) -> None:
    import random

    switch = Switch(pair.primary) if ending == "switch" else None
    source = pair.source(switch.port if switch else pair.primary, writes_to=pair.primary)
    source.create_table(ROWS)
    rng = random.Random(seed())
    cdc = Cdc(source, tmp_path, props={**PROPS, "slot.failover": "true", "errors.max.retries": "-1"})
    writer = Writer(source, range(1, ROWS + 1), rng)
    try:
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        first = cdc.run.text()
        assert "a failover slot" in first and "standbys synchronise the slot through cdc_standby" in first, first
        writer.start()
        writer.wait_ops(300)
        synced = pair.wait_synchronised(source.slot)
        written = len(writer.ops)
        pair.run("kill-primary")  # the writer goes on: it retries, then writes to the promoted standby
        assert cdc.wait_log("retrying", timeout=60), cdc.tail()  # cdc retries the dead primary
        if switch is not None:
            # The name cdc connects to switches to the promoted standby: the running cdc reconnects to it, sees
            # another server (a new timeline), and starts its source again, checking the offset against it.
            pair.run("promote")
            source.point_at(pair.standby)
            source.db["database.port"] = str(switch.port)
            switch.switch(pair.standby)
            assert cdc.wait_log("restarting the source from the stored offset", timeout=90), cdc.tail()
        elif ending == "kill":
            # Pointed at the standby before its promotion: its copy of the slot cannot be read yet, cdc retries.
            cdc.kill()
            source.point_at(pair.standby)
            cdc.start()
            assert cdc.wait_log("the copy it keeps of the primary's failover slot", timeout=60), cdc.tail()
            pair.run("promote")
        else:
            cdc.run.proc.send_signal(signal.SIGTERM)
            cdc.wait_failed(60)
            pair.run("promote")
            source.point_at(pair.standby)
            cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        writer.wait_ops(len(writer.ops) + 300)
        finish(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
        if switch is not None:
            switch.close()
    verdict = verify(cdc, writer)
    second = cdc.runs[0 if switch else 1].text()
    assert "start: stream (resuming from the stored offset)" in second, second[-3000:]
    if switch is not None:
        assert "database.hostname leads to another server than before" in second, second[-3000:]
    assert "which this server's history continues from" in second, second[-3000:]  # a promoted standby: accepted
    assert "lists no standby in synchronized_standby_slots" in second, second[-3000:]  # none synchronises it now
    snapshot_rows = sum(1 for e in cdc.events.events if e.op == "r")
    assert snapshot_rows == ROWS and not any(e.op == "t" for e in cdc.events.events)  # no new snapshot
    rows = len(source.rows())
    print(f"failover ({ending}) with the slot synchronised at {synced}, {written} changes written before the kill: "
          f"{rows} rows at the source, {verdict.changes} changes written, {verdict.events} events, 0 lost, "
          f"{verdict.duplicates} duplicated, {snapshot_rows - ROWS} re-snapshotted; {verdict}")
    record_property("outcome", f"{rows} rows, {verdict.events} events, 0 lost, {verdict.duplicates} duplicated, "
                               "0 re-snapshotted")
    if ending == "stop":
        assert verdict.duplicates == 0


# ---- reading from a standby --------------------------------------------------------------------------

ON_17 = [pytest.param("17", id="postgres-17")]  # the fault suite's table: one column a source


@pytest.mark.parametrize("version", ON_17)
def test_reading_from_a_standby(shared_pair: Pair, version: str, tmp_path: Path,
                                record_property: RecordProperty) -> None:
    """Slot and snapshot on the standby, the changes the writer makes on the primary streamed from it; the
    publication made on the primary (the standby is read-only). An incremental snapshot on the way, read-only
    (read.only=true: no watermark can be written on a standby), its signal through the file channel."""
    import json
    import random

    pair = shared_pair
    source = pair.source(pair.standby, writes_to=pair.primary)  # cdc reads the standby, the writer the primary
    source.create_table(ROWS)
    source.sql(f'CREATE PUBLICATION "{source.publication}" FOR TABLE t')
    writer = Writer(source, range(1, ROWS + 1), random.Random(seed()))
    signals = tmp_path / "signals.jsonl"
    signals.write_text("")
    cdc = Cdc(source, tmp_path, props={**PROPS, "read.only": "true", "signal.enabled.channels": "file",
                                       "signal.file": str(signals), "incremental.snapshot.chunk.size": "100"})
    try:
        pair.wait_caught_up()
        cdc.start()
        writer.start()
        # The slot's creation on the standby waits for the primary to log its running transactions (every
        # 15 s while it writes): asked for now.
        deadline = time.monotonic() + 60
        while source.streaming_marker not in cdc.run.text():
            assert cdc.alive() and time.monotonic() < deadline, cdc.tail()
            pair.query(pair.primary, "SELECT pg_log_standby_snapshot()")
            time.sleep(0.5)
        writer.wait_ops(len(writer.ops) + 100)
        signals.write_text(json.dumps({"id": "standby-1", "type": "execute-snapshot",
                                       "data": {"data-collections": ["public.t"]}}) + "\n")
        assert cdc.wait_log("incremental snapshot of public.t done"), cdc.tail()
        writer.wait_ops(len(writer.ops) + 100)
        finish(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verdict = verify(cdc, writer)
    first = cdc.runs[0].text()
    assert f"reading from a standby (PostgreSQL {version}." in first, first[-3000:]
    # Every row of the table as created that the writer left alone was read twice: by the initial snapshot
    # and again by the incremental one (the rows it deleted meanwhile may or may not have been).
    reads = Counter(e.key for e in cdc.events.events if e.op == "r")
    alive = source.rows()
    assert not [k for k in range(1, ROWS + 1) if k in alive and reads[k] < 2]
    assert pair.query(pair.standby, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s",
                      (source.slot,)) == 1
    assert pair.query(pair.primary, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s",
                      (source.slot,)) == 0
    record_property("outcome", f"{len(source.rows())} rows, {verdict.events} events, 0 lost, "
                               f"{verdict.duplicates} duplicated")
    source.sql("DROP TABLE t")


@pytest.mark.parametrize("version", ON_17)
def test_what_a_standby_cannot_do(shared_pair: Pair, version: str, tmp_path: Path) -> None:
    """Refused with the fix: a publication missing on the standby (made on the primary only), a failover slot."""
    pair = shared_pair
    source = pair.source(pair.standby, writes_to=pair.primary)
    source.create_table(10)
    pair.wait_caught_up()
    cdc = Cdc(source, tmp_path)
    cdc.start()
    text = cdc.wait_failed(60)
    assert f"publication {source.publication!r} does not exist on this standby" in text, text[-3000:]
    assert f'fix: on the primary: CREATE PUBLICATION "{source.publication}" FOR TABLE "public"."t";' in text, \
        text[-3000:]

    source.sql(f'CREATE PUBLICATION "{source.publication}" FOR TABLE t')
    pair.wait_caught_up()
    cdc.start(**{"slot.failover": "true"})
    text = cdc.wait_failed(60)
    assert "slot.failover=true, but database.hostname names a standby" in text, text[-3000:]
    source.sql("DROP TABLE t", f'DROP PUBLICATION "{source.publication}"')


@pytest.mark.parametrize("version", ON_17)
def test_an_existing_slot_becomes_a_failover_slot(shared_pair: Pair, version: str, tmp_path: Path) -> None:
    """slot.failover turned on for a pipeline whose slot exists: altered at its next start, on the primary."""
    pair = shared_pair
    source = pair.source(pair.primary)
    source.create_table(10)
    cdc = Cdc(source, tmp_path)
    cdc.start()
    assert cdc.wait_log(source.streaming_marker), cdc.tail()
    cdc.stop()
    failover_of = "SELECT failover FROM pg_replication_slots WHERE slot_name = %s"
    assert pair.query(pair.primary, failover_of, (source.slot,)) is False
    cdc.start(**{"slot.failover": "true"})
    assert cdc.wait_log(source.streaming_marker), cdc.tail()
    cdc.stop()
    assert f"replication slot {source.slot} is now a failover slot" in cdc.run.text(), cdc.tail()
    assert pair.query(pair.primary, failover_of, (source.slot,)) is True
    source.sql(f"SELECT pg_drop_replication_slot('{source.slot}')", "DROP TABLE t",
               f'DROP PUBLICATION "{source.publication}"')
