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

Exactly once (``exactly.once.support``, cdc.kafka.exactly_once): ``start_transactions`` swaps in
a transactional producer. ``write`` then begins a transaction before the first record after each
commit, ``flush`` waits for the deliveries without committing, and the offset store's
``commit_transaction(offset record)`` commits the records and the offset together. A producer
fenced by another instance with the same transactional.id, or a transaction Kafka aborted, ends
the run with a SinkError; nothing uncommitted is ever visible to ``read_committed`` consumers.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from cdc.config import Config
from cdc.core.errors import SinkError
from cdc.core.records import SinkRecord
from cdc.core.topics import TopicNaming
from cdc.kafka.client import (  # noqa: F401 - KAFKA_OPTIONS and bootstrap_servers are the sink's API too
    FLUSH_WAIT_S,
    KAFKA_OPTIONS,
    PRODUCER_DEFAULTS,
    bootstrap_servers,
    check_reachable,
    client_settings,
    connect_timeout_s,
)
from cdc.kafka.exactly_once import EXACTLY_ONCE_OPTIONS

log = logging.getLogger(__name__)

INIT_TRANSACTIONS_S = 60.0  # init_transactions may wait for the abort of an earlier instance's open transaction
ABORT_S = 10.0

def key_text(key: bytes | None) -> str:
    return "null" if key is None else key[:200].decode(errors="replace")


