"""MySQL / MariaDB source: the binlog read with python-mysql-replication, after an optional snapshot.

    connect, check the server (binlog on, ROW format, FULL row image, grants)
    no offset:   snapshot (snapshotter.py): consistent binlog position P, schema -> history, rows as op r
    offset:      where it continues here (resume.py): by GTID where the server has them (on any server of the
                 replication topology that holds every transaction delivered), else by file and position;
                 rebuild the schema from the history up to the offset (history.py), not the live tables
    stream from P / the offset (streamer.py reads, stream.py decodes):
        GTID / BEGIN      a transaction starts at its first event's position
        TABLE_MAP         the binlog's column list, named from our schema at this position
        WRITE/UPDATE/DELETE_ROWS -> c / u / d events (+ tombstones, key changes)
        XID / COMMIT      END of the transaction; the offset moves past it
        QUERY (DDL)       applied to the schema model, recorded in the history, schema change event

This module wires the parts, none of which holds another: the snapshotter, the streamer, the schema history
(history.py), the signals (signals.py), the table catalog (tables.py); the start-up steps (change_sources.py)
go to the core's coordinator (cdc.core.coordinator), which reads the stored offset, lets ``decide()`` choose
the plan and runs them.

Offsets are Debezium's: ``file`` and ``pos`` where to restart (after the last transaction
delivered, or the start of a transaction delivered in part), ``event`` rows events of that
transaction already delivered and ``row`` rows of the next, plus ``gtids``, ``server_id`` and
``ts_sec``. A restart inside a transaction re-reads it from its start and skips what was
delivered, so nothing is lost and nothing acknowledged repeats.
"""
from __future__ import annotations

import logging
import random
from collections.abc import Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import pymysql

from cdc.config import CORE_OPTIONS, Config, Option
from cdc.core.coordinator import Coordinator, StartSettings
from cdc.core.emitter import ChangeEmitter
from cdc.core.envelope import now_ts
from cdc.core.errors import CdcError, ConfigError
from cdc.core.filters import NameFilter
from cdc.core.heartbeat import Heartbeat
from cdc.core.incremental import IncrementalSnapshot
from cdc.core.native_row import native_module
from cdc.core.post_processors import TableLookup
from cdc.core.records import Batch, ChangeEvent
from cdc.core.schema import Table
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.schema_history import SchemaHistory
from cdc.core.snapshot_mode import Plan, decide, normalize
from cdc.core.snapshot_selection import OVERRIDES_FIX, PARALLEL_SNAPSHOT
from cdc.core.source import CloudEventsMaker, SourceSettings
from cdc.core.topics import BINLOG_LAYOUT
from cdc.sources.mysql import parallel
from cdc.sources.mysql import snapshot as snap
from cdc.sources.mysql.capture import CaptureFilter
from cdc.sources.mysql.change_sources import MySqlChangeEventSources
from cdc.sources.mysql.chunks import ChunkTables
from cdc.sources.mysql.config import MYSQL_OPTIONS
from cdc.sources.mysql.connection import ConnectionSettings, ServerInfo, server_checks, with_retries
from cdc.sources.mysql.gtids import DeliveredGtids
from cdc.sources.mysql.history import SchemaHistoryRecords, open_history
from cdc.sources.mysql.position import BinlogPosition, position_key
from cdc.sources.mysql.reselect import table_lookup
from cdc.sources.mysql.signals import MySqlSignals
from cdc.sources.mysql.snapshotter import MySqlSnapshotter, SnapshotSettings
from cdc.sources.mysql.source_info import CLOUD_EVENTS, source_block
from cdc.sources.mysql.stream import BinlogChanges, StreamCallbacks, StreamSettings
from cdc.sources.mysql.streamer import BinlogStreamer
from cdc.sources.mysql.tables import TableCatalog, TableState

if TYPE_CHECKING:  # what the operating methods hand out (cdc.core.source: ReportsLag, ReportsStatus)
    from cdc.metrics.lag import LagReport, Watch
    from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)

