"""The Kafka sink against librdkafka's in-process mock cluster: fast, no JVM.

One client created with ``test.mock.num.brokers`` hosts the mock brokers; its metadata gives
their address, which every other client then uses as a plain ``bootstrap.servers``. The mock
creates topics on first use (4 partitions) but cannot create them through the admin API, so
the sink runs with ``topic.creation.enable=false`` here.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from cdc.config import Config
from cdc.core.errors import ConfigError, SinkError
from cdc.core.records import SinkRecord

confluent_kafka = pytest.importorskip("confluent_kafka",
                                      reason="confluent-kafka is not installed (pip install 'cdc-debezium[kafka]')")


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    holder = confluent_kafka.Producer({"test.mock.num.brokers": 1, "logger": _quiet})
    brokers = holder.list_topics(timeout=10).brokers.values()
    yield ",".join(f"{b.host}:{b.port}" for b in brokers)
    holder.flush(1)  # the mock cluster lives as long as this client


class _Quiet:
    """librdkafka's logs of the mock cluster, dropped (its shutdown disconnects are noise)."""

    def log(self, *args: Any, **kwargs: Any) -> None:
        pass


_quiet = _Quiet()


def config(bootstrap: str, **extra: str) -> Config:
    return Config({"kafka.bootstrap.servers": bootstrap, "topic.creation.enable": "false", **extra})


def read_all(bootstrap: str, topic: str, count: int, timeout: float = 20) -> list[Any]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in partitions])
        messages: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                messages.append(message)
        return messages
    finally:
        consumer.close()


def test_write_flush_and_read_back(mock_bootstrap: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    topic = "mock." + uuid.uuid4().hex[:6]
    sink = KafkaSink(config(mock_bootstrap))
    records = [SinkRecord(topic, b"k%d" % (i % 3), b"v%d" % i, [("h", b"%d" % i)]) for i in range(30)]
    records.append(SinkRecord(topic, b"k1", None))
    sink.write(records)
    sink.flush()  # returns only once every record is acknowledged
    assert len(sink.producer) == 0
    sink.close()
    messages = read_all(mock_bootstrap, topic, 31)
    assert len(messages) == 31
    for key in (b"k0", b"k1", b"k2"):
        assert [m.value() for m in messages if m.key() == key] == [r.value for r in records if r.key == key]
    assert {(m.value(), tuple(m.headers() or ())) for m in messages if m.value() == b"v7"} == {(b"v7", (("h", b"7"),))}
    assert [m.value() for m in messages if m.key() == b"k1"][-1] is None  # the tombstone


def test_full_local_queue_blocks_instead_of_dropping(mock_bootstrap: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    topic = "mock." + uuid.uuid4().hex[:6]
    sink = KafkaSink(config(mock_bootstrap, **{"producer.queue.buffering.max.messages": "10"}))
    sink.write([SinkRecord(topic, b"k", b"%d" % i) for i in range(500)])  # 50 times the queue
    sink.flush()
    assert [int(m.value()) for m in read_all(mock_bootstrap, topic, 500)] == list(range(500))


def test_record_over_the_producer_limit_names_topic_and_key(mock_bootstrap: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    topic = "mock." + uuid.uuid4().hex[:6]
    sink = KafkaSink(config(mock_bootstrap, **{"producer.message.max.bytes": "10000"}))
    with pytest.raises(SinkError) as info:
        sink.write([SinkRecord(topic, b'{"id":7}', b"x" * 20_000)])
    assert topic in str(info.value) and '{"id":7}' in str(info.value) and "message.max.bytes" in str(info.value)
    skipping = KafkaSink(config(mock_bootstrap, **{"producer.message.max.bytes": "10000", "kafka.skip.oversized": "1"}))
    skipping.write([SinkRecord(topic, b'{"id":7}', b"x" * 20_000), SinkRecord(topic, b'{"id":8}', b"{}")])
    skipping.flush()
    assert skipping.skipped == 1
    assert [m.key() for m in read_all(mock_bootstrap, topic, 1)] == [b'{"id":8}']


def test_offset_store_reads_every_partition(mock_bootstrap: str) -> None:
    from cdc.kafka.stores import KafkaOffsetStore

    topic = "offsets." + uuid.uuid4().hex[:6]
    seed = confluent_kafka.Producer({"bootstrap.servers": mock_bootstrap})
    for i in range(20):  # other pipelines' keys spread over the mock's 4 partitions
        seed.produce(topic, b'{"lsn":0}', b'["other-%d",{"server":"p"}]' % i)
    assert seed.flush(10) == 0
    props = {"kafka.bootstrap.servers": mock_bootstrap, "topic.prefix": "p", "offset.storage.topic": topic}
    store = KafkaOffsetStore(Config(props), "mine")
    assert store.load() is None
    store.save({"lsn": 5})
    store.save({"lsn": 6})
    store.close()
    assert KafkaOffsetStore(Config(props), "mine").load() == {"lsn": 6}


def test_missing_bootstrap_servers_is_a_config_error() -> None:
    from cdc.sinks.kafka import KafkaSink

    with pytest.raises(ConfigError, match="kafka.bootstrap.servers"):
        KafkaSink(Config({}))


def test_bootstrap_servers_is_accepted_too(mock_bootstrap: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    sink = KafkaSink(Config({"bootstrap.servers": mock_bootstrap}))
    assert sink.servers == mock_bootstrap


def test_unreachable_broker_is_a_clear_error() -> None:
    import socket

    from cdc.sinks.kafka import KafkaSink

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{probe.getsockname()[1]}"
    started = time.monotonic()
    with pytest.raises(SinkError, match=f"cannot reach Kafka at {nobody}") as info:
        KafkaSink(config(nobody, **{"kafka.connect.timeout.ms": "1000"}))
    assert "kafka.bootstrap.servers" in str(info.value)
    assert time.monotonic() - started < 10


def test_pass_through_and_topic_policies() -> None:
    from cdc.sinks.kafka import KAFKA_OPTIONS, _event_topics, client_settings

    props = {"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "SSL", "kafka.skip.oversized": "true",
             "topic.prefix": "srv"}
    settings = client_settings(Config(props).declare(KAFKA_OPTIONS))
    assert settings["bootstrap.servers"] == "h:1" and settings["security.protocol"] == "SSL"
    assert "skip.oversized" not in settings  # our own options are not librdkafka settings
    assert _event_topics(Config(props)) == {"srv", "srv.transaction", "__debezium-heartbeat.srv"}


def test_refused_records_are_explained(mock_bootstrap: str) -> None:
    """The broker's refusals, as delivery reports give them, become errors naming the cause and fix."""
    from confluent_kafka import KafkaError

    from cdc.sinks.kafka import KafkaSink

    sink = KafkaSink(config(mock_bootstrap))
    keyless = sink._failure(KafkaError(KafkaError.INVALID_MSG), "t.public.nokey", None, 10)
    assert keyless is not None and "without a key" in str(keyless) and "cleanup.policy=delete" in str(keyless)
    denied = sink._failure(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), "t.public.a", b'{"id":1}', 10)
    assert denied is not None and "not authorized to write to topic t.public.a" in str(denied)
    missing = sink._failure(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), "t.public.b", b'{"id":1}', 10)
    assert missing is not None and "does not exist" in str(missing) and "topic.creation.enable" in str(missing)
    sink.close()
