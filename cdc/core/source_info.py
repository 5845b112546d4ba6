"""The fields every Debezium ``source`` block starts with (``AbstractSourceInfo``).

Each connector's block is these nine fields, then its own (``schema``/``table``/``lsn`` for
PostgreSQL, ``server_id``/``file``/``pos`` for MySQL, ``change_lsn`` for SQL Server).
"""
from __future__ import annotations

from typing import Any

from cdc.core import connect

SNAPSHOT_ENUM: dict[str, Any] = {
    "type": "string",
    "optional": True,
    "name": "io.debezium.data.Enum",
    "version": 1,
    "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
    "default": "false",
}


def common_fields() -> list[dict[str, Any]]:
    """version, connector, name, ts_ms, snapshot, db, sequence, ts_us, ts_ns: the schema's first fields."""
    return [
        connect.field("version", connect.STRING),
        connect.field("connector", connect.STRING),
        connect.field("name", connect.STRING),
        connect.field("ts_ms", connect.INT64),
        connect.field("snapshot", SNAPSHOT_ENUM),
        connect.field("db", connect.STRING),
        connect.field("sequence", connect.OPTIONAL_STRING),
        connect.field("ts_us", connect.OPTIONAL_INT64),
        connect.field("ts_ns", connect.OPTIONAL_INT64),
    ]
