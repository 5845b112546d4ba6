"""exactly.once.support without a broker of our own: the pipeline's refusals (a required exactly-once
that cannot be honoured is a ConfigError saying what to change), the transactional id, the engine
never storing an offset after an error when the sink commits records and offsets together, and the
transactional sink and offset store on librdkafka's mock cluster (which serves transactions)."""
from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.core.converters import JsonConverter
from cdc.core.errors import ConfigError, SourceError
from cdc.core.records import SinkRecord
from cdc.engine import Engine
from cdc.kafka import exactly_once
from cdc.pipeline import build
from tests.unit.test_engine import CALLS, Sink, Source, Store, batch

PG = {"database.hostname": "127.0.0.1", "database.user": "u", "database.dbname": "d", "topic.prefix": "shop",
      "kafka.bootstrap.servers": "127.0.0.1:1"}


class KafkaLike:
    """Any sink class that can write in transactions."""

    name = "kafka"

    def start_transactions(self, transactional_id: str, *, required: bool) -> bool:
        return True


def mode(**props: str) -> str | None:
    config = Config(props).declare(CORE_OPTIONS).declare(exactly_once.EXACTLY_ONCE_OPTIONS)
    store_kind = props.get("offset.storage", "file")
    return exactly_once.mode(config, KafkaLike if props.pop("sink", "kafka") == "kafka" else Sink, store_kind)


def test_unset_is_at_least_once() -> None:
    assert mode() is None
    assert mode(**{"offset.storage": "kafka"}) is None


def test_kafka_sink_and_kafka_offsets_run_exactly_once() -> None:
    assert mode(**{"exactly.once.support": "required", "offset.storage": "kafka"}) == "required"
    assert mode(**{"exactly.once.support": "Requested", "offset.storage": "kafka"}) == "requested"


@pytest.mark.parametrize("props, problem, fix", [
    ({"sink": "files", "offset.storage": "kafka"}, "sink cannot write in Kafka transactions", "sink=kafka"),
    ({"offset.storage": "file"}, "offset.storage=file cannot be written in the sink's Kafka transaction",
     "set offset.storage=kafka"),
    ({"offset.storage": "kafka", "producer.enable.idempotence": "false"}, "producer.enable.idempotence=false",
     "remove producer.enable.idempotence"),
    ({"offset.storage": "kafka", "producer.acks": "1"}, "producer.acks=1", "remove producer.acks"),
])
def test_required_that_cannot_be_honoured_is_refused_with_the_fix(props: dict[str, str], problem: str,
                                                                  fix: str) -> None:
    with pytest.raises(ConfigError) as info:
        mode(**{"exactly.once.support": "required", **props})
    assert "exactly.once.support=required cannot be honoured" in info.value.message
    assert problem in info.value.message and info.value.fix is not None and fix in info.value.fix


def test_requested_that_cannot_be_honoured_is_at_least_once_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert mode(**{"exactly.once.support": "requested", "offset.storage": "file"}) is None
    assert "exactly.once.support=requested: delivering at least once" in caplog.text
    assert "offset.storage=file" in caplog.text


def test_the_pipeline_refuses_before_anything_starts() -> None:
    """No database, no broker: the refusal comes from the configuration alone."""
    with pytest.raises(ConfigError) as info:
        build("postgres", {**PG, "sink": "files", "exactly.once.support": "required"})
    assert "the files sink cannot write in Kafka transactions" in info.value.message
    assert info.value.fix is not None and "sink=kafka" in info.value.fix and "offset.storage=kafka" in info.value.fix
    with pytest.raises(ConfigError) as info:
        build("postgres", {**PG, "sink": "kafka", "exactly.once.support": "yes"})
    assert "exactly.once.support='yes' is not one of requested, required" in info.value.message


