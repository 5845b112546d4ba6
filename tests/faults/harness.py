"""What every fault case needs: the source database behind one interface, the real ``cdc`` command as a
subprocess (its runs, their logs, kill -9 / SIGTERM / SIGINT), a concurrent writer that logs every change
it committed, and the checks a user would make afterwards:

(a) the table rebuilt from the events (r/c/u/d applied by key in order, t empties it) equals the table;
(b) no change the writer committed after the snapshot point is missing, none is invented, and the only
    duplicates (an event of a source position emitted before) are at-least-once replays: a stretch of
    earlier events again, in order, once at the start of a run after a kill or a failure, and once after
    each restart of the source inside a run; none after a clean stop;
(c) no run printed a traceback, and a run that failed printed ``cdc: error: ...`` and a ``fix:`` line.

The captured table is always ``t (id int PRIMARY KEY, v bigint NOT NULL, pad varchar(20))``. Every
value of ``v`` the writer writes is new, so an event names the change it comes from: (op, id, v), with
``v`` of ``after`` (c, u, r) or of ``before`` (d; PostgreSQL's table has REPLICA IDENTITY FULL).
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import ROOT

TRACEBACK = "Traceback (most recent call last)"
TOPIC_PREFIX = "fx"

# Settings of every run: plain JSON values (smaller files), no context headers, offsets stored often (the
# replay after a kill is what was written since the last store), quick reconnects.
COMMON_PROPS = {
    "value.converter.schemas.enable": "false",
    "key.converter.schemas.enable": "false",
    "extended.headers.enabled": "false",
    "offset.flush.interval.ms": "200",
    "retriable.restart.connector.wait.ms": "200",
}


def seed() -> int:
    """The random seed of a case: CDC_FAULTS_SEED to replay a schedule, else a new one (printed)."""
    value = int(os.environ.get("CDC_FAULTS_SEED") or random.randrange(1 << 30))
    print(f"fault schedule seed {value} (CDC_FAULTS_SEED={value} replays it)")
    return value


# ---- the sources -----------------------------------------------------------------------------------

Op = tuple[str, int, int]  # (c|u|d, id, v): v of the row after (c, u) or before (d) the change


class WriterConnection(ABC):
    """One connection of the writer, in explicit transactions."""

    @abstractmethod
    def insert(self, key: int, v: int) -> None: ...

    @abstractmethod
    def update(self, key: int, v: int) -> bool: ...

    @abstractmethod
    def delete(self, key: int) -> int | None: ...

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def value(self, key: int) -> int | None: ...

    @abstractmethod
    def close(self) -> None: ...


class Source(ABC):
    """A database with the captured table, and how ``cdc`` is pointed at it."""

    kind: str  # "postgres" | "mariadb": the test ids
    command: str  # cdc's sub-command
    prefix = TOPIC_PREFIX  # topic.prefix
    table_topic: str  # the captured table's topic after the prefix
    errors: tuple[type[BaseException], ...]  # the driver's errors (the writer retries on them)
    streaming_marker: str  # the log line that says the run reads the log
    snapshot_marker = "snapshot of "  # "snapshot of <table> started"

    @abstractmethod
    def sql(self, *statements: str) -> None: ...

    @abstractmethod
    def rows(self) -> dict[int, int]: ...

    @abstractmethod
    def create_table(self, rows: int) -> None: ...

    @abstractmethod
    def connect(self) -> WriterConnection: ...

    @abstractmethod
    def connection_flags(self) -> list[str]: ...

    @abstractmethod
    def password(self) -> str: ...

    @abstractmethod
    def position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        """Where in the source's log an event comes from (Debezium's source block)."""

    @abstractmethod
    def backends(self, ports: set[int]) -> list[tuple[int, str]]:
        """The server's sessions of a client whose local TCP ports are ``ports``: (id, what it does)."""

    @abstractmethod
    def terminate(self, ids: Iterable[int]) -> None: ...

    @property
    def topic(self) -> str:
        return f"{self.prefix}.{self.table_topic}"

    def argv(self, out: Path, offsets: Path, props: dict[str, str]) -> list[str]:
        argv = [sys.executable, "-m", "cdc.cli", "-v", self.command, *self.connection_flags(),
                "--topic-prefix", self.prefix, "--output", str(out), "--offsets", str(offsets)]
        for name, value in {**COMMON_PROPS, **props}.items():
            argv += ["--set", f"{name}={value}"]
        return argv


