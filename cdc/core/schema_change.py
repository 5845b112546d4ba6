"""Schema change events: what a source emits on ``<topic.prefix>`` when a table's structure changes.

Debezium's ``SchemaChangeValue`` carries the DDL (null for SQL Server, which has none) and
``tableChanges`` as Connect structs (``ConnectTableChangeSerializer``): the same content as the
schema history's JSON, except that a table's ``comment`` sits inside ``table`` and every field
is present (unset ones as null). The key is ``{databaseName}``, so one database's changes stay
in order on one partition.
"""
from __future__ import annotations

from typing import Any

from cdc.core import connect
from cdc.core.connect import ConnectSchema
from cdc.core.records import ChangeEvent

_STRING_ARRAY = {"type": "array", "items": connect.STRING, "optional": True}

COLUMN_SCHEMA = connect.struct(
    [
        connect.field("name", connect.STRING),
        connect.field("jdbcType", connect.INT32),
        connect.field("nativeType", connect.OPTIONAL_INT32),
        connect.field("typeName", connect.STRING),
        connect.field("typeExpression", connect.OPTIONAL_STRING),
        connect.field("charsetName", connect.OPTIONAL_STRING),
        connect.field("length", connect.OPTIONAL_INT32),
        connect.field("scale", connect.OPTIONAL_INT32),
        connect.field("position", connect.INT32),
        connect.field("optional", connect.OPTIONAL_BOOLEAN),
        connect.field("autoIncremented", connect.OPTIONAL_BOOLEAN),
        connect.field("generated", connect.OPTIONAL_BOOLEAN),
        connect.field("comment", connect.OPTIONAL_STRING),
        connect.field("defaultValueExpression", connect.OPTIONAL_STRING),
        connect.field("enumValues", _STRING_ARRAY),
    ],
    optional=False,
    name="io.debezium.connector.schema.Column",
    version=1,
)

TABLE_SCHEMA = connect.struct(
    [
        connect.field("defaultCharsetName", connect.OPTIONAL_STRING),
        connect.field("primaryKeyColumnNames", _STRING_ARRAY),
        connect.field("columns", {"type": "array", "items": COLUMN_SCHEMA, "optional": False}),
        connect.field("comment", connect.OPTIONAL_STRING),
    ],
    optional=True,
    name="io.debezium.connector.schema.Table",
    version=1,
)

CHANGE_SCHEMA = connect.struct(
    [
        connect.field("type", connect.STRING),
        connect.field("id", connect.STRING),
        connect.field("table", TABLE_SCHEMA),
    ],
    optional=False,
    name="io.debezium.connector.schema.Change",
    version=1,
)

_COLUMN_KEYS = [f["field"] for f in COLUMN_SCHEMA["fields"]]


def _column_payload(column: dict[str, Any]) -> dict[str, Any]:
    payload = {key: column.get(key) for key in _COLUMN_KEYS}
    if not payload["enumValues"]:  # Debezium's serializer leaves an empty list out (null)
        payload["enumValues"] = None
    return payload


def change_payload(change: dict[str, Any]) -> dict[str, Any]:
    """A history-JSON ``tableChanges`` entry as the Connect struct of a schema change event."""
    table = change.get("table")
    return {
        "type": change["type"],
        "id": change["id"],
        "table": None if table is None else {
            "defaultCharsetName": table.get("defaultCharsetName"),
            "primaryKeyColumnNames": list(table.get("primaryKeyColumnNames") or []),
            "columns": [_column_payload(c) for c in table.get("columns", [])],
            "comment": change.get("comment"),
        },
    }


class SchemaChangeEvents:
    """Builds the schema change events of one connector (``connector``: mysql, mariadb, sqlserver)."""

    def __init__(self, topic: str, connector: str, source_schema: dict[str, Any]) -> None:
        self.topic = topic
        self.key_schema = ConnectSchema(connect.struct(
            [connect.field("databaseName", connect.STRING)], optional=False,
            name=f"io.debezium.connector.{connector}.SchemaChangeKey", version=1))
        self.value_schema = ConnectSchema(connect.struct(
            [
                connect.field("source", source_schema),
                connect.field("ts_ms", connect.INT64),
                connect.field("databaseName", connect.OPTIONAL_STRING),
                connect.field("schemaName", connect.OPTIONAL_STRING),
                connect.field("ddl", connect.OPTIONAL_STRING),
                connect.field("tableChanges", {"type": "array", "items": CHANGE_SCHEMA, "optional": False}),
            ],
            optional=False,
            name=f"io.debezium.connector.{connector}.SchemaChangeValue",
            version=1,
        ))

    def event(
        self,
        source: dict[str, Any],
        database: str,
        ddl: str | None,
        table_changes: list[dict[str, Any]],
        *,
        ts_ms: int,
        schema_name: str | None = None,
        position: tuple[int, ...] = (),
    ) -> ChangeEvent:
        value = {
            "source": source,
            "ts_ms": ts_ms,
            "databaseName": database,
            "schemaName": schema_name,
            "ddl": ddl,
            "tableChanges": [change_payload(c) for c in table_changes],
        }
        return ChangeEvent(self.topic, self.key_schema, {"databaseName": database}, self.value_schema, value,
                           position=position)
