"""A table's initial snapshot read by Spark's JDBC reader into a new Delta table; then the stream.

    options = snapshot_into(spark, options, "/lake/orders", ["id"], checkpoint="/lake/orders-checkpoint")
    (spark.readStream.format("cdc").options(**options).load().writeStream
       .foreachBatch(changes_applier("/lake/orders", ["id"]))
       .option("checkpointLocation", "/lake/orders-checkpoint").start())

``run_changes`` does this by itself (``snapshot="auto"``).

Why: ``format("cdc")`` is a Python data source. Its snapshot rows are made in Python workers and turned
into JVM rows whole (no column pruning), and a streaming query costs about 1.7 s before its first read;
measured at 0.5-0.6 of ``spark.read.jdbc`` of the same table into Delta (bench/README.md). Here the JVM
reads the source's own plan -- the slot's exported snapshot and its key-range chunks
(cdc.sources.postgres.parallel) -- with Spark's JDBC reader, one task per chunk, each joining the
exported snapshot in its session's first statement; the source's queries give Debezium's values
(cdc.sources.postgres.jdbc_chunks), cast here to the types ``format("cdc")`` gives them. The rows are
written as ``apply_changes`` writes a snapshot into a new table, and the stream starts where the
snapshot was taken (the reader's ``startingOffset``).

Only where it gives the same table: a Delta target that does not exist yet, a source that offers it
(cdc.core.source.SnapshotsOverJdbc) for every column of the table, no transforms, pgjdbc on Spark's
classpath. Otherwise the snapshot is ``format("cdc")``'s, as before (``snapshot="jdbc"`` refuses instead).

A stop in the middle: the checkpoint folder holds a note of the plan (``MARKER``) before the first
row is read. Started again, a target written in full (Delta commits it at once) is kept and the
stream starts at the noted point; a target not written is read again from a new plan, the slot made
by the first try taken over (the note says it is ours).
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc import registry
from cdc.core.errors import ConfigError, SourceError
from cdc.core.source import JdbcChunks, SnapshotsOverJdbc, offers
from cdc.spark import options as reader
from cdc.spark.apply import IS_CURRENT, VALID_FROM, VALID_TO, create_delta, delta_exists, target_columns
from cdc.spark.schema import struct_type_of
from cdc.spark.session import delta_available, on_classpath

log = logging.getLogger(__name__)

MODES = ("auto", "jdbc", "stream")
MARKER = "cdc-jdbc-snapshot.json"  # in the checkpoint folder: the plan's stream_from, before any row is read


def snapshot_into(spark: SparkSession, options: Mapping[str, str], target: str, keys: Sequence[str], *,
                  checkpoint: str, scd_type: int = 1, mode: str = "auto") -> dict[str, str]:
    """Read the initial snapshot of ``options["table"]`` through Spark's JDBC reader into the new Delta table
    ``target`` (``keys``, ``scd_type`` as ``apply_changes``); the query's options, with ``startingOffset``
    where the stream then starts. Nothing is read when the query ran before (its ``checkpoint`` holds
    offsets) or the JDBC reader would not give the same table (``mode="auto"``: ``format("cdc")`` takes
    the snapshot; ``"jdbc"``: refused with the reason); ``"stream"``: never."""
    if mode not in MODES:
        raise ValueError(f"snapshot={mode!r}: one of {', '.join(MODES)}")
    options = dict(options)
    if mode == "stream":
        return options
    files = _CheckpointFiles(spark, checkpoint)
    if files.has_offsets():
        return options  # the query resumes from its checkpoint
    marker = _read_note(files)
    if marker is not None and delta_exists(spark, target):
        log.info("the snapshot of %s is in %s: the stream starts after it", options.get("table"), target)
        return {**options, reader.STARTING_OFFSET.name: json.dumps(marker["stream_from"])}
    reason = _unsuitable(spark, options, target)
    if reason is not None:
        _left_to_the_query(mode, options.get("table"), reason)
        return options
    return _read_snapshot(spark, options, target, list(keys), scd_type, files, taken_over=marker is not None, mode=mode)


def _left_to_the_query(mode: str, table: str | None, reason: str) -> None:
    """The snapshot is format("cdc")'s (``mode`` "auto"), or refused with ``reason`` ("jdbc")."""
    if mode == "jdbc":
        raise ConfigError(f"the snapshot cannot be read through Spark's JDBC reader: {reason}",
                          fix="use snapshot='auto' (format('cdc') then reads it) or remove the cause")
    log.info("the snapshot of %s is read by format('cdc'): %s", table, reason)


