"""``spark.readStream.format("cdc")``: a PySpark Python Data Source over any source plugin.

    initialOffset()          {"initial": true, "seq": 0}
    latestOffset(start)      initial, and the source can cut its snapshot into chunks
                             (plan_parallel_snapshot): the plan -- where the stream will start, the
                             exported snapshot, every table's key chunks -- is the next offset;
                             otherwise read the source's stream on the driver up to where it has
                             caught up with the log; the offset after it (+ "seq", the running _position)
    partitions(start, end)   the plan's chunks, one per task: executors read them in parallel, each
                             with its own connection, as Arrow columns where the source offers them;
                             else what latestOffset read (or, after a restart, the same read again)
    commit(end)              the plan: release the exported snapshot; else source.acknowledge(end):
                             PostgreSQL may release WAL before it

Spark's checkpoint holds the offsets, so a query stopped (or killed) and started again resumes
from its checkpoint; the source's log is only released on ``commit``, so what the checkpoint
needs is still there. Incremental snapshots (signals) run in the driver's stream; each offset
names the run that read it (``chunk_run``), micro-batches never end inside a chunk's window, and a
replayed micro-batch reads the same chunks again (cdc.core.incremental, "Replay").

Options: ``source`` (a registered source plugin); ``table`` (one captured table, named as its
events' table id: ``schema.table`` for PostgreSQL, ``database.table`` for MySQL,
``database.schema.table`` for SQL Server; ``before``/``after`` get its real Spark types), or
``tables`` (several: a struct per table), or neither (JSON strings, every captured table);
``maxRowsPerBatch`` (300,000); ``minRowsPerBatch`` (0) with ``maxTriggerDelay`` (15m: how
long rows held back wait at most), as Spark's Kafka source's options; ``snapshotChunkRows``
(rows per snapshot chunk, 100,000); ``parallelSnapshot`` (true); and the source's own options
under their Debezium names, ``post.processors`` included (applied on the driver, to the streamed
events, before ``transforms``). Unknown sources and bad options fail at ``load()``.

Besides the envelope, each row says which values of ``after`` the source did not send
(``_unavailable``: PostgreSQL's unchanged TOASTed values, which ``apply_changes`` takes from the
target) and carries the event's ``headers`` (a key change's ``__debezium.oldkey``/``newkey``).
"""
from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from cdc import registry
from cdc.config import CORE_OPTIONS, Config
from cdc.core import post_processors
from cdc.core.errors import ConfigError, SourceError
from cdc.core.native_row import native_rows_wanted
from cdc.core.option_surface import Surface
from cdc.core.records import Batch, ChangeEvent, EncodedRows
from cdc.core.signals import new_id
from cdc.core.source import (
    ChecksReplay,
    DescribesTables,
    EncodedBatches,
    NativeRows,
    Replayable,
    SnapshotsIncrementally,
    SnapshotsInParallel,
    declared_options,
    offers,
)
from cdc.spark import options as reader
from cdc.spark.arrow_events import EventRows, arrow_schema, chunk_batches, concatenated
from cdc.spark.prefetch import Prefetcher
from cdc.spark.schema import event_schema, struct_type_of

log = logging.getLogger(__name__)



TRANSFORM_PREFIXES = ("transforms", "predicates")  # Kafka Connect's chain: applied by the reader, not the source


def _source_properties(options: Mapping[str, str]) -> dict[str, str]:
    props = {k: v for k, v in options.items()
             if k.lower() not in reader.READER_NAMES and not k.startswith(TRANSFORM_PREFIXES)}
    props.setdefault("topic.prefix", "cdc")
    props.setdefault("tombstones.on.delete", "false")
    if options.get("table"):
        props.setdefault("table.include.list", options["table"].replace(".", r"\."))
    elif options.get("tables"):  # Debezium's include list: regular expressions, each matching whole names
        props.setdefault("table.include.list", options["tables"])
    return props


def _transforms(options: Mapping[str, str]) -> Any:
    """The query's transform chain (``.option("transforms", ...)``, Kafka Connect's names), or None.
    Only transforms that keep Debezium's envelope fit ``format("cdc")``'s columns (Filter with its
    predicates, ReadToInsertEvent, routers); one that replaces it stops the query at its first event."""
    props = {k: v for k, v in options.items() if k.startswith(TRANSFORM_PREFIXES)}
    if not props.get("transforms"):
        return None
    from cdc.transforms import TransformChain

    return TransformChain.from_properties(props)


