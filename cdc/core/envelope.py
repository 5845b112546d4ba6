"""Debezium's change event envelope, built once per table version and reused for every row.

``TableEnvelope`` holds the key schema, the value (envelope) schema and the topic of one table
version; its methods turn converted row images into :class:`ChangeEvent`s. Keys are dicts of
the key columns; a table without key columns has a null key, as in Debezium. A primary-key
change becomes a delete (+ tombstone) under the old key and a create under the new key, linked
by the ``__debezium.newkey`` / ``__debezium.oldkey`` headers (what a change becomes is decided
in :mod:`cdc.core.emitter`).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from cdc.core import connect
from cdc.core.columns import PLAIN, TableStage, with_parameters
from cdc.core.connect import ConnectSchema
from cdc.core.records import ChangeEvent
from cdc.core.unavailable import reshaped

# Wire names of the envelope (Debezium's data/Envelope.java).
BEFORE = "before"
AFTER = "after"
SOURCE = "source"
OP = "op"
TS_MS = "ts_ms"
TS_US = "ts_us"
TS_NS = "ts_ns"
TRANSACTION = "transaction"

OP_CREATE = "c"
OP_UPDATE = "u"
OP_DELETE = "d"
OP_READ = "r"
OP_TRUNCATE = "t"
OP_MESSAGE = "m"

NEW_KEY_HEADER = "__debezium.newkey"
OLD_KEY_HEADER = "__debezium.oldkey"

TRANSACTION_BLOCK_SCHEMA: dict[str, Any] = connect.struct(
    [
        connect.field("id", connect.STRING),
        connect.field("total_order", connect.INT64),
        connect.field("data_collection_order", connect.INT64),
    ],
    optional=True,
    name="event.block",
    version=1,
)


def now_ts() -> tuple[int, int, int]:
    """Processing time as (ms, µs, ns), from one clock reading."""
    ns = time.time_ns()
    return ns // 1_000_000, ns // 1_000, ns


class TableEnvelope:
    """Schemas and event factory for one version of one captured table."""

    __slots__ = ("topic", "table_id", "key_fields", "value_fields", "key_schema", "value_schema", "row_schema",
                 "_key_names", "_stage", "_key_field")

    def __init__(
        self,
        *,
        topic: str,
        table_id: str,
        schema_name_prefix: str,
        key_fields: Sequence[dict[str, Any]],
        value_fields: Sequence[dict[str, Any]],
        source_schema: dict[str, Any],
        stage: TableStage = PLAIN,
        key_field: tuple[str, str] | None = None,
    ) -> None:
        """``*_fields`` are Connect field schemas (with ``"field"``: the column's name), in column order;
        ``stage``: what the column options do to them (cdc.core.columns), applied here to schemas and rows;
        ``key_field``: (name, value) of a string field every key ends with (a regex topic naming strategy's
        physical table identifier, cdc.core.topics): a keyless table then has keys of that field alone."""
        self.topic = topic
        self._key_field = key_field
        self.table_id = table_id
        base = stage.schema_name(schema_name_prefix)
        self.key_fields = tuple(f["field"] for f in key_fields)  # the columns, as rows name them
        self.value_fields = tuple(f["field"] for f in value_fields)
        renames = stage.renames
        self._key_names = tuple(renames.get(k, k) for k in self.key_fields)  # as the key struct names them
        self._stage = stage if stage.changes_rows else None
        key_fields = [{**f, "field": renames[f["field"]]} if f["field"] in renames else f for f in key_fields]
        if key_field is not None:
            key_fields.append(connect.field(key_field[0], connect.STRING))
        value_fields = [_shaped(f, stage) for f in value_fields]
        self.key_schema = (
            ConnectSchema(connect.struct(list(key_fields), optional=False, name=f"{base}.Key"))
            if key_fields
            else None
        )
        self.row_schema = connect.struct(list(value_fields), optional=True, name=f"{base}.Value")
        self.value_schema = ConnectSchema(
            connect.struct(
                [
                    connect.field(BEFORE, self.row_schema),
                    connect.field(AFTER, self.row_schema),
                    connect.field(SOURCE, source_schema),
                    connect.field(TRANSACTION, TRANSACTION_BLOCK_SCHEMA),
                    connect.field(OP, connect.STRING),
                    connect.field(TS_MS, connect.OPTIONAL_INT64),
                    connect.field(TS_US, connect.OPTIONAL_INT64),
                    connect.field(TS_NS, connect.OPTIONAL_INT64),
                ],
                optional=False,
                name=f"{base}.Envelope",
                version=2,
            )
        )

    def key_of(self, row: dict[str, Any] | None) -> dict[str, Any] | None:
        """The key of a row as the source converted it (the column options never change keys)."""
        if self.key_schema is None or row is None:
            return None
        key = {name: row.get(column) for name, column in zip(self._key_names, self.key_fields, strict=True)}
        return self._identified(key)

    def _identified(self, key: dict[str, Any]) -> dict[str, Any]:
        """The key with the physical table identifier, where the topic naming adds one."""
        if self._key_field is None:
            return key
        name, value = self._key_field
        return key if key.get(name) == value else {**key, name: value}

    def key_known(self, key: dict[str, Any]) -> bool:
        """Whether a key has any value of its columns (the table identifier aside): an old key the log did not give
        is all nulls."""
        identifier = self._key_field[0] if self._key_field is not None else None
        return any(v is not None for name, v in key.items() if name != identifier)

    def unchanged(self, before: dict[str, Any], after: dict[str, Any]) -> bool:
        """Whether an update changed none of the columns events hold (skip.messages.without.change)."""
        return all(before.get(column) == after.get(column) for column in self.value_fields)

    @property
    def field_names(self) -> dict[str, str]:
        """Each value column's field name in events (field.name.adjustment.mode)."""
        renames = self._stage.renames if self._stage is not None else {}
        return {c: renames.get(c, c) for c in self.value_fields}

    def shaped(self, row: dict[str, Any]) -> dict[str, Any]:
        """A converted row as events carry it (the column options applied)."""
        return self._shape(row) or {}

    def shaped_value(self, column: str, value: Any) -> Any:
        """One converted value of ``column`` as events carry it (its mask, hash or truncation applied)."""
        mapper = self._stage.values.get(column) if self._stage is not None else None
        return mapper(value) if mapper is not None else value

    def _shape(self, row: dict[str, Any] | None) -> dict[str, Any] | None:
        """A row as events carry it under the column options: mapped values, adjusted names."""
        stage = self._stage
        if stage is None or row is None:
            return row
        values, renames, hidden = stage.values, stage.renames, stage.hidden
        shaped = {renames.get(k, k): values[k](v) if k in values else v for k, v in row.items() if k not in hidden}
        return reshaped(row, shaped, renames)  # a PartialRow's marks follow its fields

    def event(
        self,
        op: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        source: dict[str, Any],
        transaction: dict[str, Any] | None = None,
        *,
        key: dict[str, Any] | None = None,
        headers: list[tuple[str, ConnectSchema | None, Any]] | None = None,
        position: tuple[int, ...] = (),
        ts: tuple[int, int, int] | None = None,
    ) -> ChangeEvent:
        ms, us, ns = ts or now_ts()
        if key is None:
            key = self.key_of(after if after is not None else before)
        elif self._key_field is not None and isinstance(key, dict):  # a key the source had (a codec's row)
            key = self._identified(key)
        if self._stage is not None:
            before, after = self._shape(before), self._shape(after)
        value = {
            BEFORE: before,
            AFTER: after,
            SOURCE: source,
            TRANSACTION: transaction,
            OP: op,
            TS_MS: ms,
            TS_US: us,
            TS_NS: ns,
        }
        return ChangeEvent(
            self.topic, self.key_schema, key, self.value_schema, value, headers, position, self.table_id
        )

    def tombstone(self, key: dict[str, Any] | None, position: tuple[int, ...] = (),
                  headers: list[tuple[str, ConnectSchema | None, Any]] | None = None) -> ChangeEvent:
        return ChangeEvent(self.topic, self.key_schema, key, None, None, headers, position, self.table_id)

    def truncate(self, source: dict[str, Any], transaction: dict[str, Any] | None,
                 position: tuple[int, ...] = ()) -> ChangeEvent:
        event = self.event(OP_TRUNCATE, None, None, source, transaction, position=position)
        event.key_schema = None
        event.key = None
        return event


def _shaped(field: dict[str, Any], stage: TableStage) -> dict[str, Any]:
    """A value field's schema under the column options: its parameters added, its name adjusted."""
    column = field["field"]
    shaped = with_parameters(field, stage.parameters.get(column, {}))
    if column in stage.renames:
        shaped = {**shaped, "field": stage.renames[column]}
    return shaped
