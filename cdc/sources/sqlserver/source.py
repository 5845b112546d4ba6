"""SQL Server source: CDC change tables polled by LSN, after an optional snapshot.

This class wires the parts, none of which holds another; the start-up steps of each database
(change_sources.py) go to the core's coordinator (cdc.core.coordinator, each database a partition), which
decides per database what to do at start:

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
from cdc.core.coordinator import Coordinator, StartSettings
from cdc.core.emitter import ChangeEmitter
from cdc.core.errors import ConfigError, SourceError
from cdc.core.heartbeat import Heartbeat
from cdc.core.incremental import IncrementalSnapshot
from cdc.core.records import Batch, ChangeEvent
from cdc.core.retry import RetryPolicy
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.snapshot_mode import Plan, decide, normalize
from cdc.core.snapshot_selection import OVERRIDES_FIX, PARALLEL_SNAPSHOT
from cdc.core.source import CloudEventsMaker, SourceSettings
from cdc.core.topics import SQLSERVER_LAYOUT
from cdc.sources.sqlserver import catalog, parallel
from cdc.sources.sqlserver.change_sources import SqlServerChangeEventSources
from cdc.sources.sqlserver.changes import Position
from cdc.sources.sqlserver.config import SNAPSHOT_MODES, SQLSERVER_OPTIONS
from cdc.sources.sqlserver.connection import ConnectionSettings, OdbcConnection, QueryLayer
from cdc.sources.sqlserver.events import EventBuilder
from cdc.sources.sqlserver.queries import AGENT_STATUS
from cdc.sources.sqlserver.signals import SqlServerSignals
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
        self._parts = SqlServerChangeEventSources(
            config, self._common, databases=self.databases, signals=self.signals, streamer=self.streamer,
            held=self._held, open_conn=self._open, close_conn=self._close, builder=self._builder, state=self._state,
            stream_settings=self._stream_settings, resume=self._resume, offset=self._offset,
            stopping=self._is_stopping)
        # no SKIPPED notification: the SQL Server source has not sent it (SILENT)
        self._coordinator = Coordinator.partitioned(
            self._parts, StartSettings(self.snapshot_mode, self._common.snapshot_delay_ms,
                                       self._common.streaming_delay_ms), self._is_stopping)

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
        """The core's start-up sequence (cdc.core.coordinator) over this source's parts (change_sources.py),
        one database a partition."""
        self._parts.stored(offset)  # another source's offset is refused before anything
        self.streamer.streams.clear()  # a restarted run (the engine's, after close) starts from ``offset`` alone
        self._held.clear()
        self.signals.restore(offset or {})
        self._last_offset = dict(offset or {})
        for batch in self._coordinator.run(offset):
            if batch.offset is not None:
                self._last_offset = batch.offset  # what a reconnect restores the signal state from
            yield batch

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

    def _close(self, conn: QueryLayer) -> None:
        conn.close()
        self._conns.remove(conn)

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
