"""Offsets and schema history kept in Kafka topics, as Kafka Connect and Debezium keep them.

* Offsets: a compacted topic (``offset.storage.topic``, default ``cdc-offsets``) keyed like
  Kafka Connect's: ``["<name>",{"server":"<topic.prefix>"}]``; the value is the offset JSON.
  ``load`` reads the topic to its end and keeps the last value of our key.
* Schema history: ``schema.history.internal.kafka.topic``, one partition (the order of DDL
  matters), ``retention.ms=-1``; ``entries`` reads it whole from the beginning. A topic with
  more than one partition is refused: the history would be read out of order.
"""
from __future__ import annotations

import logging
from typing import Any, Iterator

import orjson

from cdc.config import Config, Option
from cdc.core.errors import OffsetStoreError, SchemaHistoryError
from cdc.sinks.kafka import client_settings

log = logging.getLogger(__name__)

OFFSET_OPTIONS: tuple[Option, ...] = (
    Option("offset.storage.topic", str, "cdc-offsets", "Compacted topic holding the source offsets."),
    Option("offset.storage.replication.factor", int, 1, "Replication factor of the offsets topic when created."),
)
HISTORY_OPTIONS: tuple[Option, ...] = (
    Option("schema.history.internal.kafka.topic", str, None, "Topic of the schema history (one partition)."),
    Option("schema.history.internal.kafka.bootstrap.servers", str, None,
           "Brokers of the schema history topic (default: kafka.bootstrap.servers)."),
    Option("schema.history.internal.kafka.recovery.poll.interval.ms", int, 1000, "Poll time while reading the history."),
)


def _ensure_topic(settings: dict[str, Any], topic: str, config: dict[str, str], replication: int,
                  error: type[Exception]) -> int:
    """Create the topic (1 partition) when missing; return its partition count."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(settings)
    metadata = admin.list_topics(timeout=10)
    if topic in metadata.topics:
        return len(metadata.topics[topic].partitions)
    try:
        admin.create_topics([NewTopic(topic, 1, replication, config=config)])[topic].result(30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise error(f"cannot create topic {topic}: {exc.args[0].str()}") from None
    return 1


def _read_all(settings: dict[str, Any], topic: str) -> Iterator[Any]:
    """Every message of partition 0 of ``topic``, from the beginning to its end now."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({**settings, "group.id": "cdc-reader", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        if high <= low:
            return
        consumer.assign([TopicPartition(topic, 0, low)])
        while True:
            message = consumer.poll(5.0)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return
                raise OSError(message.error().str())
            yield message
            if message.offset() >= high - 1:
                return
    finally:
        consumer.close()


def _produce(settings: dict[str, Any], topic: str, key: bytes | None, value: bytes, error: type[Exception]) -> None:
    from confluent_kafka import Producer

    problems: list[str] = []
    producer = Producer({**settings, "enable.idempotence": True, "acks": "all"})
    producer.produce(topic, value, key, on_delivery=lambda err, msg: err and problems.append(err.str()))
    if producer.flush(30) or problems:
        raise error(f"could not write to {topic}: {problems[0] if problems else 'timed out'}")


class KafkaOffsetStore:
    options = OFFSET_OPTIONS

    def __init__(self, config: Config, name: str) -> None:
        config.declare(OFFSET_OPTIONS)
        self.settings = client_settings(config)
        self.topic = config.get("offset.storage.topic")
        self.key = orjson.dumps([name, {"server": config.get("topic.prefix")}])
        _ensure_topic(self.settings, self.topic, {"cleanup.policy": "compact"},
                      config.get("offset.storage.replication.factor"), OffsetStoreError)

    def load(self) -> dict[str, Any] | None:
        found: dict[str, Any] | None = None
        try:
            for message in _read_all(self.settings, self.topic):
                if message.key() == self.key:
                    found = orjson.loads(message.value()) if message.value() is not None else None
        except (OSError, orjson.JSONDecodeError) as exc:
            raise OffsetStoreError(f"cannot read offsets from topic {self.topic}: {exc}") from None
        return found

    def save(self, offset: dict[str, Any]) -> None:
        _produce(self.settings, self.topic, self.key, orjson.dumps(offset), OffsetStoreError)

    def close(self) -> None:
        pass


class KafkaSchemaHistory:
    options = HISTORY_OPTIONS

    def __init__(self, config: Config) -> None:
        config.declare(HISTORY_OPTIONS)
        self.topic = config.get("schema.history.internal.kafka.topic")
        if not self.topic:
            raise SchemaHistoryError("schema.history.internal.kafka.topic is not set",
                                     fix="name a topic for the schema history (one partition, never compacted)")
        settings = client_settings(config)
        servers = config.get("schema.history.internal.kafka.bootstrap.servers")
        if servers:
            settings["bootstrap.servers"] = servers
        self.settings = settings
        partitions = _ensure_topic(settings, self.topic, {"cleanup.policy": "delete", "retention.ms": "-1",
                                                          "retention.bytes": "-1"}, 1, SchemaHistoryError)
        if partitions != 1:
            raise SchemaHistoryError(
                f"schema history topic {self.topic} has {partitions} partitions; its records must stay in order",
                fix=f"delete it and let cdc create it, or create it with one partition and retention.ms=-1",
            )

    def record(self, entry: dict[str, Any]) -> None:
        _produce(self.settings, self.topic, None, orjson.dumps(entry), SchemaHistoryError)

    def entries(self) -> Iterator[dict[str, Any]]:
        try:
            for message in _read_all(self.settings, self.topic):
                yield orjson.loads(message.value())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise SchemaHistoryError(f"cannot read schema history topic {self.topic}: {exc}") from None

    def exists(self) -> bool:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({**self.settings, "group.id": "cdc-reader"})
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10)
        finally:
            consumer.close()
        return high > low

    def close(self) -> None:
        pass
