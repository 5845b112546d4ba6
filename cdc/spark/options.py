"""The options of ``spark.readStream.format("cdc")`` itself, declared once: the reader reads them from
here and ``docs/options.md`` is generated from here (``python -m cdc.docs``). Importable without pyspark.

Every other option of a query is the source's own, under its Debezium name (``database.hostname``...).
Spark's option names are case-insensitive: they are looked up as written and in lower case.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.config import Option
from cdc.core.errors import ConfigError

SOURCE = Option("source", doc="the source plugin to read (postgres, mysql, sqlserver, or an installed plugin's "
                              "name); required", required=True)
TABLE = Option("table", doc="one table to read, as schema.table or database.table; sets table.include.list "
                            "(its dots matched literally) and gives the columns of that table's row type")
TABLES = Option("tables", doc="several tables in one query: Debezium's include list (comma-separated regular "
                              "expressions, each matching whole names); the row type is the union of their columns")
MAX_ROWS_PER_BATCH = Option("maxRowsPerBatch", int, 300_000,
                            "rows per micro-batch when the log holds more (a Delta MERGE costs seconds however few "
                            "rows it applies, so a backlog is best applied in large batches)")
MIN_ROWS_PER_BATCH = Option("minRowsPerBatch", int, 0,
                            "a trigger with fewer rows waits for more, up to maxTriggerDelay (as Spark's Kafka "
                            "source's minOffsetsPerTrigger)")
MAX_TRIGGER_DELAY = Option("maxTriggerDelay", str, "15m",
                           "the longest a trigger holds rows back for minRowsPerBatch, counted from the first "
                           "trigger that held them (500ms, 30s, 15m, 1h)")
SNAPSHOT_CHUNK_ROWS = Option("snapshotChunkRows", int, 100_000,
                             "rows per key-range chunk of a parallel initial snapshot (one Spark task each)")
PARALLEL_SNAPSHOT = Option("parallelSnapshot", bool, True,
                           "read the initial snapshot in key-range chunks on the executors, where the source can "
                           "(PostgreSQL, MySQL/MariaDB, SQL Server); false reads it on the driver")
STARTING_OFFSET = Option("startingOffset", str, None,
                         "where a query with a new checkpoint starts: the source's offset as JSON (no snapshot is "
                         "taken); cdc.spark.jdbc_snapshot.snapshot_into sets it after reading the snapshot through "
                         "Spark's JDBC reader")
# Set by cdc.spark.supervisor.run_changes ("fail": every change of a table's columns stops the query),
# documented in docs/spark.md with it: not an option a user sets, so not in docs/options.md.
SCHEMA_CHANGES = "schemaChanges"

READER_OPTIONS: tuple[Option, ...] = (SOURCE, TABLE, TABLES, MAX_ROWS_PER_BATCH, MIN_ROWS_PER_BATCH,
                                      MAX_TRIGGER_DELAY, SNAPSHOT_CHUNK_ROWS, PARALLEL_SNAPSHOT,
                                      STARTING_OFFSET)

# Names that are the reader's and never the source's: its options and Spark's own "path" (load(path)).
READER_NAMES: frozenset[str] = frozenset(o.name.lower() for o in READER_OPTIONS) | {"path", SCHEMA_CHANGES.lower()}


def reader_option(options: Mapping[str, str], option: Option) -> Any:
    """``option``'s value in a query's options (as written or in lower case), parsed, or its default."""
    raw = options.get(option.name, options.get(option.name.lower()))
    if raw is None:
        return option.default
    try:
        return option.parse(raw)
    except ValueError as exc:
        raise ConfigError(f"option {option.name}={raw!r} of format('cdc'): {exc}",
                          fix=f"{option.name}: {option.doc}") from None