class KafkaSink:
    name = "kafka"
    title = "Kafka sink"
    options = KAFKA_OPTIONS + EXACTLY_ONCE_OPTIONS

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
        self._producer_settings = {**self.settings, **PRODUCER_DEFAULTS, **config.with_prefix("producer."),
                                   "on_delivery": self._on_delivery, "error_cb": self._on_error}
        self._producer_settings.pop("transactional.id", None)  # used by start_transactions only
        self.producer = Producer(self._producer_settings)
        # Exactly once (start_transactions):
        self.transactional_id: str | None = None
        self.other_instance: Callable[[], str | None] | None = None  # set by the offset store: who fenced us
        self._txn_timeout_s = 60.0
        self._txn_started = 0.0  # monotonic time the open transaction began; 0: none is open
        self._partial = False  # a write failed part-way: the open transaction may hold part of a batch
        self._fatal_error: Any = None  # librdkafka's fatal error, translated outside its callback

    @property
    def transactional(self) -> bool:
        """Records and offsets are committed together (the engine then never stores an offset after an error)."""
        return self.transactional_id is not None

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
        if error.fatal() and self.transactional_id is not None:
            self._fatal_error = self._fatal_error or error  # fenced, mostly: named in _raise_pending
        elif error.fatal():
            self._fatal = self._fatal or SinkError(
                f"the Kafka producer hit a fatal error: {error.str()}",
                fix="restart the pipeline; records not acknowledged are sent again from the stored offset")
        else:
            log.debug("Kafka client: %s", error.str())

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None and self._error is None:
            self._error = self._failure(error, message.topic(), message.key(), len(message.value() or b""),
                                        sent=True)

    def _failure(self, error: Any, topic: str, key: bytes | None, size: int, sent: bool = False) -> SinkError | None:
        """The error for a refused record, or None when it is skipped by configuration (``sent``: the
        broker refused it, rather than the producer before sending)."""
        from confluent_kafka import KafkaError

        code = error.code()
        where = f"topic {topic}, key {key_text(key)}"
        if code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_MSG_SIZE):
            if self.skip_oversized and sent and self.transactional_id is not None:
                return SinkError(
                    f"a record of {size} bytes is over the topic's max.message.bytes ({where}): in exactly-once "
                    "mode a record the broker refuses fails its whole transaction, so it cannot be skipped",
                    fix="set producer.message.max.bytes to the topics' max.message.bytes, so that the producer "
                        "refuses (and kafka.skip.oversized skips) such records before sending them; or raise "
                        "max.message.bytes on the topic")
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
        if self._fatal_error is not None and self._fatal is None:
            self._fatal = self._transaction_failure(self._fatal_error)
        if self._fatal is not None:
            raise self._fatal
        if self._error is not None:
            raise self._error

    # ---- the Sink contract ------------------------------------------------------------------

    def write(self, records: Sequence[SinkRecord]) -> None:
        from confluent_kafka import KafkaException

        produce = self.producer.produce
        poll = self.producer.poll
        transactional = self.transactional_id is not None
        try:
            if transactional:
                self._begin()
                self._partial = True  # until every record of this call is queued
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
                        if transactional and not _is_size_error(exc.args[0]):
                            raise
                        failure = self._failure(exc.args[0], record.topic, record.key, len(record.value or b""))
                        if failure is not None:
                            raise failure from None
                        break
                self._raise_pending()
            poll(0)
        except (KafkaException, SystemError) as exc:  # the transactional producer's state (fenced, aborted)
            if not transactional:
                raise
            raise self._failure_of(exc) from None
        self._partial = False

    def flush(self) -> None:
        """Return once every written record is acknowledged; wait (and say so) while Kafka is away.
        In exactly-once mode nothing is visible until the offset store commits the transaction."""
        from confluent_kafka import KafkaException

        waited = 0.0
        while True:
            try:
                remaining = self.producer.flush(FLUSH_WAIT_S)
            except (KafkaException, SystemError) as exc:  # a transactional producer's state (fenced, aborted)
                if self.transactional_id is None:
                    raise
                raise self._failure_of(exc) from None
            self._raise_pending()
            if remaining == 0:
                return
            waited += FLUSH_WAIT_S
            log.warning("%d records are not acknowledged by Kafka at %s after %.0f s (broker unreachable?); "
                        "holding the pipeline until it answers", remaining, self.servers, waited)

    # ---- exactly once -----------------------------------------------------------------------

    def start_transactions(self, transactional_id: str, *, required: bool) -> bool:
        """Swap in a transactional producer and fence any earlier instance with this id (its open
        transaction is aborted). False, with a warning, when the cluster refuses transactions and
        they are not ``required``; a SinkError when they are."""
        from confluent_kafka import KafkaException, Producer

        settings = {**self._producer_settings, "transactional.id": transactional_id}
        try:
            producer = Producer(settings)
            producer.init_transactions(INIT_TRANSACTIONS_S)
        except KafkaException as exc:
            problem, fix = self._init_problem(exc.args[0], transactional_id)
            if required:
                raise SinkError(f"exactly.once.support=required: {problem}", fix=fix) from None
            log.warning("exactly.once.support=requested: %s; delivering at least once (%s)", problem, fix)
            return False
        self.producer.flush(1)  # the plain producer has written nothing
        self.producer = producer
        self.transactional_id = transactional_id
        self._txn_timeout_s = int(settings.get("transaction.timeout.ms", 60_000)) / 1000
        return True

    def _init_problem(self, error: Any, transactional_id: str) -> tuple[str, str]:
        from confluent_kafka import KafkaError

        code = error.code()
        what = f"Kafka at {self.servers} refused transactions for transactional.id {transactional_id}: {error.str()}"
        if code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            return what, f"grant WRITE and DESCRIBE on TransactionalId {transactional_id} to this client's principal"
        if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            return what, "grant IdempotentWrite on the cluster to this client's principal"
        if code in (KafkaError._TIMED_OUT, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR,
                    KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
            return (f"no transaction coordinator of Kafka at {self.servers} answered for transactional.id "
                    f"{transactional_id} within {INIT_TRANSACTIONS_S:.0f} s ({error.str()})",
                    "check the broker's log: its __transaction_state topic needs transaction.state.log.replication"
                    ".factor (default 3) brokers and transaction.state.log.min.isr in-sync replicas")
        if code in (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION):
            return what, "transactions need Kafka 0.11 or newer"
        return what, "check the producer.* settings against the broker"

    def _begin(self) -> None:
        if not self._txn_started:
            self.producer.begin_transaction()
            self._txn_started = time.monotonic()

    def commit_transaction(self, record: SinkRecord) -> None:
        """Add ``record`` (the source offset, to the offsets topic) to the open transaction and commit
        it: every record written since the last commit becomes visible together with that offset."""
        from confluent_kafka import KafkaException

        if self._partial:
            self._abort()
            raise SinkError(f"a write failed part-way, so the open transaction of {self.transactional_id} may hold "
                            "part of a batch: it was aborted and the offset is not stored",
                            fix="restart the pipeline: it resumes from the last committed offset")
        self._raise_pending()
        try:
            self._begin()
            self.producer.produce(record.topic, record.value, record.key, headers=record.headers)  # type: ignore[arg-type]
            waited = 0.0
            while True:
                try:
                    self.producer.commit_transaction(FLUSH_WAIT_S)
                    break
                except KafkaException as exc:
                    error = exc.args[0]
                    if error.fatal() or error.txn_requires_abort() or not error.retriable():
                        raise
                    waited += FLUSH_WAIT_S
                    log.warning("Kafka at %s has not committed the transaction of %s after %.0f s (broker "
                                "unreachable?); waiting", self.servers, self.transactional_id, waited)
        except (KafkaException, SystemError) as exc:
            raise self._failure_of(exc) from None
        self._txn_started = 0.0
        self._raise_pending()

    def _abort(self) -> None:
        """Abort the open transaction, bounded and quietly: an aborted transaction's records are
        never read (read_committed), and one not aborted here is aborted by the next instance's
        init_transactions, or by Kafka after transaction.timeout.ms."""
        from confluent_kafka import KafkaException

        if not self._txn_started:
            return
        self._txn_started = 0.0
        try:
            self.producer.abort_transaction(ABORT_S)
        except KafkaException as exc:
            log.debug("aborting the transaction of %s: %s", self.transactional_id, exc.args[0].str())

    def _failure_of(self, exc: BaseException) -> SinkError:
        """The SinkError for what a transactional producer's call raised. confluent-kafka runs delivery
        callbacks while a fatal error (fenced) is pending: the callback's first call then fails with a
        SystemError chaining the KafkaException, or the error is lost altogether ("returned NULL without
        setting an exception"; confluent-kafka-python issues 150, 1214). Then abort_transaction names it."""
        from confluent_kafka import KafkaException

        error = _kafka_error(exc)
        if error is not None:
            return self._transaction_failure(error)
        try:
            self.producer.abort_transaction(ABORT_S)
        except KafkaException as abort:
            return self._transaction_failure(abort.args[0])
        self._txn_started = 0.0
        return SinkError(f"the transactional Kafka producer {self.transactional_id} failed ({exc}); its open "
                         "transaction was aborted, none of its records is visible to read_committed consumers",
                         fix="restart the pipeline: it resumes from the last committed offset")

    def _transaction_failure(self, error: Any) -> SinkError:
        """A transactional producer's error, said plainly: fenced, aborted by Kafka, or failed."""
        from confluent_kafka import KafkaError

        tid = self.transactional_id
        age = time.monotonic() - self._txn_started if self._txn_started else 0.0
        resume = "restart the pipeline: it resumes from the last committed offset"
        if error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH):
            self._txn_started = 0.0  # the broker aborted it: nothing to abort here
            other = self._other_instance()
            if other is None and age >= self._txn_timeout_s:
                return SinkError(
                    f"Kafka aborted the transaction of {tid} after {age:.0f} s: it was open longer than "
                    f"transaction.timeout.ms ({self._txn_timeout_s * 1000:.0f}); none of its records is visible "
                    "to read_committed consumers",
                    fix=f"{resume}. A transaction spans one offset.flush.interval.ms, and a whole snapshot that "
                        "stores no progress: set snapshot.resumable=true, or raise producer.transaction.timeout.ms "
                        "(up to the broker's transaction.max.timeout.ms, 15 minutes by default)")
            return SinkError(
                f"this pipeline was fenced: another instance with transactional.id {tid} started on {self.servers}"
                f" ({other or 'a second copy of this pipeline, same name and topic.prefix'}). This one stops; its "
                "open transaction is aborted, so nothing it wrote after its last commit is visible to "
                "read_committed consumers",
                fix="run one instance per pipeline: the newest one has taken over from the last committed offset. "
                    "A second pipeline needs its own name or topic.prefix (or producer.transactional.id)")
        if error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            return SinkError(f"not authorized to use transactional.id {tid} at {self.servers}: {error.str()}",
                             fix=f"grant WRITE and DESCRIBE on TransactionalId {tid} to this client's principal")
        if error.txn_requires_abort():
            self._abort()
            return SinkError(f"the Kafka transaction of {tid} failed and was aborted ({error.str()}); none of its "
                             "records is visible to read_committed consumers", fix=resume)
        return SinkError(f"the transactional Kafka producer {tid} failed: {error.str()}", fix=resume)

    def _other_instance(self) -> str | None:
        if self.other_instance is None:
            return None
        try:
            return self.other_instance()
        except Exception as exc:  # noqa: BLE001 - only a better message was at stake
            log.debug("could not tell which instance fenced %s: %s", self.transactional_id, exc)
            return None

    def close(self) -> None:
        if self.transactional_id is not None:
            if self._txn_started:  # written but not committed: never visible; abort now rather than at the timeout
                log.info("aborting the open transaction of %s (its records are sent again on restart)",
                         self.transactional_id)
                self._abort()
            return
        # Bounded: records still unacknowledged were not committed, so a restart sends them again.
        remaining = self.producer.flush(10)
        if remaining:
            log.warning("closing with %d records not acknowledged by Kafka at %s; they are sent again on restart",
                        remaining, self.servers)


def _kafka_error(exc: BaseException) -> Any:
    """The KafkaError behind ``exc``, also one a SystemError chains: confluent-kafka runs a delivery
    callback while a fatal error (fenced) is pending, and the callback's first call then fails with
    "returned a result with an exception set" (confluent-kafka-python issues 150, 1214)."""
    from confluent_kafka import KafkaException

    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            break
        if isinstance(seen, KafkaException) and seen.args:
            return seen.args[0]
        seen = seen.__cause__ or seen.__context__
    return None


def _is_size_error(error: Any) -> bool:
    from confluent_kafka import KafkaError

    return bool(error.code() in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_MSG_SIZE))


def _event_topics(config: Config) -> set[str]:
    """Topics whose records must all be kept (not compacted): schema changes, transactions, heartbeats."""
    if not config.properties.get("topic.prefix"):
        return set()
    topics = TopicNaming.from_config(config)  # the table strategy aside, these topics are the same on every source
    return {topics.schema_change_topic(), topics.transaction_topic(), topics.heartbeat_topic()}
