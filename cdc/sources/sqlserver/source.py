"""SQL Server source: CDC change tables polled by LSN, after an optional snapshot.

    for each database of database.names:
      connect, check CDC is enabled (database, included tables)
      offset stored?  yes: check the change tables still hold it (cleanup job)
                      no:  snapshot (snapshot.py): structure, then rows unless no_data
    loop: for each database, poll its change tables (stream.py) -> batches
          when idle: END of an open transaction after transaction.end.idle.ms; sleep poll.interval.ms

Offsets: ``{"databases": {<db>: {commit_lsn, change_lsn, event_serial_no, snapshot_completed,
[transaction_*]}}}``: Debezium's per-database offset, one entry per database. Topics:
``<topic.prefix>.<db>.<schema>.<table>``; schema change events on ``<topic.prefix>``.

Signals (``cdc.core.signals``): rows inserted into the CDC-enabled signal table
(``signal.data.collection`` = ``<db>.<schema>.<table>``) come back through its change table in
commit order with the data and are acted on, never emitted; the file / Kafka channels are read
between polls. Incremental snapshots (``cdc.core.incremental``) of tables of the signal table's
database run between polls: open watermark, chunk (``chunks.py``), close watermark, each an INSERT
into the signal table; the window is closed when the stream reads the close watermark. The
progress (``incremental``, ``blocking``, ``signal_file_pos``) is kept next to ``databases`` in the
offset.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, ClassVar

from cdc.config import CORE_OPTIONS, Config, Option
from cdc.core import signals as sig
from cdc.core.blocking_snapshot import blocking_snapshots
from cdc.core.emitter import ChangeEmitter
from cdc.core.envelope import OP_READ
from cdc.core.errors import ConfigError, SourceError
from cdc.core.heartbeat import Heartbeat
from cdc.core.incremental import ChunkError, IncrementalSnapshot
from cdc.core.records import Batch, ChangeEvent
from cdc.core.retry import RetryPolicy
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.signal_handler import SignalHandler
from cdc.core.source import SourceSettings
from cdc.core.topics import sanitize_topic
from cdc.sources.sqlserver import catalog, chunks, parallel
from cdc.sources.sqlserver import queries as q
from cdc.sources.sqlserver.changes import Position
from cdc.sources.sqlserver.config import SNAPSHOT_MODES, SQLSERVER_OPTIONS
from cdc.sources.sqlserver.connection import ConnectionSettings, OdbcConnection, QueryLayer
from cdc.sources.sqlserver.events import EventBuilder
from cdc.sources.sqlserver.lsn import Lsn
from cdc.sources.sqlserver.queries import AGENT_STATUS
from cdc.sources.sqlserver.snapshot import Snapshot
from cdc.sources.sqlserver.source_info import SOURCE_SCHEMA, source_block
from cdc.sources.sqlserver.stream import DatabaseStream, StreamSettings, StreamSignals
from cdc.sources.sqlserver.tables import CaptureInstance, TableState, plan_tables
from cdc.sources.sqlserver.types import TypeModes

if TYPE_CHECKING:  # what the operating methods hand out (cdc.core.source: ReportsLag, ReportsStatus)
    from cdc.metrics.lag import LagReport, Watch
    from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)

Connect = Callable[[str], QueryLayer]
SLEEP_SLICE_S = 0.1


class SqlServerSource:
    name: ClassVar[str] = "sqlserver"
    title: ClassVar[str] = "SQL Server source"  # in the docs' option reference
    connector_classes: ClassVar[tuple[str, ...]] = ("io.debezium.connector.sqlserver.SqlServerConnector",)
    connector_name: ClassVar[str] = "sqlserver"  # source.connector and the context header
    metrics_plugin: ClassVar[str] = "sql_server"  # Debezium's metrics label (cdc.core.source.NamesItsMetrics)
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
        if len(databases) != 1:
            return None
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
        self.snapshot_mode: str = config.get("snapshot.mode")
        if self.snapshot_mode not in SNAPSHOT_MODES:
            raise ConfigError(f"snapshot.mode={self.snapshot_mode!r} is not supported by the SQL Server source",
                              fix=f"use one of {', '.join(SNAPSHOT_MODES)}")
        if not self.databases:
            raise ConfigError("database.names is required: the databases to capture", fix="set database.names=testDB")
        self.settings = ConnectionSettings.from_config(config)
        self._connect: Connect = connect or (lambda db: OdbcConnection(self.settings, db))
        self.clock = clock or time.time_ns
        self._sleep = sleep or time.sleep
        common = SourceSettings.from_config(config)
        self._common = common
        self.table_filter, self.column_filter = common.table_filter, common.column_filter
        self.key_spec = common.key_spec
        self.modes = TypeModes.from_config(config)
        self.poll_s = config.get("poll.interval.ms") / 1000
        self.end_idle_s = config.get("transaction.end.idle.ms") / 1000
        self.max_batch: int = config.get("max.batch.size")
        self.schema_changes = (SchemaChangeEvents(sanitize_topic(self.prefix), "sqlserver", SOURCE_SCHEMA)
                               if config.get("include.schema.changes") else None)
        self._streams: dict[str, DatabaseStream] = {}
        self._finished: dict[str, dict[str, Any]] = {}  # initial_only databases: snapshot taken
        self._conns: list[QueryLayer] = []
        self._stopping = False
        # signals and incremental snapshots (cdc.core.signals, cdc.core.incremental)
        self.signal_table: tuple[str, str, str] | None = None  # database, schema, table
        if config.get("signal.data.collection"):
            self.signal_table = chunks.split_signal_table(config.get("signal.data.collection"), self.databases)
        self.signal_source = "source" in (config.get("signal.enabled.channels") or []) and self.signal_table is not None
        self.resumable: bool = config.get("snapshot.resumable")
        self._reader = chunks.SqlServerChunkReader(self._signal_stream, self.prefix, self.clock)
        self._signals = (chunks.SignalWriter(self._signal_conn, self.signal_table[1], self.signal_table[2])
                         if self.signal_table else None)
        self._incr = IncrementalSnapshot(self._reader, self._write_watermark,
                                         config.get("incremental.snapshot.chunk.size"))
        self._signal_handler = SignalHandler(self._incr, captured_keys=self._captured_keys,
                                             watermarks_writable=self.signal_source,
                                             channels=sig.polled_channels(config))
        self._last_offset: dict[str, Any] = {}
        self.heartbeat = Heartbeat(self.prefix, config.get("heartbeat.topics.prefix"),
                                   config.get("heartbeat.interval.ms"))

    # ---- the Source contract ----------------------------------------------------------------

    def stop(self) -> None:
        self._stopping = True

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to release: the change tables are trimmed by the server's cleanup job."""

    def connect_to(self, database: str) -> QueryLayer:
        """A new connection to one captured database (the lag monitor's: never the stream's)."""
        return self._connect(database)

    # ---- operating: lag and status (cdc.core.source: ReportsLag, ReportsStatus; the code: lag.py) ----

    def lag_watch(self, metrics: PipelineMetrics) -> Watch:
        from cdc.sources.sqlserver.lag import SqlServerWatch

        return SqlServerWatch(self.connect_to, metrics, list(self.databases))

    @classmethod
    def status_report(cls, config: Config, offset: dict[str, Any] | None) -> LagReport:
        from cdc.sources.sqlserver.lag import status_report

        return status_report(config, offset)

    def close(self) -> None:
        for conn in self._conns:
            conn.close()
        self._conns.clear()
        self._signal_handler.close()

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        stored = self._stored(offset)
        self._signal_handler.restore(offset or {})
        self._last_offset = dict(offset or {})
        for batch in self._run(stored):
            if batch.offset is not None:
                self._last_offset = batch.offset  # what a reconnect restores the signal state from
            yield batch

    def _run(self, stored: dict[str, dict[str, Any]]) -> Iterator[Batch]:
        for database in self.databases:
            yield from self._start_database(database, stored.get(database))
        if not self._streams:
            return  # initial_only: every database has its snapshot
        yield from self._poll_loop()

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
        conn = self._connect(database)
        try:
            return self._captured_instances(conn)
        finally:
            conn.close()

    def _captured_instances(self, conn: QueryLayer) -> list[CaptureInstance]:
        """The capture instances of the included tables of ``conn``'s database, the signal table's left out."""
        catalog.check_database(conn)
        return [i for i in catalog.read_instances(conn, self.table_filter)
                if not self._is_signal_table(conn.database, i)]

    # ---- Spark: the initial snapshot in chunks read by executors (parallel.py) -----------------

    def plan_parallel_snapshot(self, chunk_rows: int) -> dict[str, Any] | None:
        """The capture job's maximum LSN and every captured table's key chunks; the stream starts at
        that LSN. None when snapshot.mode takes no snapshot, or takes it resumably (the stream then
        reads it in chunks between watermarks), or stops after it: the stream decides."""
        if self.snapshot_mode not in ("initial", "when_needed") or self.resumable:
            return None
        database = self.databases[0]  # one database under Spark (check_replayable)
        conn = self._connect(database)
        try:
            instances = self._captured_instances(conn)
            catalog.require_instances(conn, instances, self.table_filter)
            lsn = catalog.max_lsn(conn)  # NULL before any change: the stream then reads them all
            chunks_ = [c for plan in plan_tables(instances, lsn).values()
                       for c in parallel.table_chunks(conn, plan.current, chunk_rows)]
        finally:
            conn.close()
        log.info("snapshot of database %s in %d chunks, streaming from LSN %s", database, len(chunks_), lsn)
        return {"chunks": chunks_, "ts_us": self.clock() // 1000, "lsn": str(lsn),
                "stream_from": {"databases": {database: {**Position(lsn).to_offset(), "snapshot_completed": True}}}}

    def release_parallel_snapshot(self) -> None:
        """Nothing is held: the chunks are read as the tables are now."""

    def parallel_chunk_arrow(self, plan: dict[str, Any], chunk: parallel.Chunk) -> None:
        return None  # no columnar reader for SQL Server: the Python converters

    def parallel_chunk_events(self, plan: dict[str, Any], chunk: parallel.Chunk) -> Iterator[list[ChangeEvent]]:
        """The chunk's rows as read events (on an executor), decoded by the capture instance the
        stream reads at the plan's LSN."""
        database, schema, table = chunk["table"].split(".", 2)
        lsn = Lsn.parse(plan["lsn"])
        conn = self._open(database)  # closed by close()
        instances = [i for i in catalog.read_instances(conn, self.table_filter)
                     if (i.schema, i.table) == (schema, table)]
        if not instances:
            raise SourceError(f"table {chunk['table']} is no longer captured", fix="start the query again")
        state = self._state(plan_tables(instances, lsn)[f"{schema}.{table}"].current)
        ts_ns = plan["ts_us"] * 1000
        source = source_block(self.prefix, database, schema, table, ts_ns=ts_ns, snapshot="true", commit_lsn=lsn)
        ts = (ts_ns // 1_000_000, ts_ns // 1000, ts_ns)
        for rows in parallel.chunk_rows(conn, state.instance, chunk, self.config.get("snapshot.fetch.size")):
            yield [state.envelope.event(OP_READ, None, state.row(values), dict(source), ts=ts) for values in rows]

    # ---- start-up -----------------------------------------------------------------------------

    def _stored(self, offset: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
        if not offset:
            return {}
        if "databases" in offset:
            return dict(offset["databases"])
        if "commit_lsn" in offset and len(self.databases) == 1:  # Debezium's single-database shape
            return {self.databases[0]: offset}
        raise SourceError("the stored offset is not a SQL Server offset", fix="delete it to start over")

    def _open(self, database: str) -> QueryLayer:
        conn = self._connect(database)
        self._conns.append(conn)
        return conn

    def _is_signal_table(self, database: str, instance: CaptureInstance) -> bool:
        return self.signal_table is not None and (database, instance.schema, instance.table) == self.signal_table

    def _state(self, instance: CaptureInstance) -> TableState:
        return TableState(instance, topic_prefix=self.prefix, modes=self.modes, column_filter=self.column_filter,
                          key_spec=self.key_spec)

    def _builder(self, database: str) -> EventBuilder:
        # one emitter per database: each has its own transactions
        return EventBuilder(prefix=self.prefix, database=database, emitter=ChangeEmitter.from_settings(self._common),
                            schema_changes=self.schema_changes, clock=self.clock)

    def _offset(self) -> dict[str, Any]:
        """Every database's position, plus what signals must keep across a restart."""
        offset: dict[str,
                     Any] = {"databases": {**self._finished, **{db: s.offset() for db, s in self._streams.items()}}}
        self._signal_handler.state(offset)
        return offset

    # ---- signals and incremental snapshots ---------------------------------------------------

    def _signal_stream(self) -> DatabaseStream | None:
        return self._streams.get(self.signal_table[0]) if self.signal_table else None

    def _signal_conn(self) -> QueryLayer | None:
        stream = self._signal_stream()
        return stream.conn if stream is not None else None

    def _write_watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        if self._signals is None or not self.signal_source:
            raise ChunkError("incremental snapshots need the signal table (signal.data.collection, channel "
                             "'source') to write their watermarks")
        self._signals.watermark(kind, chunk_id, data)

    def _captured_keys(self) -> dict[str, bool]:
        """Captured tables, ``<db>.<schema>.<table>`` (Debezium's data-collection names): has a key."""
        out: dict[str, bool] = {}
        for stream in self._streams.values():
            for instance in stream.builder.current.values():
                state = stream.builder.states.get(instance)
                if state is not None:
                    out[state.data_collection] = bool(state.instance.index_columns)
        return out

    def _stream_signals(self, stream: DatabaseStream) -> None:
        """The signal table's database reads it: its rows are signals."""
        if self.signal_table is None or stream.database != self.signal_table[0] or "source" not in (
                self.config.get("signal.enabled.channels") or []):
            return
        incr = self._incr

        def on_row(row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, ...]) -> None:
            self._signal_handler.on_row(row, events, position, ".".join(self.signal_table or ()))

        stream.set_signals(StreamSignals(f"{self.signal_table[1]}.{self.signal_table[2]}", on_row, incr.observe,
                                         lambda: incr.window_table))

    def _check_signal_table(self, conn: QueryLayer) -> None:
        if self.signal_source and self.signal_table is not None and conn.database == self.signal_table[0]:
            chunks.check_signal_table(conn, self.signal_table[1], self.signal_table[2])

    @property
    def incremental(self) -> IncrementalSnapshot:
        """The incremental snapshot's state machine (a replaying reader sets its run)."""
        return self._incr

    def send_signal(self, type_: str, data: dict[str, Any], id_: str | None = None) -> str:
        to_table = self._insert_signal if self.signal_source and self.signal_table is not None else None
        return self._signal_handler.send(type_, data, id_, to_table)

    def _insert_signal(self, id_: str, type_: str, data: dict[str, Any]) -> str:
        assert self.signal_table is not None
        database, schema, table = self.signal_table
        conn = self._connect(database)
        try:
            chunks.check_signal_table(conn, schema, table)
            chunks.insert_signal(conn, schema, table, id_, type_, data)
        finally:
            conn.close()
        return f"signal table {database}.{schema}.{table}"

    def _queue_initial_snapshot(self, stream: DatabaseStream) -> None:
        """snapshot.resumable: the rows of the first snapshot are read as an incremental snapshot of the
        database's tables, in key chunks with the progress in the offset; keyless tables are read whole."""
        self._signal_handler.queue_initial_snapshot({name: has_key for name, has_key in self._captured_keys().items()
                                                     if name.startswith(f"{stream.database}.")})

    def _between_polls(self, stream: DatabaseStream) -> Iterator[Batch]:
        """Where the stream stands between two polls: file / Kafka signals, blocking snapshots, and the
        next chunk of an incremental snapshot (its watermarks come back with the next poll)."""
        events: list[ChangeEvent] = []
        position = (stream.position.commit_lsn.as_int(), 0, 0)
        self._signal_handler.poll_channels(events, position)
        if events:
            yield Batch(events, self._offset())
        if self._signal_handler.blocking and self._incr.window is None:
            yield from self._blocking_snapshots()
        if self._incr.wants_chunk and stream is self._signal_stream():
            self._incr.start_chunk()

    def _blocking_snapshots(self) -> Iterator[Batch]:
        yield from blocking_snapshots(self._signal_handler.blocking, lambda: nullcontext(self._blocking_rows),
                                      self._offset)

    def _blocking_rows(self, name: str, condition: str | None) -> Iterator[list[ChangeEvent]] | None:
        """A table's rows read on its database's streaming connection (between two polls)."""
        database, _, table_name = name.partition(".")
        stream = self._streams.get(database)
        instance = stream.builder.current.get(table_name) if stream is not None else None
        state = stream.builder.states.get(instance) if stream is not None and instance else None
        if stream is None or state is None:
            return None
        columns = [c.name for c in state.instance.columns]
        sql = q.select_where(state.instance.schema, state.instance.table, columns, condition)

        def events(rows: list[dict[str, Any]], now: int) -> list[ChangeEvent]:
            assert stream is not None and state is not None
            source = source_block(self.prefix, database, state.instance.schema, state.instance.table,
                                  ts_ns=now, snapshot="true", commit_lsn=stream.position.commit_lsn)
            return [state.envelope.event(OP_READ, None, state.row(values), source,
                                         ts=(now // 1_000_000, now // 1000, now)) for values in rows]
        fetch = self.config.get("snapshot.fetch.size")
        return (events(rows, self.clock()) for rows in stream.conn.batches(sql, (), fetch))

    def _stream_settings(self) -> StreamSettings:
        return StreamSettings(self.table_filter, self.config.get("data.query.mode"),
                              self.config.get("database.sqlserver.agent.status.query") or AGENT_STATUS,
                              self.max_batch)

    def _resume(self, conn: QueryLayer, stored: dict[str, Any],
                instances: list[CaptureInstance] | None = None) -> DatabaseStream:
        """A stream continuing after ``stored`` (this database's offset), with fresh state."""
        builder = self._builder(conn.database)
        builder.restore_transaction(stored)
        stream = DatabaseStream(conn, builder, self._stream_settings(), Position.from_offset(stored), self._state)
        self._stream_signals(stream)
        stream.start(instances)
        return stream

    def _start_database(self, database: str, stored: dict[str, Any] | None) -> Iterator[Batch]:
        conn = self._open(database)
        catalog.check_database(conn)
        instances = catalog.read_instances(conn, self.table_filter)
        catalog.require_instances(conn, instances, self.table_filter)
        self._check_signal_table(conn)
        instances = [i for i in instances if not self._is_signal_table(database, i)]
        builder = self._builder(database)
        settings = self._stream_settings()
        mode = self.snapshot_mode
        if stored is not None:
            if mode == "initial_only":
                log.info("database %s: the snapshot was taken already (snapshot.mode=initial_only)", database)
                self._finished[database] = stored
                return
            position = Position.from_offset(stored)
            purged: list[str] = []
            catalog.check_position(conn, instances, position.commit_lsn,
                                   purged.append if mode == "when_needed" else None)
            if not purged:
                self._streams[database] = self._resume(conn, stored, instances)
                return
            log.warning("%s; snapshot.mode=when_needed: taking a new snapshot", purged[0])
        # snapshot.resumable: the rows come in chunks while streaming; the queue is in the first offset
        chunked = (self.resumable and mode in ("initial", "when_needed") and self.signal_source
                   and self.signal_table is not None and database == self.signal_table[0])
        if self.resumable and mode in ("initial", "when_needed") and not chunked:
            log.warning("snapshot.resumable needs the signal table (signal.data.collection, channel 'source') in "
                        "database %s for the watermarks of its chunks: taking the classic snapshot", database)
        with_data = mode != "no_data" and not chunked
        snap_conn = self._open(database)
        snapshot = Snapshot(snap_conn, builder, isolation=self.config.get("snapshot.isolation.mode"),
                            lock_timeout_ms=self.config.get("snapshot.lock.timeout.ms"),
                            fetch_size=self.config.get("snapshot.fetch.size"), with_data=with_data,
                            read_structure=lambda: [i for i in catalog.read_instances(snap_conn, self.table_filter)
                                                    if not self._is_signal_table(database, i)],
                            make_state=self._state, stopping=lambda: self._stopping,
                            progress=self.config.get("snapshot.progress"))
        yield from snapshot.run(instances)  # no offset until the snapshot is complete
        snap_conn.close()
        self._conns.remove(snap_conn)
        stream = DatabaseStream(conn, builder, settings, Position(snapshot.lsn), self._state)
        self._stream_signals(stream)
        stream.start([plan.current for plan in snapshot.plans.values()]
                     + [plan.next for plan in snapshot.plans.values() if plan.next is not None])
        if chunked:
            self._streams[database] = stream
            self._queue_initial_snapshot(stream)
        if mode == "initial_only":
            self._finished[database] = {**stream.offset(), "snapshot_only": True}
            yield Batch([], self._offset())
            return
        self._streams[database] = stream
        yield Batch([], self._offset())

    # ---- streaming ----------------------------------------------------------------------------

    def _poll_loop(self) -> Iterator[Batch]:
        last_change = {db: self.clock() for db in self._streams}
        idle_ns = int(self.end_idle_s * 1e9)
        while not self._stopping:
            busy = False
            for db in list(self._streams):
                for events, _ in self._poll_with_retries(self._streams[db]):
                    if events:
                        busy = True
                        last_change[db] = self.clock()
                    yield Batch(events, self._offset())
                stream = self._streams[db]  # a reconnect replaces it
                window = self._incr.window
                yield from self._between_polls(stream)
                if self._incr.window is not None and self._incr.window is not window:
                    busy = True  # a chunk's watermarks were written: read them without pausing
                if idle_ns > 0 and self.clock() - last_change[db] >= idle_ns:
                    ended = stream.builder.end_transaction()
                    if ended:
                        yield Batch(ended, self._offset())
            beat = None if busy else self.heartbeat.due()
            yield Batch([beat] if beat is not None else [], self._offset(), caught_up=True)
            if not busy:
                self._pause()

    def _poll_with_retries(self, stream: DatabaseStream) -> Iterator[tuple[list[ChangeEvent], Position]]:
        current = stream

        def reconnect() -> None:
            nonlocal current
            current.conn.close()
            # Start again after the last batch handed out: events built after it (and the
            # transaction numbering they advanced) are rebuilt, not lost or counted twice.
            replacement = self._resume(self._open(current.database), current.delivered)
            if replacement.signals is not None:
                # signals acted on after that batch are read again: their effects start over too
                self._signal_handler.restore(self._last_offset)
            self._streams[current.database] = replacement
            current = replacement

        policy = RetryPolicy(self.settings.max_retries, self.settings.retry_wait_s, sleep=self._sleep)
        yield from policy.resumed(f"polling the change tables of {stream.database}", lambda: current.poll(),
                                  reconnect, lambda: self._stopping)

    def _pause(self) -> None:
        waited = 0.0
        while waited < self.poll_s and not self._stopping:
            step = min(SLEEP_SLICE_S, self.poll_s - waited)
            self._sleep(step)
            waited += step
