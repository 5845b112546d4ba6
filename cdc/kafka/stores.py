"""Offsets and schema history kept in Kafka topics, as Kafka Connect and Debezium keep them.

* Offsets: a compacted topic (``offset.storage.topic``, default ``cdc-offsets``). The key is
  Kafka Connect's offset key for a Debezium connector, ``["<name>",{"server":"<topic.prefix>"}]``
  (connector name, then the source partition), so several pipelines share one topic and a
  reader of Connect's offsets topic finds the familiar shape; the value is the offset JSON.
  ``load`` reads every partition to its end and keeps the last value of our key (one key
  always lands in one partition, so its order holds). ``save`` returns once Kafka acknowledged.
  Reads are ``read_committed`` and go to the high watermark, past any open transaction: an
  aborted transaction's offset is never resumed from, and a committed one after another
  writer's open transaction is not missed. With ``exactly.once.support`` the offset goes
  through the sink's transactional producer (``commit_through``), committing its transaction.
* Schema history: ``schema.history.internal.kafka.topic``, one partition (the order of DDL
  matters), ``retention.ms=-1``, records without a key as Debezium writes them. ``entries``
  reads it from the beginning to the end offset at the time of the call. A topic with more
  than one partition is refused: the history would be read out of order.

Writes wait while the broker is unreachable (logging), as the sink does: offsets and history
are written after the sink's records, so a broker that is away holds the pipeline either way.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import orjson

from cdc.config import Config, Option
from cdc.core.errors import CdcError, OffsetStoreError, SchemaHistoryError, SinkError
from cdc.core.records import SinkRecord
from cdc.kafka.client import FLUSH_WAIT_S, bootstrap_servers, check_reachable, client_settings, connect_timeout_s
from cdc.kafka.exactly_once import INSTANCE, INSTANCE_HEADER

log = logging.getLogger(__name__)

OFFSET_OPTIONS: tuple[Option, ...] = (
    Option("offset.storage.topic", str, "cdc-offsets", "Compacted topic holding the source offsets."),
    Option("offset.storage.replication.factor", int, 1, "Replication factor of the offsets topic when created."),
)
HISTORY_OPTIONS: tuple[Option, ...] = (
    Option("schema.history.internal.kafka.topic", str, None, "Topic of the schema history (one partition)."),
    Option("schema.history.internal.kafka.bootstrap.servers", str, None,
           "Brokers of the schema history topic (default: kafka.bootstrap.servers)."),
    Option("schema.history.internal.kafka.recovery.poll.interval.ms", int, 1000,
           "Poll time while reading the history."),
)

READ_STALL_S = 60.0  # a read that gets nothing for this long while the topic has more is an error
# A read stopped by another writer's open transaction waits for its end; Kafka aborts any transaction
# after at most transaction.max.timeout.ms (15 minutes by default).
OPEN_TRANSACTION_WAIT_S = 16 * 60.0


class _Topic:
    """One topic: created when missing, written synchronously, read whole."""

    def __init__(self, settings: dict[str, Any], topic: str, error: type[CdcError], connect_timeout: float,
                 what: str) -> None:
        self.settings = settings
        self.topic = topic
        self.error = error
        self.poll_s = 1.0
        try:
            self.known = topic in check_reachable(settings, connect_timeout, what)
        except SinkError as exc:
            raise error(exc.message, fix=exc.fix) from None
        self._producer: Any = None

    def ensure(self, config: dict[str, str], replication: int) -> int:
        """Create the topic (one partition) when missing; return its partition count."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self.settings)
        if not self.known:
            try:
                admin.create_topics([NewTopic(self.topic, 1, replication, config=config)])[self.topic].result(60)
                log.info("created topic %s (%s)", self.topic, ", ".join(f"{k}={v}" for k, v in config.items()))
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise self.error(f"cannot create topic {self.topic} at {self.settings['bootstrap.servers']}: "
                                     f"{exc.args[0].str()}",
                                     fix="create it beforehand (one partition), or grant CREATE to this client",
                                     ) from None
        # A topic just created takes a moment to show in the metadata that readers rely on.
        deadline = time.monotonic() + 30
        while True:
            metadata = admin.list_topics(self.topic, timeout=30).topics.get(self.topic)
            if metadata is not None and metadata.error is None and metadata.partitions:
                self.known = True
                return len(metadata.partitions)
            if time.monotonic() > deadline:
                raise self.error(f"topic {self.topic} does not show in the metadata of "
                                 f"{self.settings['bootstrap.servers']}: {metadata.error if metadata else 'missing'}")
            time.sleep(0.1)

    def write(self, key: bytes | None, value: bytes) -> None:
        """Produce one record and wait for its acknowledgement (waiting out an absent broker)."""
        from confluent_kafka import KafkaException, Producer

        if self._producer is None:
            self._producer = Producer({**self.settings, "enable.idempotence": True, "acks": "all",
                                       "message.timeout.ms": 0, "linger.ms": 0})
        problems: list[str] = []
        try:
            def delivered(err: Any, _msg: Any) -> None:
                if err is not None:
                    problems.append(err.str())
            self._producer.produce(self.topic, value, key, on_delivery=delivered)
        except KafkaException as exc:
            problems.append(exc.args[0].str())
        waited = 0.0
        while not problems and self._producer.flush(FLUSH_WAIT_S):
            waited += FLUSH_WAIT_S
            log.warning("Kafka at %s has not acknowledged a write to %s after %.0f s (broker unreachable?); waiting",
                        self.settings["bootstrap.servers"], self.topic, waited)
        if problems:
            raise self.error(f"could not write to topic {self.topic} at {self.settings['bootstrap.servers']}: "
                             f"{problems[0]}")

    def read(self) -> Iterator[Any]:
        """Every message of every partition, from the beginning to the end offsets of now."""
        from confluent_kafka import KafkaException

        try:
            yield from self._read()
        except KafkaException as exc:
            raise OSError(exc.args[0].str() if exc.args else str(exc)) from None

    def _ends(self) -> tuple[dict[int, int], list[Any]]:
        """The high watermark of each non-empty partition, and where it starts. A read_committed
        client is told the last stable offset instead (where the first open transaction begins),
        so the watermarks come from a read_uncommitted one."""
        from confluent_kafka import Consumer, TopicPartition

        probe = Consumer({**self.settings, "group.id": "cdc-store-reader", "isolation.level": "read_uncommitted"})
        try:
            metadata = probe.list_topics(self.topic, timeout=30).topics[self.topic]
            ends: dict[int, int] = {}
            starts = []
            for partition in metadata.partitions:
                low, high = probe.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=30)
                if high > low:
                    ends[partition] = high
                    starts.append(TopicPartition(self.topic, partition, low))
            return ends, starts
        finally:
            probe.close()

    def _read(self) -> Iterator[Any]:
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        ends, starts = self._ends()
        if not ends:
            return
        consumer = Consumer({**self.settings, "group.id": "cdc-store-reader", "enable.auto.commit": False,
                             "auto.offset.reset": "earliest", "enable.partition.eof": True,
                             "isolation.level": "read_committed"})
        try:
            consumer.assign(starts)
            last_progress = time.monotonic()
            held: dict[int, int] = {}  # partitions whose read stops at another writer's open transaction
            warned = 0.0
            while ends:
                message = consumer.poll(self.poll_s)
                if message is None:
                    stalled = time.monotonic() - last_progress
                    if held and set(held) == set(ends) and stalled < OPEN_TRANSACTION_WAIT_S:
                        if stalled - warned > 30:
                            warned = stalled
                            log.warning("reading topic %s waits for an open transaction (another writer's) to end "
                                        "at offsets %s; Kafka aborts it after its transaction.timeout.ms",
                                        self.topic, held)
                        continue
                    if stalled > READ_STALL_S:
                        raise OSError(f"no data for {stalled:.0f} s although partitions {sorted(ends)} have more")
                    continue
                partition = message.partition() or 0  # always set on a consumed message or EOF
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise OSError(error.str())
                    # At what can be read now: the end, or the start of an open transaction (the
                    # offsets before it may hold no record to deliver, e.g. a transaction marker).
                    done = partition in ends and (message.offset() or 0) >= ends[partition]
                    if partition in ends and not done and held.get(partition) != message.offset():
                        held[partition] = message.offset() or 0
                        last_progress = time.monotonic()
                else:
                    last_progress = time.monotonic()
                    held.pop(partition, None)
                    if partition not in ends:
                        continue
                    yield message
                    done = (message.offset() or 0) >= ends[partition] - 1
                if done:
                    consumer.incremental_unassign([TopicPartition(self.topic, partition)])
                    del ends[partition]
                    held.pop(partition, None)
        finally:
            consumer.close()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None


