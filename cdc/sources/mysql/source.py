"""MySQL / MariaDB source: the binlog read with python-mysql-replication, after an optional snapshot.

    connect, check the server (binlog on, ROW format, FULL row image, grants)
    no offset:   snapshot (snapshot.py): consistent binlog position P, schema -> history, rows as op r
    offset:      rebuild the schema from the history up to the offset (not the live tables)
    stream from P / the offset:
        GTID / BEGIN      a transaction starts at its first event's position
        TABLE_MAP         the binlog's column list, named from our schema at this position
        WRITE/UPDATE/DELETE_ROWS -> c / u / d events (+ tombstones, key changes)
        XID / COMMIT      END of the transaction; the offset moves past it
        QUERY (DDL)       applied to the schema model, recorded in the history, schema change event

Offsets are Debezium's: ``file`` and ``pos`` where to restart (after the last transaction
delivered, or the start of a transaction delivered in part), ``event`` rows events of that
transaction already delivered and ``row`` rows of the next, plus ``gtids``, ``server_id`` and
``ts_sec``. A restart inside a transaction re-reads it from its start and skips what was
delivered, so nothing is lost and nothing acknowledged repeats.
"""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pymysql

from cdc import registry
from cdc.config import CORE_OPTIONS, Config, Option
from cdc.core import signals as sig
from cdc.core.blocking_snapshot import ReadTable, blocking_snapshots
from cdc.core.emitter import ChangeEmitter
from cdc.core.envelope import OP_READ, now_ts
from cdc.core.errors import CdcError, OffsetStoreError, SchemaHistoryError, SourceError
from cdc.core.filters import NameFilter, warn_if_nothing_captured
from cdc.core.heartbeat import Heartbeat
from cdc.core.incremental import ChunkError, IncrementalSnapshot
from cdc.core.records import Batch, ChangeEvent
from cdc.core.schema import Table
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.schema_history import FileSchemaHistory, MemorySchemaHistory, SchemaHistory, torn_position
from cdc.core.signal_handler import SignalHandler
from cdc.core.snapshot_mode import Plan, decide, normalize
from cdc.core.snapshot_restart import attempt_offset, interrupted_attempt
from cdc.core.snapshot_runner import RowBatch, SnapshotTable, read_tables
from cdc.core.source import SourceSettings
from cdc.sources.mysql import binlog as bl
from cdc.sources.mysql import chunks, parallel
from cdc.sources.mysql import snapshot as snap
from cdc.sources.mysql.config import HISTORY_CLASSES, MYSQL_OPTIONS
from cdc.sources.mysql.connection import (
    ER_MASTER_FATAL_READING_BINLOG,
    ConnectionSettings,
    ServerInfo,
    binlog_files,
    binlog_position,
    server_checks,
    translate,
    with_retries,
)
from cdc.sources.mysql.ddl import MySqlSchema, history_record
from cdc.sources.mysql.gtids import DeliveredGtids
from cdc.sources.mysql.position import BinlogPosition, position_key
from cdc.sources.mysql.source_info import source_block, source_schema
from cdc.sources.mysql.stream import BinlogChanges, Step, StreamSettings
from cdc.sources.mysql.tables import TableState
from cdc.sources.mysql.types import TypeModes

if TYPE_CHECKING:  # what the operating methods hand out (cdc.core.source: ReportsLag, ReportsStatus)
    from cdc.metrics.lag import LagReport, Watch
    from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)

_OPS = {bl.WriteRowsEvent: "c", bl.UpdateRowsEvent: "u", bl.DeleteRowsEvent: "d"}


def open_history(config: Config) -> SchemaHistory:
    """The schema history store named by ``schema.history.internal``."""
    raw = config.get("schema.history.internal")
    kind = HISTORY_CLASSES.get(raw, raw)
    if kind == "memory":
        return MemorySchemaHistory()
    if kind == "file":
        path = config.get("schema.history.internal.file.filename")
        if not path:
            offsets = config.get("offset.storage.file.filename")
            directory = config.properties.get("sink.files.directory")
            base = Path(offsets).parent if offsets else Path(directory) if directory else Path(".")
            path = str(base / "schema-history.jsonl")
        return FileSchemaHistory(path)
    return registry.load(registry.SCHEMA_HISTORIES, kind)(config)


def _describe(history: SchemaHistory) -> str:
    path = getattr(history, "path", None)
    topic = getattr(history, "topic", None)
    return str(path) if path else f"topic {topic}" if topic else type(history).__name__


