"""The Kafka broker stopped for a few seconds while a pipeline streams into it (Kafka sink) under a writer,
then started again: the pipeline holds what it read until the broker is back (or fails clearly and
resumes on restart), and the topic, read by a consumer from its start, rebuilds the table without a loss.
The broker is a private one (``own_kafka``: its own port and folder), so no other test loses the shared
broker for a moment; it is started again in a ``finally``, and stopped when the case ends."""
from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.faults.conftest import RecordProperty, sources
from tests.faults.harness import (
    Cdc,
    Source,
    TopicEvents,
    Writer,
    clean_stop_then_nothing_again,
    converge,
    recover,
    seed,
    verify,
)
from tests.integration.kafka_fixtures import OwnKafka

pytestmark = [pytest.mark.faults, pytest.mark.kafka]

OUTAGE_S = 5


@pytest.mark.parametrize("source", sources(), indirect=True)
def test_kafka_broker_stopped_mid_stream(source: Source, tmp_path: Path, own_kafka: OwnKafka,
                                         record_property: RecordProperty) -> None:
    rng = random.Random(seed())
    source.create_table(1000)
    events = TopicEvents(source, own_kafka.bootstrap)
    cdc = Cdc(source, tmp_path, events=events,
              props={"sink": "kafka", "kafka.bootstrap.servers": own_kafka.bootstrap})
    writer = Writer(source, range(1, 1001), rng)
    try:
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        writer.start()
        writer.wait_ops(300)
        cdc.wait_until("events in the topic", lambda: len(events.events) > 1000)
        own_kafka.stop()
        try:
            writer.wait_ops(len(writer.ops) + 200)
            time.sleep(OUTAGE_S)
        finally:
            own_kafka.start()
        record_property("outcome", recover(cdc, writer))
        writer.wait_ops(len(writer.ops) + 200)
        writer.stop()
        converge(cdc, writer)
        clean_stop_then_nothing_again(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    try:
        verify(cdc, writer)
    finally:
        events.close()
