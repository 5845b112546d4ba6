"""Debezium's notifications (``notification.enabled.channels``): what the connector tells about its own
progress, on the ``sink`` channel as records on ``notification.sink.topic.name``, on the ``log`` channel as
log lines, in Debezium's shape (``io.debezium.connector.common.Notification``).

The initial snapshot's, as Debezium 3.6.1 writes them (tests/conformance/workloads/pg_notifications*.sql):
``STARTED``; per table ``IN_PROGRESS`` (the table now read) and ``TABLE_SCAN_COMPLETED`` (its row count);
``COMPLETED``; or ``SKIPPED`` when a start takes no snapshot of the data. An incremental snapshot's
(cdc.core.incremental): ``STARTED``, ``IN_PROGRESS`` per chunk (its last key and the table's maximum key),
``TABLE_SCAN_COMPLETED``, ``COMPLETED``, and ``PAUSED``, ``RESUMED``, ``ABORTED`` as signals ask.
``additional_data`` always holds ``connector_name`` (the logical name, ``topic.prefix``); the records have
no headers.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from cdc.core import connect
from cdc.core.connect import ConnectSchema
from cdc.core.errors import ConfigError
from cdc.core.records import ChangeEvent
from cdc.core.transactions import java_hashmap_order

log = logging.getLogger(__name__)

INITIAL_SNAPSHOT = "Initial Snapshot"
INCREMENTAL_SNAPSHOT = "Incremental Snapshot"
CHANNELS = ("sink", "log")  # Debezium's jmx channel: cdc has no JMX beans (its metrics are Prometheus')

KEY_SCHEMA = ConnectSchema(connect.struct([connect.field("id", connect.STRING)], optional=False,
                                          name="io.debezium.connector.common.NotificationKey", version=1))
VALUE_SCHEMA = ConnectSchema(connect.struct([
    connect.field("id", connect.STRING),
    connect.field("type", connect.STRING),
    connect.field("aggregate_type", connect.STRING),
    connect.field("additional_data", {"type": "map", "keys": connect.STRING, "values": connect.STRING,
                                      "optional": True}),
    connect.field("timestamp", connect.INT64),
], optional=False, name="io.debezium.connector.common.Notification", version=1))


class Notifier:
    """The notifications of one pipeline: records to hand over with the events, and log lines."""

    def __init__(self, channels: Sequence[str], topic: str | None, connector_name: str) -> None:
        if "sink" in channels and not topic:
            raise ConfigError("notification.enabled.channels has sink but notification.sink.topic.name is not set",
                              fix="name the topic of the notification records in notification.sink.topic.name")
        self.sink = "sink" in channels
        self.log = "log" in channels
        self.topic = topic or ""
        self.connector_name = connector_name

    @classmethod
    def from_config(cls, config: Any) -> Notifier:
        return cls(config.get("notification.enabled.channels") or (), config.get("notification.sink.topic.name"),
                   config.get("topic.prefix"))

    @property
    def enabled(self) -> bool:
        return self.sink or self.log

    def initial_snapshot(self, type_: str, **data: str) -> list[ChangeEvent]:
        """An initial snapshot's notification: a record for the sink channel (in the list), a line for the log."""
        return self.notify(INITIAL_SNAPSHOT, type_, data)

    def notify(self, aggregate_type: str, type_: str, data: dict[str, str],
               last: dict[str, str] | None = None) -> list[ChangeEvent]:
        """``data``: the additional data, in the order of the Java map Debezium keeps it in; ``last``: what
        Debezium adds to that map's end (an incremental snapshot's last_processed_key)."""
        if not self.enabled:
            return []
        id_ = str(uuid.uuid4())
        data = {**data, "connector_name": self.connector_name}
        additional = {k: data[k] for k in java_hashmap_order(list(data))} | (last or {})
        timestamp = time.time_ns() // 1_000_000
        if self.log:
            shown = ", ".join(f"{k}={v}" for k, v in additional.items())
            log.info("[Notification Service] Notification{id='%s', aggregateType='%s', type='%s', "
                     "additionalData={%s}, timestamp=%d}", id_, aggregate_type, type_, shown, timestamp)
        if not self.sink:
            return []
        value = {"id": id_, "type": type_, "aggregate_type": aggregate_type, "additional_data": additional,
                 "timestamp": timestamp}
        return [ChangeEvent(self.topic, KEY_SCHEMA, {"id": id_}, VALUE_SCHEMA, value, context_headers=False)]


SILENT = Notifier((), None, "")


def collections(table_ids: Sequence[str]) -> str:
    """``data_collections``: the tables, in the order of the Java set Debezium lists them from."""
    return ",".join(java_hashmap_order(list(table_ids)))


def snapshot_skipped(notifier: Notifier, plan: Any) -> list[ChangeEvent]:
    """``SKIPPED`` when a start takes no snapshot of the data (``plan``: cdc.core.snapshot_mode.Plan)."""
    return notifier.initial_snapshot("SKIPPED") if plan.value in ("schema", "log start", "stream") else []
