"""PostgreSQL through a real Kafka broker: Debezium's events read back, kill -9 with offsets in Kafka, a broker
stopped mid-stream. The sink and stores alone are tested in test_kafka_sink.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdc.config import CORE_OPTIONS, Config
from tests.conftest import REFERENCE, ROOT
from tests.integration.harness import JSON_HEADERS, Pipeline, parse_header
from tests.integration.kafka_fixtures import consume
from tests.integration.test_pg_reference import _scrub, _workload
from tests.integration.test_pg_stream import sql

pytestmark = pytest.mark.kafka


def kafka_config(bootstrap: str, **extra: str) -> Config:
    return Config({"kafka.bootstrap.servers": bootstrap, "topic.prefix": "x", **extra}).declare(CORE_OPTIONS)


def as_record(message: Any) -> dict[str, Any]:
    return {
        "topic": message.topic(),
        "key": json.loads(message.key()) if message.key() is not None else None,
        "value": json.loads(message.value()) if message.value() is not None else None,
        "headers": {k: parse_header(v) for k, v in message.headers()} if message.headers() else None,
    }


def test_postgres_events_in_kafka_equal_debezium(pg_db: dict[str, str], tmp_path: Path, kafka_bootstrap: str,
                                                 topic_prefix: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    expected = [json.loads(line) for line in (REFERENCE / "debezium" / "pg-types.jsonl").read_text().splitlines()]
    setup, capture = _workload()
    sql(pg_db, setup)
    props = {**pg_db, "snapshot.mode": "no_data", "topic.prefix": topic_prefix,
             "kafka.bootstrap.servers": kafka_bootstrap, "header.converter": JSON_HEADERS}  # as Debezium's recorded run
    config = Config({k: v for k, v in props.items() if k != "dsn"}).declare(CORE_OPTIONS)
    with Pipeline(props, tmp_path / "o.json", sink=KafkaSink(config)) as p:  # type: ignore[arg-type]
        p.wait_ready()
        sql(pg_db, capture, "UPDATE types SET id = 20 WHERE id = 1")
        messages = consume(kafka_bootstrap, f"{topic_prefix}.public.types", len(expected) + 3)
    got = [as_record(m) for m in messages]
    assert len(got) == len(expected) + 3
    for ours, theirs in zip(got, expected, strict=False):  # the 3 extra records are checked below
        ours, theirs = _scrub(ours), _scrub(json.loads(json.dumps(theirs).replace('"dbz', f'"{topic_prefix}')))
        if theirs["value"] is None:
            assert ours["value"] is None and ours["key"] == theirs["key"]  # the tombstone
            continue
        theirs["value"]["payload"]["source"]["db"] = pg_db["database.dbname"]
        theirs["value"]["payload"]["source"]["name"] = topic_prefix
        assert ours == theirs
    delete, tombstone, create = got[-3:]
    assert delete["value"]["payload"]["op"] == "d" and delete["headers"]["__debezium.newkey"]["payload"] == {"id": 20}
    assert tombstone["value"] is None and tombstone["key"]["payload"] == {"id": 1}
    assert create["value"]["payload"]["op"] == "c" and create["headers"]["__debezium.oldkey"]["payload"] == {"id": 1}


def _cli(pg_db: dict[str, str], bootstrap: str, prefix: str) -> list[str]:
    return [sys.executable, "-m", "cdc.cli", "postgres",
            "--database-hostname", pg_db["database.hostname"], "--database-port", pg_db["database.port"],
            "--database-user", pg_db["database.user"], "--database-dbname", pg_db["database.dbname"],
            "--topic-prefix", prefix, "--slot-name", "kafka_kill", "--publication-name", "kafka_kill",
            "--snapshot-mode", "no_data", "--sink", "kafka", "--bootstrap-servers", bootstrap,
            "--set", "offset.storage=kafka", "--set", f"offset.storage.topic={prefix}-offsets",
            "--set", "offset.flush.interval.ms=50"]


def _ids(bootstrap: str, topic: str, at_least: int, timeout: float = 60) -> list[int]:
    """Row ids in the topic, read until ``at_least`` distinct ones arrived (duplicates counted once)."""
    import uuid

    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    ids: list[int] = []
    deadline = time.monotonic() + timeout
    try:
        while len(set(ids)) < at_least and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() or message.value() is None:
                continue
            ids.append(json.loads(message.value())["payload"]["after"]["id"])
    finally:
        consumer.close()
    return ids


def test_kill_9_with_offsets_in_kafka_loses_nothing(pg_db: dict[str, str], kafka_bootstrap: str,
                                                    topic_prefix: str) -> None:
    sql(pg_db, "CREATE TABLE seq (id int PRIMARY KEY)")
    topic = f"{topic_prefix}.public.seq"
    first = subprocess.Popen(_cli(pg_db, kafka_bootstrap, topic_prefix), stderr=subprocess.PIPE, cwd=ROOT)
    try:
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            deadline = time.monotonic() + 30
            active = "SELECT count(*) FROM pg_replication_slots WHERE active AND slot_name='kafka_kill'"
            while not conn.execute(active).fetchone()[0]:
                assert first.poll() is None and time.monotonic() < deadline, first.stderr.read().decode()
                time.sleep(0.1)
            for start in range(0, 3000, 100):
                conn.execute("INSERT INTO seq SELECT g FROM generate_series(%s::int, %s::int) g",
                             (start + 1, start + 100))
                if start == 1500:
                    _ids(kafka_bootstrap, topic, 500)
                    os.kill(first.pid, signal.SIGKILL)
                    first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    second = subprocess.Popen(_cli(pg_db, kafka_bootstrap, topic_prefix), stderr=subprocess.PIPE, cwd=ROOT)
    try:
        ids = _ids(kafka_bootstrap, topic, 3000, timeout=90)
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(30)
    assert set(ids) == set(range(1, 3001))


def _answers(bootstrap: str) -> bool:
    import socket

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return True
    except OSError:
        return False


def test_broker_stopped_and_restarted_mid_stream(pg_db: dict[str, str], tmp_path: Path, kafka_bootstrap: str,
                                                 topic_prefix: str) -> None:
    if os.environ.get("CDC_TEST_KAFKA_BOOTSTRAP"):
        pytest.skip("the broker is not ours to stop")
    from cdc.sinks.kafka import KafkaSink

    sql(pg_db, "CREATE TABLE seq (id int PRIMARY KEY)")
    props = {**pg_db, "snapshot.mode": "no_data", "topic.prefix": topic_prefix,
             "kafka.bootstrap.servers": kafka_bootstrap, "header.converter": JSON_HEADERS}  # as Debezium's recorded run
    config = Config({k: v for k, v in props.items() if k != "dsn"}).declare(CORE_OPTIONS)
    script = ["bash", str(ROOT / "scripts" / "kafka.sh")]
    with Pipeline(props, tmp_path / "o.json", sink=KafkaSink(config)) as p:  # type: ignore[arg-type]
        p.wait_ready()
        sql(pg_db, "INSERT INTO seq SELECT g FROM generate_series(1, 500) g")
        delivered = set(_ids(kafka_bootstrap, f"{topic_prefix}.public.seq", 500, timeout=60))
        assert len(delivered) == 500, f"{len(delivered)} of the first 500 rows reached Kafka"
        subprocess.run([*script, "stop"], check=True, capture_output=True)
        if subprocess.run([*script, "status"], capture_output=True).returncode == 0 or _answers(kafka_bootstrap):
            pytest.skip("the broker on this port was not started by this checkout's scripts/kafka.sh")
        try:
            sql(pg_db, "INSERT INTO seq SELECT g FROM generate_series(501, 1000) g")
            # A window in which nothing must happen: the pipeline reads on and blocks on the broker, and its
            # offsets must not move (a fixed time on purpose).
            time.sleep(3)
            committed = json.loads((tmp_path / "o.json").read_text())["offsets"]["test"]["lsn"]
            with psycopg.connect(pg_db["dsn"]) as conn:
                wal = int(conn.execute("SELECT pg_current_wal_lsn() - '0/0'").fetchone()[0])
            assert committed < wal
        finally:
            subprocess.run([*script, "start"], check=True, capture_output=True)
        sql(pg_db, "INSERT INTO seq SELECT g FROM generate_series(1001, 1200) g")
        ids = _ids(kafka_bootstrap, f"{topic_prefix}.public.seq", 1200, timeout=120)
    assert sorted(ids) == list(range(1, 1201))  # all of them, and none twice (idempotent producer)