class PostgresSource(Source):
    kind = "postgres"
    command = "postgres"
    streaming_marker = "START_REPLICATION SLOT"

    def __init__(self, db: dict[str, str], slot: str | None = None) -> None:
        import psycopg

        self.db = db
        self.dsn = db["dsn"]
        self.slot = slot or "fx_" + uuid.uuid4().hex[:8]
        self.publication = self.slot
        self.table_topic = "public.t"
        self.errors = (psycopg.Error,)

    def sql(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            return conn.execute(statement.encode(), params).fetchall()

    def rows(self) -> dict[int, int]:
        return {int(k): int(v) for k, v in self.query("SELECT id, v FROM t")}

    def create_table(self, rows: int) -> None:
        self.sql("CREATE TABLE t (id int PRIMARY KEY, v bigint NOT NULL, pad varchar(20))",
                 "ALTER TABLE t REPLICA IDENTITY FULL",
                 f"INSERT INTO t SELECT g, g, 'p' FROM generate_series(1, {rows}) g")

    def connect(self) -> WriterConnection:
        return _PgWriter(self.dsn)

    def connection_flags(self) -> list[str]:
        return ["--database-hostname", self.db["database.hostname"], "--database-port", self.db["database.port"],
                "--database-user", self.db["database.user"], "--database-dbname", self.db["database.dbname"],
                "--slot-name", self.slot, "--publication-name", self.publication,
                "--publication-autocreate-mode", "filtered", "--tables", r"public\.t"]

    def password(self) -> str:
        return self.db.get("database.password", "")

    def position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        return (source.get("lsn"),)

    def backends(self, ports: set[int]) -> list[tuple[int, str]]:
        if not ports:
            return []
        found = self.query("SELECT pid, backend_type || ': ' || coalesce(left(query, 60), '') FROM pg_stat_activity "
                           "WHERE client_port = ANY(%s)", (sorted(ports),))
        return [(int(pid), str(what)) for pid, what in found]

    def terminate(self, ids: Iterable[int]) -> None:
        for pid in ids:
            self.query("SELECT pg_terminate_backend(%s)", (pid,))

    def slot_state(self, name: str | None = None) -> tuple[Any, ...] | None:
        found = self.query("SELECT plugin, confirmed_flush_lsn::text, restart_lsn::text, catalog_xmin::text "
                           "FROM pg_replication_slots WHERE slot_name = %s", (name or self.slot,))
        return found[0] if found else None


class _PgWriter(WriterConnection):
    def __init__(self, dsn: str) -> None:
        import psycopg

        self.conn = psycopg.connect(dsn, connect_timeout=5)

    def insert(self, key: int, v: int) -> None:
        self.conn.execute("INSERT INTO t (id, v, pad) VALUES (%s, %s, 'w')", (key, v))

    def update(self, key: int, v: int) -> bool:
        return self.conn.execute("UPDATE t SET v = %s WHERE id = %s", (v, key)).rowcount == 1

    def delete(self, key: int) -> int | None:
        row = self.conn.execute("DELETE FROM t WHERE id = %s RETURNING v", (key,)).fetchone()
        return int(row[0]) if row else None

    def commit(self) -> None:
        self.conn.commit()

    def value(self, key: int) -> int | None:
        self.conn.rollback()
        row = self.conn.execute("SELECT v FROM t WHERE id = %s", (key,)).fetchone()
        self.conn.rollback()
        return int(row[0]) if row else None

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - a connection that is gone already
            pass


class MariaDbSource(Source):
    kind = "mariadb"
    command = "mysql"
    streaming_marker = "reading the binlog from"

    def __init__(self, server: dict[str, Any], db: dict[str, str]) -> None:
        import pymysql

        self.server = server
        self.db = db
        self.name = db["db"]
        self.table_topic = f"{self.name}.t"
        self.errors = (pymysql.MySQLError,)

    def _connect(self, database: bool = True) -> Any:
        import pymysql

        return pymysql.connect(**self.server, database=self.name if database else None, autocommit=True,
                               connect_timeout=5)

    def sql(self, *statements: str) -> None:
        conn = self._connect()
        try:
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
        finally:
            conn.close()

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        conn = self._connect()
        try:
            with conn.cursor() as cur:
                cur.execute(statement, params)
                return list(cur.fetchall())
        finally:
            conn.close()

    def rows(self) -> dict[int, int]:
        return {int(k): int(v) for k, v in self.query("SELECT id, v FROM t")}

    def create_table(self, rows: int) -> None:
        self.sql("CREATE TABLE t (id int PRIMARY KEY, v bigint NOT NULL, pad varchar(20))",
                 f"INSERT INTO t SELECT seq, seq, 'p' FROM seq_1_to_{rows}" if rows else "DO 0")

    def connect(self) -> WriterConnection:
        return _MariaDbWriter(self.server, self.name)

    def connection_flags(self) -> list[str]:
        return ["--database-hostname", self.db["database.hostname"], "--database-port", self.db["database.port"],
                "--database-user", self.db["database.user"], "--database-include-list", self.name,
                "--database-server-id", self.db["database.server.id"]]

    def password(self) -> str:
        return self.db["database.password"]

    def position(self, source: dict[str, Any]) -> tuple[Any, ...]:
        return (source.get("file"), source.get("pos"), source.get("row"))

    def backends(self, ports: set[int]) -> list[tuple[int, str]]:
        hosts = {f"127.0.0.1:{port}" for port in ports} | {f"localhost:{port}" for port in ports}
        found = self.query("SELECT ID, HOST, COMMAND, LEFT(COALESCE(INFO, ''), 60) FROM information_schema.PROCESSLIST")
        return [(int(row[0]), f"{row[2]}: {row[3]}") for row in found if row[1] in hosts]

    def terminate(self, ids: Iterable[int]) -> None:
        import pymysql

        for thread in ids:
            try:
                self.sql(f"KILL {int(thread)}")
            except pymysql.MySQLError:  # gone already
                pass


class _MariaDbWriter(WriterConnection):
    def __init__(self, server: dict[str, Any], name: str) -> None:
        import pymysql

        self.conn = pymysql.connect(**server, database=name, autocommit=False, connect_timeout=5)
        self.cur = self.conn.cursor()

    def insert(self, key: int, v: int) -> None:
        self.cur.execute("INSERT INTO t (id, v, pad) VALUES (%s, %s, 'w')", (key, v))

    def update(self, key: int, v: int) -> bool:
        return bool(self.cur.execute("UPDATE t SET v = %s WHERE id = %s", (v, key)) == 1)

    def delete(self, key: int) -> int | None:
        self.cur.execute("DELETE FROM t WHERE id = %s RETURNING v", (key,))
        row = self.cur.fetchone()
        return int(row[0]) if row else None

    def commit(self) -> None:
        self.conn.commit()

    def value(self, key: int) -> int | None:
        self.conn.rollback()
        self.cur.execute("SELECT v FROM t WHERE id = %s", (key,))
        row = self.cur.fetchone()
        self.conn.rollback()
        return int(row[0]) if row else None

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - a connection that is gone already
            pass


# ---- the writer ------------------------------------------------------------------------------------

class Writer:
    """Transactions of 1-3 changes (60 % updates, 25 % inserts, 15 % deletes) on distinct rows, one after
    the other on one connection: the log's order is the order of ``ops``. A transaction whose outcome a
    lost connection left unknown is looked up once a new connection is made."""

    def __init__(self, source: Source, live: Iterable[int], rng: random.Random, pause_s: float = 0.004) -> None:
        self.source = source
        self.live = list(live)
        self.next_id = 1 + max(self.live, default=0)
        self.next_v = 1_000_000_000
        self.rng = rng
        self.pause_s = pause_s
        self.ops: list[Op] = []
        self.errors = 0
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    def start(self) -> Writer:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True, name="fault-writer")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)
            assert not self._thread.is_alive(), "the writer did not stop"
            self._thread = None
        if self.failure is not None:
            raise AssertionError(f"the writer failed: {self.failure!r}") from self.failure

    def pause(self, paused: bool) -> None:
        if paused:
            self._paused.set()
        else:
            self._paused.clear()

    def wait_ops(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.ops) < count:
            assert time.monotonic() < deadline, f"the writer committed {len(self.ops)} of {count} changes"
            assert self.failure is None, self.failure
            time.sleep(0.05)

    def _plan(self) -> list[Op]:
        planned: list[Op] = []
        touched: set[int] = set()
        for _ in range(self.rng.randint(1, 3)):
            draw = self.rng.random()
            self.next_v += 1
            if draw < 0.25 or len(self.live) < 10:
                planned.append(("c", self.next_id, self.next_v))
                touched.add(self.next_id)
                self.next_id += 1
                continue
            key = self.live[self.rng.randrange(len(self.live))]
            if key in touched:
                continue
            touched.add(key)
            planned.append(("u" if draw < 0.85 else "d", key, self.next_v))
        return planned

    def _apply(self, conn: WriterConnection, planned: list[Op]) -> list[Op]:
        done: list[Op] = []
        for op, key, v in planned:
            if op == "c":
                conn.insert(key, v)
                done.append((op, key, v))
            elif op == "u":
                assert conn.update(key, v), f"row {key} is gone: is someone else writing to the table?"
                done.append((op, key, v))
            else:
                before = conn.delete(key)
                assert before is not None, f"row {key} is gone: is someone else writing to the table?"
                done.append((op, key, before))
        conn.commit()
        return done

    def _committed(self, conn: WriterConnection, done: list[Op]) -> bool:
        """Whether a transaction whose commit was cut off went through (its last change is there)."""
        op, key, v = done[-1]
        now = conn.value(key)
        return now is None if op == "d" else now == v

    def _record(self, done: list[Op]) -> None:
        with self.lock:
            self.ops.extend(done)
        for op, key, _ in done:
            if op == "c":
                self.live.append(key)
            elif op == "d":
                self.live.remove(key)

    def _connect(self) -> WriterConnection | None:
        while not self._stop.is_set():
            try:
                return self.source.connect()
            except self.source.errors:
                self.errors += 1
                time.sleep(0.2)
        return None

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.failure = exc

    def _loop(self) -> None:
        conn = self._connect()
        unknown: list[Op] | None = None
        while conn is not None and not self._stop.is_set():
            if unknown is not None:
                if self._committed(conn, unknown):
                    self._record(unknown)
                unknown = None
            if self._paused.is_set():
                time.sleep(0.02)
                continue
            planned = self._plan()
            if not planned:
                continue
            done: list[Op] = []
            try:
                done = self._apply(conn, planned)
            except self.source.errors:
                self.errors += 1
                unknown = self._intended(planned)
                conn.close()
                time.sleep(0.1)
                conn = self._connect()
                continue
            self._record(done)
            time.sleep(self.pause_s)
        if conn is not None:
            conn.close()

    def _intended(self, planned: list[Op]) -> list[Op]:
        """The changes a transaction would have made, for deciding after a lost connection whether it did:
        deletes carry the value the row had (the writer is the table's only writer, so it knows it)."""
        last = {key: v for _, key, v in self.ops}  # the latest value of each row the writer changed
        return [(op, key, last.get(key, key) if op == "d" else v) for op, key, v in planned]

    def one(self) -> Op:
        """One insert, committed now (the writer thread stopped)."""
        assert self._thread is None
        self.next_v += 1
        op: Op = ("c", self.next_id, self.next_v)
        self.next_id += 1
        conn = self.source.connect()
        try:
            self._record(self._apply(conn, [op]))
        finally:
            conn.close()
        return op


