"""Signals through a Kafka topic (``signal.kafka.topic``), as Debezium's Kafka signal channel.

A message is for this pipeline when its key is the pipeline's ``topic.prefix``; its value is
``{"type": ..., "data": {...}}`` and its id is ``kafka-<offset>``. The topic has one partition;
the next offset to read is kept in the pipeline's own offset, so a signal is acted on once, also
across restarts. Reading is a short ``consume`` with no wait, between two transactions.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from cdc.config import Config
from cdc.core import signals as sig
from cdc.core.errors import SourceError
from cdc.kafka.client import bootstrap_servers, client_settings

log = logging.getLogger(__name__)


class KafkaChannel:
    offset_key = "signal_kafka_pos"

    def __init__(self, config: Config) -> None:
        self.topic: str = config.get("signal.kafka.topic")
        self.prefix: str = config.get("topic.prefix")
        servers = config.get("signal.kafka.bootstrap.servers") or bootstrap_servers(config)
        self._settings = client_settings(config, servers)
        self.position = 0
        self._consumer: Any = None

    def _open(self) -> Any:
        from confluent_kafka import Consumer, TopicPartition

        if self._consumer is None:
            self._consumer = Consumer({**self._settings, "group.id": f"cdc-signals-{self.prefix}",
                                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
            self._consumer.assign([TopicPartition(self.topic, 0, self.position)])
            self._assigned_at = self.position
        elif self._assigned_at != self.position:  # restored from an offset after opening
            self._consumer.seek(TopicPartition(self.topic, 0, self.position))
            self._assigned_at = self.position
        return self._consumer

    def poll(self) -> list[sig.Signal]:
        consumer = self._open()
        signals: list[sig.Signal] = []
        for message in consumer.consume(num_messages=100, timeout=0.05):
            if message.error():
                log.warning("signal topic %s: %s", self.topic, message.error())
                continue
            self.position = self._assigned_at = message.offset() + 1
            if (message.key() or b"").decode(errors="replace") != self.prefix:
                continue  # another pipeline's
            try:
                value = json.loads(message.value() or b"null")
                if not isinstance(value, dict):
                    raise sig.SignalError("the value must be a JSON object {type, data}")
                signals.append(sig.parse_signal(f"kafka-{message.offset()}", value.get("type"), value.get("data"),
                                                "kafka"))
            except (ValueError, sig.SignalError) as exc:
                log.warning("skipping malformed signal at %s offset %d: %s", self.topic, message.offset(), exc)
        return signals

    def send(self, id_: str, type_: str, data: dict[str, Any]) -> str:
        from confluent_kafka import Producer

        producer = Producer(self._settings)
        producer.produce(self.topic, key=self.prefix.encode(), value=json.dumps({"type": type_, "data": data}).encode())
        if producer.flush(30) != 0:
            raise SourceError(f"the signal could not be written to Kafka topic {self.topic}",
                              fix="check signal.kafka.bootstrap.servers / kafka.bootstrap.servers")
        return f"signal topic {self.topic}"

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
