"""Exactly-once delivery into a real Kafka broker (exactly.once.support, KIP-618's way): records and
the source offset in one transaction.

At the sink: what is committed with its offset is visible to a read_committed consumer, what was
written and never committed (closed, killed) never is; a second instance with the same
transactional.id fences the first, which stops with a clear error; the offset store never resumes
from an aborted offset and reads past another pipeline's open transaction.

The kill storm: `cdc postgres ... --sink kafka` in a subprocess, SIGKILLed ten times at random
moments while a writer changes the table, restarted each time; then a read_committed consumer of
the table topic counts duplicates (0 with exactly.once.support=required) and the table rebuilt from
the events equals the source table. The same storm at least once, for contrast, prints its count.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdc.config import Config
from cdc.core.errors import SinkError
from cdc.core.records import SinkRecord
from tests.conftest import LONG, ROOT
from tests.integration.test_pg_stream import sql
from tests.waits import wait_until

pytestmark = pytest.mark.kafka


def eos_config(bootstrap: str, prefix: str, **extra: str) -> Config:
    return Config({"kafka.bootstrap.servers": bootstrap, "topic.prefix": prefix, "name": "p",
                   "offset.storage.topic": f"{prefix}-offsets", "exactly.once.support": "required", **extra})


def transactional(bootstrap: str, prefix: str, **extra: str) -> tuple[Any, Any]:
    """A Kafka sink and offset store joined as the pipeline joins them."""
    from cdc.kafka import exactly_once
    from cdc.kafka.stores import KafkaOffsetStore
    from cdc.sinks.kafka import KafkaSink

    config = eos_config(bootstrap, prefix, **extra)
    sink, store = KafkaSink(config), KafkaOffsetStore(config, config.properties["name"])
    assert exactly_once.enable("required", config, sink, store)
    return sink, store


def read(bootstrap: str, topic: str, committed: bool = True) -> list[Any]:
    """Every record of ``topic`` that a consumer of that isolation level can read now (to the end, or
    for read_committed to the first open transaction)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False,
                         "enable.partition.eof": True,
                         "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        messages: list[Any] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 20
        while at_end != set(partitions):
            assert time.monotonic() < deadline, f"{topic} was not read to its end"
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            messages.append(message)
        return messages
    finally:
        consumer.close()


def values(messages: list[Any]) -> list[bytes]:
    return [m.value() for m in messages]


def transaction_ended(bootstrap: str, topic: str) -> Callable[[], bool]:
    """Whether the transactions on partition 0 of ``topic`` have ended (a commit or abort marker written):
    what a read_committed consumer can reach (the last stable offset) is the end of the log again."""
    from confluent_kafka import Consumer, TopicPartition

    def end(isolation: str) -> int:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                             "enable.auto.commit": False, "isolation.level": isolation})
        try:
            return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1])
        finally:
            consumer.close()

    return lambda: end("read_committed") == end("read_uncommitted")


def test_committed_with_the_offset_is_visible_and_the_rest_is_not(kafka_bootstrap: str, topic_prefix: str) -> None:
    topic = f"{topic_prefix}.public.t"
    sink, store = transactional(kafka_bootstrap, topic_prefix)
    sink.write([SinkRecord(topic, b'{"id":%d}' % i, b"a%d" % i) for i in range(100)])
    sink.flush()
    assert values(read(kafka_bootstrap, topic)) == []  # flushed, acknowledged, not committed
    store.save({"lsn": 1})
    sink.write([SinkRecord(topic, b'{"id":1}', b"uncommitted")])
    sink.flush()
    sink.close()  # the engine's close after a failure: no commit, the transaction is aborted
    store.close()
    assert values(read(kafka_bootstrap, topic)) == [b"a%d" % i for i in range(100)]
    assert b"uncommitted" in values(read(kafka_bootstrap, topic, committed=False))  # written, never visible
    offsets = read(kafka_bootstrap, f"{topic_prefix}-offsets")
    assert [json.loads(m.value()) for m in offsets] == [{"lsn": 1}]
    assert dict(offsets[0].headers())["cdc.instance"].decode().startswith("host ")
    again, store = transactional(kafka_bootstrap, topic_prefix)
    assert store.load() == {"lsn": 1}
    again.close()