# ---- the events ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    op: str  # r c u d t
    key: int | None
    v: int | None
    position: tuple[Any, ...]
    attempt: int  # the snapshot attempt: how many truncate events came before

    @property
    def identity(self) -> tuple[Any, ...]:
        """The same change at the same source position: a duplicate when seen twice."""
        if self.op == "r":
            return ("r", self.key, self.attempt, *self.position)
        if self.op == "t":
            return ("t", self.attempt)
        return (self.op, self.key, *self.position)

    @property
    def change(self) -> Op:
        assert self.key is not None and self.v is not None
        return (self.op, self.key, self.v)


class Events:
    """The captured table's events as a consumer reads them, in order, read as they come: tombstones
    left out; what a kill cut off mid-line is not read until it is whole (the next run drops it)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.events: list[Event] = []
        self.state: dict[int, int] = {}
        self.changes: set[Op] = set()
        self.truncates = 0

    def _add(self, value: dict[str, Any] | None) -> None:
        if value is None:
            return  # a tombstone
        op = value["op"]
        row = value.get("before") if op == "d" else value.get("after")
        key = int(row["id"]) if row else None
        v = int(row["v"]) if row else None
        if op == "t":
            self.truncates += 1
            self.state.clear()
        elif op == "d":
            assert key is not None
            self.state.pop(key, None)
        else:
            assert key is not None and v is not None
            self.state[key] = v
        event = Event(op, key, v, self.source.position(value["source"]), self.truncates)
        self.events.append(event)
        if op in "cud":
            self.changes.add(event.change)

    def read(self) -> int:
        """Read what came since the last call; the number of events now."""
        raise NotImplementedError


class FileEvents(Events):
    def __init__(self, source: Source, path: Path) -> None:
        super().__init__(source)
        self.path = path
        self.offset = 0

    def read(self) -> int:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return len(self.events)
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            record = orjson.loads(line)
            self._add(record["value"])
        self.offset += end
        return len(self.events)


class TopicEvents(Events):
    """The events as a Kafka consumer reads them from the topic's one partition, from its start."""

    def __init__(self, source: Source, bootstrap: str) -> None:
        from confluent_kafka import Consumer

        super().__init__(source)
        self.topic = source.topic
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "log_level": 0})  # quiet while the broker is away: the test knows
        self.next = 0
        self.assigned = False

    def read(self) -> int:
        from confluent_kafka import KafkaException, TopicPartition

        partition = TopicPartition(self.topic, 0)
        try:
            high = self.consumer.get_watermark_offsets(partition, timeout=5)[1]
        except KafkaException:  # no topic yet, or no broker
            return len(self.events)
        if not self.assigned and high > 0:
            self.consumer.assign([TopicPartition(self.topic, 0, 0)])
            self.assigned = True
        deadline = time.monotonic() + 30
        while self.next < high and time.monotonic() < deadline:
            message = self.consumer.poll(0.5)
            if message is None or message.error():
                continue
            value = message.value()
            self._add(orjson.loads(value) if value is not None else None)
            self.next = (message.offset() or 0) + 1
        return len(self.events)

    def close(self) -> None:
        self.consumer.close()


