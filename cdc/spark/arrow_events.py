"""Event rows for Spark as Arrow record batches, built column by column.

Two ways in: tuples of events converted in Python (the stream, and snapshot chunks of tables the
columnar path does not cover), and a snapshot chunk that is already an Arrow table of the row's
columns (``parallel_chunk_arrow``), to which the constant columns of a read event are added
without touching a value in Python.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from cdc.core.errors import SourceError
from cdc.core.native_row import NativeRow
from cdc.core.records import ChangeEvent
from cdc.spark.schema import SOURCE_FIELDS, struct_type_of

_loads = orjson.loads


def arrow_schema(schema: T.StructType) -> pa.Schema:
    return to_arrow_schema(schema, timezone="UTC")


def rows_batch(rows: list[tuple], schema: pa.Schema) -> pa.RecordBatch:
    """Event tuples (the columns of ``event_schema``) as one record batch: pyarrow converts each
    column in C++, where Spark's own fallback checks every value in Python."""
    columns = list(zip(*rows, strict=True))
    arrays = [pa.array(list(column), type=field.type) for column, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _constant(value: Any, count: int, type_: pa.DataType) -> pa.Array:
    return pa.array([value], type=type_).take(pa.array([0] * count, type=pa.int32())) if count else \
        pa.array([], type=type_)


def snapshot_batches(after: pa.Table, schema: pa.Schema, source: dict[str, Any], ts_ms: int,
                     table_id: str, in_tables: bool = False) -> Iterator[pa.RecordBatch]:
    """Read events (op ``r``, no ``before``) of a chunk read as Arrow columns; ``_position`` 0: the
    rows of a snapshot come before every streamed change, and a key appears once among them.
    ``in_tables``: the query reads several tables, ``after`` holds one struct per table."""
    outer_type = schema.field("after").type
    after_type = outer_type.field(table_id).type if in_tables else outer_type
    source_type = schema.field("source").type
    source_row = {name: source.get(name) for name in SOURCE_FIELDS}
    for batch in after.to_batches():
        count = batch.num_rows
        if not count:
            continue
        fields = []
        for field in after_type:
            column = batch.column(batch.schema.get_field_index(field.name))
            if isinstance(column.type, pa.ExtensionType):  # numeric: its text, in the storage array
                column = column.storage
            fields.append(column.cast(field.type))
        after_array = pa.StructArray.from_arrays(fields, fields=list(after_type))
        if in_tables:  # this table's struct, null for every other table
            after_array = pa.StructArray.from_arrays(
                [after_array if f.name == table_id else pa.nulls(count, f.type) for f in outer_type],
                fields=list(outer_type))
        arrays = [
            _constant("r", count, pa.string()),
            pa.nulls(count, outer_type),
            after_array,
            _constant(source_row, count, source_type),
            _constant(ts_ms, count, pa.int64()),
            _constant(table_id, count, pa.string()),
            _constant(0, count, pa.int64()),
        ]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


class EventRows:
    """ChangeEvents -> tuples of ``event_schema``'s columns. With a table, ``before``/``after`` are
    structs of its Spark types (one converter per table version); with several ``tables`` (name ->
    columns), a struct of one such struct per table; without either, JSON strings."""

    def __init__(self, table: str | None, columns: list[str] | None,
                 tables: dict[str, list[str]] | None = None) -> None:
        self.table = table
        self.columns = columns
        self.tables = tables
        self._convert: Callable[[dict[str, Any] | None], Any] | None = None
        self._schema: dict[str, Any] | None = None
        self._per_table: dict[str, EventRows] = {}
        self._index = {name: i for i, name in enumerate(tables or ())}

    def rows(self, events: list[ChangeEvent], position: Callable[[], int]) -> list[tuple]:
        out = []
        last_source: dict[str, Any] | None = None  # a transaction's events share one source block
        source_row: tuple = ()
        for event in events:
            value = event.value
            if value is None or not event.table_id or "op" not in value or "before" not in value:
                continue  # tombstones, transaction/heartbeat/message events
            if self.table and event.table_id != self.table or self.tables is not None and \
                    event.table_id not in self.tables:
                continue
            convert = self._converter(event)
            source = value["source"]
            if source is not last_source:
                last_source, source_row = source, tuple([source.get(k) for k in SOURCE_FIELDS])
            before, after = value["before"], value["after"]
            # A row the codec wrote (the stream's source runs with native_rows) is read from its JSON,
            # the same values as the Python path's, at a fraction of the cost of decoding it again.
            if isinstance(after, NativeRow):
                after = _loads(after.json)
            if isinstance(before, NativeRow):
                before = _loads(before.json)
            out.append((
                value["op"], convert(before), convert(after),
                source_row, value.get("ts_ms"), event.table_id, position(),
            ))
        return out

    def _converter(self, event: ChangeEvent) -> Callable[[dict[str, Any] | None], Any]:
        if self.tables is not None:
            return self._in_tables(event)
        if not self.table:
            return lambda row: None if row is None else orjson.dumps(row).decode()
        row_schema = event.value_schema.fields[0] if event.value_schema else None
        if self._convert is None or row_schema is not self._schema:
            assert row_schema is not None
            columns = [f["field"] for f in row_schema["fields"]]
            if columns != self.columns:
                # Spark fixed the schema at load(); the offset of these rows is not committed, so a
                # restarted query reads them again with the new columns (and apply_changes adds them).
                raise SourceError(
                    f"the columns of {self.table} changed from {self.columns} to {columns}",
                    fix="restart the streaming query: it resumes from its checkpoint with the new schema",
                )
            self._schema = row_schema
            _, self._convert = struct_type_of(row_schema)
        return self._convert

    def _in_tables(self, event: ChangeEvent) -> Callable[[dict[str, Any] | None], Any]:
        assert self.tables is not None and event.table_id is not None
        one = self._per_table.get(event.table_id)
        if one is None:
            one = self._per_table[event.table_id] = EventRows(event.table_id, self.tables[event.table_id])
        convert = one._converter(event)
        index, width = self._index[event.table_id], len(self._index)

        def wrap(row: dict[str, Any] | None) -> Any:
            if row is None:
                return None
            out: list[Any] = [None] * width
            out[index] = convert(row)
            return tuple(out)
        return wrap
