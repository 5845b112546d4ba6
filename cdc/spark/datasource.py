"""``spark.readStream.format("cdc")``: a PySpark Python Data Source over any source plugin.

    initialOffset()          {"initial": true, "seq": 0}: start per snapshot.mode
    read(start)              keep one source stream open on the driver; hand over its events up
                             to the point where it has caught up with the log, with the offset
                             after them (+ "seq", the running _position)
    readBetweenOffsets(s, e) replay after a restart: a new stream from s, up to e
    commit(end)              source.acknowledge(end): PostgreSQL may release WAL before it

Spark's checkpoint holds the offsets, so a query stopped (or killed) and started again resumes
from its checkpoint; the source's log is only released on ``commit``, so what the checkpoint
needs is still there. Options: ``source`` (a registered source plugin), ``table`` (one
captured table: ``before``/``after`` get its real Spark types; without it they are JSON
strings and every captured table is read), ``maxRowsPerBatch``, and the source's own options
under their Debezium names. Unknown sources and bad options fail at ``load()``.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader

from cdc import registry
from cdc.config import CORE_OPTIONS, Config
from cdc.core.errors import ConfigError, SourceError
from cdc.core.records import ChangeEvent
from cdc.spark.schema import SOURCE_FIELDS, event_schema, struct_type_of

log = logging.getLogger(__name__)

READER_OPTIONS = ("source", "table", "maxrowsperbatch", "path")


def _source_properties(options: Mapping[str, str]) -> dict[str, str]:
    props = {k: v for k, v in options.items() if k.lower() not in READER_OPTIONS}
    props.setdefault("topic.prefix", "cdc")
    props.setdefault("tombstones.on.delete", "false")
    if options.get("table"):
        props.setdefault("table.include.list", options["table"].replace(".", r"\."))
    return props


def _build_source(options: Mapping[str, str]) -> Any:
    name = options.get("source")
    if not name:
        raise ConfigError("the cdc data source needs .option('source', NAME)",
                          fix=f"one of: {', '.join(sorted(registry.available(registry.SOURCES)))}")
    source_cls = registry.load(registry.SOURCES, name)
    _check_replayable(source_cls, name)
    config = Config(_source_properties(options)).declare(CORE_OPTIONS).declare(getattr(source_cls, "options", ()))
    config.validate(("spark.",))
    return source_cls(config)


class CdcDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "cdc"

    def schema(self) -> T.StructType:
        # Runs at load(): an unknown source, a bad option or a missing table fails here, on the
        # driver, not later inside an executor.
        source = _build_source(self.options)
        try:
            table = self.options.get("table")
            if table:
                row_type, _ = struct_type_of(source.table_schema(table))
                return event_schema(row_type)
            return event_schema(T.StringType())
        finally:
            source.close()

    def simpleStreamReader(self, schema: T.StructType) -> CdcStreamReader:
        return CdcStreamReader(dict(self.options), schema)


def _source_offset(offset: dict[str, Any]) -> dict[str, Any] | None:
    if offset.get("initial"):
        return None
    return {k: v for k, v in offset.items() if k != "seq"}


def _snapshot_batch(events: list[ChangeEvent]) -> bool:
    return bool(events) and all(e.value is not None and e.value.get("op") == "r" for e in events)


# How a source's offsets are compared: the source class declares ``POSITION_KEYS`` (the offset
# fields that locate it) and ``committed_key(offset)`` (the sort key of an offset between two
# transactions, None inside one; events whose ``position`` sorts before it belong before it).


def _check_replayable(source_cls: Any, name: str) -> None:
    # the class, not an instance, declares it: cdc.core.source.Replayable
    keys, key_of = getattr(source_cls, "POSITION_KEYS", None), getattr(source_cls, "committed_key", None)
    if not (isinstance(keys, tuple) and callable(key_of)):
        raise ConfigError(f"the {name} source cannot feed Spark: its offsets do not say how micro-batches are "
                          "replayed (POSITION_KEYS, committed_key)",
                          fix="use it through the file or Kafka sink, and read_kafka_topic in Spark")


def _position_keys(source_cls: Any) -> tuple[str, ...]:
    return (*source_cls.POSITION_KEYS, "seq")


def _committed_key(source_cls: Any, offset: dict[str, Any]) -> tuple[int, ...] | None:
    return source_cls.committed_key(offset)


class CdcStreamReader(SimpleDataSourceStreamReader):
    def __init__(self, options: dict[str, str], schema: T.StructType) -> None:
        self.options = options
        self.schema = schema
        self.max_rows = int(options.get("maxRowsPerBatch",
                                        options.get("maxrowsperbatch",
                                                    "100000")))  # rows per micro-batch, also during a snapshot
        self.table = options.get("table")
        self._source_cls = registry.load(registry.SOURCES, options["source"])
        self._source: Any = None
        self._stream: Iterator[Any] | None = None
        self._at: dict[str, Any] | None = None
        self._seq = 0
        self._row_converter: Callable[[dict[str, Any] | None], Any] | None = None
        self._columns: list[str] | None = None
        self._schema_json: dict[str, Any] | None = None
        if self.table:
            after = schema["after"].dataType
            assert isinstance(after, T.StructType)
            self._columns = after.fieldNames()

    # ---- offsets ------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        return {"initial": True, "seq": 0}

    def read(self, start: dict[str, Any]) -> tuple[Iterator[tuple], dict[str, Any]]:
        keys = _position_keys(self._source_cls)
        if self._stream is None or self._at is None or any(start.get(k) != self._at.get(k) for k in keys):
            if start.get("in_snapshot"):
                raise SourceError(
                    "the query stopped during its initial snapshot, which cannot resume",
                    fix="delete the checkpoint folder and the target table, then start the query again",
                )
            self._open(start)
        assert self._stream is not None
        rows: list[tuple] = []
        end: dict[str, Any] | None = None
        for batch in self._stream:
            rows.extend(self._rows(batch.events))
            # Micro-batches end between transactions only, so a replay can find the same end.
            if batch.offset is not None and _committed_key(self._source_cls, batch.offset) is not None:
                end = {**batch.offset, "seq": self._seq}
                if batch.caught_up or len(rows) >= self.max_rows:
                    break
            elif batch.offset is None and len(rows) >= self.max_rows and _snapshot_batch(batch.events):
                # A large initial snapshot is handed over in pieces to bound memory; such an
                # offset is good for this stream only (see the check above).
                end = {"in_snapshot": True, "seq": self._seq}
                break
        if end is None:  # the source ended (initial_only): nothing more will come
            end = dict(start)
            self._stream = None
        self._at = end
        return self._batches(rows), end

    def readBetweenOffsets(self, start: dict[str, Any], end: dict[str, Any]) -> Iterator[tuple]:
        """Replay a planned micro-batch after a restart: the source's log still holds it,
        because ``commit`` (which releases it) was not reached for it."""
        if start.get("initial") or start.get("in_snapshot") or end.get("in_snapshot"):
            raise SourceError("a micro-batch of the initial snapshot cannot be replayed",
                              fix="delete the checkpoint folder to take a new snapshot")
        self._close()
        self._open(start)
        assert self._stream is not None
        end_key = _committed_key(self._source_cls, end)
        assert end_key is not None, end
        size = len(end_key)
        rows: list[tuple] = []
        for batch in self._stream:
            # Transactions that committed before the end offset sort before it.
            rows.extend(self._rows([e for e in batch.events if e.position and e.position[:size] < end_key]))
            key = _committed_key(self._source_cls, batch.offset) if batch.offset is not None else None
            if key is not None and key >= end_key:
                break
        if self._seq != end.get("seq", self._seq):
            raise SourceError(f"replaying offsets {start} to {end} gave {self._seq - start.get('seq', 0)} rows, "
                              f"not {end.get('seq', 0) - start.get('seq', 0)}",
                              fix="the source log changed under the checkpoint; delete the checkpoint to start over")
        self._close()  # the next read() opens a stream at the end offset
        self._at = end
        return self._batches(rows)

    def _batches(self, rows: list[tuple]) -> Iterator[Any]:
        """The rows as one Arrow record batch: pyarrow converts them in C++, where Spark's
        fallback for tuples checks every value in Python (several times slower)."""
        if not rows:
            return iter(())
        try:
            import pyarrow as pa
            from pyspark.sql.pandas.types import to_arrow_schema

            schema = to_arrow_schema(self.schema, timezone="UTC")
            columns = list(zip(*rows, strict=True))
            arrays = [pa.array(list(column), type=field.type) for column, field in zip(columns, schema, strict=True)]
            return iter([pa.RecordBatch.from_arrays(arrays, schema=schema)])
        except ImportError:
            return iter(rows)

    def commit(self, end: dict[str, Any]) -> None:
        offset = _source_offset(end)
        if self._source is not None and offset is not None:
            self._source.acknowledge(offset)

    # ---- internals ----------------------------------------------------------------------------

    def _open(self, start: dict[str, Any]) -> None:
        self._close()
        self._source = _build_source(self.options)
        self._seq = int(start.get("seq", 0))
        self._stream = iter(self._source.stream(_source_offset(start)))
        self._at = start

    def _close(self) -> None:
        if self._source is not None:
            try:
                self._source.stop()
                self._source.close()
            except Exception as exc:  # noqa: BLE001 - closing a broken stream
                log.debug("closing the source: %s", exc)
        self._source = None
        self._stream = None

    def _rows(self, events: list[ChangeEvent]) -> list[tuple]:
        out = []
        for event in events:
            value = event.value
            if value is None or not event.table_id or "op" not in value or "before" not in value:
                continue  # tombstones, transaction/heartbeat/message events
            if self.table and event.table_id != self.table:
                continue
            convert = self._converter(event)
            source = value["source"]
            self._seq += 1
            out.append((
                value["op"], convert(value["before"]), convert(value["after"]),
                tuple(source.get(k) for k in SOURCE_FIELDS), value.get("ts_ms"), event.table_id, self._seq,
            ))
        return out

    def _converter(self, event: ChangeEvent) -> Callable[[dict[str, Any] | None], Any]:
        if not self.table:
            return lambda row: None if row is None else orjson.dumps(row).decode()
        row_schema = event.value_schema.fields[0] if event.value_schema else None
        if self._row_converter is None or row_schema is not self._schema_json:
            assert row_schema is not None
            columns = [f["field"] for f in row_schema["fields"]]
            if columns != self._columns:
                # Spark fixed the schema at load(); the offset of these rows is not committed, so a
                # restarted query reads them again with the new columns (and apply_changes adds them).
                raise SourceError(
                    f"the columns of {self.table} changed from {self._columns} to {columns}",
                    fix="restart the streaming query: it resumes from its checkpoint with the new schema",
                )
            self._schema_json = row_schema
            _, self._row_converter = struct_type_of(row_schema)
        return self._row_converter


def register(spark: Any) -> None:
    """Make ``spark.readStream.format("cdc")`` available in this session."""
    spark.dataSource.register(CdcDataSource)