# ---- the runs of cdc -------------------------------------------------------------------------------

@dataclass
class Run:
    number: int
    proc: subprocess.Popen[bytes]
    log: Path
    first_event: int
    end_event: int | None = None
    end: str = "running"  # killed | stopped | failed | exited
    code: int | None = None
    started: float = field(default_factory=time.monotonic)
    size_at_start: int = 0

    def text(self) -> str:
        return self.log.read_text(errors="replace")


class Cdc:
    """The ``cdc`` command against ``source``, run again and again on the same output and offsets."""

    def __init__(self, source: Source, tmp: Path, *, out: Path | None = None, events: Events | None = None,
                 props: dict[str, str] | None = None) -> None:
        self.source = source
        self.tmp = tmp
        self.out = out or tmp / "out"
        self.offsets = self.out / "offsets.json"
        self.props = dict(props or {})
        self.events = events or FileEvents(source, self.out / f"{source.topic}.jsonl")
        self.runs: list[Run] = []

    @property
    def run(self) -> Run:
        return self.runs[-1]

    def start(self, **props: str) -> Run:
        assert not self.runs or self.run.end != "running", "a run is still going"
        number = len(self.runs) + 1
        log = self.tmp / f"run{number}.log"
        env = {**os.environ, "CDC_PASSWORD": self.source.password(),
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        argv = self.source.argv(self.out, self.offsets, {**self.props, **props})
        with log.open("wb") as handle:
            proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
        self.runs.append(Run(number, proc, log, self.events.read(), size_at_start=self.output_size()))
        return self.run

    def _ended(self, end: str) -> None:
        run = self.run
        run.code = run.proc.returncode
        run.end = end
        run.end_event = self.events.read()

    def kill(self) -> None:
        """kill -9, whatever the run is doing."""
        if self.run.proc.poll() is None:
            os.kill(self.run.proc.pid, signal.SIGKILL)
        self.run.proc.wait(30)
        self._ended("killed" if self.run.proc.returncode == -signal.SIGKILL else "exited")

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> None:
        """A clean stop (Ctrl-C or SIGTERM): flushed, offset stored, exit 0."""
        assert self.run.proc.poll() is None, f"run {self.run.number} ended before the stop:\n{self.tail()}"
        self.run.proc.send_signal(sig)
        try:
            self.run.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"run {self.run.number} did not stop within {timeout} s:\n{self.tail()}") from None
        self._ended("stopped")
        assert self.run.code == 0, f"the clean stop exited {self.run.code}:\n{self.tail()}"

    def wait_failed(self, timeout: float = 90) -> str:
        """The run stops by itself with an error: its log (checked for ``cdc: error:`` and ``fix:``)."""
        try:
            self.run.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"run {self.run.number} did not fail within {timeout} s:\n{self.tail()}") from None
        self._ended("failed")
        text = self.run.text()
        assert self.run.code == 1, f"exit status {self.run.code}, expected 1:\n{self.tail()}"
        assert_clear_error(text)
        return text

    def ended_by_itself(self) -> bool:
        """Whether the run stopped on its own (an error): recorded as failed, and its error checked."""
        if self.run.end != "running" or self.run.proc.poll() is None:
            return False
        self.wait_failed(1)
        return True

    def tail(self, chars: int = 4000) -> str:
        return self.run.text()[-chars:] if self.runs else ""

    def alive(self) -> bool:
        return self.run.proc.poll() is None

    def wait_log(self, marker: str, timeout: float = 60, *, after: int = 0) -> bool:
        """Wait for ``marker`` in the current run's log (past character ``after``); False if the run ended."""
        deadline = time.monotonic() + timeout
        while True:
            if marker in self.run.text()[after:]:
                return True
            if not self.alive():
                return marker in self.run.text()[after:]
            assert time.monotonic() < deadline, f"no {marker!r} within {timeout} s:\n{self.tail()}"
            time.sleep(0.01)

    def wait_until(self, what: str, predicate: Callable[[], bool], timeout: float = 90) -> None:
        """Poll ``predicate`` (reading new events first) while the run lives."""
        deadline = time.monotonic() + timeout
        while True:
            self.events.read()
            if predicate():
                return
            assert self.alive(), f"run {self.run.number} ended while waiting for {what}:\n{self.tail()}"
            assert time.monotonic() < deadline, f"{what}: not within {timeout} s\n{self.tail()}"
            time.sleep(0.1)

    def output_size(self) -> int:
        """The size of the captured table's event file now."""
        path = getattr(self.events, "path", None)
        try:
            return path.stat().st_size if path is not None else 0
        except FileNotFoundError:
            return 0

    def wait_output(self, grown: int, timeout: float = 60) -> bool:
        """Wait until this run wrote ``grown`` more bytes of events; False if the run ended first."""
        deadline = time.monotonic() + timeout
        base = self.run.size_at_start
        while self.output_size() < base + grown:
            if not self.alive():
                return False
            assert time.monotonic() < deadline, f"run {self.run.number} wrote too little:\n{self.tail()}"
            time.sleep(0.002)
        return True

    def restarts_in(self, run: Run) -> int:
        """How often the run restarted its source under the retry policy (engine's log line)."""
        return run.text().count("restarting the source from the stored offset")

    def close(self) -> None:
        """End a run still going (a failing test)."""
        if self.runs and self.run.proc.poll() is None:
            self.run.proc.kill()
            self.run.proc.wait(30)


