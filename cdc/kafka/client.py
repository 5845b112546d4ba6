"""What every Kafka client of cdc shares (the sink, the offset and history stores, the signal
channel): the broker options, the pass-through of ``kafka.*`` settings, and reaching the brokers.
confluent-kafka is imported only by the functions that talk to a broker (the ``kafka`` extra).
"""
from __future__ import annotations

import logging
import time
from typing import Any

from cdc.config import Config, Option
from cdc.core.errors import ConfigError, SinkError

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

# librdkafka settings we own; a user may still override them through producer.*.
PRODUCER_DEFAULTS: dict[str, Any] = {
    "enable.idempotence": True,
    "acks": "all",
    "message.timeout.ms": 0,  # never drop a message because the broker is away
    "linger.ms": 5,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 200_000,
    "delivery.report.only.error": True,  # flush() counts outstanding messages; only errors need a callback
}

FLUSH_WAIT_S = 5.0  # how long one flush round waits before it logs that Kafka keeps us waiting


def bootstrap_servers(config: Config) -> str:
    servers = config.get("kafka.bootstrap.servers") or config.properties.get("bootstrap.servers")
    if not servers:
        raise ConfigError("Kafka (the sink, offset.storage=kafka or a Kafka signal channel) needs "
                          "kafka.bootstrap.servers",
                          fix="set kafka.bootstrap.servers=host:9092 (--bootstrap-servers on the command line)")
    return str(servers)


def client_settings(config: Config, servers: str | None = None) -> dict[str, Any]:
    """Settings shared by every client: bootstrap plus ``kafka.*`` pass-through (security, ...)."""
    settings: dict[str, Any] = {"bootstrap.servers": servers or bootstrap_servers(config), "logger": log}
    declared = {o.name for o in KAFKA_OPTIONS}
    for key, value in config.with_prefix("kafka.").items():
        if f"kafka.{key}" not in declared and key != "bootstrap.servers":
            settings[key] = value
    return settings


def connect_timeout_s(config: Config) -> float:
    """``kafka.connect.timeout.ms`` in seconds, also where the sink's options are not declared."""
    option = next(o for o in KAFKA_OPTIONS if o.name == "kafka.connect.timeout.ms")
    raw = config.properties.get(option.name)
    try:
        return (option.parse(raw) if raw not in (None, "") else option.default) / 1000
    except ValueError as exc:
        raise ConfigError(f"invalid value for {option.name}: {exc}") from None


def check_reachable(settings: dict[str, Any], timeout_s: float, what: str = "kafka.bootstrap.servers") -> set[str]:
    """List topics, retried with backoff until ``timeout_s``; return the topic names.

    ``what`` names the property to fix in the error (the schema history has its own).
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(settings)
    deadline = time.monotonic() + timeout_s
    wait = 0.25
    while True:
        try:
            left = deadline - time.monotonic()
            return set(admin.list_topics(timeout=max(min(left, 5.0), 0.5)).topics)
        except KafkaException as exc:
            reason = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
            if time.monotonic() + wait >= deadline:
                raise SinkError(
                    f"cannot reach Kafka at {settings['bootstrap.servers']} within {timeout_s:g} s ({reason})",
                    fix=f"start the broker, or fix {what} (and kafka.security.protocol / kafka.sasl.* if the "
                        "cluster needs them); kafka.connect.timeout.ms sets how long to try",
                ) from None
            log.warning("Kafka at %s does not answer yet (%s); retrying", settings["bootstrap.servers"], reason)
            time.sleep(wait)
            wait = min(wait * 2, 2.0)