KILLED_PRODUCER = """
import os, sys
from cdc.config import Config
from cdc.core.records import SinkRecord
from cdc.kafka import exactly_once
from cdc.kafka.stores import KafkaOffsetStore
from cdc.sinks.kafka import KafkaSink
bootstrap, prefix = sys.argv[1:]
config = Config({"kafka.bootstrap.servers": bootstrap, "topic.prefix": prefix, "name": "p",
                 "offset.storage.topic": prefix + "-offsets", "exactly.once.support": "required"})
sink, store = KafkaSink(config), KafkaOffsetStore(config, "p")
exactly_once.enable("required", config, sink, store)
topic = prefix + ".public.t"
sink.write([SinkRecord(topic, b"1", b"committed")]); sink.flush(); store.save({"lsn": 1})
sink.write([SinkRecord(topic, b"2", b"killed-%d" % i) for i in range(50)]); sink.flush()
os.kill(os.getpid(), 9)  # acknowledged by the broker, inside an open transaction
"""


def test_a_killed_producer_leaves_nothing_visible(kafka_bootstrap: str, topic_prefix: str) -> None:
    topic = f"{topic_prefix}.public.t"
    done = subprocess.run([sys.executable, "-c", KILLED_PRODUCER, kafka_bootstrap, topic_prefix], cwd=ROOT,
                          capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    assert len(read(kafka_bootstrap, topic, committed=False)) == 51
    # The killed transaction stays open (until transaction.timeout.ms): nothing after it is readable yet.
    assert values(read(kafka_bootstrap, topic)) == [b"committed"]
    sink, store = transactional(kafka_bootstrap, topic_prefix)  # the restart fences it and aborts its transaction
    assert store.load() == {"lsn": 1}
    sink.write([SinkRecord(topic, b"2", b"after restart")])
    sink.flush()
    store.save({"lsn": 2})
    sink.close()
    assert values(read(kafka_bootstrap, topic)) == [b"committed", b"after restart"]


def test_an_aborted_offset_is_never_resumed_from(kafka_bootstrap: str, topic_prefix: str) -> None:
    from cdc.kafka.stores import KafkaOffsetStore

    sink, store = transactional(kafka_bootstrap, topic_prefix)
    store.save({"lsn": 1})
    sink._begin()  # the offset record produced, the transaction aborted before its commit
    sink.producer.produce(store.topic, json.dumps({"lsn": 2}).encode(), store.key)
    sink.producer.flush(10)
    sink._abort()
    assert KafkaOffsetStore(eos_config(kafka_bootstrap, topic_prefix), "p").load() == {"lsn": 1}
    sink.close()


def test_offsets_are_read_past_another_pipelines_open_transaction(kafka_bootstrap: str, topic_prefix: str) -> None:
    """Two pipelines share the offsets topic: one's open transaction holds read_committed readers at its
    start (the last stable offset); the other's offset committed after it must still be found."""
    from cdc.kafka.stores import KafkaOffsetStore

    other, other_store = transactional(kafka_bootstrap, topic_prefix, name="other")
    sink, store = transactional(kafka_bootstrap, topic_prefix)
    store.save({"lsn": 1})
    other._begin()  # the other pipeline's transaction stays open...
    other.producer.produce(other_store.topic, b'{"lsn":500}', other_store.key)
    other.producer.flush(10)
    store.save({"lsn": 2})  # ...while this one commits its offset after it
    threading.Timer(2.0, other_store.save, args=({"lsn": 501},)).start()
    started = time.monotonic()
    assert KafkaOffsetStore(eos_config(kafka_bootstrap, topic_prefix), "p").load() == {"lsn": 2}
    assert time.monotonic() - started >= 1.5  # it waited for the other transaction to end
    sink.close()
    other.close()


def test_a_second_instance_fences_the_first(kafka_bootstrap: str, topic_prefix: str) -> None:
    topic = f"{topic_prefix}.public.t"
    first, first_store = transactional(kafka_bootstrap, topic_prefix)
    first_store.instance = "host one, pid 1"
    first.write([SinkRecord(topic, b"1", b"first committed")])
    first.flush()
    first_store.save({"lsn": 1})
    first.write([SinkRecord(topic, b"1", b"first, fenced")])
    second, second_store = transactional(kafka_bootstrap, topic_prefix)
    second_store.instance = "host two, pid 2"
    assert second_store.load() == {"lsn": 1}  # and commits it again under its own name
    with pytest.raises(SinkError) as info:
        first.write([SinkRecord(topic, b"1", b"more")])
        first.flush()
        first_store.save({"lsn": 2})
    message = str(info.value)
    assert "fenced" in message and f"transactional.id cdc-p-{topic_prefix}" in message, message
    assert "host two, pid 2" in message and "one instance per pipeline" in message, message
    with pytest.raises(SinkError):  # and it stays so
        first_store.save({"lsn": 3})
    first.close()
    second.write([SinkRecord(topic, b"1", b"second")])
    second.flush()
    second_store.save({"lsn": 2})
    second.close()
    assert values(read(kafka_bootstrap, topic)) == [b"first committed", b"second"]


def test_a_transaction_kafka_timed_out_is_said_so(kafka_bootstrap: str, topic_prefix: str) -> None:
    """A snapshot that stores no progress is one transaction: past transaction.timeout.ms Kafka aborts it
    (the broker looks every 10 s) and fences the producer; the error says why, not "another instance"."""
    topic = f"{topic_prefix}.public.t"
    sink, store = transactional(kafka_bootstrap, topic_prefix, **{"producer.transaction.timeout.ms": "1000"})
    sink.write([SinkRecord(topic, b"1", b"slow")])
    sink.flush()
    wait_until(transaction_ended(kafka_bootstrap, topic), 60, "Kafka to abort the transaction open past its timeout")
    with pytest.raises(SinkError) as info:
        sink.write([SinkRecord(topic, b"1", b"slower")])
        sink.flush()
        store.save({"lsn": 1})
    message = str(info.value)
    assert "open longer than transaction.timeout.ms (1000)" in message and "snapshot.resumable" in message, message
    sink.close()
    assert values(read(kafka_bootstrap, topic)) == []


def test_requested_falls_back_to_at_least_once_where_transactions_are_refused(
        kafka_bootstrap: str, topic_prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    from cdc.kafka import exactly_once
    from cdc.kafka.stores import KafkaOffsetStore
    from cdc.sinks.kafka import KafkaSink

    # Over the broker's transaction.max.timeout.ms (15 minutes): its coordinator refuses the producer.
    config = eos_config(kafka_bootstrap, topic_prefix, **{"exactly.once.support": "requested",
                                                           "producer.transaction.timeout.ms": "3600000"})
    sink, store = KafkaSink(config), KafkaOffsetStore(config, "p")
    assert not exactly_once.enable("requested", config, sink, store)
    assert not sink.transactional and "delivering at least once" in caplog.text
    topic = f"{topic_prefix}.public.t"
    sink.write([SinkRecord(topic, b"1", b"at least once")])
    sink.flush()
    store.save({"lsn": 1})
    assert values(read(kafka_bootstrap, topic)) == [b"at least once"]
    with pytest.raises(SinkError) as info:
        exactly_once.enable("required", config, KafkaSink(config), store)
    assert "exactly.once.support=required" in str(info.value) and "transaction" in str(info.value)


# ---- the kill storm --------------------------------------------------------------------------

KILLS = 10


def cli(pg_db: dict[str, str], bootstrap: str, prefix: str, slot: str, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "cdc.cli", "postgres",
               "--database-hostname", pg_db["database.hostname"], "--database-port", pg_db["database.port"],
               "--database-user", pg_db["database.user"], "--database-dbname", pg_db["database.dbname"],
               "--topic-prefix", prefix, "--slot-name", slot, "--publication-name", slot,
               "--snapshot-mode", "no_data", "--sink", "kafka", "--bootstrap-servers", bootstrap,
               "--set", "offset.storage=kafka", "--set", f"offset.storage.topic={prefix}-offsets",
               "--set", "offset.flush.interval.ms=100", "--set", "topic.creation.default.cleanup.policy=delete"]
    for setting in extra:
        command += ["--set", setting]
    return command


def writer(connect: Callable[[], Any], stop: threading.Event, written: list[int]) -> None:
    """Transactions of one to four inserts and updates; every change sets v to the next number, so
    each event of the stream carries its own v, and a v seen twice is a duplicate."""
    rng = random.Random(7)
    ids: list[int] = []
    v = 0
    with connect() as conn:
        while not stop.is_set():
            new, changed = [], []
            with conn.transaction():
                for _ in range(rng.randint(1, 4)):
                    v += 1
                    if not ids or rng.random() < 0.3:
                        conn.execute("INSERT INTO storm (id, v) VALUES (%s, %s)", (v, v))
                        new.append(v)
                    else:
                        conn.execute("UPDATE storm SET v = %s WHERE id = %s", (v, rng.choice(ids)))
                    changed.append(v)
            ids += new
            written += changed
            time.sleep(0.002)


class TopicReader:
    """A read_committed consumer of the table topic, kept open across the storm."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "isolation.level": "read_committed"})
        self.consumer.subscribe([topic])
        self.events: list[dict[str, Any]] = []

    def poll(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.2)
            if message is not None and not message.error() and message.value() is not None:
                value = json.loads(message.value())
                self.events.append(value.get("payload", value))

    def close(self) -> None:
        self.consumer.close()


@dataclass
class StormSource:
    """What the storm needs of a source: the table made, the command that streams it, whether a run is
    streaming, the writer's connection, the table as it is, and its topic."""

    command: list[str]
    streaming: Callable[[subprocess.Popen[bytes], Path], bool]
    connect: Callable[[], Any]
    topic: str
    env: dict[str, str] | None = None  # the password goes in CDC_PASSWORD, never on the command line


def postgres_storm(pg_db: dict[str, str], bootstrap: str, prefix: str, extra: tuple[str, ...]) -> StormSource:
    slot = "eos_" + uuid.uuid4().hex[:8]
    sql(pg_db, "CREATE TABLE storm (id int PRIMARY KEY, v int NOT NULL)")

    def streaming(proc: subprocess.Popen[bytes], log: Path) -> bool:
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            return bool(conn.execute("SELECT count(*) FROM pg_replication_slots WHERE active AND slot_name = %s",
                                     (slot,)).fetchone()[0])  # type: ignore[index]

    return StormSource(cli(pg_db, bootstrap, prefix, slot, *extra), streaming,
                       lambda: psycopg.connect(pg_db["dsn"], autocommit=True), f"{prefix}.public.storm")


def mariadb_storm(server: dict[str, Any], db: dict[str, str], bootstrap: str, prefix: str,
                  extra: tuple[str, ...]) -> StormSource:
    """MariaDB, its offsets and schema history in Kafka; max.batch.size=3 hands rows over inside the writer's
    transactions of up to four rows, so kills land after offsets that stop inside one (event/row counts)."""
    import pymysql

    name = db["db"]
    with pymysql.connect(**server, database=name, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE storm (id int PRIMARY KEY, v int NOT NULL)")
    command = [sys.executable, "-m", "cdc.cli", "mysql", "--topic-prefix", prefix,
               "--database-hostname", db["database.hostname"], "--database-port", db["database.port"],
               "--database-user", db["database.user"], "--database-include-list", name,
               "--database-server-id", db["database.server.id"], "--sink", "kafka", "--bootstrap-servers", bootstrap,
               "--set", "offset.storage=kafka", "--set", f"offset.storage.topic={prefix}-offsets",
               "--set", "schema.history.internal=kafka",
               "--set", f"schema.history.internal.kafka.topic={prefix}-history",
               "--set", "offset.flush.interval.ms=100", "--set", "max.batch.size=3",
               "--set", "topic.creation.default.cleanup.policy=delete"]
    for setting in extra:
        command += ["--set", setting]

    def streaming(proc: subprocess.Popen[bytes], log: Path) -> bool:
        return "reading the binlog" in log.read_text(errors="replace")

    class Connection:  # psycopg's shape, as the writer and the storm use it
        def __init__(self) -> None:
            self.conn = pymysql.connect(**server, database=name, autocommit=True)

        def __enter__(self) -> Connection:
            return self

        def __exit__(self, *exc: object) -> None:
            self.conn.close()

        def execute(self, statement: str, args: Any = None) -> Any:
            cur = self.conn.cursor()
            cur.execute(statement, args)
            return cur

        @contextmanager
        def transaction(self) -> Iterator[None]:
            self.conn.begin()
            try:
                yield
            except BaseException:
                self.conn.rollback()
                raise
            self.conn.commit()

    return StormSource(command, streaming, Connection, f"{prefix}.{name}.storm",
                       env={**os.environ, "CDC_PASSWORD": db["database.password"]})


def storm(source: StormSource, bootstrap: str, tmp_path: Path) -> dict[str, Any]:
    """Run the storm; return what a read_committed consumer got, against what the writer wrote."""
    logs: list[Path] = []
    rng = random.Random()

    def start() -> subprocess.Popen[bytes]:
        logs.append(tmp_path / f"run{len(logs)}.log")
        return subprocess.Popen(source.command, cwd=ROOT, env=source.env, stdout=subprocess.DEVNULL,
                                stderr=logs[-1].open("wb"))

    def streaming(proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 40
        while not source.streaming(proc, logs[-1]):
            assert proc.poll() is None and time.monotonic() < deadline, logs[-1].read_text()[-3000:]
            time.sleep(0.05)

    stop, written = threading.Event(), []  # type: ignore[var-annotated]
    thread = threading.Thread(target=writer, args=(source.connect, stop, written), daemon=True)
    reader = TopicReader(bootstrap, source.topic)
    offsets_topic = next(arg.split("=", 1)[1] for arg in source.command if arg.startswith("offset.storage.topic="))
    proc = start()
    try:
        streaming(proc)
        thread.start()
        offsets = TopicReader(bootstrap, offsets_topic)  # a slot with no stored offset is refused
        deadline = time.monotonic() + 30
        while not offsets.events:
            assert proc.poll() is None and time.monotonic() < deadline, logs[-1].read_text()[-3000:]
            offsets.poll(0.2)
        offsets.close()
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.2, 2.0))  # kills land mid-transaction, mid-commit, mid-start
            assert proc.poll() is None, logs[-1].read_text()[-3000:]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc = start()
            if rng.random() < 0.7:  # else the next kill may come before it streams
                streaming(proc)
        streaming(proc)
        mark = written[-1] if written else 0

        def live() -> bool:  # the last run delivers changes written while it streams
            assert proc.poll() is None, logs[-1].read_text()[-3000:]
            reader.poll(0.2)
            return any(e["after"]["v"] > mark for e in reader.events)

        wait_until(live, 60, f"a change after v={mark} from the last run",
                   detail=lambda: logs[-1].read_text()[-3000:])
        stop.set()
        thread.join(10)
        with source.connect() as conn:
            expected = dict(conn.execute("SELECT id, v FROM storm").fetchall())
        deadline = time.monotonic() + 60
        while missing := set(written) - {e["after"]["v"] for e in reader.events}:
            assert proc.poll() is None and time.monotonic() < deadline, \
                f"{len(missing)} changes missing: {logs[-1].read_text()[-3000:]}"
            reader.poll(0.5)
        reader.poll(2)  # anything that would still come
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, logs[-1].read_text()[-3000:]
        reader.poll(2)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        reader.close()
    for log in logs:
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]
    everything = read(bootstrap, source.topic, committed=False)  # aborted transactions' too
    seen = [e["after"]["v"] for e in reader.events]
    rebuilt: dict[int, int] = {}
    for event in reader.events:
        rebuilt[event["after"]["id"]] = event["after"]["v"]
    return {"events": len(seen), "written": len(written), "duplicates": len(seen) - len(set(seen)),
            "lost": len(set(written) - set(seen)), "rebuilt": rebuilt, "expected": expected, "restarts": len(logs) - 1,
            "uncommitted": len(everything) - len(seen)}


def check_exactly_once(result: dict[str, Any], what: str) -> None:
    print(f"\n{what}, exactly once: {result['restarts']} SIGKILLs and restarts, {result['written']} changes written, "
          f"{result['events']} events read committed, {result['duplicates']} duplicates, {result['lost']} lost; "
          f"{result['uncommitted']} records of aborted transactions in the topic")
    assert result["restarts"] == KILLS
    assert result["uncommitted"] > 0  # the kills did land inside open transactions
    assert result["lost"] == 0
    assert result["duplicates"] == 0
    assert result["events"] == result["written"]
    assert result["rebuilt"] == result["expected"]


def test_kill_storm_exactly_once(pg_db: dict[str, str], kafka_bootstrap: str, topic_prefix: str,
                                 tmp_path: Path) -> None:
    source = postgres_storm(pg_db, kafka_bootstrap, topic_prefix, ("exactly.once.support=required",))
    check_exactly_once(storm(source, kafka_bootstrap, tmp_path), "PostgreSQL")


@LONG  # the PostgreSQL storm stays in the test command
@pytest.mark.mysql
def test_kill_storm_exactly_once_mariadb(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                         kafka_bootstrap: str, topic_prefix: str, tmp_path: Path) -> None:
    source = mariadb_storm(mysql_server, mysql_db, kafka_bootstrap, topic_prefix, ("exactly.once.support=required",))
    check_exactly_once(storm(source, kafka_bootstrap, tmp_path), "MariaDB")


@LONG  # the exactly-once storm stays in the test command
def test_kill_storm_at_least_once_for_contrast(pg_db: dict[str, str], kafka_bootstrap: str, topic_prefix: str,
                                               tmp_path: Path) -> None:
    result = storm(postgres_storm(pg_db, kafka_bootstrap, topic_prefix, ()), kafka_bootstrap, tmp_path)
    print(f"\nat least once: {result['restarts']} SIGKILLs and restarts, {result['written']} changes written, "
          f"{result['events']} events read, {result['duplicates']} duplicates, {result['lost']} lost")
    assert result["lost"] == 0  # duplicates are allowed here, and may by chance be none
    assert result["rebuilt"] == result["expected"]
