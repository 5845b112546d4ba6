"""Real Kafka brokers for the tests.

``kafka_bootstrap``: the shared broker, CDC_TEST_KAFKA_BOOTSTRAP if set, else the one
scripts/kafka.sh starts (and leaves running for the next run). ``own_kafka``: a private broker
on free ports in a temporary directory, for a test that stops and restarts it without
disturbing anyone else's.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "kafka.sh"
NO_CONFLUENT_KAFKA = "confluent-kafka is not installed (pip install 'cdc-debezium[kafka]')"


def _need_java_and_maven() -> None:
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"no Kafka: {' and '.join(missing)} not found; set CDC_TEST_KAFKA_BOOTSTRAP=host:port "
                    "or install Java 17 and Maven so scripts/kafka.sh can run a broker")


def _script(command: str, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    done = subprocess.run(["bash", str(SCRIPT), command], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    if done.returncode != 0:
        pytest.fail(f"scripts/kafka.sh {command} failed:\n{done.stderr[-3000:]}", pytrace=False)
    return done.stdout.strip()


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    pytest.importorskip("confluent_kafka", reason=NO_CONFLUENT_KAFKA)
    if os.environ.get("CDC_TEST_KAFKA_BOOTSTRAP"):
        return os.environ["CDC_TEST_KAFKA_BOOTSTRAP"]
    _need_java_and_maven()
    _script("start")
    return _script("bootstrap")


@dataclass
class OwnKafka:
    """A broker of our own: ``stop()`` and ``start()`` it at will."""

    bootstrap: str
    env: dict[str, str]

    def start(self) -> None:
        _script("start", self.env, timeout=180)

    def stop(self) -> None:
        _script("stop", self.env, timeout=60)


def free_port_pair() -> int:
    """A port P with P and P + 1 free (client and controller listeners)."""
    for _ in range(50):
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            try:
                second.bind(("127.0.0.1", port + 1))
            except (OSError, OverflowError):
                continue
            return port
    raise RuntimeError("no two free consecutive ports")


@pytest.fixture()
def own_kafka(tmp_path: Path) -> Iterator[OwnKafka]:
    pytest.importorskip("confluent_kafka", reason=NO_CONFLUENT_KAFKA)
    _need_java_and_maven()
    port = free_port_pair()
    kafka = OwnKafka(f"127.0.0.1:{port}", {"CDC_KAFKA_PORT": str(port), "CDC_KAFKA_DIR": str(tmp_path / "kafka")})
    kafka.start()
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture()
def topic_prefix() -> str:
    return "t" + uuid.uuid4().hex[:8]


def answers(bootstrap: str) -> bool:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return True
    except OSError:
        return False


def read_topic(bootstrap: str, topic: str, timeout: float = 30) -> list[Any]:
    """Every message of every partition of ``topic`` up to its end now, in partition order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
        left = {p for p, end in ends.items() if end > 0}
        messages: list[Any] = []
        deadline = time.monotonic() + timeout
        while left and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            messages.append(message)
            if message.offset() >= ends[message.partition()] - 1:
                left.discard(message.partition())
        assert not left, f"partitions {sorted(left)} of {topic} were not read to their end in {timeout} s"
        return messages
    finally:
        consumer.close()


def consume(bootstrap: str, topic: str, count: int, timeout: float = 30) -> list[Any]:
    """``count`` messages of ``topic`` from the beginning (in partition order), through a group."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    messages = []
    deadline = time.monotonic() + timeout
    try:
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            messages.append(message)
    finally:
        consumer.close()
    return messages


def kafka_admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})