def _unsuitable(spark: SparkSession, options: Mapping[str, str], target: str) -> str | None:
    """Why the JDBC reader cannot take this snapshot (None: it can)."""
    if not options.get("table"):
        return "it reads one table (the table option)"
    if any(k.startswith(("transforms", "predicates")) and v for k, v in options.items()):
        return "the query's transforms apply to events, which this reader does not make"
    if not reader.reader_option(options, reader.PARALLEL_SNAPSHOT):
        return "parallelSnapshot is false"
    if not delta_available(spark):
        return "Delta Lake is not on Spark's classpath"
    if delta_exists(spark, target):  # (one with our note was taken up above)
        return f"the target {target} exists (the snapshot is merged into it)"
    source_cls = registry.load(registry.SOURCES, options.get("source", ""))
    if not offers(source_cls, SnapshotsOverJdbc):
        return f"the {options.get('source')} source does not offer it"
    return None


def _read_snapshot(spark: SparkSession, options: dict[str, str], target: str, keys: list[str], scd_type: int,
                   files: _CheckpointFiles, *, taken_over: bool, mode: str) -> dict[str, str]:
    from cdc.spark.datasource import _build_source

    table = options["table"]
    # a first try's slot (the marker says it made it) is taken over: its snapshot is gone with that try
    source: Any = _build_source({**options, "slot.takeover": "true"} if taken_over else options)  # (offers it)
    planned = False
    try:
        after = struct_type_of(source.table_schema(table))[0]
        missing = [k for k in keys if k not in after.fieldNames()]
        if missing:  # as apply_changes says it
            raise ValueError(f"key columns {missing} are not columns of the events ({after.fieldNames()})")
        probe = source.jdbc_chunks({"chunks": []}, table)  # whether it reads the table at all, before any plan
        reason = None
        if probe is None:
            reason = "a column of the table needs the source's own converters, or an option changes its values"
        elif not on_classpath(spark, probe.properties["driver"]):
            reason = f"the JDBC driver {probe.properties['driver']} is not on Spark's classpath (spark.jars; " \
                     "scripts/spark-jars.sh fetches PostgreSQL's)"
        if reason is not None:
            _left_to_the_query(mode, table, reason)
            return options
        started = time.monotonic()
        plan = source.plan_parallel_snapshot(reader.reader_option(options, reader.SNAPSHOT_CHUNK_ROWS))
        if plan is None:
            return options  # snapshot.mode takes none: the stream starts as the source decides
        planned = True
        planned_s = time.monotonic() - started
        files.write(MARKER, json.dumps({"table": table, "stream_from": plan["stream_from"]}))
        chunks = source.jdbc_chunks(plan, table)  # (no chunk when snapshot.include.collection.list leaves it out)
        if chunks is None:
            raise SourceError(f"the columns of {table} changed while its snapshot was planned",
                              fix="start the query again: it plans a new snapshot")
        fetch = int(source.config.get("snapshot.fetch.size") or 10_240)
        try:
            create_delta(_rows(_read(spark, chunks, fetch), chunks, after, keys, scd_type), target, overwrite=True)
        except (Py4JError, PySparkException) as exc:  # the JVM's error (pgjdbc's, Delta's), told as ours
            raise SourceError(f"reading the snapshot of {table} through Spark's JDBC reader failed: "
                              f"{_first_cause(exc)}",
                              fix="the cause above (pgjdbc connects from the executors, with the same options); or "
                                  "snapshot='stream', which reads it through format('cdc'); started again, the "
                                  "query takes this snapshot up anew") from None
        log.info("snapshot of %s planned in %.2f s (the slot, its exported snapshot, %d chunks), then read through "
                 "Spark's JDBC reader into %s in %.2f s", table, planned_s, len(chunks.predicates), target,
                 time.monotonic() - started - planned_s)
        return {**options, reader.STARTING_OFFSET.name: json.dumps(plan["stream_from"])}
    finally:
        if planned:
            source.release_parallel_snapshot()
        source.close()


