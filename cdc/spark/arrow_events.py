"""Event rows for Spark as Arrow record batches, built column by column.

Two ways in: events converted in Python, a list per column (the stream, and snapshot chunks of
tables the columnar path does not cover), and a snapshot chunk that is already an Arrow table of the row's
columns (``parallel_chunk_arrow``), to which the constant columns of a read event are added
without touching a value in Python.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from dataclasses import field as list_field
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from cdc.core.encoded_rows import Placeholder
from cdc.core.header_converters import SimpleHeaderConverter
from cdc.core.native_row import NativeRow
from cdc.core.records import ChangeEvent, EncodedRows
from cdc.core.unavailable import unavailable_fields
from cdc.spark import versions
from cdc.spark.json_columns import ColumnarUnfit, reader_for
from cdc.spark.schema import HEADERS, SOURCE_FIELDS, UNAVAILABLE, struct_type_of
from cdc.spark.versions import Now

_loads = orjson.loads
_dumps = orjson.dumps
log = logging.getLogger(__name__)
_HEADER_BYTES = SimpleHeaderConverter().to_bytes  # Kafka Connect's default: what a topic's records carry


def _json_of(row: Any) -> bytes | None:
    """A row's JSON: an encoded batch's as it is, a NativeRow's, or a dict's written now."""
    if row is None or isinstance(row, bytes):
        return row
    return row.json if isinstance(row, NativeRow) else _dumps(row)


def _value_of(row: Any) -> Any:
    """A row as the per-value converters take it: a dict (or None), parsed from its JSON if need be."""
    if row is None or isinstance(row, dict):
        return row
    return _loads(row if isinstance(row, bytes) else row.json)


def arrow_schema(schema: T.StructType) -> pa.Schema:
    return to_arrow_schema(schema, timezone="UTC")


def concatenated(batches: list[pa.RecordBatch | None], schema: pa.Schema) -> list[pa.RecordBatch]:
    """Many record batches (a transaction's each) as one (or a few, past Arrow's size limits): Spark
    takes one per partition at a lower cost than thousands of small ones."""
    present = [b for b in batches if b is not None and b.num_rows]
    if len(present) <= 1:
        return present
    return pa.Table.from_batches(present, schema=schema).combine_chunks().to_batches()


def _constant(value: Any, count: int, type_: pa.DataType) -> pa.Array:
    return pa.repeat(pa.scalar(value, type=type_), count)


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
            index = batch.schema.get_field_index(field.name)
            if index < 0:  # a column the target kept that the table no longer has (cdc.spark.supervisor)
                fields.append(pa.nulls(count, field.type))
                continue
            column = batch.column(index)
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
            pa.nulls(count, schema.field(UNAVAILABLE).type),  # a snapshot reads every value
            pa.nulls(count, schema.field(HEADERS).type),
        ]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def chunk_batches(parts: Iterator[Any], schema: pa.Schema, source: dict[str, Any], ts_ms: int, table_id: str,
                  events: EventRows) -> Iterator[pa.RecordBatch]:
    """A snapshot chunk read columnar (``parallel_chunk_arrow``: Arrow tables, and lists of read events for
    rows the columnar path cannot read) as batches of read events."""
    for part in parts:
        if isinstance(part, list):
            batch = events.batch(part, lambda: 0, schema)
            if batch is not None:
                yield batch
        else:
            yield from snapshot_batches(part, schema, source, ts_ms, table_id, in_tables=events.tables is not None)


@dataclass
class Collected:
    """Events' rows as lists, one per column of ``event_schema``, not converted yet: rows as the
    events hold them (dicts, codec rows, an encoded batch's JSON, None), each with its converter; a
    transaction's events share one source block, stored once (``source_index``)."""

    ops: list[str] = list_field(default_factory=list)
    befores: list[Any] = list_field(default_factory=list)
    afters: list[Any] = list_field(default_factory=list)
    converters: list[Callable[[dict[str, Any] | None], Any]] = list_field(default_factory=list)
    sources: list[tuple] = list_field(default_factory=list)
    source_index: list[int] = list_field(default_factory=list)
    ts: list[int | None] = list_field(default_factory=list)
    tables: list[str] = list_field(default_factory=list)
    positions: list[int] = list_field(default_factory=list)
    unavailable: list[list[str] | None] = list_field(default_factory=list)  # per row: after's missing fields
    headers: list[list[dict[str, Any]] | None] = list_field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ops)

    @classmethod
    def joined(cls, parts: list[Collected]) -> Collected:
        out = cls()
        for part in parts:
            offset = len(out.sources)
            out.source_index.extend([i + offset for i in part.source_index])
            for name in ("ops", "befores", "afters", "converters", "sources", "ts", "tables", "positions",
                         "unavailable", "headers"):
                getattr(out, name).extend(getattr(part, name))
        return out


