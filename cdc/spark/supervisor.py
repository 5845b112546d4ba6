"""A streaming query into a table that goes on through schema changes at the source: one call.

    from cdc.spark.supervisor import run_changes
    query = run_changes(spark, {"source": "postgres", "table": "public.orders", ...}, "/lake/orders",
                        keys=["id"], checkpoint="/lake/orders-checkpoint", schema_changes="evolve")
    query.awaitTermination()          # or query.stop()

Why a supervisor: a Spark query's schema is fixed when it starts, and ``format("cdc")`` gives
``before``/``after`` the table's real types. A column added or a type changed at the source stops the
query (cdc.spark.versions: "the columns of T changed"); this restarts it at once from the same
checkpoint, whose new schema is the table's as it is now. Spark's checkpoint holds the offsets, so
the micro-batches committed before the change are not read again and the one that stopped is read
again whole, with the new schema: the rows written before the change in it (the same transaction
as the ALTER, say) are read in the new columns (an added column: its default at the source; a
type widened: cast). ``apply_changes(schema_changes=...)`` then evolves the Delta table before its
MERGE (cdc.spark.evolve). A column dropped at the source does not stop the query: its rows lack it
and it is written NULL. Across a restart the query keeps the target's columns the table no longer
has in its schema, so rows written before the drop (replayed) keep their values and later rows get
NULL.

Every other error stops the supervised query as it would stop the query: ``exception()`` holds it
and ``awaitTermination()`` raises it. ``schema_changes="fail"`` stops at the first change of any kind
(the reader's ``schemaChanges=fail``) with the reader's error.
"""
from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from cdc.spark.apply import IS_CURRENT, VALID_FROM, VALID_TO, changes_applier, delta_exists
from cdc.spark.evolve import check_policy
from cdc.spark.jdbc_snapshot import snapshot_into
from cdc.spark.schema import event_schema

log = logging.getLogger(__name__)

SCHEMA_CHANGED = re.compile(r"the columns of \S+ changed from")  # cdc.spark.versions.changed
REPEATS = 3  # the same change stopping the query this many times in a row: stop for good, with its error


def run_changes(spark: SparkSession, options: Mapping[str, str], target: str, keys: Sequence[str], *,
                checkpoint: str, schema_changes: str = "evolve", trigger: Mapping[str, Any] | None = None,
                snapshot: str = "auto", **apply_kwargs: Any) -> SupervisedQuery:
    """Start ``spark.readStream.format("cdc")`` with ``options`` (one ``table``) into the Delta table
    ``target`` by ``apply_changes`` (``keys``, and ``apply_kwargs``: ``scd_type`` ...), restarted from
    ``checkpoint`` whenever a schema change at the source stops it, the target's schema following per
    ``schema_changes`` (evolve, try-evolve, lenient, ignore, fail). ``trigger``: ``writeStream.trigger``'s
    arguments (default ``processingTime="1 second"``). ``snapshot``: how a new target gets the initial snapshot
    (cdc.spark.jdbc_snapshot): "auto" through Spark's JDBC reader where that gives the same table, else by
    the query; "jdbc" refuses otherwise; "stream" always by the query. It is read before this returns."""
    check_policy(schema_changes)
    if not options.get("table"):
        raise ValueError("run_changes reads one table: give options['table']")
    options = snapshot_into(spark, options, target, keys, checkpoint=checkpoint,
                            scd_type=int(apply_kwargs.get("scd_type", 1)),
                            mode=snapshot if apply_kwargs.get("format") in (None, "delta") else "stream")
    supervised = SupervisedQuery(spark, dict(options), target, list(keys), checkpoint, schema_changes,
                                 dict(trigger or {"processingTime": "1 second"}), apply_kwargs)
    supervised.start()
    return supervised


class SupervisedQuery:
    """The running query of ``run_changes``, restarted on schema changes; ``query`` is the current one."""

    def __init__(self, spark: SparkSession, options: dict[str, str], target: str, keys: list[str],
                 checkpoint: str, policy: str, trigger: dict[str, Any], apply_kwargs: dict[str, Any]) -> None:
        self.spark = spark
        self.options = options
        self.target = target
        self.keys = keys
        self.checkpoint = checkpoint
        self.policy = policy
        self.trigger = trigger
        self.apply_kwargs = apply_kwargs
        self.restarts = 0  # how many times a schema change restarted the query
        self.changes: list[str] = []  # the messages of the schema changes that did
        self.query: Any = None
        self._error: BaseException | None = None
        self._stopping = False
        self._lock = threading.Lock()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cdc-supervisor-{target}", daemon=True)

    # ---- as a StreamingQuery ------------------------------------------------------------------

    @property
    def isActive(self) -> bool:  # noqa: N802 - StreamingQuery's name
        return self._thread.is_alive()

    def exception(self) -> BaseException | None:
        return self._error

    def awaitTermination(self, timeout: float | None = None) -> bool:  # noqa: N802 - StreamingQuery's name
        """Wait until the query stops for good (``stop()`` or an error other than a schema change, raised)."""
        self._thread.join(timeout)
        if self._error is not None:
            raise self._error
        return not self._thread.is_alive()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            query = self.query
        if query is not None:
            query.stop()
        self._thread.join()

    # ---- the loop -----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()
        self._started.wait()  # the first query runs (or failed to start: exception() says why)
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._stopping:
                    break
                try:
                    self.query = self._start_query()
                except Exception as exc:  # noqa: BLE001 - handed to whoever waits on this query
                    self._error = exc
                    break
                finally:
                    self._started.set()
                query = self.query
            try:
                query.awaitTermination()
                break  # stopped
            except Exception as exc:  # noqa: BLE001 - StreamingQueryException, from the JVM
                if self._stopping:
                    break
                message = str(exc)
                if self.policy == "fail" or not SCHEMA_CHANGED.search(message):
                    self._error = exc
                    break
                change = SCHEMA_CHANGED.search(message)
                assert change is not None
                first = message[change.start():].splitlines()[0]
                if self.changes[-REPEATS:] == [first] * REPEATS:  # restarts that do not get past it
                    self._error = exc
                    break
                self.restarts += 1
                self.changes.append(first)
                log.warning("the query into %s stopped at a schema change (%s): restarted from its checkpoint",
                            self.target, first)

    def _start_query(self) -> Any:
        reader = self.spark.readStream.format("cdc").options(**self.options)
        if self.policy == "fail":
            reader = reader.option("schemaChanges", "fail")
        else:
            reader = reader.schema(self._schema())
        apply = changes_applier(self.target, self.keys, schema_changes=self.policy, **self.apply_kwargs)
        writer = (reader.load().writeStream.foreachBatch(apply)
                  .option("checkpointLocation", self.checkpoint).trigger(**self.trigger))
        return writer.start()

    def _schema(self) -> T.StructType:
        """The table's schema now (as ``load()`` gives it) and the target's columns it no longer has:
        dropped at the source, they keep the values of rows written before the drop and are NULL after."""
        from cdc.spark.datasource import CdcDataSource
        from cdc.spark.session import delta_available

        schema = CdcDataSource(dict(self.options)).schema()
        row_type = schema["after"].dataType
        assert isinstance(row_type, T.StructType)
        if not delta_available(self.spark) or not delta_exists(self.spark, self.target):
            return schema
        have = set(row_type.fieldNames())
        table = self.spark.read.format("delta").load(self.target).schema
        kept = [T.StructField(f.name, f.dataType, True) for f in table
                if f.name not in have and f.name not in (VALID_FROM, VALID_TO, IS_CURRENT)]
        return event_schema(T.StructType([*row_type.fields, *kept])) if kept else schema