class MySqlSource:
    """MySQL / MariaDB: the binlog (ROW format) after an optional consistent snapshot."""

    name: ClassVar[str] = "mysql"
    title: ClassVar[str] = "MySQL / MariaDB source"  # in the docs' option reference
    connector_classes: ClassVar[tuple[str, ...]] = ("io.debezium.connector.mysql.MySqlConnector",
                                                    "io.debezium.connector.mariadb.MariaDbConnector")
    options: ClassVar[tuple[Option, ...]] = MYSQL_OPTIONS
    metrics_plugin: ClassVar[str] = "mysql"  # Debezium's metrics label (cdc.core.source.NamesItsMetrics)
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
        common = SourceSettings.from_config(config)
        self.prefix, self.max_batch = common.prefix, common.max_batch
        self.table_filter, self.column_filter = common.table_filter, common.column_filter
        self.key_spec = common.key_spec
        self.client_server_id: int = config.get("database.server.id") or random.randint(5400, 6400)
        self.snapshot_mode: str = normalize(config.get("snapshot.mode"))
        self.database_filter = NameFilter(config.get("database.include.list"), config.get("database.exclude.list"))
        self.modes = TypeModes.from_config(config)
        self.emitter = ChangeEmitter.from_settings(common)
        self.include_schema_changes = common.include_schema_changes
        self.include_query: bool = config.get("include.query")
        # Rows as the compiled codec's JSON (cdc.sources.mysql.native_rows): set by the pipeline
        # when they go straight to the JSON converter.
        self.native_rows = False
        self.only_captured_tables_ddl: bool = config.get("schema.history.internal.store.only.captured.tables.ddl")
        self.only_captured_databases_ddl: bool = config.get("schema.history.internal.store.only.captured.databases.ddl")
        self.heartbeat_s = max(config.get("binlog.heartbeat.interval.ms"), 1) / 1000
        self.history = open_history(config)
        self.heartbeat = Heartbeat(self.prefix, config.get("heartbeat.topics.prefix"),
                                   config.get("heartbeat.interval.ms"))
        # signals and incremental snapshots (cdc.core.signals, cdc.core.incremental)
        self.signal_table: str | None = config.get("signal.data.collection")
        channels = config.get("signal.enabled.channels")
        self.signal_source = "source" in channels and bool(self.signal_table)
        self.resumable: bool = config.get("snapshot.resumable")
        self.read_only: bool = config.get("read.only")
        # read.only: a chunk's watermarks are binlog positions, fired as the stream passes them
        self._marks: list[tuple[tuple[int, str, int], str, str]] = []
        self._reader = chunks.MySqlChunkReader(self)
        self._signals = chunks.SignalWriter(self._reader.connection, self.signal_table) if self.signal_table else None
        self._incr = IncrementalSnapshot(self._reader, self._write_watermark,
                                         config.get("incremental.snapshot.chunk.size"))
        self._signal_handler = SignalHandler(self._incr, captured_keys=self._captured_keys,
                                             watermarks_writable=self.signal_source or self.read_only,
                                             channels=sig.polled_channels(config))
        self.info: ServerInfo | None = None
        self._conn: pymysql.connections.Connection | None = None
        self._stream: Any = None
        self._schema: MySqlSchema | None = None
        self._states: dict[tuple[str, str], TableState | None] = {}
        self._changes: BinlogChanges | None = None
        self._history_max: tuple[int, str, int] | None = None
        self._stopping = False
        self._position: dict[str, Any] = {}  # the offset after the last batch handed out

    # ---- the Source contract ----------------------------------------------------------------

    @property
    def streaming(self) -> bool:
        """True once the binlog reader is open at its start position."""
        return self._stream is not None

    def stop(self) -> None:
        self._stopping = True

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to release: the server keeps binlogs by its own retention settings."""

    def close(self) -> None:
        if self._stream is not None:
            try:
                self._stream.close()
            except Exception:  # noqa: BLE001 - closing a broken socket must not hide the real error
                pass
            self._stream = None
        if self._conn is not None and self._conn.open:
            self._conn.close()
        self._conn = None
        self._reader.close()
        self._signal_handler.close()
        self.history.close()

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        yield from self._run(offset)

    # ---- Spark: the snapshot in chunks read by executors (cdc.sources.mysql.parallel) -----------

    def plan_parallel_snapshot(self, chunk_rows: int) -> dict[str, Any] | None:
        """Record the schema at a binlog position (the history the stream decodes with) and cut every
        captured table into key chunks; the stream starts at that position. None when snapshot.mode
        takes no snapshot here: the stream starts as it would without Spark."""
        conn = self._control_conn()
        self.info = server_checks(conn, self.settings)
        self._source_schema = source_schema(self.flavor)
        self._schema_events = SchemaChangeEvents(self.prefix, self.flavor, self._source_schema)
        decision = decide(self.snapshot_mode, None, log_reaches=False)
        if decision.plan is not Plan.SNAPSHOT or decision.then_stop:
            return None
        for _ in self._snapshot(with_data=False, final=False):  # the schema, into the history
            pass
        assert self._position is not None and self._schema is not None
        chunks_: list[parallel.Chunk] = []
        for database, table in sorted(self._captured_tables(conn)):
            model = self._schema.table(database, table)
            key = list(model.primary_key) if model is not None else []
            bounds = parallel.chunk_bounds(conn, database, table, key, chunk_rows) if key else []
            if not parallel.plain_values(bounds):
                bounds = []
            chunks_ += parallel.table_chunks(database, table, key, bounds)
        log.info("snapshot of %d tables in %d chunks, streaming from binlog %s:%s", len({c["table"] for c in chunks_}),
                 len(chunks_), self._position["file"], self._position["pos"])
        return {"chunks": chunks_, "ts_us": now_ts()[1], "file": self._position["file"], "pos": self._position["pos"],
                "stream_from": self._offset(self._position)}

    def release_parallel_snapshot(self) -> None:
        """Nothing is held: the chunks are read as the tables are now."""

    def parallel_chunk_arrow(self, plan: dict[str, Any], chunk: parallel.Chunk) -> None:
        return None  # no columnar reader for MySQL here: the Python converters

    def parallel_chunk_events(self, plan: dict[str, Any], chunk: parallel.Chunk) -> Iterator[list[ChangeEvent]]:
        """The chunk's rows as read events (on an executor), with the table's schema as it is now."""
        database, _, table = chunk["table"].partition(".")
        self.table_schema(chunk["table"])  # reads the server's description of the table
        state = self._state(database, table)
        assert state is not None
        ts_ms = plan["ts_us"] // 1000
        conn = self._control_conn()
        file_index = position_key(plan["file"], 0)[0]
        shared = source_block(self.flavor, self.prefix, database, table, ts_ms=ts_ms, server_id=0,
                              file=plan["file"], pos=plan["pos"], snapshot="true")
        for rows in snap.select_rows(conn, database, table, self.config.get("snapshot.fetch.size"),
                                     parallel.condition(conn, chunk)):
            ts = now_ts()
            yield [state.envelope.event(OP_READ, None, state.row(values), dict(shared),
                                        position=(file_index, plan["pos"], 0, 0), ts=ts) for values in rows]

    def captured_tables(self) -> list[str]:
        """The tables this configuration captures (database/table include lists), as they are now, by name."""
        conn = self._control_conn()
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                        "WHERE TABLE_TYPE = 'BASE TABLE'")
            names = [(str(d), str(t)) for d, t in cur.fetchall()]
        return sorted(f"{d}.{t}" for d, t in names if self.captured(d, t) and f"{d}.{t}" != self.signal_table)

    def table_schema(self, qualified: str) -> dict[str, Any]:
        """The Connect struct schema of one captured table's rows (``before``/``after``), as it is now."""
        conn = self._control_conn()
        self.info = server_checks(conn, self.settings)
        self._source_schema = source_schema(self.flavor)
        database, _, table = qualified.partition(".")
        schema = self._new_schema()
        try:
            with conn.cursor() as cur:
                cur.execute(f"SHOW CREATE DATABASE {snap.quote(database)}")
                schema.apply(cur.fetchone()[1], database)
                cur.execute(f"SHOW CREATE TABLE {snap.quote(database)}.{snap.quote(table)}")
                schema.apply(cur.fetchone()[1], database)
        except pymysql.MySQLError as exc:
            raise SourceError(f"table {qualified!r} cannot be read: {exc.args[-1]}",
                              fix="check the table option (database.table)") from None
        self._schema = schema
        state = self._state(database, table)
        assert state is not None
        return state.envelope.row_schema

    # ---- signals and incremental snapshots ---------------------------------------------------

    def table_model(self, database: str, table: str) -> Table | None:
        if not self.captured(database, table) or f"{database}.{table}" == self.signal_table or self._schema is None:
            return None
        return self._schema.table(database, table)

    def table_state(self, database: str, table: str) -> TableState | None:
        return self._state(database, table)

    def incremental_source_block(self, database: str, table: str, ts_ms: int) -> dict[str, Any]:
        """The source block of rows read by an incremental snapshot: the stream's position."""
        position = self._position or {}
        return source_block(self.flavor, self.prefix, database, table, ts_ms=ts_ms,
                            server_id=int(position.get("server_id") or (self.info.server_id if self.info else 0)),
                            file=str(position.get("file") or ""), pos=int(position.get("pos") or 0),
                            snapshot="incremental")

    def _captured_keys(self) -> dict[str, bool]:
        if self._schema is None:
            return {}
        return {f"{t.id.catalog}.{t.id.table}": bool(t.primary_key) for t in self._schema.tables()
                if self.table_model(t.id.catalog or "", t.id.table) is not None}

    def _write_watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        if self.read_only:  # no write: the binlog's end now is where the window opens / closes
            try:
                file, pos = binlog_position(self._reader.connection())
            except (pymysql.MySQLError, SourceError) as exc:
                raise ChunkError(f"cannot read the binlog position for a watermark: {exc}") from None
            self._marks.append((position_key(file, pos), kind, chunk_id))
            return
        if self._signals is None or not self.signal_source:
            raise ChunkError("incremental snapshots need the signal table (signal.data.collection, channel "
                             "'source') to write their watermarks")
        self._signals.watermark(kind, chunk_id, data)

    def _chunked_snapshot_possible(self) -> bool:
        if not self.signal_source:
            log.warning("snapshot.resumable needs the signal table (signal.data.collection) for the watermarks of "
                        "its chunks: taking the classic snapshot")
            return False
        return True

    @property
    def incremental(self) -> IncrementalSnapshot:
        """The incremental snapshot's state machine (a replaying reader sets its run)."""
        return self._incr

    def send_signal(self, type_: str, data: dict[str, Any], id_: str | None = None) -> str:
        to_table = self._insert_signal if self.signal_source and self.signal_table else None
        return self._signal_handler.send(type_, data, id_, to_table)

    def _insert_signal(self, id_: str, type_: str, data: dict[str, Any]) -> str:
        assert self.signal_table is not None
        conn = self.settings.connect()
        try:
            chunks.check_signal_table(conn, self.signal_table)
            chunks.insert_signal(conn, self.signal_table, id_, type_, data)
        except pymysql.MySQLError as exc:
            raise translate(exc, self.settings, "writing the signal") from None
        finally:
            conn.close()
        return f"signal table {self.signal_table}"

    def _fire_marks(self, upto: tuple[int, str, int], events: list[ChangeEvent]) -> None:
        """read.only: the watermarks the stream has reached act as if read from the signal table."""
        while self._marks and self._marks[0][0] <= upto:
            key, kind, chunk_id = self._marks.pop(0)
            self._signal_handler.watermark(kind, chunk_id, events, (key[0], key[2]))

    def _offset(self, position: dict[str, Any]) -> dict[str, Any]:
        """An offset to hand out: the binlog position plus what signals must keep across a restart, and the
        server it belongs to (a binlog position means nothing on another server)."""
        offset = dict(position)
        self._signal_handler.state(offset)
        if self.info is not None:
            offset["server_identity"] = self.info.identity
        return offset

    def _check_server(self, what: str, stored: str | None, error: type[CdcError]) -> None:
        """Offsets and schema history name the server they were written on: another server's are refused
        (its binlog positions and tables are not this one's)."""
        if stored is None or self.info is None or stored == self.info.identity:
            return  # written before servers were named (or by Debezium): taken as it is
        raise error(
            f"the {what} was written on another server ({stored}) than this one ({self.info.identity}): its "
            f"binlog positions and tables are not this server's",
            fix="point the pipeline at the server it was capturing; or, if this server replaced it (a restore, a "
                "failover), take a new snapshot: move the offsets and the schema history away (or give the pipeline "
                "a new name)")

    def _between_transactions(self, events: list[ChangeEvent]) -> Iterator[Batch]:
        """Signals from the file, blocking snapshots and the next incremental chunk run here, where the
        stream stands between two transactions."""
        position = (position_key(str(self._position.get("file") or ""), 0)[0], int(self._position.get("pos") or 0))
        self._signal_handler.poll_channels(events, position)
        if self._signal_handler.blocking and self._incr.window is None:
            if events:
                yield Batch(list(events), self._offset(self._position))
                events.clear()
            yield from self._blocking_snapshots()
        if self._incr.wants_chunk:
            self._incr.start_chunk()

    def _blocking_snapshots(self) -> Iterator[Batch]:
        yield from blocking_snapshots(self._signal_handler.blocking, self._blocking_reader,
                                      lambda: self._offset(self._position))

    @contextmanager
    def _blocking_reader(self) -> Iterator[ReadTable]:
        conn = self.settings.connect()
        fetch = self.config.get("snapshot.fetch.size")

        def read(name: str, condition: str | None) -> Iterator[list[ChangeEvent]] | None:
            database, _, table = name.partition(".")
            state = self._state(database, table) if self.table_model(database, table) else None
            if state is None:
                return None

            def events() -> Iterator[list[ChangeEvent]]:
                assert state is not None
                for rows in snap.select_rows(conn, database, table, fetch, condition):
                    ts = now_ts()
                    source = {**self.incremental_source_block(database, table, ts[0]), "snapshot": "true"}
                    yield [state.envelope.event(OP_READ, None, state.row(values), source, ts=ts) for values in rows]
            return events()
        try:
            yield read
        finally:
            conn.close()

    # ---- helpers ----------------------------------------------------------------------------

    def _control_conn(self) -> pymysql.connections.Connection:
        if self._conn is None or not self._conn.open:
            self._conn = with_retries(self.settings, "connecting to MySQL", self.settings.connect,
                                      lambda: self._stopping)
        return self._conn

    def _schema_database(self, database: str) -> bool:
        """A database whose schema the snapshot reads: every one (as Debezium, so that a table renamed
        or moved into a captured database is known), unless the history is to keep only captured
        tables or databases."""
        if self.only_captured_tables_ddl or self.only_captured_databases_ddl:
            return self.captured_database(database)
        return database not in snap.SYSTEM_DATABASES

    def captured_database(self, database: str) -> bool:
        return database not in snap.SYSTEM_DATABASES and self.database_filter(database)

    def captured(self, database: str, table: str) -> bool:
        return self.captured_database(database) and self.table_filter(f"{database}.{table}")

    def _new_schema(self) -> MySqlSchema:
        info = self.info
        return MySqlSchema(
            server_charset=info.charset if info else None,
            skip_unparseable=self.config.get("schema.history.internal.skip.unparseable.ddl"),
            include_comments=self._include_comments(),
            lower_case_table_names=info.lower_case_table_names if info else 0,
        )

    def _include_comments(self) -> bool:
        """Debezium 3.5's MariaDB connector hands its DDL parser include.schema.changes where
        include.schema.comments belongs: on MariaDB comments are kept whenever schema changes are
        emitted (the default); its MySQL connector reads include.schema.comments."""
        if self.config.get("include.schema.comments"):
            return True
        return self.flavor == "mariadb" and bool(self.config.get("include.schema.changes"))

    @property
    def flavor(self) -> str:
        return self.info.flavor if self.info else "mysql"

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

    # ---- start-up ---------------------------------------------------------------------------

    def _run(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        conn = self._control_conn()
        self.info = server_checks(conn, self.settings)
        self._source_schema = source_schema(self.flavor)
        self._schema_events = SchemaChangeEvents(self.prefix, self.flavor, self._source_schema)
        if self.signal_source:
            assert self.signal_table is not None
            chunks.check_signal_table(conn, self.signal_table)
        mode = self.snapshot_mode
        if offset is not None:
            self._check_server("stored offset", offset.get("server_identity"), OffsetStoreError)
        attempt = interrupted_attempt(offset)
        if attempt:
            log.warning("the snapshot of an earlier run was interrupted: taking it again (each table starts with a "
                        "truncate event, so consumers drop what they applied of the first attempt)")
            offset = None
        reaches = offset is not None and offset.get("file") in binlog_files(conn)
        decision = decide(mode, offset, log_reaches=reaches)
        log.info("start: %s (%s)", decision.plan.value, decision.reason)
        if decision.plan is Plan.NOTHING:
            return
        if decision.plan is Plan.LOG_GONE or (decision.plan is Plan.SNAPSHOT and offset is not None and not reaches):
            assert offset is not None
            message = (f"the binlog file {offset.get('file')} of the stored offset is no longer on the server "
                       f"(purged): changes since then cannot be read")
            if decision.plan is Plan.LOG_GONE:
                raise SourceError(message, fix="set snapshot.mode=when_needed to take a new snapshot, and keep "
                                  "binlogs longer (binlog_expire_logs_seconds / expire_logs_days)")
            log.warning("%s; taking a new snapshot (snapshot.mode=when_needed)", message)
        if decision.plan in (Plan.SNAPSHOT, Plan.SCHEMA):
            with_data = decision.plan is Plan.SNAPSHOT
            chunked = with_data and self.resumable and not decision.then_stop and self._chunked_snapshot_possible()
            yield from self._snapshot(with_data=with_data and not chunked, final=decision.then_stop, chunked=chunked,
                                      attempt=attempt)
            if decision.then_stop:
                return
            assert self._position is not None
            offset = self._offset(self._position)
        elif decision.plan is Plan.LOG_START:  # the whole binlog that is left, schema from its DDL alone
            first = binlog_files(conn)[0]
            log.warning("snapshot.mode=never: reading from the oldest binlog %s; tables created before it are unknown",
                        first)
            self._schema = self._new_schema()
            offset = {"file": first, "pos": 4, "event": 0, "row": 0}
        else:  # STREAM: the schema as the history has it at the offset
            assert offset is not None
            if not self.history.exists() and mode != "recovery":
                raise SchemaHistoryError(
                    f"an offset is stored (binlog {offset.get('file')}:{offset.get('pos')}) but the schema history "
                    f"{_describe(self.history)} is missing or empty: rows cannot be decoded without it",
                    fix="restore the history; or set snapshot.mode=recovery to rebuild it from the current tables "
                        "(right only if no DDL ran since that position); or delete the offsets to take a new snapshot",
                )
            self._schema = self._schema_from_history(offset)
            if self._schema is None:  # recovery: no history, rebuild it from the tables as they are now
                yield from self._snapshot(with_data=False, final=False, at=offset)
        assert offset is not None
        yield from self._stream_changes(offset)

    def _schema_from_history(self, offset: dict[str, Any]) -> MySqlSchema | None:
        if not self.history.exists():
            return None
        until = position_key(offset["file"], int(offset["pos"]))
        schema = self._new_schema()
        records = 0
        for entry in self.history.entries():
            position = entry.get("position") or {}
            self._check_history_server(entry, offset)
            key = position_key(position.get("file", ""), int(position.get("pos", 0)))
            if self._history_max is None or key > self._history_max:
                self._history_max = key
            if key > until:
                continue  # recorded, but after the offset: it will be read from the binlog again
            if position.get("snapshot_start"):
                schema = self._new_schema()  # a newer snapshot replaces what came before it
            schema.replay(entry)
            records += 1
        self._check_torn_history(until)
        log.info("schema rebuilt from %d history records up to %s:%s", records, offset["file"], offset["pos"])
        return schema

    def _check_torn_history(self, until: tuple[int, str, int]) -> None:
        """A history whose last record a crash cut short: harmless when that record lies after the stored
        offset (its DDL is read from the binlog again), else its DDL would be missing from the schema."""
        torn = self.history.torn_tail
        if torn is None:
            return
        position = torn_position(torn)
        if position is not None and position_key(str(position.get("file", "")), int(position.get("pos", 0))) > until:
            log.info("the last record of the schema history %s is cut off (a crash while writing it); it lies "
                     "after the stored offset, so its DDL is read from the binlog again", _describe(self.history))
            return
        where = (f"at {position.get('file')}:{position.get('pos')}, not after the stored offset"
                 if position is not None else "at a position that cannot be read")
        raise SchemaHistoryError(
            f"the last record of the schema history {_describe(self.history)} is cut off, {where}: the DDL it holds "
            f"may already be behind the pipeline, and rows decoded without it would get the wrong columns",
            fix="restore the history file from a backup; or, if no DDL ran since the stored offset, move it away "
                "and set snapshot.mode=recovery; or move the offsets away too, to take a new snapshot")

    def _check_history_server(self, entry: dict[str, Any], offset: dict[str, Any]) -> None:
        """A history written by another pipeline (another topic.prefix) would decode rows with the wrong
        tables: refuse it. (Server ids alone may differ legitimately: a replica's binlog carries the ids of
        the servers its events came from.)"""
        identity = (entry.get("source") or {}).get("server_identity")
        self._check_server(f"schema history {_describe(self.history)}", identity, SchemaHistoryError)
        server = (entry.get("source") or {}).get("server")
        written_id = (entry.get("position") or {}).get("server_id")
        expected_id = offset.get("server_id")
        if server is not None and server != self.prefix:
            raise SchemaHistoryError(
                f"the schema history {_describe(self.history)} was written for server {server!r} (server id "
                f"{written_id}), but this pipeline is {self.prefix!r} reading server id {expected_id}",
                fix="give each pipeline its own schema.history.internal.file.filename, or delete the offsets to "
                    "take a new snapshot")

    # ---- snapshot ---------------------------------------------------------------------------

    def _record(self, position: dict[str, Any], database: str | None, ddl: str, changes: list[dict[str, Any]]) -> None:
        key = position_key(position.get("file", ""), int(position.get("pos", 0)))
        source = {"server": self.prefix}
        if self.info is not None:
            source["server_identity"] = self.info.identity
        self.history.record(history_record(source, position, database, ddl, changes))
        if self._history_max is None or key > self._history_max:
            self._history_max = key

    def _snapshot(self, *, with_data: bool, final: bool, at: dict[str, Any] | None = None,
                  chunked: bool = False, attempt: int = 0) -> Iterator[Batch]:
        info = self.info
        assert info is not None
        conn = with_retries(self.settings, "connecting for the snapshot", self.settings.connect, lambda: self._stopping)
        try:
            if at is None:
                point = snap.begin(conn, mariadb=info.mariadb, locking=self.config.get("snapshot.locking.mode"),
                                   tables_to_lock=lambda: self._captured_tables(conn))
            else:  # recovery: the schema now, recorded at the stored position
                point = snap.SnapshotPoint(at["file"], int(at["pos"]), at.get("gtids"))
            log.info("snapshot at binlog %s:%d%s", point.file, point.pos,
                     f" (GTIDs {point.gtids})" if point.gtids else "")
            read = snap.read_schema(conn, self._schema_database)
            snap.release_global_lock(conn, point)
            ts_ms = int(time.time() * 1000)
            position = {"ts_sec": ts_ms // 1000, "file": point.file, "pos": point.pos, "gtids": point.gtids,
                        "snapshot": True, "server_id": info.server_id}
            schema = self._new_schema()
            events: list[ChangeEvent] = []
            statements = snap.schema_statements(read, info.charset, info.collation)
            for index, (database, table, ddl, dropped, emitted) in enumerate(statements):
                # a replay starts from these records: DROP of a table that is not in our (empty) model yet
                changes = [{"type": "DROP", "id": f'"{database}"."{dropped}"'}] if dropped else \
                    schema.apply(ddl, database or None)
                if table is not None and self.only_captured_tables_ddl and not self.captured(database, table):
                    continue
                if not emitted and not self.captured_database(database):
                    continue  # an empty database: kept in the history only if captured (its charset)
                self._record({**position, "snapshot_start": True} if index == 0 else position, database, ddl, changes)
                if self.include_schema_changes and emitted:
                    source = source_block(self.flavor, self.prefix, database, table, ts_ms=int(time.time() * 1000),
                                          server_id=0, file=point.file, pos=point.pos, snapshot="true")
                    events.append(self._schema_events.event(source, database, ddl, changes, ts_ms=now_ts()[0]))
            if events and not with_data:  # the snapshot's last event
                events[-1].value["source"]["snapshot"] = "last"  # type: ignore[index]
            self._schema = schema
            self._states.clear()
            if events:
                yield Batch(events)
            last: ChangeEvent | None = None
            if with_data:
                yield Batch([], attempt_offset(attempt), commit_now=True)  # durable before any row goes out
                last = yield from self._snapshot_rows(conn, read, point, ts_ms, restarted=attempt > 0)
            if at is None:
                snap.finish(conn, point)
        finally:
            conn.close()
        self._position = {"file": point.file, "pos": point.pos, "gtids": point.gtids, "event": 0, "row": 0,
                          "server_id": info.server_id, "ts_sec": int(time.time()), "snapshot_completed": True,
                          **({"snapshot_only": True} if final else {})}
        if chunked:  # the rows come in chunks while streaming; the queue is in this very offset
            self._signal_handler.queue_initial_snapshot(self._captured_keys())
        yield Batch([last] if last is not None else [], self._offset(self._position), caught_up=final)

    def _captured_tables(self, conn: pymysql.connections.Connection) -> list[tuple[str, str]]:
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                        "WHERE TABLE_TYPE = 'BASE TABLE'")
            return [(d, t) for d, t in cur.fetchall() if self.captured(d, t)]

    def _snapshot_rows(self, conn: pymysql.connections.Connection, read: snap.SchemaRead, point: snap.SnapshotPoint,
                       ts_ms: int, restarted: bool = False) -> Generator[Batch, None, ChangeEvent | None]:
        """``op: r`` events of every captured table (cdc.core.snapshot_runner); returns the last one, held
        back so that it can be marked ``last``."""
        assert self.info is not None
        captured = [(d, t, s) for d, t, _ in read.tables
                    if self.captured(d, t) and (s := self._state(d, t)) is not None]
        captured.sort(key=lambda c: self.table_filter.order_key(f"{c[0]}.{c[1]}"))  # Debezium's table order
        warn_if_nothing_captured([f"{d}.{t}" for d, t, _ in captured],
                                 sorted(f"{d}.{t}" for d, t, _ in read.tables if d not in snap.SYSTEM_DATABASES),
                                 "database.include.list / table.include.list")
        return (yield from read_tables([self._snapshot_table(conn, d, t, s, point, ts_ms) for d, t, s in captured],
                                       progress=self.config.get("snapshot.progress"),
                                       stopping=lambda: self._stopping, restarted=restarted))

    def _snapshot_table(self, conn: pymysql.connections.Connection, database: str, table: str, state: TableState,
                        point: snap.SnapshotPoint, ts_ms: int) -> SnapshotTable:
        base = (position_key(point.file, 0)[0], point.pos, 0)

        def source() -> dict[str, Any]:  # no binlog event: server 0
            return source_block(self.flavor, self.prefix, database, table, ts_ms=ts_ms, server_id=0, file=point.file,
                                pos=point.pos)

        def batches() -> Iterator[RowBatch]:
            shared = {**source(), "snapshot": "true"}
            for chunk in snap.select_rows(conn, database, table, self.config.get("snapshot.fetch.size")):
                yield RowBatch([state.row(values) for values in chunk], shared, base, now_ts())

        return SnapshotTable(state.envelope, batches, lambda: snap.estimate_rows(conn, database, table),
                             source(), (*base, 0))

    # ---- per-table state --------------------------------------------------------------------

    def _state(self, database: str, table: str) -> TableState | None:
        key = (database, table)
        state = self._states.get(key, False)
        if state is False:
            assert self._schema is not None
            model = self._schema.table(database, table)
            state = None if model is None else TableState(
                model, topic_prefix=self.prefix, source_schema=self._source_schema, modes=self.modes,
                column_filter=self.column_filter, key_spec=self.key_spec)
            self._states[key] = state
        return state  # type: ignore[return-value]

    # ---- streaming --------------------------------------------------------------------------

    def _open(self, file: str, pos: int) -> Any:
        self._stream = bl.open_stream(self.settings.replication_settings(), self.client_server_id, file, pos,
                                      self.heartbeat_s)
        log.info("reading the binlog from %s:%d", file, pos)
        return self._stream

    def _stream_changes(self, offset: dict[str, Any]) -> Iterator[Batch]:
        info = self.info
        assert info is not None and self._schema is not None
        start = BinlogPosition.from_offset(offset)
        changes = BinlogChanges(
            start=start, schema=self._schema, emitter=self.emitter, schema_events=self._schema_events,
            gtids=DeliveredGtids(info.mariadb, start.gtids), hooks=self,
            settings=StreamSettings(
                prefix=self.prefix, flavor=self.flavor, include_query=self.include_query,
                include_schema_changes=self.include_schema_changes,
                only_captured_tables_ddl=self.only_captured_tables_ddl,
                only_captured_databases_ddl=self.only_captured_databases_ddl, signal_table=self.signal_table,
                captured=self.captured, captured_database=self.captured_database))
        changes.history_max = self._history_max
        changes.native = self.native_rows
        self._changes = changes
        self._position = changes.position.to_offset()
        self._signal_handler.restore(offset)
        events: list[ChangeEvent] = []
        last_handover = time.monotonic()
        self._open(start.file, start.pos)
        for event in self._binlog_events(changes):
            step = changes.handle(event, self._stream, events)
            if step is Step.ROWS:
                if len(events) >= self.max_batch:
                    yield Batch(events, self._offset(changes.in_progress().to_offset()))
                    events, last_handover = [], time.monotonic()
                continue
            if step is Step.NONE:
                continue
            between = not changes.tx.active
            self._position = changes.position.to_offset()
            if step is Step.HEARTBEAT:
                if between:
                    beat = self.heartbeat.due()
                    if beat is not None:
                        events.append(beat)
                    yield from self._between_transactions(events)
                if events or between:
                    yield Batch(events, None if not between else self._offset(self._position), caught_up=between)
                    events, last_handover = [], time.monotonic()
                if self._stopping:
                    return
                continue
            # COMMITTED / DDL: the position moved past a whole transaction
            if step is Step.DDL or self._incr.active or self._signal_handler.blocking or self._signal_handler.channels:
                yield from self._between_transactions(events)
            if step is Step.DDL or events or time.monotonic() - last_handover >= 1.0:
                yield Batch(events, self._offset(self._position))
                events, last_handover = [], time.monotonic()

    def _binlog_events(self, changes: BinlogChanges) -> Iterator[Any]:
        """The binlog's events, reconnecting where the reader broke off (the retry policy of the
        connection settings); a purged binlog or any other refusal is an error with its fix."""
        attempts = 0
        policy = self.settings.retry
        while True:
            try:
                event = self._stream.fetchone()
                attempts = 0
            except (pymysql.MySQLError, OSError) as exc:
                file, pos, skip = changes.resume_point()
                code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
                if code == ER_MASTER_FATAL_READING_BINLOG:
                    raise SourceError(
                        f"the server cannot send the binlog from {file}:{pos}: {exc.args[-1]}",
                        fix="if the binlog was purged, set snapshot.mode=when_needed to take a new snapshot",
                    ) from None
                error = translate(exc, self.settings, "reading the binlog")
                attempts += 1
                if not policy.should_retry(error, attempts, self._stopping):
                    raise error from None
                try:
                    self._stream.close()
                except Exception:  # noqa: BLE001 - the connection is broken anyway
                    pass
                policy.pause("reading the binlog", error, attempts)
                changes.reopened(file, skip)
                self._open(file, pos)
                continue
            if event is not None:
                yield event

    # ---- StreamHooks: what the binlog stream asks of the source ------------------------------------

    def schema_changed(self) -> None:
        self._states.clear()

    def record_ddl(self, position: dict[str, Any], database: str | None, ddl: str,
                   changes: list[dict[str, Any]]) -> None:
        self._record(position, database, ddl, changes)

    def signal_row(self, row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, ...]) -> None:
        self._signal_handler.on_row(row, events, position, str(self.signal_table))

    def observe(self, table: str, events: Sequence[ChangeEvent]) -> None:
        window = self._incr.window
        if window is not None and window.open and window.task.table == table:
            for change in events:
                self._incr.observe(change)

    def transaction_starts(self, position: tuple[int, str, int], events: list[ChangeEvent]) -> None:
        if self._marks:
            self._fire_marks(position, events)
