"""Kafka sink through confluent-kafka (librdkafka), delivering exactly what Debezium would.

    write(records): produce (key, value, headers; a tombstone is a null value) in order;
                    a full local queue blocks here (back-pressure), nothing is dropped
    flush():        wait for every delivery report; only then may the engine store offsets

The producer is idempotent with ``acks=all`` and never gives a message up on time-outs
(``message.timeout.ms=0``): a broker that goes away holds the pipeline (``flush`` waits and
logs) until it returns, and the idempotent producer's sequence numbers keep retried batches
from being written twice. Only a fatal producer error or a record Kafka refuses ends it.

Missing topics are created like Kafka Connect's topic creation (``topic.creation.default.*``):
table topics compacted, so a delete's tombstone cleans its key up. Topics that hold several
records per key that must all stay (schema changes on ``<topic.prefix>``, transaction
boundaries, heartbeats) and topics of keyless tables (a compacted topic refuses a record
without a key) get ``cleanup.policy=delete``.

Every ``kafka.*`` property (other than the declared options) goes to every client (security,
client.id, ...); ``producer.*`` properties go to the producer only and win over our defaults.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from cdc.config import Config
from cdc.core.errors import SinkError
from cdc.core.records import SinkRecord
from cdc.core.topics import heartbeat_topic, transaction_topic
from cdc.kafka.client import (  # noqa: F401 - KAFKA_OPTIONS and bootstrap_servers are the sink's API too
    FLUSH_WAIT_S,
    KAFKA_OPTIONS,
    PRODUCER_DEFAULTS,
    bootstrap_servers,
    check_reachable,
    client_settings,
    connect_timeout_s,
)

log = logging.getLogger(__name__)

def key_text(key: bytes | None) -> str:
    return "null" if key is None else key[:200].decode(errors="replace")


class KafkaSink:
    name = "kafka"
    title = "Kafka sink"
    options = KAFKA_OPTIONS

    def __init__(self, config: Config) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient

        config.declare(KAFKA_OPTIONS)
        self.settings = client_settings(config)
        self.servers = self.settings["bootstrap.servers"]
        self._known_topics = check_reachable(self.settings, connect_timeout_s(config))
        self.create_topics: bool = config.get("topic.creation.enable")
        self.partitions: int = config.get("topic.creation.default.partitions")
        self.replication: int = config.get("topic.creation.default.replication.factor")
        self.cleanup_policy: str = config.get("topic.creation.default.cleanup.policy")
        self.skip_oversized: bool = config.get("kafka.skip.oversized")
        self._event_topics = _event_topics(config)
        self._error: SinkError | None = None
        self._fatal: SinkError | None = None
        self.skipped = 0
        self.admin = AdminClient(self.settings)
        self.producer = Producer({**self.settings, **PRODUCER_DEFAULTS, **config.with_prefix("producer."),
                                  "on_delivery": self._on_delivery, "error_cb": self._on_error})

    # ---- topics -----------------------------------------------------------------------------

    def _ensure_topic(self, topic: str, key: bytes | None) -> None:
        if not self.create_topics:
            self._known_topics.add(topic)  # a missing topic then fails its delivery, with a clear error
            return
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        policy = "delete" if key is None or topic in self._event_topics else self.cleanup_policy
        new = NewTopic(topic, num_partitions=self.partitions, replication_factor=self.replication,
                       config={"cleanup.policy": policy})
        try:
            self.admin.create_topics([new], request_timeout=30)[topic].result(60)
            log.info("created topic %s (%d partitions, replication %d, cleanup.policy=%s)",
                     topic, self.partitions, self.replication, policy)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
                raise SinkError(f"not allowed to create topic {topic} at {self.servers}: {error.str()}",
                                fix="grant CREATE on the topic (or the cluster) to this client's principal, "
                                    "or create the topic beforehand and set topic.creation.enable=false") from None
            if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise SinkError(f"cannot create topic {topic} at {self.servers}: {error.str()}",
                                fix="create it beforehand, or check topic.creation.default.* against the "
                                    "cluster (replication factor <= brokers)") from None
        self._known_topics.add(topic)

    # ---- delivery reports -------------------------------------------------------------------

    def _on_error(self, error: Any) -> None:
        """Client-level errors: a fatal one ends the sink, the rest (broker down) are waited out."""
        if error.fatal():
            self._fatal = self._fatal or SinkError(
                f"the Kafka producer hit a fatal error: {error.str()}",
                fix="restart the pipeline; records not acknowledged are sent again from the stored offset")
        else:
            log.debug("Kafka client: %s", error.str())

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None and self._error is None:
            self._error = self._failure(error, message.topic(), message.key(), len(message.value() or b""))

    def _failure(self, error: Any, topic: str, key: bytes | None, size: int) -> SinkError | None:
        """The error for a refused record, or None when it is skipped by configuration."""
        from confluent_kafka import KafkaError

        code = error.code()
        where = f"topic {topic}, key {key_text(key)}"
        if code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_MSG_SIZE):
            if self.skip_oversized:
                self.skipped += 1
                log.warning("skipped a record of %d bytes over message.max.bytes (%s)", size, where)
                return None
            return SinkError(
                f"a record of {size} bytes is over message.max.bytes ({where})",
                fix="raise max.message.bytes on the topic (message.max.bytes on the broker) and "
                    "producer.message.max.bytes, or set kafka.skip.oversized=true to skip such records")
        if code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
            return SinkError(f"not authorized to write to topic {topic} at {self.servers}: {error.str()}",
                             fix="grant WRITE (and DESCRIBE) on the topic to this client's principal")
        if code in (KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART):
            return SinkError(f"topic {topic} does not exist at {self.servers} ({where})",
                             fix="create it, or set topic.creation.enable=true")
        if key is None and code in (KafkaError.INVALID_RECORD, KafkaError.INVALID_MSG):
            return SinkError(f"Kafka refused a record without a key ({where}): {error.str()}",
                             fix="a compacted topic needs keys: give the table a key (message.key.columns) "
                                 "or set cleanup.policy=delete on the topic")
        return SinkError(f"Kafka refused a record ({where}): {error.str()}")

    def _raise_pending(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._error is not None:
            raise self._error

    # ---- the Sink contract ------------------------------------------------------------------

    def write(self, records: Sequence[SinkRecord]) -> None:
        from confluent_kafka import KafkaException

        produce = self.producer.produce
        poll = self.producer.poll
        for record in records:
            if record.topic not in self._known_topics:
                self._ensure_topic(record.topic, record.key)
            waited_since = 0.0
            while True:
                try:
                    produce(record.topic, record.value, record.key, headers=record.headers)  # type: ignore[arg-type]
                    break
                except BufferError:
                    # The local queue is full (slow or absent broker): wait here, drop nothing.
                    if not waited_since:
                        waited_since = time.monotonic()
                    elif time.monotonic() - waited_since > FLUSH_WAIT_S:
                        log.warning("Kafka at %s does not take records (%d queued); waiting",
                                    self.servers, len(self.producer))
                        waited_since = time.monotonic()
                    poll(0.1)
                    self._raise_pending()
                except KafkaException as exc:  # refused locally, e.g. over producer message.max.bytes
                    failure = self._failure(exc.args[0], record.topic, record.key, len(record.value or b""))
                    if failure is not None:
                        raise failure from None
                    break
            self._raise_pending()
        poll(0)

    def flush(self) -> None:
        """Return once every written record is acknowledged; wait (and say so) while Kafka is away."""
        waited = 0.0
        while True:
            remaining = self.producer.flush(FLUSH_WAIT_S)
            self._raise_pending()
            if remaining == 0:
                return
            waited += FLUSH_WAIT_S
            log.warning("%d records are not acknowledged by Kafka at %s after %.0f s (broker unreachable?); "
                        "holding the pipeline until it answers", remaining, self.servers, waited)

    def close(self) -> None:
        # Bounded: records still unacknowledged were not committed, so a restart sends them again.
        remaining = self.producer.flush(10)
        if remaining:
            log.warning("closing with %d records not acknowledged by Kafka at %s; they are sent again on restart",
                        remaining, self.servers)


def _event_topics(config: Config) -> set[str]:
    """Topics whose records must all be kept (not compacted): schema changes, transactions, heartbeats."""
    prefix = config.properties.get("topic.prefix")
    if not prefix:
        return set()
    return {str(prefix), transaction_topic(str(prefix), config.properties.get("transaction.topic")),
            heartbeat_topic(str(prefix), config.properties.get("heartbeat.topics.prefix") or "__debezium-heartbeat")}