class KafkaOffsetStore:
    """Offsets of one pipeline (``name``) in a compacted Kafka topic."""

    title = "Offsets in Kafka"
    options = OFFSET_OPTIONS

    def __init__(self, config: Config, name: str) -> None:
        config.declare(OFFSET_OPTIONS)
        self.name = name
        server = config.properties.get("topic.prefix") or name
        self.key = orjson.dumps([name, {"server": server}])
        self.io = _Topic(client_settings(config), config.get("offset.storage.topic"), OffsetStoreError,
                         connect_timeout_s(config), "kafka.bootstrap.servers")
        self.io.ensure({"cleanup.policy": "compact"}, config.get("offset.storage.replication.factor"))
        self._sink: Any = None  # exactly once: the Kafka sink whose transactions carry the offsets
        self.instance = INSTANCE  # named in a header of the offsets committed through the sink

    def commit_through(self, sink: Any) -> None:
        """Exactly once (cdc.kafka.exactly_once): ``save`` writes the offset in the sink's open
        transaction and commits it. The sink is on the same cluster (kafka.bootstrap.servers)."""
        self._sink = sink
        sink.other_instance = self.last_writer

    @property
    def topic(self) -> str:
        return self.io.topic

    def _last(self) -> Any:
        """The last committed record of our key, or None."""
        last = None
        try:
            for message in self.io.read():
                if message.key() == self.key:
                    last = message
        except OSError as exc:
            raise OffsetStoreError(f"cannot read offsets of {self.name} from topic {self.topic}: {exc}",
                                   fix="check the topic with a console consumer; moving to a new "
                                       "offset.storage.topic starts over (per snapshot.mode)") from None
        return last

    def load(self) -> dict[str, Any] | None:
        last = self._last()
        try:
            found = orjson.loads(last.value()) if last is not None and last.value() is not None else None
        except orjson.JSONDecodeError as exc:
            raise OffsetStoreError(f"cannot read offsets of {self.name} from topic {self.topic}: {exc}",
                                   fix="check the topic with a console consumer; moving to a new "
                                       "offset.storage.topic starts over (per snapshot.mode)") from None
        if found is not None and self._sink is not None:
            self.save(found)  # the same offset, under this instance's name: an instance it fenced reads it
        return found

    def save(self, offset: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink.commit_transaction(SinkRecord(self.topic, self.key, orjson.dumps(offset),
                                                     [(INSTANCE_HEADER, self.instance.encode())]))
            return
        self.io.write(self.key, orjson.dumps(offset))

    def last_writer(self, wait_s: float = 5.0) -> str | None:
        """The instance that committed our last offset, when it is not this process: after being
        fenced, the one that fenced us (it commits the offset it resumes from at its start)."""
        deadline = time.monotonic() + wait_s
        while True:
            last = self._last()
            headers = dict(last.headers() or ()) if last is not None else {}
            writer = headers.get(INSTANCE_HEADER)
            if writer is not None and writer.decode(errors="replace") != self.instance:
                return str(writer.decode(errors="replace"))
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.5)

    def close(self) -> None:
        self.io.close()


