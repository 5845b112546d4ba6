"""The ``source`` block of MySQL / MariaDB events (``io.debezium.connector.{mysql,mariadb}.Source``).

Debezium has one connector per flavour; the blocks differ only in the schema name and the
``connector`` field. ``pos`` is where the event's transaction starts in ``file`` (the position a
consumer restarts from), ``row`` the row's index inside its binlog rows event.
"""
from __future__ import annotations

from typing import Any

from cdc.core import connect
from cdc.core.source import CloudEventsMaker
from cdc.core.source_info import common_fields
from cdc.version import VERSION


def source_schema(flavor: str) -> dict[str, Any]:
    return connect.struct(
        [
            *common_fields(),
            connect.field("table", connect.OPTIONAL_STRING),
            connect.field("server_id", connect.INT64),
            connect.field("gtid", connect.OPTIONAL_STRING),
            connect.field("file", connect.STRING),
            connect.field("pos", connect.INT64),
            connect.field("row", connect.INT32),
            connect.field("thread", connect.OPTIONAL_INT64),
            connect.field("query", connect.OPTIONAL_STRING),
        ],
        optional=False,
        name=f"io.debezium.connector.{flavor}.Source",
        version=1,
    )


def source_block(
    flavor: str,
    name: str,
    db: str,
    table: str | None,
    *,
    ts_ms: int,
    server_id: int,
    file: str,
    pos: int,
    row: int = 0,
    gtid: str | None = None,
    thread: int | None = None,
    query: str | None = None,
    snapshot: str = "false",
) -> dict[str, Any]:
    """One source block; ``ts_ms`` is the binlog event's time (whole seconds) or the snapshot's."""
    return {
        "version": VERSION,
        "connector": flavor,
        "name": name,
        "ts_ms": ts_ms,
        "snapshot": snapshot,
        "db": db,
        "sequence": None,
        "ts_us": ts_ms * 1000,
        "ts_ns": ts_ms * 1_000_000,
        "table": table,
        "server_id": server_id,
        "gtid": gtid,
        "file": file,
        "pos": pos,
        "row": row,
        "thread": thread,
        "query": query,
    }


# What Debezium's CloudEventsConverter makes an event's id and data of (MySqlCloudEventsMaker,
# MariaDbCloudEventsMaker: its data holds every envelope field; cdc.core.source.MakesCloudEvents).
CLOUD_EVENTS = {"mysql": CloudEventsMaker(("name", "file", "pos")),
                "mariadb": CloudEventsMaker(("name", "file", "pos"), data_fields=None)}
