"""A real Kafka broker for the tests: CDC_TEST_KAFKA_BOOTSTRAP, else scripts/kafka.sh."""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from typing import Any, Iterator

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed (pip install 'cdc[kafka]')")
    if os.environ.get("CDC_TEST_KAFKA_BOOTSTRAP"):
        return os.environ["CDC_TEST_KAFKA_BOOTSTRAP"]
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("no Kafka: set CDC_TEST_KAFKA_BOOTSTRAP, or install Java and Maven for scripts/kafka.sh")
    subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), "start"], check=True, capture_output=True, timeout=600)
    return subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), "bootstrap"], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def topic_prefix() -> str:
    return "t" + uuid.uuid4().hex[:8]


def consume(bootstrap: str, topic: str, count: int, timeout: float = 30) -> list[Any]:
    """``count`` messages of ``topic`` from the beginning (in partition order)."""
    import time

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


def kafka_admin(bootstrap: str) -> Iterator[Any]:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})
