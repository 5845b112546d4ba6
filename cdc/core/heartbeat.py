"""Heartbeat events (``heartbeat.interval.ms``): proof of life on a quiet log, on the heartbeat
topic (``<topic.heartbeat.prefix>.<topic.prefix>``, or ``topic.heartbeat.name``: cdc.core.topics), and
a moment to store the source's position, so a database with little captured traffic does not hold
its log (WAL, binlog) for nothing.
"""
from __future__ import annotations

import time

from cdc.core import connect
from cdc.core.connect import ConnectSchema
from cdc.core.envelope import now_ts
from cdc.core.records import ChangeEvent

KEY_SCHEMA = ConnectSchema(connect.struct(
    [connect.field("serverName", connect.STRING)], optional=False, name="io.debezium.connector.common.ServerNameKey",
    version=1))
VALUE_SCHEMA = ConnectSchema(connect.struct(
    [connect.field("ts_ms", connect.INT64)], optional=False, name="io.debezium.connector.common.Heartbeat",
    version=1))


class Heartbeat:
    def __init__(self, prefix: str, topic: str, interval_ms: int) -> None:
        """``prefix``: topic.prefix, the events' key; ``topic``: where they go (TopicNaming.heartbeat_topic)."""
        self.prefix = prefix
        self.topic = topic
        self.interval_s = interval_ms / 1000
        self._last = time.monotonic()

    def due(self) -> ChangeEvent | None:
        """A heartbeat event when the interval has passed since the last one (never when disabled)."""
        if not self.interval_s or time.monotonic() - self._last < self.interval_s:
            return None
        self._last = time.monotonic()
        # no context headers: Debezium's heartbeat records carry none
        return ChangeEvent(self.topic, KEY_SCHEMA, {"serverName": self.prefix}, VALUE_SCHEMA, {"ts_ms": now_ts()[0]},
                           context_headers=False)