def transformed(chain: Any, events: list[ChangeEvent]) -> list[ChangeEvent]:
    if chain is None:
        return events
    out = chain.apply_all(events)
    for event in out:
        value = event.value
        if value is not None and event.table_id and not (isinstance(value, dict) and "op" in value
                                                         and "after" in value and "source" in value):
            raise ConfigError(
                f"a transform turned the change events of {event.table_id} into records without Debezium's "
                "envelope (op, before, after, source), which format('cdc') reads",
                fix="keep only transforms that keep the envelope here (Filter, ReadToInsertEvent, routers), and "
                    "apply the others in Spark, or read their output topic with read_kafka_topic(envelope='unwrapped')")
    return out


def _build_source(options: Mapping[str, str]) -> Any:
    return _build(options)[0]


def _build(options: Mapping[str, str]) -> tuple[Any, Config]:
    """The source of a query's options, and its config."""
    name = options.get("source")
    if not name:
        raise ConfigError("the cdc data source needs .option('source', NAME)",
                          fix=f"one of: {', '.join(sorted(registry.available(registry.SOURCES)))}")
    source_cls = registry.load(registry.SOURCES, name)
    _check_replayable(source_cls, name)
    config = Config(_source_properties(options)).declare(CORE_OPTIONS).declare(declared_options(source_cls))
    own = post_processors.prefixes(config.properties)  # each post processor's options (reselector.type ...)
    config.validate(("spark.", *own), Surface.of(source_cls, config.properties))
    if offers(source_cls, ChecksReplay):  # a source's own limits under Spark
        source_cls.check_replayable(config)
    return source_cls(config), config


def _described(source: Any) -> DescribesTables:
    """A source that describes its tables (cdc.core.source.DescribesTables): Spark's typed columns need it."""
    if not isinstance(source, DescribesTables):
        raise ConfigError(f"the {type(source).__name__} source does not describe its tables, so its rows have no "
                          "Spark types", fix="leave out the table/tables options: rows are read as JSON strings")
    return source


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
                row_type, _ = struct_type_of(_described(source).table_schema(table))
                return event_schema(row_type)
            if self.options.get("tables"):
                return event_schema(_tables_type(source, self.options["tables"]))
            return event_schema(T.StringType())
        finally:
            source.close()

    def streamReader(self, schema: T.StructType) -> CdcStreamReader:
        return CdcStreamReader(dict(self.options), schema)


def _tables_type(source: Any, include: str) -> T.StructType:
    """``before``/``after`` of a query over several tables: a struct with one field per table, named
    by the table, holding that table's row (null for the other tables' events)."""
    described = _described(source)
    names = described.captured_tables()
    if not names:
        raise ConfigError(f"no table matches tables={include!r}",
                          fix="give Debezium's table.include.list form: schema.table names or regular expressions "
                              "matching whole names, comma-separated (public.orders,public.order_.*)")
    return T.StructType([T.StructField(name, struct_type_of(described.table_schema(name))[0], True)
                         for name in names])


def _source_offset(offset: dict[str, Any]) -> dict[str, Any] | None:
    """The source's offset in one of ours (None: start per snapshot.mode)."""
    if offset.get("initial"):
        return None
    if "plan" in offset:  # the snapshot was read in chunks: the stream starts where it was taken
        return dict(offset["plan"]["stream_from"])
    return {k: v for k, v in offset.items() if k not in READER_OFFSET_KEYS}


READER_OFFSET_KEYS = ("seq", "chunk_run")  # ours, not the source's


def _snapshot_batch(batch: Batch) -> bool:
    """Rows of an initial snapshot read on the driver (not an incremental snapshot's chunk: those
    come between transactions, where a micro-batch may end and be replayed)."""
    events = batch.events + ([batch.encoded.template] if batch.encoded is not None else [])
    return bool(events) and all(e.value is not None and e.value.get("op") == "r"
                                and (e.value.get("source") or {}).get("snapshot") != "incremental" for e in events)


