"""The ``source`` block of PostgreSQL events (``io.debezium.connector.postgresql.Source``)."""
from __future__ import annotations

from typing import Any

from cdc.core import connect
from cdc.core.source import CloudEventsMaker
from cdc.core.source_info import common_fields
from cdc.version import VERSION

SOURCE_SCHEMA: dict[str, Any] = connect.struct(
    [
        *common_fields(),
        connect.field("schema", connect.STRING),
        connect.field("table", connect.STRING),
        connect.field("txId", connect.OPTIONAL_INT64),
        connect.field("lsn", connect.OPTIONAL_INT64),
        connect.field("xmin", connect.OPTIONAL_INT64),
        connect.field("origin", connect.OPTIONAL_STRING),
        connect.field("origin_lsn", connect.OPTIONAL_INT64),
    ],
    optional=False,
    name="io.debezium.connector.postgresql.Source",
    version=1,
)


def sequence(last_commit_lsn: int | None, lsn: int) -> str:
    """Debezium's ``source.sequence``: ``["<last commit LSN>","<this LSN>"]`` as a string."""
    last = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
    return f'[{last},"{lsn}"]'


def source_block(
    name: str,
    db: str,
    schema: str,
    table: str,
    *,
    ts_us: int,
    snapshot: str = "false",
    tx_id: int | None = None,
    lsn: int | None = None,
    last_commit_lsn: int | None = None,
    origin: str | None = None,
) -> dict[str, Any]:
    """One source block; ``ts_us`` is the commit (or snapshot) time in microseconds."""
    return {
        "version": VERSION,
        "connector": "postgresql",
        "name": name,
        "ts_ms": ts_us // 1000,
        "snapshot": snapshot,
        "db": db,
        "sequence": None if lsn is None else sequence(last_commit_lsn, lsn),
        "ts_us": ts_us,
        "ts_ns": ts_us * 1000,
        "schema": schema,
        "table": table,
        "txId": tx_id,
        "lsn": lsn,
        "xmin": None,
        "origin": origin,
        "origin_lsn": None,
    }


# What Debezium's CloudEventsConverter makes a PostgreSQL event's id and data of (PostgresCloudEventsMaker;
# cdc.core.source.MakesCloudEvents).
CLOUD_EVENTS = {"postgresql": CloudEventsMaker(("name", "lsn", "txId", "sequence"))}