def test_transactional_id() -> None:
    config = Config({"topic.prefix": "shop"}).declare(CORE_OPTIONS)
    assert exactly_once.transactional_id(config) == "cdc-cdc-shop"
    config = Config({"topic.prefix": "shop", "name": "orders"}).declare(CORE_OPTIONS)
    assert exactly_once.transactional_id(config) == "cdc-orders-shop"
    config = Config({"topic.prefix": "shop", "producer.transactional.id": "mine"}).declare(CORE_OPTIONS)
    assert exactly_once.transactional_id(config) == "mine"


class TransactionalSink(Sink):
    transactional = True


@pytest.fixture()
def calls() -> Iterator[list[str]]:
    CALLS.clear()
    yield CALLS


def test_after_an_error_a_transactional_sink_stores_no_offset(calls: list[str]) -> None:
    """Its open transaction may hold part of the failed batch: aborted (at close), resumed from the last
    committed offset, so nothing is written twice. An at-least-once sink stores what it flushed."""
    store = Store({"n": 0})
    with pytest.raises(SourceError):
        Engine(Source([batch(1), batch(2)], fail_after=True), TransactionalSink(), JsonConverter(), store,
               flush_interval_s=3600).run()
    assert store.stored == {"n": 0} and not any(c.startswith(("save", "acknowledge")) for c in calls)
    with pytest.raises(SourceError):
        Engine(Source([batch(1), batch(2)], fail_after=True), Sink(), JsonConverter(), store,
               flush_interval_s=3600).run()
    assert store.stored == {"n": 2}


# ---- on the mock cluster -------------------------------------------------------------------

confluent_kafka = pytest.importorskip("confluent_kafka",
                                      reason="confluent-kafka is not installed (pip install 'cdc-debezium[kafka]')")


class _Quiet:
    def log(self, *args: Any, **kwargs: Any) -> None:
        pass


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    holder = confluent_kafka.Producer({"test.mock.num.brokers": 1, "logger": _Quiet()})
    brokers = holder.list_topics(timeout=10).brokers.values()
    yield ",".join(f"{b.host}:{b.port}" for b in brokers)
    holder.flush(1)


def test_the_transactional_sink_and_store_on_the_mock_cluster(mock_bootstrap: str) -> None:
    """Begin, commit with the offset, abort at close: the producer's side. The mock cluster does not
    hide aborted records from read_committed readers; what they see is tested on a real broker
    (tests/integration/test_kafka_exactly_once.py)."""
    from cdc.kafka.stores import KafkaOffsetStore
    from cdc.sinks.kafka import KafkaSink

    prefix = "m" + uuid.uuid4().hex[:6]
    seed = confluent_kafka.Producer({"bootstrap.servers": mock_bootstrap, "logger": _Quiet()})
    seed.produce(f"{prefix}-offsets", b"{}", b"someone else")  # the mock cannot create topics through the admin API
    assert seed.flush(10) == 0
    config = Config({"kafka.bootstrap.servers": mock_bootstrap, "topic.creation.enable": "false",
                     "topic.prefix": prefix, "offset.storage.topic": f"{prefix}-offsets",
                     "exactly.once.support": "required"})
    sink, store = KafkaSink(config), KafkaOffsetStore(config, "p")
    assert exactly_once.enable("required", config, sink, store) and sink.transactional
    assert sink.transactional_id == f"cdc-cdc-{prefix}"
    topic = f"{prefix}.public.t"
    sink.write([SinkRecord(topic, b"k", b"v%d" % i) for i in range(10)])
    assert sink._txn_started  # begun by the first write
    sink.flush()
    assert sink._txn_started  # flushed, still open
    store.save({"lsn": 7})
    assert not sink._txn_started  # committed with the offset
    sink.write([SinkRecord(topic, b"k", b"never")])
    sink.close()  # no commit: aborted
    assert not sink._txn_started
    again = KafkaOffsetStore(config, "p")
    assert again.load() == {"lsn": 7}
    headers = dict(again._last().headers())
    assert headers["cdc.instance"] == exactly_once.INSTANCE.encode()