# How a source's offsets are compared: the source class declares ``POSITION_KEYS`` (the offset
# fields that locate it) and ``committed_key(offset)`` (the sort key of an offset between two
# transactions, None inside one; events whose ``position`` sorts before it belong before it).


def _check_replayable(source_cls: Any, name: str) -> None:
    # the class, not an instance, declares it: cdc.core.source.Replayable
    if not offers(source_cls, Replayable):
        raise ConfigError(f"the {name} source cannot feed Spark: its offsets do not say how micro-batches are "
                          "replayed (POSITION_KEYS, committed_key)",
                          fix="use it through the file or Kafka sink, and read_kafka_topic in Spark")


def _position_keys(source_cls: Any) -> tuple[str, ...]:
    return (*source_cls.POSITION_KEYS, "seq")


def _committed_key(source_cls: Any, offset: dict[str, Any]) -> tuple[int, ...] | None:
    return source_cls.committed_key(offset)


@dataclass(frozen=True)
class ChunkPartition(InputPartition):
    """One key-range chunk of the initial snapshot, read by an executor with its own connection."""

    options: dict[str, str]
    plan: dict[str, Any]  # the plan without its chunk list
    chunk: dict[str, Any]


@dataclass(frozen=True)
class RowsPartition(InputPartition):
    """Events the driver read from the log, already in Arrow."""

    batches: list[Any]  # pyarrow.RecordBatch