T = TypeVar("T")


def _run_through(steps: Generator[Any, None, T]) -> T:
    """What a generator returns, its items dropped."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


class MySqlSource:
    """MySQL / MariaDB: the binlog (ROW format) after an optional consistent snapshot."""

    name: ClassVar[str] = "mysql"
    title: ClassVar[str] = "MySQL / MariaDB source"  # in the docs' option reference
    connector_classes: ClassVar[tuple[str, ...]] = ("io.debezium.connector.mysql.MySqlConnector",
                                                    "io.debezium.connector.mariadb.MariaDbConnector")
    options: ClassVar[tuple[Option, ...]] = MYSQL_OPTIONS
    metrics_plugin: ClassVar[str] = "mysql"  # Debezium's metrics label (cdc.core.source.NamesItsMetrics)
    # Debezium's CloudEvents makers by connector (cdc.core.source.MakesCloudEvents)
    cloud_events: ClassVar[Mapping[str, CloudEventsMaker]] = CLOUD_EVENTS
    # For readers that replay between two offsets (Spark): what locates an offset, and the sort
    # key of one between transactions (events' ``position`` starts with (file index, tx pos)).
    POSITION_KEYS: ClassVar[tuple[str, ...]] = ("file", "pos", "event", "row")

    @staticmethod
    def committed_key(offset: dict[str, Any]) -> tuple[int, ...] | None:
        if offset.get("event") or offset.get("row"):
            return None
        return position_key(str(offset.get("file", "")), int(offset.get("pos") or 0))[::2]

    def __init__(self, config: Config) -> None:
        config.declare(CORE_OPTIONS).declare(MYSQL_OPTIONS)
        self.config = config
        self.settings = ConnectionSettings.from_config(config)
        common = SourceSettings.from_config(config, BINLOG_LAYOUT)
        self.prefix = common.prefix
        self.client_server_id: int = config.get("database.server.id") or random.randint(5400, 6400)
        self.snapshot_mode: str = normalize(config.get("snapshot.mode"))
        self.emitter = ChangeEmitter.from_settings(common)
        self.include_query: bool = config.get("include.query")
        self.topics = common.topics
        # Rows as the compiled codec's JSON (cdc.sources.mysql.native_rows): set by the pipeline
        # when they go straight to the JSON converter.
        self.native_rows = False
        self.capture = CaptureFilter.from_config(config, common.table_filter)
        includes, excludes = config.get("gtid.source.includes"), config.get("gtid.source.excludes")
        if includes and excludes:
            raise ConfigError("gtid.source.includes and gtid.source.excludes are both set; Debezium refuses that",
                              fix="keep one of them")
        self._gtid_sources = NameFilter(includes, excludes)  # the GTID sources whose transactions are captured
        self._selection = common.snapshot
        self._delays = (common.snapshot_delay_ms, common.streaming_delay_ms)
        self._tables = TableCatalog(config, topics=self.topics, capture=self.capture,
                                    columns=common.columns, key_spec=common.key_spec)
        self._history = SchemaHistoryRecords(open_history(config), self.prefix)
        self._signals = MySqlSignals(
            config, settings=self.settings, captured_keys=self._tables.captured_keys,
            tables=ChunkTables(self._tables.model, self._tables.state, self.incremental_source_block),
            position=lambda: self._streamer.position, offset=lambda: self._offset(self._streamer.position))
        self._signals.incremental.notifier = common.notifier
        self._snapshotter = MySqlSnapshotter(
            SnapshotSettings.from_config(config, self.prefix, common.snapshot), capture=self.capture,
            connect=lambda: with_retries(self.settings, "connecting for the snapshot", self.settings.connect,
                                         self._is_stopping),
            new_schema=self._tables.new_schema, use_schema=self._tables.use, table_state=self._tables.state,
            record=self._history.record, stopping=self._is_stopping)
        self._streamer = BinlogStreamer(
            self.settings, server_id=self.client_server_id,
            heartbeat_s=max(config.get("binlog.heartbeat.interval.ms"), 1) / 1000, max_batch=common.max_batch,
            heartbeat=Heartbeat(self.prefix, self.topics.heartbeat_topic(), config.get("heartbeat.interval.ms")),
            stopping=self._is_stopping, offset=self._offset, between=self._signals.between_transactions,
            wants_turn=lambda: self._signals.wants_turn)
        self._streamer.statements = self.include_query
        self._notifier = self._snapshotter.notifier = common.notifier
        self._heartbeat_query: str | None = config.get("heartbeat.action.query")
        if self._heartbeat_query:
            self._streamer.heartbeat_action = self._run_heartbeat_query
        self.info: ServerInfo | None = None
        self._schema_events = SchemaChangeEvents(self.topics.schema_change_topic(), "mysql", self._tables.source_schema)
        self._conn: pymysql.connections.Connection | None = None  # queries beside the stream
        self._stopping = False
        self._parts = MySqlChangeEventSources(
            config, snapshot_mode=self.snapshot_mode, connect=self._connect, control_conn=self._control_conn,
            server=self._server, schema_events=lambda: self._schema_events, gtid_sources=self._gtid_sources,
            signals=self._signals, snapshotter=self._snapshotter, tables=self._tables, history=self._history,
            selection=self._selection, offset=self._offset, stream=self._stream_from)
        self._coordinator = Coordinator(self._parts, StartSettings(self.snapshot_mode, *self._delays, common.notifier),
                                        self._is_stopping)

    # ---- the Source contract ----------------------------------------------------------------

    @property
    def streaming(self) -> bool:
        """True once the binlog reader is open at its start position."""
        return self._streamer.streaming

    @property
    def encoded_batches(self) -> bool:
        """With native_rows, an initial snapshot's rows also in batches the codec encoded (EncodedRows),
        which the engine and Spark's reader take: set by them; off without the compiled codec. A stream's rows events
        of inserts go in encoded batches too."""
        return self._snapshotter.encoded

    @encoded_batches.setter
    def encoded_batches(self, value: bool) -> None:
        self._snapshotter.encoded = value and native_module() is not None

    def stop(self) -> None:
        self._stopping = True

    def _is_stopping(self) -> bool:
        return self._stopping

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to release: the server keeps binlogs by its own retention settings."""

    def close(self) -> None:
        self._streamer.close()
        if self._conn is not None and self._conn.open:
            self._conn.close()
        self._conn = None
        self._signals.close()
        self._history.close()

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        """The core's start-up sequence (cdc.core.coordinator) over this source's parts (change_sources.py)."""
        return self._coordinator.run(offset)

    @property
    def history(self) -> SchemaHistory:
        """The schema history store (schema.history.internal)."""
        return self._history.store

    # ---- start-up ---------------------------------------------------------------------------

    def _connect(self) -> pymysql.connections.Connection:
        """The control connection, the server checked and its facts handed to the parts that need them."""
        conn = self._control_conn()
        self.info = info = server_checks(conn, self.settings)
        self._tables.connected(info)
        self._history.server = info
        self._schema_events = SchemaChangeEvents(self.topics.schema_change_topic(), info.flavor,
                                                 self._tables.source_schema)
        return conn

    def _server(self) -> ServerInfo:
        assert self.info is not None
        return self.info

    def _stream_from(self, offset: dict[str, Any]) -> Iterator[Batch]:
        info = self._server()
        assert self._tables.schema is not None
        start = BinlogPosition.from_offset(offset)
        changes = BinlogChanges(
            start=start, schema=self._tables.schema, emitter=self.emitter, schema_events=self._schema_events,
            gtids=DeliveredGtids(info.mariadb, start.gtids), settings=self._stream_settings(),
            hooks=StreamCallbacks(table_state=self._tables.state, schema_changed=self._tables.schema_changed,
                                  record_ddl=self._history.record, signal_row=self._signals.on_row,
                                  observe=self._signals.observe,
                                  transaction_starts=self._signals.transaction_starts,
                                  watching=self._signals.watching))
        changes.recorded = self._history.covers
        if self.config.get("gtid.source.filter.dml.events") and not self._gtid_sources.is_open:
            changes.dml_wanted = self._gtid_sources
        self._streamer.gtid_start, self._streamer.mariadb = self._parts.resume.gtids, info.mariadb
        # a start without GTIDs (snapshot.mode=never: the oldest binlog) knows too little of what came before
        self._streamer.reopen_by_gtid = info.gtid_mode and bool(start.gtids) \
            and not self.config.get("gtid.ignore.on.recovery")
        changes.native = self.native_rows
        changes.encoded = self.native_rows and self.encoded_batches
        self._signals.restore(offset)
        yield from self._streamer.batches(changes)

    def _stream_settings(self) -> StreamSettings:
        capture = self.capture
        return StreamSettings(
            prefix=self.prefix, flavor=self.flavor, include_query=self.include_query,
            include_schema_changes=self.config.get("include.schema.changes"),
            only_captured_tables_ddl=capture.only_captured_tables_ddl,
            only_captured_databases_ddl=capture.only_captured_databases_ddl, signal_table=capture.signal_table,
            captured=capture.captured, captured_database=capture.captured_database)

    def _offset(self, position: dict[str, Any]) -> dict[str, Any]:
        """An offset to hand out: the binlog position plus what signals must keep across a restart, and the
        server its file and position belong to (a position carried from the stored offset names its own)."""
        offset = dict(position)
        self._signals.state(offset)
        if self.info is not None and "server_identity" not in offset:
            offset["server_identity"] = self.info.identity
        return offset

    def reselect_lookup(self, table_id: str) -> TableLookup | None:
        """A captured table, for the reselect post processor (cdc.core.post_processors.Reselects)."""
        database, _, table = table_id.partition(".")
        state = self._tables.state(database, table) if self._tables.schema is not None else None
        return None if state is None else table_lookup(state, self._control_conn)

    def _run_heartbeat_query(self) -> None:
        """heartbeat.action.query on the connection beside the binlog reader; a failure does not stop the stream."""
        try:
            with self._control_conn().cursor() as cursor:
                cursor.execute(self._heartbeat_query)
        except (pymysql.MySQLError, CdcError) as exc:
            log.warning("heartbeat.action.query failed: %s", exc)

    def _control_conn(self) -> pymysql.connections.Connection:
        if self._conn is None or not self._conn.open:
            self._conn = with_retries(self.settings, "connecting to MySQL", self.settings.connect, self._is_stopping)
        return self._conn

    # ---- Spark: the snapshot in chunks read by executors (cdc.sources.mysql.parallel) -----------

    def plan_parallel_snapshot(self, chunk_rows: int) -> dict[str, Any] | None:
        """Record the schema at a binlog position (the history the stream decodes with) and cut every
        captured table into key chunks; the stream starts at that position. None when snapshot.mode
        takes no snapshot here: the stream starts as it would without Spark."""
        conn = self._connect()
        decision = decide(self.snapshot_mode, None, log_reaches=False)
        if decision.plan is not Plan.SNAPSHOT or decision.then_stop:
            return None
        self._selection.refuse_overrides(PARALLEL_SNAPSHOT, OVERRIDES_FIX)
        _, position = _run_through(self._snapshotter.take(self._server(), self._schema_events, with_data=False,
                                                          final=False))  # the schema, into the history
        assert self._tables.schema is not None
        tables = [(d, t) for d, t in self.capture.tables_now(conn) if self._selection.snapshots((d, None, t))]
        chunks = parallel.plan_chunks(conn, tables, self._tables.schema.table, chunk_rows)
        log.info("snapshot of %d tables in %d chunks, streaming from binlog %s:%s", len({c["table"] for c in chunks}),
                 len(chunks), position["file"], position["pos"])
        return {"chunks": chunks, "ts_us": now_ts()[1], "file": position["file"], "pos": position["pos"],
                "stream_from": self._offset(position)}

    def release_parallel_snapshot(self) -> None:
        """Nothing is held: the chunks are read as the tables are now."""

    def parallel_chunk_arrow(self, plan: dict[str, Any], chunk: parallel.Chunk) -> None:
        return None  # no columnar reader for MySQL here: the Python converters

    def parallel_chunk_events(self, plan: dict[str, Any], chunk: parallel.Chunk) -> Iterator[list[ChangeEvent]]:
        """The chunk's rows as read events (on an executor), with the table's schema as it is now."""
        database, _, table = chunk["table"].partition(".")
        self.table_schema(chunk["table"])  # reads the server's description of the table
        state = self._tables.state(database, table)
        assert state is not None
        yield from parallel.chunk_events(self._control_conn(), plan, chunk, state, flavor=self.flavor,
                                         prefix=self.prefix, fetch_size=self.config.get("snapshot.fetch.size"))

    # ---- the captured tables (cdc.core.source.DescribesTables) -------------------------------

    def captured_tables(self) -> list[str]:
        """The tables this configuration captures (database/table include lists), as they are now, by name."""
        names = self.capture.tables_now(self._control_conn())
        return sorted(f"{d}.{t}" for d, t in names if not self.capture.is_signal_table(d, t))

    def table_schema(self, qualified: str) -> dict[str, Any]:
        """The Connect struct schema of one captured table's rows (``before``/``after``), as it is now."""
        conn = self._connect()
        database, _, table = qualified.partition(".")
        schema = self._tables.new_schema()
        ddl_database, ddl_table = snap.create_statements(conn, qualified)
        schema.apply(ddl_database, database)
        schema.apply(ddl_table, database)
        self._tables.use(schema)
        state = self._tables.state(database, table)
        assert state is not None
        return state.envelope.row_schema

    def captured_database(self, database: str) -> bool:
        return self.capture.captured_database(database)

    def captured(self, database: str, table: str) -> bool:
        return self.capture.captured(database, table)

    # ---- signals and incremental snapshots (signals.py) -----------------------------------------

    def table_model(self, database: str, table: str) -> Table | None:
        return self._tables.model(database, table)

    def table_state(self, database: str, table: str) -> TableState | None:
        return self._tables.state(database, table)

    def incremental_source_block(self, database: str, table: str, ts_ms: int) -> dict[str, Any]:
        """The source block of rows read by an incremental snapshot: the stream's position."""
        position = self._streamer.position
        return source_block(self.flavor, self.prefix, database, table, ts_ms=ts_ms,
                            server_id=int(position.get("server_id") or (self.info.server_id if self.info else 0)),
                            file=str(position.get("file") or ""), pos=int(position.get("pos") or 0),
                            snapshot="incremental")

    @property
    def incremental(self) -> IncrementalSnapshot:
        """The incremental snapshot's state machine (a replaying reader sets its run)."""
        return self._signals.incremental

    def send_signal(self, type_: str, data: dict[str, Any], id_: str | None = None) -> str:
        return self._signals.send(type_, data, id_)

    # ---- naming ---------------------------------------------------------------------------------

    @property
    def flavor(self) -> str:
        return self._tables.flavor

    @property
    def connector_name(self) -> str:
        """source.connector and the context header: mysql or mariadb, as the server says."""
        return self.flavor

    # ---- operating: lag and status (cdc.core.source: ReportsLag, ReportsStatus; the code: lag.py) ----

    def lag_watch(self, metrics: PipelineMetrics) -> Watch:
        from cdc.sources.mysql.lag import MySqlWatch

        return MySqlWatch(self.settings.connect, metrics)

    @classmethod
    def status_report(cls, config: Config, offset: dict[str, Any] | None) -> LagReport:
        from cdc.sources.mysql.lag import status_report

        return status_report(config, offset)
