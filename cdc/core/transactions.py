"""Transaction metadata: BEGIN/END events and the ``transaction`` block of every event.

Enabled by ``provide.transaction.metadata``. The source calls :meth:`begin` when a
transaction starts, :meth:`block` for each data event (which numbers it: ``total_order`` over
the transaction, ``data_collection_order`` per table) and :meth:`end` at commit, which returns
the END event with ``event_count`` and per-table ``data_collections``.
"""
from __future__ import annotations

from typing import Any

from cdc.core import connect
from cdc.core.connect import ConnectSchema
from cdc.core.records import ChangeEvent

KEY_SCHEMA = ConnectSchema(
    connect.struct(
        [connect.field("id", connect.STRING)],
        optional=False,
        name="io.debezium.connector.common.TransactionMetadataKey",
        version=1,
    )
)

VALUE_SCHEMA = ConnectSchema(
    connect.struct(
        [
            connect.field("status", connect.STRING),
            connect.field("id", connect.STRING),
            connect.field("event_count", connect.OPTIONAL_INT64),
            connect.field(
                "data_collections",
                {
                    "type": "array",
                    "items": connect.struct(
                        [
                            connect.field("data_collection", connect.STRING),
                            connect.field("event_count", connect.INT64),
                        ],
                        optional=True,
                        name="event.collection",
                        version=1,
                    ),
                    "optional": True,
                },
            ),
            connect.field("ts_ms", connect.INT64),
        ],
        optional=False,
        name="io.debezium.connector.common.TransactionMetadataValue",
        version=1,
    )
)


def java_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The iteration order of a java.util.HashMap holding ``keys`` (inserted in this order):
    Debezium lists an END event's data_collections from one."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(keys, key=bucket)  # stable: a bucket keeps insertion order


class TransactionTracker:
    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.id: str | None = None
        self.total = 0
        self.per_table: dict[str, int] = {}

    @property
    def active(self) -> bool:
        return self.id is not None

    def begin(self, tx_id: str, ts_ms: int) -> ChangeEvent:
        self.id = tx_id
        self.total = 0
        self.per_table = {}
        value = {"status": "BEGIN", "id": tx_id, "event_count": None, "data_collections": None, "ts_ms": ts_ms}
        return ChangeEvent(self.topic, KEY_SCHEMA, {"id": tx_id}, VALUE_SCHEMA, value, context_headers=False)

    def block(self, data_collection: str) -> dict[str, Any]:
        self.total += 1
        order = self.per_table.get(data_collection, 0) + 1
        self.per_table[data_collection] = order
        return {"id": self.id, "total_order": self.total, "data_collection_order": order}

    def end(self, ts_ms: int) -> ChangeEvent:
        tx_id = self.id or ""
        value = {
            "status": "END",
            "id": tx_id,
            "event_count": self.total,
            "data_collections": [
                {"data_collection": name, "event_count": self.per_table[name]}
                for name in java_hashmap_order(list(self.per_table))
            ],
            "ts_ms": ts_ms,
        }
        self.id = None
        return ChangeEvent(self.topic, KEY_SCHEMA, {"id": tx_id}, VALUE_SCHEMA, value, context_headers=False)
