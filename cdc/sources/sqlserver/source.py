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
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable, ClassVar, Iterator

from cdc.config import CORE_OPTIONS, Config, Option
from cdc.core.errors import CdcError, ConfigError, SourceError
from cdc.core.filters import NameFilter, parse_key_columns
from cdc.core.records import Batch, ChangeEvent
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.topics import sanitize_topic, transaction_topic
from cdc.core.transactions import TransactionTracker
from cdc.sources.sqlserver import catalog
from cdc.sources.sqlserver.changes import Position
from cdc.sources.sqlserver.config import SNAPSHOT_MODES, SQLSERVER_OPTIONS
from cdc.sources.sqlserver.connection import ConnectionSettings, OdbcConnection, QueryLayer
from cdc.sources.sqlserver.events import EventBuilder
from cdc.sources.sqlserver.queries import AGENT_STATUS
from cdc.sources.sqlserver.snapshot import Snapshot
from cdc.sources.sqlserver.source_info import SOURCE_SCHEMA
from cdc.sources.sqlserver.stream import DatabaseStream, StreamSettings
from cdc.sources.sqlserver.tables import CaptureInstance, TableState
from cdc.sources.sqlserver.types import TypeModes

log = logging.getLogger(__name__)

Connect = Callable[[str], QueryLayer]
SLEEP_SLICE_S = 0.1


class SqlServerSource:
    name: ClassVar[str] = "sqlserver"
    options: ClassVar[tuple[Option, ...]] = SQLSERVER_OPTIONS

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
        self.table_filter = NameFilter(config.get("table.include.list"), config.get("table.exclude.list"))
        self.column_filter = NameFilter(None, config.get("column.exclude.list"))
        try:
            self.key_spec = parse_key_columns(config.get("message.key.columns"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self.modes = TypeModes(config.get("decimal.handling.mode"), config.get("time.precision.mode"),
                               config.get("binary.handling.mode"))
        self.poll_s = config.get("poll.interval.ms") / 1000
        self.end_idle_s = config.get("transaction.end.idle.ms") / 1000
        self.max_batch: int = config.get("max.batch.size")
        self.schema_changes = (SchemaChangeEvents(sanitize_topic(self.prefix), "sqlserver", SOURCE_SCHEMA)
                               if config.get("include.schema.changes") else None)
        self._tx_topic = transaction_topic(self.prefix, config.get("transaction.topic"))
        self._tx = bool(config.get("provide.transaction.metadata"))
        self._streams: dict[str, DatabaseStream] = {}
        self._finished: dict[str, dict[str, Any]] = {}  # initial_only databases: snapshot taken
        self._conns: list[QueryLayer] = []
        self._stopping = False
        if config.get("heartbeat.interval.ms"):
            log.warning("heartbeat.interval.ms is not implemented by the SQL Server source yet; no heartbeats are sent")

    # ---- the Source contract ----------------------------------------------------------------

    def stop(self) -> None:
        self._stopping = True

    def acknowledge(self, offset: dict[str, Any]) -> None:
        """Nothing to release: the change tables are trimmed by the server's cleanup job."""

    def close(self) -> None:
        for conn in self._conns:
            conn.close()
        self._conns.clear()

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        stored = self._stored(offset)
        for database in self.databases:
            yield from self._start_database(database, stored.get(database))
        if not self._streams:
            return  # initial_only: every database has its snapshot
        yield from self._poll_loop()

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

    def _state(self, instance: CaptureInstance) -> TableState:
        return TableState(instance, topic_prefix=self.prefix, modes=self.modes, column_filter=self.column_filter,
                          key_spec=self.key_spec)

    def _builder(self, database: str) -> EventBuilder:
        return EventBuilder(prefix=self.prefix, database=database, tombstones=self.config.get("tombstones.on.delete"),
                            schema_changes=self.schema_changes,
                            tracker=TransactionTracker(self._tx_topic) if self._tx else None, clock=self.clock)

    def _offset(self) -> dict[str, Any]:
        return {"databases": {**self._finished, **{db: s.offset() for db, s in self._streams.items()}}}

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
        stream.start(instances)
        return stream

    def _start_database(self, database: str, stored: dict[str, Any] | None) -> Iterator[Batch]:
        conn = self._open(database)
        catalog.check_database(conn)
        instances = catalog.read_instances(conn, self.table_filter)
        catalog.require_instances(conn, instances, self.table_filter)
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
        with_data = mode != "no_data"
        snap_conn = self._open(database)
        snapshot = Snapshot(snap_conn, builder, isolation=self.config.get("snapshot.isolation.mode"),
                            lock_timeout_ms=self.config.get("snapshot.lock.timeout.ms"),
                            fetch_size=self.config.get("snapshot.fetch.size"), with_data=with_data,
                            read_structure=lambda: catalog.read_instances(snap_conn, self.table_filter),
                            make_state=self._state, stopping=lambda: self._stopping)
        for events in snapshot.run(instances):
            yield Batch(events)  # no offset until the snapshot is complete
        snap_conn.close()
        self._conns.remove(snap_conn)
        stream = DatabaseStream(conn, builder, settings, Position(snapshot.lsn), self._state)
        stream.start([plan.current for plan in snapshot.plans.values()]
                     + [plan.next for plan in snapshot.plans.values() if plan.next is not None])
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
                if idle_ns > 0 and self.clock() - last_change[db] >= idle_ns:
                    ended = stream.builder.end_transaction()
                    if ended:
                        yield Batch(ended, self._offset())
            yield Batch([], self._offset(), caught_up=True)
            if not busy:
                self._pause()

    def _poll_with_retries(self, stream: DatabaseStream) -> Iterator[tuple[list[ChangeEvent], Position]]:
        attempts = 0
        while True:
            try:
                yield from stream.poll()
                return
            except CdcError as exc:
                if not exc.retriable or self._stopping or attempts >= self.settings.max_retries:
                    raise
                attempts += 1
                wait = min(self.settings.retry_wait_s * 2 ** attempts, 30)
                log.warning("%s; reconnecting in %.1f s", exc.message, wait)
                self._sleep(wait)
                stream.conn.close()
                # Start again after the last batch handed out: events built after it (and the
                # transaction numbering they advanced) are rebuilt, not lost or counted twice.
                replacement = self._resume(self._open(stream.database), stream.delivered)
                self._streams[stream.database] = replacement
                stream = replacement

    def _pause(self) -> None:
        waited = 0.0
        while waited < self.poll_s and not self._stopping:
            step = min(SLEEP_SLICE_S, self.poll_s - waited)
            self._sleep(step)
            waited += step