# ---- the checks ------------------------------------------------------------------------------------

def assert_clear_error(text: str) -> None:
    """A failed run says what and why, and what to do: cdc's error format, no traceback."""
    assert TRACEBACK not in text, text[-4000:]
    assert "cdc: error: " in text, f"no 'cdc: error:' line:\n{text[-4000:]}"
    assert "\n  fix: " in text, f"no fix line:\n{text[-4000:]}"


def converge(cdc: Cdc, writer: Writer | None, timeout: float = 120) -> None:
    """Wait until the running pipeline delivered the table as it is now and the writer's last change
    (the writer stopped)."""
    expected = cdc.source.rows()
    last = writer.ops[-1] if writer and writer.ops else None

    def done() -> bool:
        return cdc.events.state == expected and (last is None or last in cdc.events.changes)

    try:
        cdc.wait_until("the events to reach the table's state", done, timeout)
    except AssertionError:
        got = cdc.events.state
        diff = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
        raise AssertionError(f"{len(diff)} rows differ, e.g. {[(k, got.get(k), expected.get(k)) for k in diff[:5]]}; "
                             f"last change {last} delivered: {last in cdc.events.changes}\n{cdc.tail()}") from None


def recover(cdc: Cdc, writer: Writer, timeout: float = 120) -> str:
    """After a fault: wait until the run delivers a change committed after it (its retry policy carried it
    through), or until it stops with an error (checked: ``cdc: error``, a fix, no traceback) and start the
    next run. Says which."""
    count = len(writer.ops)
    writer.wait_ops(count + 1, timeout)
    deadline = time.monotonic() + timeout
    while True:
        cdc.events.read()
        if any(op in cdc.events.changes for op in writer.ops[count:]):  # a snapshot taken again holds the first
            return "retried by itself"
        if cdc.ended_by_itself():
            cdc.start()
            return "failed clearly, resumed on restart"
        assert time.monotonic() < deadline, f"no recovery within {timeout} s:\n{cdc.tail()}"
        time.sleep(0.2)


