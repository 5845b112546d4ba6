"""SQL Server source: CDC change tables polled by LSN, after an optional snapshot.

The coordinator (Debezium's ChangeEventSourceCoordinator): it wires the parts, none of which holds
another, and decides per database what to do at start.

    for each database of database.names:
      connect, check CDC is enabled (database, included tables)
      offset stored?  check the change tables still hold it (the cleanup job's retention)
      decide(snapshot.mode, its offset, whether they do)  (cdc.core.snapshot_mode)
        SNAPSHOT / SCHEMA:  snapshot.py: structure, then rows unless no_data; then stream (initial_only:
                            hold the offset and stop)
        STREAM:             on from the offset       NOTHING: initial_only, taken before
        LOG_GONE:           the error, with the fix (when_needed takes a new snapshot instead)
    then the Streamer (stream.py) polls every database's change tables; signals.py acts on signals
    between polls (incremental and blocking snapshots)

Offsets: ``{"databases": {<db>: {commit_lsn, change_lsn, event_serial_no, snapshot_completed,
[transaction_*]}}}``: Debezium's per-database offset, one entry per database. Topics:
``<topic.prefix>.<db>.<schema>.<table>``; schema change events on ``<topic.prefix>``. The progress of
signals (``incremental``, ``blocking``, ``signal_file_pos``) is kept next to ``databases``.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from cdc.config import CORE_OPTIONS, Config, Option
from cdc.core.delays import wait
from cdc.core.emitter import ChangeEmitter
from cdc.core.errors import ConfigError, SourceError
from cdc.core.heartbeat import Heartbeat
from cdc.core.incremental import IncrementalSnapshot
from cdc.core.records import Batch, ChangeEvent
from cdc.core.retry import RetryPolicy
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.snapshot_mode import Plan, decide, normalize
from cdc.core.snapshot_restart import attempt_offset, interrupted_attempt
from cdc.core.snapshot_selection import OVERRIDES_FIX, PARALLEL_SNAPSHOT, TableName
from cdc.core.source import CloudEventsMaker, SourceSettings
from cdc.core.topics import SQLSERVER_LAYOUT
from cdc.sources.sqlserver import catalog, parallel
from cdc.sources.sqlserver.changes import Position
from cdc.sources.sqlserver.config import SNAPSHOT_MODES, SQLSERVER_OPTIONS
from cdc.sources.sqlserver.connection import ConnectionSettings, OdbcConnection, QueryLayer
from cdc.sources.sqlserver.events import EventBuilder
from cdc.sources.sqlserver.queries import AGENT_STATUS
from cdc.sources.sqlserver.signals import SqlServerSignals
from cdc.sources.sqlserver.snapshot import Restart, Snapshot
from cdc.sources.sqlserver.source_info import CLOUD_EVENTS, SOURCE_SCHEMA
from cdc.sources.sqlserver.stream import DatabaseStream, Streamer, StreamSettings
from cdc.sources.sqlserver.tables import CaptureInstance, TableState
from cdc.sources.sqlserver.types import TypeModes

if TYPE_CHECKING:  # what the operating methods hand out (cdc.core.source: ReportsLag, ReportsStatus)
    from cdc.metrics.lag import LagReport, Watch
    from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)

Connect = Callable[[str], QueryLayer]


class SqlServerSource:
    name: ClassVar[str] = "sqlserver"
    title: ClassVar[str] = "SQL Server source"  # in the docs' option reference
    connector_classes: ClassVar[tuple[str, ...]] = ("io.debezium.connector.sqlserver.SqlServerConnector",)
    connector_name: ClassVar[str] = "sqlserver"  # source.connector and the context header
    metrics_plugin: ClassVar[str] = "sql_server"  # Debezium's metrics label (cdc.core.source.NamesItsMetrics)
    # Debezium's CloudEvents makers by connector (cdc.core.source.MakesCloudEvents)
    cloud_events: ClassVar[Mapping[str, CloudEventsMaker]] = CLOUD_EVENTS
    options: ClassVar[tuple[Option, ...]] = SQLSERVER_OPTIONS  # SIGNAL_OPTIONS included
    # Spark's micro-batches (cdc.core.source.Replayable): the offset's per-database positions, or
    # Debezium's own single-database shape (an offset carried over from Debezium)
    POSITION_KEYS: ClassVar[tuple[str, ...]] = ("databases", "commit_lsn")

    @staticmethod
    def committed_key(offset: dict[str, Any]) -> tuple[int, ...] | None:
        """The sort key of an offset of one database: the events at or before its position sort
        before it. Every offset lies between two changes (a poll hands over whole changes), so any
        can end a micro-batch. None with several databases: their LSNs do not compare."""
        databases = offset.get("databases") or ({"": offset} if "commit_lsn" in offset else {})
        if len(databases) != 1 or "commit_lsn" not in next(iter(databases.values())):
            return None  # nor inside a snapshot, whose restart marker is no position
        position = Position.from_offset(next(iter(databases.values())))
        commit = position.commit_lsn.as_int()
        if position.change_lsn is None:  # every change of commit_lsn was delivered
            return (commit + 1,)
        return (commit, position.change_lsn.as_int(), (position.event_serial_no or 0) + 1)

    @staticmethod
    def check_replayable(config: Config) -> None:
        """Spark replays a micro-batch between two positions of one database's log."""
        databases = config.get("database.names") or []
        if len(databases) > 1:
            raise ConfigError(f"format('cdc') reads one SQL Server database per query, not {', '.join(databases)}",
                              fix="start one streaming query per database (.option('database.names', 'testDB'))")

    def __init__(self, config: Config, *, connect: Connect | None = None,
                 clock: Callable[[], int] | None = None, sleep: Callable[[float], None] | None = None) -> None:
        """``connect`` opens a query layer on one database (default: pyodbc); ``clock`` gives
        nanoseconds (default: the system clock); both are replaced by the tests."""
        config.declare(CORE_OPTIONS).declare(SQLSERVER_OPTIONS)
        self.config = config
        self.prefix: str = config.get("topic.prefix")
        self.databases: list[str] = config.get("database.names") or []
        if config.get("snapshot.mode") not in SNAPSHOT_MODES:
            raise ConfigError(f"snapshot.mode={config.get('snapshot.mode')!r} is not supported by the SQL Server "
                              "source", fix=f"use one of {', '.join(SNAPSHOT_MODES)}")
        self.snapshot_mode = normalize(config.get("snapshot.mode"))  # schema_only is no_data
        if not self.databases:
            raise ConfigError("database.names is required: the databases to capture", fix="set database.names=testDB")
        self.settings = ConnectionSettings.from_config(config)
        self._connect: Connect = connect or (lambda db: OdbcConnection(self.settings, db))
        self.clock = clock or time.time_ns
        self._common = SourceSettings.from_config(config, SQLSERVER_LAYOUT)
        self.modes = TypeModes.from_config(config)
        self.schema_changes = (SchemaChangeEvents(self._common.topics.schema_change_topic(), "sqlserver", SOURCE_SCHEMA)
                               if config.get("include.schema.changes") else None)
        self._conns: list[QueryLayer] = []
        self._stopping = False
        # databases not streaming: initial_only, snapshot taken; in a snapshot, its restart marker
        self._held: dict[str, dict[str, Any]] = {}
        self._last_offset: dict[str, Any] = {}  # of the last batch handed out: what a reconnect restores
        self.signals = SqlServerSignals(config, self.databases, prefix=self.prefix, clock=self.clock,
                                        streams=lambda: self.streamer.streams, connect=self._reach,
                                        offset=self._offset)
        self.signals.incremental.notifier = self._common.notifier
        # every (re)connect and the streamer's resumed polls (cdc.core.retry)
        self.retry = RetryPolicy(self.settings.max_retries, self.settings.retry_wait_s, sleep=sleep or time.sleep)
        self.streamer = Streamer(policy=self.retry, reconnect=self._reconnect, between_polls=self.signals.between_polls,
                                 offset=self._offset, stopping=lambda: self._stopping, clock=self.clock,
                                 sleep=sleep or time.sleep, poll_s=config.get("poll.interval.ms") / 1000,
                                 end_idle_s=config.get("transaction.end.idle.ms") / 1000,
                                 heartbeat=Heartbeat(self.prefix, self._common.topics.heartbeat_topic(),
                                                     config.get("heartbeat.interval.ms")))

    # ---- the Source contract ----------------------------------------------------------------

    def stop(self) -> None:
        self._stopping = True

    def _is_stopping(self) -> bool:
        return self._stopping

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to release: the change tables are trimmed by the server's cleanup job."""

    def connect_to(self, database: str) -> QueryLayer:
        """A new connection to one captured database (the lag monitor's: never the stream's)."""
        return self._connect(database)

    def close(self) -> None:
        for conn in self._conns:
            conn.close()
        self._conns.clear()
        self.signals.close()

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        stored = self._stored(offset)
        self.streamer.streams.clear()  # a restarted run (the engine's, after close) starts from ``offset`` alone
        self._held.clear()
        self.signals.restore(offset or {})
        self._last_offset = dict(offset or {})
        for batch in self._run(stored):
            if batch.offset is not None:
                self._last_offset = batch.offset  # what a reconnect restores the signal state from
            yield batch

    def _run(self, stored: dict[str, dict[str, Any]]) -> Iterator[Batch]:
        for database in self.databases:
            yield from self._start_database(database, stored.get(database))
            if self._stopping:  # (during a wait of snapshot.delay.ms / streaming.delay.ms)
                return
        if not self.streamer.streams:
            return  # initial_only: every database has its snapshot
        yield from self.streamer.run()

    # ---- operating: lag and status (cdc.core.source: ReportsLag, ReportsStatus; the code: lag.py) ----

    def lag_watch(self, metrics: PipelineMetrics) -> Watch:
        from cdc.sources.sqlserver.lag import SqlServerWatch

        return SqlServerWatch(self.connect_to, metrics, list(self.databases))

    @classmethod
    def status_report(cls, config: Config, offset: dict[str, Any] | None) -> LagReport:
        from cdc.sources.sqlserver.lag import status_report

        return status_report(config, offset)

    # ---- signals (cdc.core.source: TakesSignals, SnapshotsIncrementally; the code: signals.py) ----

    def send_signal(self, type_: str, data: dict[str, Any], id_: str | None = None) -> str:
        return self.signals.send(type_, data, id_)

    @property
    def incremental(self) -> IncrementalSnapshot:
        """The incremental snapshot's state machine (a replaying reader sets its run)."""
        return self.signals.incremental

    # ---- the captured tables (Spark's schema at load()) -----------------------------------------

    def captured_tables(self) -> list[str]:
        """The tables this configuration captures, as ``<db>.<schema>.<table>`` (the events' table id)."""
        return sorted({i.data_collection for db in self.databases for i in self._instances(db)})

    def table_schema(self, qualified: str) -> dict[str, Any]:
        """The Connect struct schema of one captured table's rows (``before``/``after``), from its
        newest capture instance; ``qualified`` is ``<db>.<schema>.<table>``."""
        database = qualified.split(".", 1)[0]
        instances = self._instances(database) if database in self.databases else []
        matching = [i for i in instances if i.data_collection == qualified]
        if not matching:
            raise SourceError(f"table {qualified!r} is not captured in database.names={','.join(self.databases)}",
                              fix="name it <database>.<schema>.<table> (testDB.dbo.customers), with CDC enabled on it")
        return self._state(matching[-1]).envelope.row_schema

    def _instances(self, database: str) -> list[CaptureInstance]:
        conn = self._reach(database)
        try:
            return self._captured_instances(conn)
        finally:
            conn.close()

    def _captured_instances(self, conn: QueryLayer) -> list[CaptureInstance]:
        """The capture instances of the included tables of ``conn``'s database, the signal table's left out."""
        catalog.check_database(conn)
        return [i for i in catalog.read_instances(conn, self._common.table_filter)
                if not self.signals.is_signal_table(conn.database, i)]

    # ---- Spark: the initial snapshot in chunks read by executors (parallel.py) -----------------

    def plan_parallel_snapshot(self, chunk_rows: int) -> dict[str, Any] | None:
        """The capture job's maximum LSN and every captured table's key chunks; the stream starts at
        that LSN. None when snapshot.mode takes no snapshot, or takes it resumably (the stream then
        reads it in chunks between watermarks), or stops after it: the stream decides."""
        decision = decide(self.snapshot_mode, None, log_reaches=False)
        if decision.plan is not Plan.SNAPSHOT or decision.then_stop or self.config.get("snapshot.resumable"):
            return None
        self._common.snapshot.refuse_overrides(PARALLEL_SNAPSHOT, OVERRIDES_FIX)
        conn = self._reach(self.databases[0])  # one database under Spark (check_replayable)
        try:
            instances = self._captured_instances(conn)
            catalog.require_instances(conn, instances, self._common.table_filter)
            read = [i for i in instances if self._common.snapshot.snapshots((conn.database, i.schema, i.table))]
            return parallel.plan(conn, read, chunk_rows, self.clock() // 1000)
        finally:
            conn.close()

    def release_parallel_snapshot(self) -> None:
        """Nothing is held: the chunks are read as the tables are now."""

    def parallel_chunk_arrow(self, plan: dict[str, Any], chunk: parallel.Chunk) -> None:
        return None  # no columnar reader for SQL Server: the Python converters

    def parallel_chunk_events(self, plan: dict[str, Any], chunk: parallel.Chunk) -> Iterator[list[ChangeEvent]]:
        """The chunk's rows as read events (on an executor), decoded by the capture instance the
        stream reads at the plan's LSN."""
        database, schema, table = chunk["table"].split(".", 2)
        conn = self._open(database)  # closed by close()
        instances = [i for i in catalog.read_instances(conn, self._common.table_filter)
                     if (i.schema, i.table) == (schema, table)]
        return parallel.chunk_events(conn, instances, self._state, self.prefix, plan, chunk,
                                     self.config.get("snapshot.fetch.size"))

    # ---- the parts' shared pieces ---------------------------------------------------------------

    def _stored(self, offset: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
        if not offset:
            return {}
        if "databases" in offset:
            return dict(offset["databases"])
        if "commit_lsn" in offset and len(self.databases) == 1:  # Debezium's single-database shape
            return {self.databases[0]: offset}
        raise SourceError("the stored offset is not a SQL Server offset", fix="delete it to start over")

    def _reach(self, database: str) -> QueryLayer:
        """A new connection to ``database`` under the retry policy: a server restarting or out of reach is
        tried again, a refused login is not (connection.translate says which)."""
        return self.retry.call(f"connecting to SQL Server database {database!r}", lambda: self._connect(database),
                               lambda: self._stopping)

    def _open(self, database: str) -> QueryLayer:
        """A connection of the running source (closed by close())."""
        conn = self._reach(database)
        self._conns.append(conn)
        return conn

    def _state(self, instance: CaptureInstance) -> TableState:
        return TableState(instance, topics=self._common.topics, modes=self.modes,
                          columns=self._common.columns, key_spec=self._common.key_spec)

    def _builder(self, database: str) -> EventBuilder:
        # one emitter per database: each has its own transactions
        return EventBuilder(prefix=self.prefix, database=database, emitter=ChangeEmitter.from_settings(self._common),
                            schema_changes=self.schema_changes, clock=self.clock)

    def _stream_settings(self) -> StreamSettings:
        return StreamSettings(self._common.table_filter, self.config.get("data.query.mode"),
                              self.config.get("database.sqlserver.agent.status.query") or AGENT_STATUS,
                              self._common.max_batch)

    def _offset(self) -> dict[str, Any]:
        """Every database's position, plus what signals must keep across a restart."""
        streams = self.streamer.streams
        offset: dict[str, Any] = {"databases": {**self._held, **{db: s.offset() for db, s in streams.items()}}}
        self.signals.state(offset)
        return offset

    # ---- start-up: what each database does first --------------------------------------------------

    def _resume(self, conn: QueryLayer, stored: dict[str, Any],
                instances: list[CaptureInstance] | None = None) -> DatabaseStream:
        """A stream continuing after ``stored`` (this database's offset), with fresh state."""
        builder = self._builder(conn.database)
        builder.restore_transaction(stored)
        stream = DatabaseStream(conn, builder, self._stream_settings(), Position.from_offset(stored), self._state)
        self.signals.wire(stream)
        stream.start(instances)
        return stream

    def _reconnect(self, database: str, delivered: dict[str, Any]) -> DatabaseStream:
        """The streamer's lost connection, opened again: a stream after the last batch it handed out."""
        replacement = self._resume(self._open(database), delivered)
        if replacement.signals is not None:
            # signals acted on after that batch are read again: their effects start over too
            self.signals.restore(self._last_offset)
        return replacement

    def _start_database(self, database: str, stored: dict[str, Any] | None) -> Iterator[Batch]:
        """What ``database`` does first, as core decides from snapshot.mode and its stored offset
        (cdc.core.snapshot_mode): stream on from the offset, take a snapshot (again), or nothing."""
        conn = self._open(database)
        instances = self._check_tables(conn)
        attempt = interrupted_attempt(stored)
        if attempt:
            log.warning("database %s: the snapshot of an earlier run was interrupted: taking it again (each table "
                        "starts with a truncate event, so consumers drop what they applied of the first attempt)",
                        database)
            stored = None
        gone = catalog.purged(conn, instances, Position.from_offset(stored).commit_lsn) if stored else None
        decision = decide(self.snapshot_mode, stored, log_reaches=gone is None)
        log.info("database %s: %s (%s)", database, decision.plan.value, decision.reason)
        if decision.plan is Plan.NOTHING:
            self._held[database] = stored or {}
        elif decision.plan is Plan.STREAM:
            assert stored is not None
            self.streamer.add(self._resume(conn, stored, instances))
        elif decision.plan in (Plan.SNAPSHOT, Plan.SCHEMA):
            if gone is not None:
                log.warning("%s; taking a new snapshot (%s)", gone.message, decision.reason)
            stopping = self._is_stopping
            if not (yield from wait(self._common.snapshot_delay_ms, "snapshot.delay.ms",
                                    f"the snapshot of database {database}", stopping)):
                return
            yield from self._snapshot_database(conn, instances, with_data=decision.plan is Plan.SNAPSHOT,
                                               then_stop=decision.then_stop, attempt=attempt)
            if not decision.then_stop:  # Debezium's, after each database's snapshot
                yield from wait(self._common.streaming_delay_ms, "streaming.delay.ms", "streaming", stopping)
        elif decision.plan is Plan.LOG_GONE and gone is not None:
            raise gone
        else:  # LOG_START (never), RESUME_SNAPSHOT: a mode and an offset SQL Server has not
            raise SourceError(f"database {database}: {decision.plan.value} ({decision.reason}) is not something the "
                              "SQL Server source does", fix=f"set snapshot.mode to one of {', '.join(SNAPSHOT_MODES)}")

    def _check_tables(self, conn: QueryLayer) -> list[CaptureInstance]:
        """CDC on ``conn``'s database and its included tables, the signal table as it must be: the capture
        instances of the included tables, the signal table's left out."""
        catalog.check_database(conn)
        instances = catalog.read_instances(conn, self._common.table_filter)
        catalog.require_instances(conn, instances, self._common.table_filter)
        self.signals.check_table(conn)
        return [i for i in instances if not self.signals.is_signal_table(conn.database, i)]

    def _snapshot_database(self, conn: QueryLayer, instances: list[CaptureInstance], *, with_data: bool,
                           then_stop: bool, attempt: int) -> Iterator[Batch]:
        """The snapshot (snapshot.py), then the database's stream from its LSN (or, initial_only, its offset
        held). Before its first row this database's offset is the restart marker of attempt ``attempt`` + 1
        (cdc.core.snapshot_restart). snapshot.resumable: the rows come in chunks while streaming instead,
        the queue in the first offset."""
        database = conn.database
        chunked = self._chunked(database, with_data and not then_stop)
        rows = with_data and not chunked
        restart = None
        if rows:
            self._held[database] = attempt_offset(attempt)
            restart = Restart(self._offset(), restarted=attempt > 0)
        builder = self._builder(database)
        snap_conn = self._open(database)
        snapshot = self._snapshotter(snap_conn, builder, with_data=rows,
                                     row_counts=catalog.row_counts(conn) if rows else {})
        yield from snapshot.run(instances, restart)  # no other offset until the snapshot is complete
        snap_conn.close()
        self._conns.remove(snap_conn)
        self._held.pop(database, None)
        stream = DatabaseStream(conn, builder, self._stream_settings(), Position(snapshot.lsn), self._state)
        self.signals.wire(stream)
        stream.start([plan.current for plan in snapshot.plans.values()]
                     + [plan.next for plan in snapshot.plans.values() if plan.next is not None])
        if then_stop:
            self._held[database] = {**stream.offset(), "snapshot_only": True}
        else:
            self.streamer.add(stream)
            if chunked:
                self.signals.queue_initial_snapshot(database, lambda name: self._common.snapshot.snapshots(
                    _table_name(name)))
        yield Batch([], self._offset())

    def _chunked(self, database: str, resumable: bool) -> bool:
        """Whether snapshot.resumable reads the rows in chunks between watermarks while streaming."""
        if not resumable or not self.config.get("snapshot.resumable"):
            return False
        if not self.signals.reads_watermarks(database):
            log.warning("snapshot.resumable needs the signal table (signal.data.collection, channel 'source') in "
                        "database %s for the watermarks of its chunks: taking the classic snapshot", database)
            return False
        self._common.snapshot.refuse_overrides("snapshot.resumable (its chunks are read by key, between "
                                               "watermarks)", "leave out snapshot.resumable or the overrides")
        return True

    def _snapshotter(self, conn: QueryLayer, builder: EventBuilder, *, with_data: bool,
                     row_counts: dict[int, int]) -> Snapshot:
        config, database, table_filter = self.config, conn.database, self._common.table_filter
        snapshot = Snapshot(conn, builder, isolation=config.get("snapshot.isolation.mode"),
                            lock_timeout_ms=config.get("snapshot.lock.timeout.ms"),
                            fetch_size=config.get("snapshot.fetch.size"), with_data=with_data,
                            read_structure=lambda: [i for i in catalog.read_instances(conn, table_filter)
                                                    if not self.signals.is_signal_table(database, i)],
                            make_state=self._state, stopping=lambda: self._stopping,
                            progress=config.get("snapshot.progress"),
                            estimated_rows=lambda instance: row_counts.get(instance.source_object_id))
        snapshot.notifier = self._common.notifier
        snapshot.selection = self._common.snapshot
        return snapshot


def _table_name(qualified: str) -> TableName:
    """database.schema.table as Debezium's SQL Server connector names a table."""
    database, schema, table = qualified.split(".", 2)
    return database, schema, table
