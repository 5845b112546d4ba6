"""Debezium 3's context headers, on every record (tombstones included) unless
``extended.headers.enabled=false``:

    __debezium.context.connectorLogicalName   topic.prefix
    __debezium.context.taskId                 "0" (one task per pipeline)
    __debezium.context.connectorName          postgresql | mysql | mariadb | sqlserver
    __debezium.context.runId                  a UUID (version 7, time-ordered) new at every start

The connector's name can depend on the server (a MySQL source reading a MariaDB says
``mariadb``), so it is asked for when the first record is converted, once the source has
connected.
"""
from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from cdc.core.connect import ConnectSchema

PREFIX = "__debezium.context."
STRING_SCHEMA = ConnectSchema({"type": "string", "optional": False})


def uuid7() -> str:
    """A version 7 UUID: 48 bits of Unix milliseconds, then random bits (RFC 9562)."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # variant
    return str(uuid.UUID(int=value))


class ContextHeaders:
    def __init__(self, logical_name: str, connector_name: Callable[[], str], task_id: str = "0",
                 run_id: str | None = None) -> None:
        self.logical_name = logical_name
        self.connector_name = connector_name
        self.task_id = task_id
        self.run_id = run_id or uuid7()

    def headers(self) -> list[tuple[str, ConnectSchema, Any]]:
        return [
            (PREFIX + "connectorLogicalName", STRING_SCHEMA, self.logical_name),
            (PREFIX + "taskId", STRING_SCHEMA, self.task_id),
            (PREFIX + "connectorName", STRING_SCHEMA, self.connector_name()),
            (PREFIX + "runId", STRING_SCHEMA, self.run_id),
        ]