def finish(cdc: Cdc, writer: Writer) -> None:
    """The end of every case, its running pipeline past the fault: a hundred more changes, the writer
    stopped, all of them delivered, then a clean stop after which the next run repeats nothing."""
    writer.wait_ops(len(writer.ops) + 100)
    writer.stop()
    converge(cdc, writer)
    clean_stop_then_nothing_again(cdc, writer)


def clean_stop_then_nothing_again(cdc: Cdc, writer: Writer) -> None:
    """Stop cleanly, start again, commit one change: the new run delivers that change and nothing twice."""
    cdc.stop()
    cdc.start()
    op = writer.one()
    cdc.wait_until(f"the change {op}", lambda: op in cdc.events.changes, timeout=60)
    time.sleep(0.5)
    cdc.stop()
    run = cdc.run
    new = cdc.events.events[run.first_event:run.end_event]
    assert [e.change for e in new if e.op in "cud"] == [op], f"after a clean stop the next run delivered {new}"


@dataclass
class Verdict:
    events: int
    duplicates: int
    changes: int
    runs: int
    restarts_inside: int

    def __str__(self) -> str:
        return (f"{self.runs} runs ({self.restarts_inside} source restarts inside them), {self.changes} changes "
                f"written, {self.events} events, {self.duplicates} duplicates (replays)")