class KafkaSchemaHistory:
    """DDL history in a one-partition, never-expiring Kafka topic."""

    title = "Schema history in Kafka"
    options = HISTORY_OPTIONS
    torn_tail: bytes | None = None  # a Kafka record is whole or absent

    def __init__(self, config: Config) -> None:
        config.declare(HISTORY_OPTIONS)
        topic = config.get("schema.history.internal.kafka.topic")
        if not topic:
            raise SchemaHistoryError("schema.history.internal.kafka.topic is not set",
                                     fix="name a topic for the schema history (one partition, never deleted)")
        what = "schema.history.internal.kafka.bootstrap.servers"  # the property to fix when unreachable
        servers = config.get(what)
        if not servers:
            try:
                servers, what = bootstrap_servers(config), "kafka.bootstrap.servers"
            except CdcError:
                raise SchemaHistoryError("no brokers for the schema history",
                                         fix="set schema.history.internal.kafka.bootstrap.servers") from None
        self.io = _Topic(client_settings(config, servers), topic, SchemaHistoryError, connect_timeout_s(config), what)
        self.io.poll_s = config.get("schema.history.internal.kafka.recovery.poll.interval.ms") / 1000
        partitions = self.io.ensure({"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}, 1)
        if partitions != 1:
            raise SchemaHistoryError(
                f"schema history topic {topic} has {partitions} partitions; its records must stay in order",
                fix="point schema.history.internal.kafka.topic at a new topic (cdc creates it with one "
                    "partition and retention.ms=-1), or recreate this one with a single partition",
            )

    @property
    def topic(self) -> str:
        return self.io.topic

    def record(self, entry: dict[str, Any]) -> None:
        self.io.write(None, orjson.dumps(entry))

    def entries(self) -> Iterator[dict[str, Any]]:
        try:
            for message in self.io.read():
                if message.value() is not None:
                    yield orjson.loads(message.value())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise SchemaHistoryError(f"cannot read schema history topic {self.topic}: {exc}",
                                     fix="a source cannot decode rows without its history: restore the topic, "
                                         "or start over with a new topic and a new snapshot") from None

    def exists(self) -> bool:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({**self.io.settings, "group.id": "cdc-store-reader"})
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=30)
        finally:
            consumer.close()
        return high > low

    def close(self) -> None:
        self.io.close()