def _first_cause(exc: BaseException) -> str:
    """A JVM error's first line, and the messages of the errors behind it (pgjdbc's, say)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    java = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)  # PySpark's, py4j's
    causes: list[str] = []
    try:
        java = java.getCause() if java is not None else None
        while java is not None:
            message = java.getMessage()
            if message and message not in text and message not in causes:
                causes.append(str(message))
            java = java.getCause()
    except Exception:  # noqa: BLE001 - the JVM gone with the error: its first line is all there is
        pass
    return (f"{text} ({'; '.join(causes)})" if causes else text)[:1000]


def _read(spark: SparkSession, chunks: JdbcChunks, fetch: int) -> DataFrame:
    return spark.read.jdbc(chunks.url, chunks.query, predicates=chunks.predicates,
                           properties={**chunks.properties, "sessionInitStatement": chunks.session_init,
                                       "fetchsize": str(fetch)})


def _value(column: Column, kind: str) -> Column:
    """A value of the JDBC reader in the form it comes in (JdbcChunks.columns' kinds)."""
    if kind == "epoch_days":
        return F.date_from_unix_date(column)
    if kind == "epoch_micros":
        return F.timestamp_micros(column)
    if kind == "local_text":
        return column.cast(T.TimestampNTZType())
    if kind == "utc_text":
        return column.cast(T.TimestampType())
    return column


def _rows(frame: DataFrame, chunks: JdbcChunks, after: T.StructType, keys: Sequence[str], scd_type: int) -> DataFrame:
    """The target's rows as ``apply_changes`` writes a snapshot into a new table: the row's fields with
    ``format("cdc")``'s types, the keys first; for SCD2 each the first and current version."""
    by_field = {name: (output, kind) for name, output, kind in chunks.columns}
    columns = []
    for name in target_columns(keys, after.fieldNames()):
        output, kind = by_field[name]
        field = after[name]
        columns.append(_value(F.col(output), kind).cast(field.dataType).alias(name, metadata=field.metadata))
    if scd_type == 2:  # a snapshot row's _position is 0 (cdc.spark.arrow_events), its valid_from
        columns += [F.lit(0).cast(T.LongType()).alias(VALID_FROM), F.lit(None).cast(T.LongType()).alias(VALID_TO),
                    F.lit(True).alias(IS_CURRENT)]
    return frame.select(*columns)


class _CheckpointFiles:
    """Small files in a query's checkpoint folder, through Hadoop's file system (local, HDFS, S3 ...), as
    Spark's checkpoint itself."""

    def __init__(self, spark: Any, checkpoint: str) -> None:
        jvm = spark._jvm
        self._path = lambda name: jvm.org.apache.hadoop.fs.Path(checkpoint, name)
        self._fs = jvm.org.apache.hadoop.fs.Path(checkpoint).getFileSystem(spark._jsc.hadoopConfiguration())

    def has_offsets(self) -> bool:
        offsets = self._path("offsets")
        return bool(self._fs.exists(offsets)) and any(
            not status.getPath().getName().startswith(".") for status in self._fs.listStatus(offsets))

    def where(self, name: str) -> str:
        return str(self._path(name))

    def read(self, name: str) -> str | None:
        path = self._path(name)
        if not self._fs.exists(path):
            return None
        stream = self._fs.open(path)
        try:
            return bytes(stream.readAllBytes()).decode()
        finally:
            stream.close()

    def write(self, name: str, text: str) -> None:
        stream = self._fs.create(self._path(name), True)
        try:
            stream.write(text.encode())
        finally:
            stream.close()


def _read_note(files: _CheckpointFiles) -> dict[str, Any] | None:
    """The note of a plan an earlier try made (MARKER), or None."""
    text = files.read(MARKER)
    if text is None:
        return None
    try:
        note = json.loads(text)
    except ValueError:
        note = None
    if not isinstance(note, dict) or not isinstance(note.get("stream_from"), dict):
        raise SourceError(f"{files.where(MARKER)} is not a note of a snapshot plan cdc wrote (torn by a stop while "
                          "it was written, or another program's file)",
                          fix="delete it and start again: the snapshot is then planned anew (set "
                              "slot.takeover=true if the slot of the first try exists)")
    return note