def verify(cdc: Cdc, writer: Writer | None) -> Verdict:
    """The three checks, once the last run stopped."""
    assert cdc.run.end != "running", "stop the last run first"
    cdc.events.read()
    events = cdc.events.events
    # (a) the table rebuilt from the events is the table
    expected = cdc.source.rows()
    got = cdc.events.state
    diff = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
    assert not diff, f"{len(diff)} rows differ, e.g. {[(k, got.get(k), expected.get(k)) for k in diff[:5]]}"
    # (b) every change after the snapshot point, none invented, in order; duplicates only replays
    ops = writer.ops if writer else []
    check_changes(events, ops)
    duplicates = check_duplicates(cdc)
    # (c) no traceback anywhere; every failed run said why and what to do
    for run in cdc.runs:
        text = run.text()
        assert TRACEBACK not in text, f"run {run.number}:\n{text[-4000:]}"
        if run.end == "failed":
            assert_clear_error(text)
    verdict = Verdict(len(events), duplicates, len(ops), len(cdc.runs), sum(cdc.restarts_in(r) for r in cdc.runs))
    print(verdict)
    return verdict


def check_changes(events: Sequence[Event], ops: Sequence[Op]) -> None:
    """The change events after the last snapshot (the last truncate), each once, are the writer's changes
    from the first of them on, in commit order: nothing lost or invented. The changes before it were
    committed before the snapshot point, and the snapshot holds them."""
    last_truncate = max((i for i, e in enumerate(events) if e.op == "t"), default=-1)
    seen: set[tuple[Any, ...]] = set()
    stream: list[Op] = []
    for event in events[last_truncate + 1:]:
        if event.op in "cud" and event.identity not in seen:
            seen.add(event.identity)
            stream.append(event.change)
    if not ops:
        assert not stream, f"changes nobody made: {stream[:5]}"
        return
    assert stream, "no change was streamed, yet the writer wrote after the pipeline started"
    try:
        first = list(ops).index(stream[0])
    except ValueError:
        raise AssertionError(f"an event for a change nobody made: {stream[0]}") from None
    expected = list(ops[first:])
    if stream != expected:
        lost = [op for op in expected if op not in set(stream)]
        invented = [op for op in stream if op not in set(expected)]
        at = next(i for i, (a, b) in enumerate(zip(stream + [None], expected + [None], strict=False)) if a != b)
        raise AssertionError(f"the streamed changes differ from the writer's from change {first + at} on: "
                             f"{len(lost)} lost {lost[:5]}, {len(invented)} invented {invented[:5]}, "
                             f"{len(stream)} streamed against {len(expected)} written")


