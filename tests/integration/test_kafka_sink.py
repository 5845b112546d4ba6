"""The Kafka sink and the Kafka offset/history stores against a real broker (no database)."""
from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from cdc.config import Config
from cdc.core.errors import SchemaHistoryError, SinkError
from cdc.core.records import SinkRecord
from tests.integration.kafka_fixtures import OwnKafka, free_port_pair, kafka_admin, read_topic

pytestmark = pytest.mark.kafka


def sink_config(bootstrap: str, prefix: str, **extra: str) -> Config:
    return Config({"kafka.bootstrap.servers": bootstrap, "topic.prefix": prefix, **extra})


def describe(bootstrap: str, topic: str) -> tuple[int, str]:
    """(partitions, cleanup.policy) of a topic."""
    from confluent_kafka.admin import ConfigResource

    admin = kafka_admin(bootstrap)
    partitions = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return partitions, admin.describe_configs([resource])[resource].result(10)["cleanup.policy"].value


def test_records_arrive_with_key_value_headers_tombstones_in_order(kafka_bootstrap: str, topic_prefix: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    topic = f"{topic_prefix}.public.orders"
    sink = KafkaSink(sink_config(kafka_bootstrap, topic_prefix, **{"topic.creation.default.partitions": "3"}))
    records = [SinkRecord(topic, b'{"id":%d}' % (i % 7), b'{"seq":%d}' % i, [("__debezium.oldkey", b"%d" % i)])
               for i in range(300)]
    records.append(SinkRecord(topic, b'{"id":3}', None))  # a tombstone
    sink.write(records)
    sink.flush()
    sink.close()
    messages = read_topic(kafka_bootstrap, topic)
    assert len(messages) == 301
    by_key: dict[bytes, list[bytes | None]] = {}
    for message in messages:
        by_key.setdefault(message.key(), []).append(message.value())
    for key, values in by_key.items():  # one key, one partition: the written order holds
        expected = [r.value for r in records if r.key == key]
        assert values == expected
    tombstone = next(m for m in messages if m.value() is None)
    assert tombstone.key() == b'{"id":3}' and tombstone.headers() is None
    first = next(m for m in messages if m.value() == b'{"seq":0}')
    assert first.headers() == [("__debezium.oldkey", b"0")]
    for partition in {m.partition() for m in messages}:
        offsets = [m.offset() for m in messages if m.partition() == partition]
        assert offsets == sorted(offsets)


def test_topics_are_created_as_kafka_connect_would(kafka_bootstrap: str, topic_prefix: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    sink = KafkaSink(sink_config(kafka_bootstrap, topic_prefix, **{"topic.creation.default.partitions": "2"}))
    table, keyless, schema_changes = f"{topic_prefix}.public.a", f"{topic_prefix}.public.nokey", topic_prefix
    sink.write([SinkRecord(table, b'{"id":1}', b"{}"), SinkRecord(keyless, None, b"{}"),
                SinkRecord(schema_changes, b'{"databaseName":"db"}', b"{}")])
    sink.flush()
    assert describe(kafka_bootstrap, table) == (2, "compact")
    # A compacted topic refuses records without a key; schema changes must all be kept.
    assert describe(kafka_bootstrap, keyless) == (2, "delete")
    assert describe(kafka_bootstrap, schema_changes) == (2, "delete")


def test_offset_store_round_trip(kafka_bootstrap: str, topic_prefix: str) -> None:
    from cdc.kafka.stores import KafkaOffsetStore

    config = sink_config(kafka_bootstrap, topic_prefix, **{"offset.storage.topic": f"{topic_prefix}-offsets"})
    store = KafkaOffsetStore(config, "pipeline-a")
    assert store.load() is None
    store.save({"lsn": 1})
    store.save({"lsn": 2, "txId": 7})
    other = KafkaOffsetStore(config, "pipeline-b")
    other.save({"lsn": 99})
    store.close()
    other.close()
    assert describe(kafka_bootstrap, f"{topic_prefix}-offsets") == (1, "compact")
    assert KafkaOffsetStore(config, "pipeline-a").load() == {"lsn": 2, "txId": 7}  # a new instance: a restart
    keys = [m.key() for m in read_topic(kafka_bootstrap, f"{topic_prefix}-offsets")]
    assert keys[0] == b'["pipeline-a",{"server":"%s"}]' % topic_prefix.encode()


def test_schema_history_round_trip(kafka_bootstrap: str, topic_prefix: str) -> None:
    from confluent_kafka.admin import ConfigResource

    from cdc.kafka.stores import KafkaSchemaHistory

    topic = f"{topic_prefix}-history"
    config = Config({"schema.history.internal.kafka.bootstrap.servers": kafka_bootstrap,
                     "schema.history.internal.kafka.topic": topic})
    history = KafkaSchemaHistory(config)
    assert not history.exists() and list(history.entries()) == []
    ddl = [f"ALTER TABLE a ADD c{i} int" for i in range(20)]
    for position, statement in enumerate(ddl):
        history.record({"ddl": statement, "position": {"pos": position}})
    history.close()
    again = KafkaSchemaHistory(config)
    assert again.exists()
    assert [e["ddl"] for e in again.entries()] == ddl
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = kafka_admin(kafka_bootstrap)  # kept alive until the answer arrives
    settings = admin.describe_configs([resource])[resource].result(10)
    assert settings["retention.ms"].value == "-1" and settings["cleanup.policy"].value == "delete"


def test_schema_history_topic_with_many_partitions_is_refused(kafka_bootstrap: str, topic_prefix: str) -> None:
    from confluent_kafka.admin import NewTopic

    from cdc.kafka.stores import KafkaSchemaHistory

    topic = f"{topic_prefix}-history"
    admin = kafka_admin(kafka_bootstrap)  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    with pytest.raises(SchemaHistoryError) as info:
        KafkaSchemaHistory(sink_config(kafka_bootstrap, topic_prefix, **{"schema.history.internal.kafka.topic": topic}))
    assert "has 3 partitions" in str(info.value) and "one partition" in str(info.value)


def test_oversized_record_names_topic_key_and_setting(kafka_bootstrap: str, topic_prefix: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    topic = f"{topic_prefix}.public.big"
    # The producer would take 2 MB; the broker's default limit (1 MB) refuses it.
    sink = KafkaSink(sink_config(kafka_bootstrap, topic_prefix, **{"producer.message.max.bytes": "2000000"}))
    sink.write([SinkRecord(topic, b'{"id":42}', os.urandom(1_500_000))])
    with pytest.raises(SinkError) as info:
        sink.flush()
    message = str(info.value)
    assert topic in message and '{"id":42}' in message and "message.max.bytes" in message
    assert "kafka.skip.oversized" in message
    skipping = KafkaSink(sink_config(kafka_bootstrap, topic_prefix, **{"producer.message.max.bytes": "2000000",
                                                                        "kafka.skip.oversized": "true"}))
    skipping.write([SinkRecord(topic, b'{"id":43}', os.urandom(1_500_000)), SinkRecord(topic, b'{"id":44}', b"{}")])
    skipping.flush()
    assert skipping.skipped == 1
    assert [m.key() for m in read_topic(kafka_bootstrap, topic)] == [b'{"id":44}']


def test_unreachable_broker_fails_at_start_in_bounded_time() -> None:
    pytest.importorskip("confluent_kafka")
    from cdc.sinks.kafka import KafkaSink

    nobody = f"127.0.0.1:{free_port_pair()}"
    started = time.monotonic()
    with pytest.raises(SinkError) as info:
        KafkaSink(sink_config(nobody, "x", **{"kafka.connect.timeout.ms": "3000"}))
    elapsed = time.monotonic() - started
    assert f"cannot reach Kafka at {nobody}" in str(info.value) and "kafka.bootstrap.servers" in str(info.value)
    assert elapsed < 15, elapsed


def test_broker_stopped_mid_stream_holds_then_delivers_exactly_once(own_kafka: OwnKafka, topic_prefix: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    topic = f"{topic_prefix}.public.seq"
    sink = KafkaSink(sink_config(own_kafka.bootstrap, topic_prefix))
    record = lambda i: SinkRecord(topic, b'{"id":%d}' % (i % 10), b"%d" % i)  # noqa: E731
    sink.write([record(i) for i in range(2000)])
    own_kafka.stop()  # some of these may still be in flight
    sink.write([record(i) for i in range(2000, 4000)])
    outcome: dict[str, Any] = {}

    def flush() -> None:
        try:
            sink.flush()
            outcome["done"] = True
        except BaseException as exc:  # noqa: BLE001 - reported by the assertions below
            outcome["error"] = exc

    flusher = threading.Thread(target=flush, daemon=True)
    flusher.start()
    flusher.join(8)
    assert flusher.is_alive() and not outcome, f"flush returned while the broker was down: {outcome}"
    own_kafka.start()
    flusher.join(90)
    assert outcome == {"done": True}
    sink.close()
    values = [int(m.value()) for m in read_topic(own_kafka.bootstrap, topic)]
    assert sorted(values) == list(range(4000))  # every record, none twice (idempotent producer)
    for key in range(10):  # and in order per key
        assert [v for v in values if v % 10 == key] == list(range(key, 4000, 10))