class CdcStreamReader(DataSourceStreamReader):
    """Offsets: ``{"initial": true}``; ``{"plan": ...}`` after a snapshot read in parallel chunks (the
    plan holds its chunks and where the stream starts); then the source's own offsets; each with
    ``seq``, the running ``_position`` of the rows handed out."""

    def __init__(self, options: dict[str, str], schema: T.StructType) -> None:
        self.options = options
        self.schema = schema
        # Rows per micro-batch, when the log holds more: a Delta MERGE costs 3-6 s here however few
        # rows it applies, so a backlog is best applied in large batches; the driver buffers at most
        # two of them, as Arrow (about 150 bytes a row of six columns).
        self.max_rows: int = reader.reader_option(options, reader.MAX_ROWS_PER_BATCH)
        # As Spark's Kafka source (minOffsetsPerTrigger, maxTriggerDelay): a trigger with fewer rows
        # waits for more, up to maxTriggerDelay -- counted from the first trigger that held rows back
        # (Kafka's counts from the last micro-batch, which after a quiet spell lets the first rows of
        # a burst through alone). A burst then starts with a large micro-batch, not a MERGE spent on
        # its first rows.
        self.min_rows: int = reader.reader_option(options, reader.MIN_ROWS_PER_BATCH)
        self.max_trigger_delay_s = _seconds(reader.reader_option(options, reader.MAX_TRIGGER_DELAY), "maxTriggerDelay")
        if not 0 <= self.min_rows <= self.max_rows:
            raise ConfigError(f"minRowsPerBatch={self.min_rows} must lie between 0 and maxRowsPerBatch={self.max_rows}",
                              fix="lower minRowsPerBatch, or raise maxRowsPerBatch")
        self._held_since: float | None = None  # when rows were first held back for minRowsPerBatch
        self.chunk_rows: int = reader.reader_option(options, reader.SNAPSHOT_CHUNK_ROWS)
        self.table = options.get("table")
        self._source_cls = registry.load(registry.SOURCES, options["source"])
        self.parallel = reader.reader_option(options, reader.PARALLEL_SNAPSHOT) and \
            offers(self._source_cls, SnapshotsInParallel)
        self._source: Any = None  # the driver's source, streaming
        self._planner: Any = None  # the driver's source that holds an exported snapshot
        self._planned: dict[str, Any] | None = None  # its plan, until the micro-batch reading it commits
        self._stream: Iterator[Any] | None = None
        self._prefetch: Prefetcher | None = None  # reads self._stream in a thread (cdc.spark.prefetch)
        self._at: dict[str, Any] | None = None
        self._seq = 0
        self._run = ""  # the open stream's incremental-snapshot run (cdc.core.incremental, "Replay")
        self._pending: dict[str, RowsPartition | None] = {}  # end offset -> what latestOffset read
        columns = None
        tables: dict[str, list[str]] | None = None
        row_types: dict[str, T.StructType] = {}
        after = schema["after"].dataType
        if self.table:
            assert isinstance(after, T.StructType)
            columns = after.fieldNames()
            row_types[self.table] = after
        elif options.get("tables"):
            assert isinstance(after, T.StructType)
            row_types = {f.name: f.dataType for f in after.fields}  # type: ignore[misc]
            tables = {name: t.fieldNames() for name, t in row_types.items()}
        self.typed = bool(self.table or tables)  # rows as Spark types (else JSON strings)
        policy = options.get(reader.SCHEMA_CHANGES, options.get(reader.SCHEMA_CHANGES.lower()))
        self._events = EventRows(self.table, columns, tables, columns_now=self._table_now, row_types=row_types,
                                 policy=policy)
        self._chain = _transforms(options)
        self._processors: list[post_processors.PostProcessor] = []  # post.processors, over the driver's stream
        self._arrow_schema = arrow_schema(schema)

    def _table_now(self, table: str) -> dict[str, Any]:
        """A table's Connect row schema in the database now (rows of another version than Spark's schema
        came: cdc.spark.versions)."""
        source = _build_source(self.options)
        try:
            return _described(source).table_schema(table)
        finally:
            source.close()

    # ---- offsets (driver) ---------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        starting = reader.reader_option(self.options, reader.STARTING_OFFSET)
        if starting:  # the snapshot was read otherwise (cdc.spark.jdbc_snapshot): the stream starts after it
            try:
                offset = json.loads(starting)
            except ValueError:
                offset = None
            if not isinstance(offset, dict):
                raise ConfigError(f"startingOffset={starting!r} is not a source offset in JSON",
                                  fix="leave it to cdc.spark.jdbc_snapshot.snapshot_into, which sets it")
            return {**offset, "seq": 0}
        return {"initial": True, "seq": 0}

    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:
        if start.get("initial") and self.parallel:
            plan = self._plan()
            if plan is not None:
                return {"plan": plan, "seq": 0}
            self.parallel = False  # snapshot.mode takes no snapshot: stream as the source decides
        batches, end = self._read(start)
        self._pending[json.dumps(end, sort_keys=True)] = self._partition(batches)
        return end

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        if "plan" in end and "plan" not in start:
            plan = {k: v for k, v in end["plan"].items() if k != "chunks"}
            return [ChunkPartition(self.options, plan, chunk) for chunk in end["plan"]["chunks"]]
        key = json.dumps(end, sort_keys=True)
        if key in self._pending:
            partition = self._pending.pop(key)
        else:  # a micro-batch planned before a restart: read it again from the log
            partition = self._partition(self._replay(start, end))
        return [partition] if partition is not None else []

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """On an executor: a snapshot chunk (columnar when the source can), or rows the driver read."""
        if isinstance(partition, RowsPartition):
            yield from partition.batches
            return
        assert isinstance(partition, ChunkPartition)
        yield from read_chunk(partition, self._arrow_schema, self.typed, self._events)

    def commit(self, end: dict[str, Any]) -> None:
        if "plan" in end and self._planner is not None:  # every chunk is read: the snapshot may go
            planner = self._planner
            assert isinstance(planner, SnapshotsInParallel)
            planner.release_parallel_snapshot()
            self._planner.close()
            self._planner = None
            self._planned = None
        offset = _source_offset(end)
        if self._source is not None and offset is not None:
            self._source.acknowledge(offset)

    def stop(self) -> None:
        self._close()
        if self._planner is not None:
            self._planner.close()
            self._planner = None
            self._planned = None

    # ---- the driver's reads -------------------------------------------------------------------

    def _plan(self) -> dict[str, Any] | None:
        if self._planner is not None and self._planned is not None:
            # Spark asks again before the first micro-batch ran (a trigger that found too few rows, say): the
            # same plan, whose slot and exported snapshot this reader holds. Planning anew would find that
            # slot without a stored offset and refuse it as another consumer's.
            return self._planned
        self._planner = _build_source(self.options)
        planner = self._planner
        assert isinstance(planner, SnapshotsInParallel)  # self.parallel: its class offers it
        self._planned = planner.plan_parallel_snapshot(self.chunk_rows)
        return self._planned

    def _read(self, start: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """What the reading thread has buffered since ``start`` (a stream is opened there when none
        is open at it): record batches up to a point between transactions, and the offset after them."""
        keys = _position_keys(self._source_cls)
        if self._prefetch is None or self._at is None or any(start.get(k) != self._at.get(k) for k in keys):
            if start.get("in_snapshot"):
                raise SourceError(
                    "the query stopped during its initial snapshot, which cannot resume",
                    fix="delete the checkpoint folder and the target table, then start the query again",
                )
            self._open(start)
            self._prefetch = Prefetcher(self._source_stream(), lambda b: self._collected(b.events, b.encoded),
                                        self._arrow, self._end_of, self.max_rows)
        assert self._prefetch is not None
        now = time.monotonic()
        waited_enough = self._held_since is not None and now - self._held_since >= self.max_trigger_delay_s
        batches, end = self._prefetch.take(wait_s=0.5, min_rows=0 if waited_enough else self.min_rows)
        if batches:
            self._held_since = None
        elif end is None and self.min_rows and self._prefetch.has_rows() and self._held_since is None:
            self._held_since = now  # rows held back for the first time: they wait maxTriggerDelay at most
        if end is None:
            if batches:  # (take only returns rows up to an end mark)
                raise AssertionError("rows without an offset after them")
            end = dict(start)
        self._at = end
        return batches, end

    def _collected(self, events: list[ChangeEvent], encoded: EncodedRows | None) -> Any:
        """Events (through the post processors, then the query's transforms, as cdc's engine takes them) and
        encoded rows after them as our columns' lists, numbered on; None: no row."""
        for process in self._processors:
            events = process(events)
        return self._events.collect(transformed(self._chain, events), self._next_position, encoded)

    def _arrow(self, parts: list[Any]) -> Any:
        return self._events.arrow(parts, self._arrow_schema)

    def _source_stream(self) -> Iterator[Any]:
        assert self._stream is not None
        return self._stream

    def _end_of(self, batch: Any, rows_since_end: int) -> dict[str, Any] | None:
        """Where a micro-batch may end: between transactions (a replay can find the same end); or, in
        a large snapshot read on the driver, after a piece of it (good for this stream only: see
        the check in _read)."""
        if batch.offset is not None and _committed_key(self._source_cls, batch.offset) is not None:
            if (batch.offset.get("incremental") or {}).get("window"):
                return None  # inside an incremental chunk's window: its rows come at the close
            return {**batch.offset, "seq": self._seq, "chunk_run": self._run}
        if batch.offset is None and rows_since_end >= self.max_rows and _snapshot_batch(batch):
            return {"in_snapshot": True, "seq": self._seq}
        return None

    def _replay(self, start: dict[str, Any], end: dict[str, Any]) -> list[Any]:
        """A planned micro-batch again after a restart: the source's log still holds it, because
        ``commit`` (which releases it) was not reached for it."""
        if start.get("initial") or start.get("in_snapshot") or end.get("in_snapshot"):
            raise SourceError("a micro-batch of the initial snapshot cannot be replayed",
                              fix="delete the checkpoint folder to take a new snapshot")
        self._close()
        self._open(start, replay_run=str(end.get("chunk_run") or ""))
        assert self._stream is not None
        end_key = _committed_key(self._source_cls, end)
        assert end_key is not None, end
        size = len(end_key)
        parts: list[Any] = []
        for batch in self._stream:
            # Transactions that committed before the end offset sort before it.
            events = [e for e in batch.events if e.position and e.position[:size] < end_key]
            encoded = batch.encoded  # a run: of one transaction, before the end or not
            if encoded is not None and not (encoded.template.position and encoded.template.position[:size] < end_key):
                encoded = None
            collected = self._collected(events, encoded)
            if collected is not None:
                parts.append(collected)
            key = _committed_key(self._source_cls, batch.offset) if batch.offset is not None else None
            if key is not None and key >= end_key:
                break
        replayed = self._source.incremental.replayed_chunks if isinstance(self._source, SnapshotsIncrementally) else 0
        if self._seq != end.get("seq", self._seq) and replayed:
            # chunks read again hold the rows as they are now (rows deleted since are gone, rows
            # inserted since are there); the changes after them follow in the log
            log.warning("replayed micro-batch %s..%s read %d incremental-snapshot chunks again: %d rows, %d the first "
                        "time", start.get("seq"), end.get("seq"), replayed, self._seq - start.get("seq", 0),
                        end.get("seq", 0) - start.get("seq", 0))
            self._seq = int(end.get("seq", self._seq))
        elif self._seq != end.get("seq", self._seq):
            raise SourceError(f"replaying offsets {start} to {end} gave {self._seq - start.get('seq', 0)} rows, "
                              f"not {end.get('seq', 0) - start.get('seq', 0)}",
                              fix="the source log changed under the checkpoint; delete the checkpoint to start over")
        self._close()  # the next latestOffset() opens a stream at the end offset
        self._at = end
        return [self._arrow(parts)] if parts else []

    def _next_position(self) -> int:
        self._seq += 1
        return self._seq

    def _partition(self, batches: list[Any]) -> RowsPartition | None:
        batches = concatenated(batches, self._arrow_schema)
        return RowsPartition(batches) if batches else None

    def _open(self, start: dict[str, Any], replay_run: str | None = None) -> None:
        """A stream from ``start``; replaying, it reads the incremental chunks of ``replay_run`` again
        and starts none, else its chunks carry a new run id."""
        self._close()
        source, config = _build(self.options)
        self._source = source
        # Debezium's post processors (the reselector: values the log did not hold, read again) run here, on the
        # driver, in the thread that reads the stream; they change events, so the codec's rows stay off, as in
        # cdc's pipeline (cdc.pipeline.build).
        self._processors = post_processors.from_config(config.properties, source)
        if self._chain is None and not self._processors and isinstance(source, NativeRows) \
                and native_rows_wanted(config):
            source.native_rows = True  # rows the codec wrote, read back by EventRows from their JSON
            if isinstance(source, EncodedBatches):
                source.encoded_batches = True  # and runs of them in one call (EventRows._collect_encoded)
        if isinstance(source, SnapshotsIncrementally):
            incremental = source.incremental
            if replay_run is not None:
                incremental.replay_run = replay_run
            else:
                self._run = new_id()[:8]
                incremental.run = self._run
        self._seq = int(start.get("seq", 0))
        self._stream = iter(self._source.stream(_source_offset(start)))
        self._at = start

    def _close(self) -> None:
        if self._prefetch is not None:
            self._prefetch.stop(self._source)
            self._prefetch = None
        if self._source is not None:
            try:
                self._source.stop()
                self._source.close()
            except Exception as exc:  # noqa: BLE001 - closing a broken stream
                log.debug("closing the source: %s", exc)
        self._source = None
        self._stream = None


def read_chunk(partition: ChunkPartition, schema: Any, typed: bool, events: EventRows) -> Iterator[Any]:
    """A snapshot chunk on an executor: Arrow columns straight from the database when the source
    offers them and the query has typed rows; else the source's events, converted in Python."""
    source = _build_source(partition.options)
    chain = _transforms(partition.options)
    try:
        chunks = source
        assert isinstance(chunks, SnapshotsInParallel)  # its chunks come from its plan
        # The columnar path hands rows over without events: with transforms, chunks go the event way.
        columnar = chunks.parallel_chunk_arrow(partition.plan, partition.chunk) if typed and chain is None else None
        if columnar is not None:
            parts, block = columnar
            yield from chunk_batches(parts, schema, block, partition.plan["ts_us"] // 1000, partition.chunk["table"],
                                     events)
            return
        for chunk_events in chunks.parallel_chunk_events(partition.plan, partition.chunk):
            batch = events.batch(transformed(chain, chunk_events), lambda: 0, schema)
            if batch is not None:
                yield batch
    finally:
        source.close()


_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def _seconds(text: str, name: str) -> float:
    """A duration as Spark's options write it (``500ms``, ``30s``, ``15m``, ``1h``; a bare number: seconds)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text)
    if match is None:
        raise ConfigError(f"{name}={text!r} is not a duration", fix="write it as 500ms, 30s, 15m or 1h")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def register(spark: Any) -> None:
    """Make ``spark.readStream.format("cdc")`` available in this session."""
    spark.dataSource.register(CdcDataSource)