def check_duplicates(cdc: Cdc) -> int:
    """Every duplicate (an event of a source position seen before) belongs to a replay: a stretch of the
    events delivered before, again and in order, at most one at the start of a run after a kill or a
    failure, plus one per restart of the source inside the run (the log says so). After a clean stop:
    none. Returns the number of duplicates."""
    events = cdc.events.events
    seen: dict[tuple[Any, ...], int] = {}
    total = 0
    previous_end = "stopped"
    for run in cdc.runs:
        assert run.end_event is not None
        replays: list[list[int]] = []
        current: list[int] | None = None
        for event in events[run.first_event:run.end_event]:
            index = seen.get(event.identity)
            if index is None:
                seen[event.identity] = len(seen)
                current = None
                continue
            if current is None:
                current = []
                replays.append(current)
            current.append(index)
        allowed = (0 if previous_end == "stopped" else 1) + cdc.restarts_in(run)
        for replay in replays:
            assert all(b == a + 1 for a, b in zip(replay, replay[1:], strict=False)), \
                f"run {run.number}: duplicates out of order, not a replay: first seen at {replay[:20]}"
        assert len(replays) <= allowed, \
            f"run {run.number} (after a run that {previous_end}) has {len(replays)} stretches of duplicates " \
            f"({[len(r) for r in replays]} events), at most {allowed} allowed"
        total += sum(len(r) for r in replays)
        previous_end = run.end
    return total


def client_ports(pid: int) -> set[int]:
    """The local TCP ports of process ``pid``'s sockets (its connections to the database)."""
    inodes: set[str] = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return set()
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def kill_connections(cdc: Cdc) -> list[str]:
    """Kill every server session of the running cdc process: what was killed."""
    found = cdc.source.backends(client_ports(cdc.run.proc.pid))
    cdc.source.terminate(pid for pid, _ in found)
    return [what for _, what in found]


def storm_delays(rng: random.Random, kills: int, low: float, high: float) -> Iterator[float]:
    for _ in range(kills):
        yield rng.uniform(low, high)
