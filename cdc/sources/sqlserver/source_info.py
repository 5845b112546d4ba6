"""The ``source`` block of SQL Server events (``io.debezium.connector.sqlserver.Source``)."""
from __future__ import annotations

from typing import Any

from cdc.core import connect
from cdc.core.source import CloudEventsMaker
from cdc.core.source_info import common_fields
from cdc.sources.sqlserver.lsn import Lsn, text_or_none
from cdc.version import VERSION

SOURCE_SCHEMA: dict[str, Any] = connect.struct(
    [
        *common_fields(),
        connect.field("schema", connect.STRING),
        connect.field("table", connect.STRING),
        connect.field("change_lsn", connect.OPTIONAL_STRING),
        connect.field("commit_lsn", connect.OPTIONAL_STRING),
        connect.field("event_serial_no", connect.OPTIONAL_INT64),
    ],
    optional=False,
    name="io.debezium.connector.sqlserver.Source",
    version=1,
)


def source_block(
    name: str,
    db: str,
    schema: str,
    table: str,
    *,
    ts_ns: int,
    snapshot: str = "false",
    commit_lsn: Lsn | None = None,
    change_lsn: Lsn | None = None,
    event_serial_no: int | None = None,
) -> dict[str, Any]:
    """One source block; ``ts_ns`` is the commit time (streaming) or the read time (snapshot)."""
    return {
        "version": VERSION,
        "connector": "sqlserver",
        "name": name,
        "ts_ms": ts_ns // 1_000_000,
        "snapshot": snapshot,
        "db": db,
        "sequence": None,
        "ts_us": ts_ns // 1000,
        "ts_ns": ts_ns,
        "schema": schema,
        "table": table,
        "change_lsn": text_or_none(change_lsn),
        "commit_lsn": text_or_none(commit_lsn),
        "event_serial_no": event_serial_no,
    }


# What Debezium's CloudEventsConverter makes a SQL Server event's id and data of (SqlServerCloudEventsMaker;
# cdc.core.source.MakesCloudEvents).
CLOUD_EVENTS = {"sqlserver": CloudEventsMaker(("name", "change_lsn", "commit_lsn", "event_serial_no"))}