def _headers(event: ChangeEvent) -> list[dict[str, Any]]:
    """An event's headers as Spark's Kafka source gives a record's (key, value bytes)."""
    return [{"key": name, "value": _HEADER_BYTES(schema, payload)} for name, schema, payload in event.headers or ()]


class EventRows:
    """ChangeEvents -> record batches of ``event_schema``'s columns. With a table, ``before``/``after`` are
    structs of its Spark types (one converter per table version); with several ``tables`` (name ->
    columns), a struct of one such struct per table; without either, JSON strings."""

    def __init__(self, table: str | None, columns: list[str] | None,
                 tables: dict[str, list[str]] | None = None,
                 columns_now: Now | None = None, *,
                 row_types: dict[str, T.StructType] | None = None, policy: str | None = None) -> None:
        """``columns_now(table)``: the table in the database now (its Connect row schema, or its column
        names), asked when rows of another version than Spark's schema come (cdc.spark.versions).
        ``row_types``: Spark's row type of each table (then a version whose types differ is fitted too);
        ``policy``: the reader's ``schemaChanges`` ("fail": every other version stops the query)."""
        self.table = table
        self.columns = columns
        self.tables = tables
        self._columns_now = columns_now
        self._row_types = row_types or {}
        self._policy = policy
        self._convert: Callable[[dict[str, Any] | None], Any] | None = None
        self._schema: dict[str, Any] | None = None
        self._exact = True  # the current version's columns are Spark's (else fitted: cdc.spark.versions)
        self._reader_schema: dict[str, Any] | None = None  # the table version self._reader reads
        self._reader: Callable[[list[bytes | None]], pa.Array] | None = None  # cdc.spark.json_columns
        self._per_table: dict[str, EventRows] = {}
        self._fitted: dict[bytes, Callable[[dict[str, Any] | None], Any]] = {}  # version -> its fitted converter

    def batch(self, events: list[ChangeEvent], position: Callable[[], int], schema: pa.Schema) -> pa.RecordBatch | None:
        """The events' rows of ``schema`` (``event_schema`` in Arrow); None without rows."""
        collected = self.collect(events, position)
        return self.arrow([collected], schema) if collected is not None else None

    def _reads(self, event: ChangeEvent) -> bool:
        """Whether the event is a row change of a table this query reads."""
        value = event.value
        if value is None or not event.table_id or "op" not in value or "before" not in value:
            return False  # tombstones, transaction/heartbeat/message events
        return not (self.table and event.table_id != self.table
                    or self.tables is not None and event.table_id not in self.tables)

    def collect(self, events: list[ChangeEvent], position: Callable[[], int],
                encoded: EncodedRows | None = None) -> Collected | None:
        """The events' rows (then ``encoded``'s, which come after them) as lists, one per column, before
        any value is converted; None without rows."""
        out = Collected()
        last_source: dict[str, Any] | None = None
        for event in events:
            if not self._reads(event):
                continue
            value = event.value
            assert value is not None
            out.converters.append(self._converter(event))
            source = value["source"]
            if source is not last_source:
                last_source = source
                out.sources.append(tuple([source.get(k) for k in SOURCE_FIELDS]))
            out.ops.append(value["op"])
            out.befores.append(value["before"])
            after = value["after"]
            out.afters.append(after)
            out.source_index.append(len(out.sources) - 1)
            out.ts.append(value.get("ts_ms"))
            out.tables.append(event.table_id)
            out.positions.append(position())
            missing = unavailable_fields(after)
            out.unavailable.append(list(missing) if missing else None)
            out.headers.append(_headers(event) if event.headers else None)
        if encoded is not None and self._reads(encoded.template):
            self._collect_encoded(out, encoded, position)
        return out if out.ops else None

    def _collect_encoded(self, out: Collected, encoded: EncodedRows, position: Callable[[], int]) -> None:
        """Rows the codec encoded (a snapshot's bulk, a stream's run): their JSON as it is, read by the
        column reader like a NativeRow's; the rest of each event is the template's, but for the source
        fields it holds a placeholder for (a stream's ``lsn``), which are the run's per-row parts."""
        template = encoded.template
        value = template.value
        assert value is not None and template.table_id is not None
        count = len(encoded.rows)
        source = value["source"]
        base = [source.get(k) for k in SOURCE_FIELDS]
        per_row = [(i, encoded.more[base[i].json]) for i in range(len(base)) if isinstance(base[i], Placeholder)]
        first = len(out.sources)
        if per_row:
            for n in range(count):
                row = list(base)
                for i, parts in per_row:
                    row[i] = _loads(parts[n])
                out.sources.append(tuple(row))
            out.source_index.extend(range(first, first + count))
        else:
            out.sources.append(tuple(base))
            out.source_index.extend([first] * count)
        out.converters.extend([self._converter(template)] * count)
        out.ops.extend([value["op"]] * count)
        out.befores.extend([value["before"]] * count)
        out.afters.extend(encoded.rows)
        out.ts.extend([value.get("ts_ms")] * count)
        out.tables.extend([template.table_id] * count)
        out.positions.extend([position() for _ in range(count)])
        out.unavailable.extend([None] * count)  # the codec takes no row with an unsent value
        out.headers.extend([None] * count)

    def arrow(self, parts: list[Collected], schema: pa.Schema) -> pa.RecordBatch:
        """Collected rows as one record batch, built column by column: each list becomes an Arrow
        array in C++, and the rows themselves are parsed from their JSON where they can be (_rows)."""
        all_ = parts[0] if len(parts) == 1 else Collected.joined(parts)
        source_column = pa.array(all_.sources, type=schema.field("source").type).take(
            pa.array(all_.source_index, pa.int32()))
        row_type = schema.field("after").type
        if self.tables is not None:
            befores = self._tables_rows(all_.befores, all_.converters, all_.tables, row_type)
            afters = self._tables_rows(all_.afters, all_.converters, all_.tables, row_type)
        else:
            reader = self._reader_if_one_version(all_.converters, row_type)
            befores = self._rows(all_.befores, all_.converters, row_type, reader)
            afters = self._rows(all_.afters, all_.converters, row_type, reader)
        arrays = [
            pa.array(all_.ops, type=pa.string()),
            befores,
            afters,
            source_column,
            pa.array(all_.ts, type=pa.int64()),
            pa.array(all_.tables, type=pa.string()),
            pa.array(all_.positions, type=pa.int64()),
            pa.array(all_.unavailable, type=schema.field(UNAVAILABLE).type),
            pa.array(all_.headers, type=schema.field(HEADERS).type),
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _reader_if_one_version(self, converters: list[Callable[[dict[str, Any] | None], Any]],
                               row_type: pa.DataType) -> Callable[[list[bytes | None]], pa.Array] | None:
        """The JSON column reader of this table's current version, when every row is of it (each row's
        converter is the current one): only then can the rows be parsed as columns."""
        if self._convert is None or not self._exact or any(c is not self._convert for c in converters):
            return None
        return self._json_reader(row_type)

    def _tables_rows(self, rows: list[Any], converters: list[Callable[[dict[str, Any] | None], Any]],
                     tables: list[str], row_type: pa.StructType) -> pa.Array:
        """One row column of a query over several tables: a struct with one field per table, that
        table's rows built as one table's are (columns where they can be), the others' null."""
        by_table: dict[str, list[int]] = {}
        for i, table in enumerate(tables):
            by_table.setdefault(table, []).append(i)
        count = len(rows)
        children = []
        for field in row_type:
            indices = by_table.get(field.name)
            if not indices:
                children.append(pa.nulls(count, field.type))
                continue
            one = self._per_table[field.name]
            mine = [converters[i] for i in indices]
            column = one._rows([rows[i] for i in indices], mine, field.type,
                               one._reader_if_one_version(mine, field.type))
            if len(indices) < count:  # spread to every row: null where another table's row is
                at: list[int | None] = [None] * count
                for j, i in enumerate(indices):
                    at[i] = j
                column = column.take(pa.array(at, type=pa.int32()))
            children.append(column)
        return pa.StructArray.from_arrays(children, fields=list(row_type), mask=pa.array([r is None for r in rows]))

    def _rows(self, rows: list[Any], converters: list[Callable[[dict[str, Any] | None], Any]],
              row_type: pa.DataType, reader: Callable[[list[bytes | None]], pa.Array] | None) -> pa.Array:
        """One row column: parsed from the rows' JSON in C++ by ``reader`` (``json_columns``) when there
        is one and it can, else converted value by value (``schema``)."""
        if reader is not None:
            try:
                return reader([_json_of(r) for r in rows])
            except (ColumnarUnfit, TypeError) as exc:  # TypeError: a value orjson cannot write
                log.debug("rows of %s converted value by value: %s", self.table, exc)
        return pa.array([convert_one(_value_of(r))
                         for convert_one, r in zip(converters, rows, strict=True)], type=row_type)

    def _json_reader(self, row_type: pa.DataType) -> Callable[[list[bytes | None]], pa.Array] | None:
        if self._reader_schema is not self._schema:  # a new table version
            assert self._schema is not None
            self._reader_schema = self._schema
            self._reader = reader_for(self._schema, row_type)
        return self._reader

    def _converter(self, event: ChangeEvent) -> Callable[[dict[str, Any] | None], Any]:
        if self.tables is not None:
            return self._in_tables(event)
        if not self.table:
            return lambda row: None if row is None else orjson.dumps(row).decode()
        row_schema = event.value_schema.fields[0] if event.value_schema else None
        if self._convert is None or row_schema is not self._schema:
            assert row_schema is not None and self.columns is not None
            self._schema = row_schema
            version_type, convert = struct_type_of(row_schema)
            spark_type = self._row_types.get(self.table)
            self._exact = version_type.fieldNames() == self.columns if spark_type is None \
                else versions.same(version_type, spark_type)
            if self._exact:
                self._convert = convert
            else:  # fitted once per version (the source may describe one version in many schema objects)
                key = _dumps(row_schema, option=orjson.OPT_SORT_KEYS)
                fitted = self._fitted.get(key)
                if fitted is None:
                    fitted = self._fitted[key] = versions.fitted(self.table, row_schema, self.columns, spark_type,
                                                                 self._columns_now, self._policy)
                self._convert = fitted
        return self._convert

    def _in_tables(self, event: ChangeEvent) -> Callable[[dict[str, Any] | None], Any]:
        """The converter of the event's table (its own EventRows: its version, its column reader)."""
        assert self.tables is not None and event.table_id is not None
        one = self._per_table.get(event.table_id)
        if one is None:
            one = self._per_table[event.table_id] = EventRows(
                event.table_id, self.tables[event.table_id], columns_now=self._columns_now,
                row_types=self._row_types, policy=self._policy)
        return one._converter(event)
