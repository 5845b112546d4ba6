"""Kafka sink through confluent-kafka (librdkafka), delivering exactly what Debezium would.

    write(records): produce (key, value, headers; a tombstone is a null value) in order;
                    a full local queue blocks here (back-pressure), nothing is dropped
    flush():        wait for every delivery report; only then may the engine store offsets

The producer is idempotent with ``acks=all`` and never gives a message up on time-outs
(``message.timeout.ms=0``): a broker that goes away holds the pipeline until it returns.
Topics are created when missing, like Kafka Connect's topic creation
(``topic.creation.default.*``), compacted so deletes (tombstones) can clean up.
Producer settings pass through as ``producer.*`` / ``kafka.*`` properties.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Sequence

from cdc.config import Config, Option
from cdc.core.errors import ConfigError, SinkError
from cdc.core.records import SinkRecord

log = logging.getLogger(__name__)

KAFKA_OPTIONS: tuple[Option, ...] = (
    Option("kafka.bootstrap.servers", str, None, "Kafka brokers, host:port[,host:port]."),
    Option("topic.creation.enable", bool, True, "Create missing topics (never the schema history topic)."),
    Option("topic.creation.default.partitions", int, 1, "Partitions of created topics."),
    Option("topic.creation.default.replication.factor", int, 1, "Replication factor of created topics."),
    Option("topic.creation.default.cleanup.policy", str, "compact", "cleanup.policy of created topics."),
    Option("kafka.skip.oversized", bool, False,
           "Skip (with a warning naming table and key) a record larger than message.max.bytes instead of failing."),
    Option("kafka.connect.timeout.ms", int, 10000, "How long to try reaching the brokers at start before failing."),
)

# librdkafka settings we own; a user may still override them through producer.* / kafka.*.
PRODUCER_DEFAULTS = {
    "enable.idempotence": True,
    "acks": "all",
    "message.timeout.ms": 0,  # never drop a message because the broker is away
    "linger.ms": 5,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 200_000,
}


def bootstrap_servers(config: Config) -> str:
    servers = config.get("kafka.bootstrap.servers") or config.properties.get("bootstrap.servers")
    if not servers:
        raise ConfigError("the Kafka sink needs kafka.bootstrap.servers", fix="--bootstrap-servers host:9092")
    return str(servers)


def client_settings(config: Config) -> dict[str, Any]:
    """Settings shared by every client: bootstrap plus ``kafka.*`` pass-through (security, ...)."""
    settings: dict[str, Any] = {"bootstrap.servers": bootstrap_servers(config)}
    declared = {o.name for o in KAFKA_OPTIONS}
    for key, value in config.with_prefix("kafka.").items():
        if f"kafka.{key}" not in declared:
            settings[key] = value
    return settings


def check_reachable(settings: dict[str, Any], timeout_s: float) -> None:
    """List topics with a bounded retry; a clear error when no broker answers."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(settings)
    deadline = time.monotonic() + timeout_s
    wait = 0.5
    while True:
        try:
            admin.list_topics(timeout=min(5.0, max(deadline - time.monotonic(), 0.5)))
            return
        except KafkaException as exc:
            if time.monotonic() + wait > deadline:
                raise SinkError(
                    f"cannot reach Kafka at {settings['bootstrap.servers']}: {exc.args[0].str() if exc.args else exc}",
                    fix="start the broker, or fix kafka.bootstrap.servers (and kafka.security.* settings)",
                ) from None
            log.warning("Kafka at %s does not answer yet; retrying", settings["bootstrap.servers"])
            time.sleep(wait)
            wait = min(wait * 2, 5)


class KafkaSink:
    name = "kafka"
    options = KAFKA_OPTIONS

    def __init__(self, config: Config) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient

        config.declare(KAFKA_OPTIONS)
        self.settings = client_settings(config)
        check_reachable(self.settings, config.get("kafka.connect.timeout.ms") / 1000)
        producer_settings = {**self.settings, **PRODUCER_DEFAULTS, **config.with_prefix("producer.")}
        self.producer = Producer(producer_settings)
        self.admin = AdminClient(self.settings)
        self.create_topics = config.get("topic.creation.enable")
        self.partitions = config.get("topic.creation.default.partitions")
        self.replication = config.get("topic.creation.default.replication.factor")
        self.cleanup_policy = config.get("topic.creation.default.cleanup.policy")
        self.skip_oversized = config.get("kafka.skip.oversized")
        self._known_topics: set[str] = set(self.admin.list_topics(timeout=10).topics)
        self._error: SinkError | None = None
        self.delivered = 0

    # ---- topics -----------------------------------------------------------------------------

    def _ensure_topic(self, topic: str) -> None:
        if topic in self._known_topics:
            return
        if self.create_topics:
            from confluent_kafka import KafkaError, KafkaException
            from confluent_kafka.admin import NewTopic

            new = NewTopic(topic, num_partitions=self.partitions, replication_factor=self.replication,
                           config={"cleanup.policy": self.cleanup_policy})
            try:
                self.admin.create_topics([new], request_timeout=30)[topic].result(30)
                log.info("created topic %s (%d partitions, cleanup.policy=%s)", topic, self.partitions, self.cleanup_policy)
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    pass
                elif error.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
                    raise SinkError(f"not allowed to create topic {topic}: {error.str()}",
                                    fix="grant CREATE on the topic (or cluster) to this client, or create it beforehand") from None
                else:
                    raise SinkError(f"cannot create topic {topic}: {error.str()}") from None
        self._known_topics.add(topic)

    # ---- the Sink contract ------------------------------------------------------------------

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.delivered += 1
            return
        from confluent_kafka import KafkaError

        key = message.key().decode(errors="replace") if message.key() else None
        where = f"topic {message.topic()}, key {key}"
        if error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
            if self.skip_oversized:
                log.warning("skipped a record over message.max.bytes (%d bytes) in %s", len(message.value() or b""), where)
                return
            failure = SinkError(
                f"a record of {len(message.value() or b'')} bytes is over message.max.bytes ({where})",
                fix="raise message.max.bytes on the topic/broker and producer.message.max.bytes, "
                    "or set kafka.skip.oversized=true to skip such records",
            )
        elif error.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
            failure = SinkError(f"not authorized to write to {message.topic()}: {error.str()}",
                                fix="grant WRITE on the topic to this client's principal")
        else:
            failure = SinkError(f"Kafka refused a record ({where}): {error.str()}")
        if self._error is None:
            self._error = failure

    def write(self, records: Sequence[SinkRecord]) -> None:
        produce = self.producer.produce
        poll = self.producer.poll
        for record in records:
            if record.topic not in self._known_topics:
                self._ensure_topic(record.topic)
            while True:
                try:
                    produce(record.topic, record.value, record.key, headers=record.headers,
                            on_delivery=self._delivered)
                    break
                except BufferError:
                    # The local queue is full (slow or absent broker): wait here, drop nothing.
                    poll(0.5)
                    if self._error is not None:
                        raise self._error
            if self._error is not None:
                raise self._error
        poll(0)

    def flush(self) -> None:
        waited = 0.0
        while True:
            remaining = self.producer.flush(5.0)
            if self._error is not None:
                raise self._error
            if remaining == 0:
                return
            waited += 5.0
            log.warning("%d records wait for Kafka at %s (%.0f s); holding the pipeline until it answers",
                        remaining, self.settings["bootstrap.servers"], waited)

    def close(self) -> None:
        try:
            self.producer.flush(10)
        finally:
            pass
