"""SQL Server's parts for the core's coordinator (cdc.core.source.PartitionedChangeEventSources, Debezium's
``SqlServerChangeEventSourceFactory``): each database of database.names is a partition, with its entry in
the offset, decided and snapshotted in turn by the coordinator (cdc.core.coordinator); then one streamer
polls every database that streams.

    partitions    the databases, each with its stored offset (Debezium's single-database shape taken too)
    prepare       a connection to the database, CDC checked on it and on its included tables, the signal table
    locate        whether the change tables still hold the stored offset (the cleanup job's retention)
    snapshot      SNAPSHOT and SCHEMA (no_data): snapshot.py's steps, then the database's stream from its LSN
                  (initial_only: its offset held); resumable: the rows in chunks while streaming instead
    start_log     STREAM: on from the offset
    hold          NOTHING: initial_only, taken before: the offset kept as it is
    stream_from   the streamer (stream.py) polls every streaming database's change tables
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from typing import Any

from cdc.core.config import Config
from cdc.core.errors import CdcError, SourceError
from cdc.core.records import Batch
from cdc.core.snapshot_mode import Decision, Plan
from cdc.core.snapshot_restart import attempt_offset
from cdc.core.snapshot_selection import TableName
from cdc.core.source import Partition, SourceSettings
from cdc.sources.sqlserver import catalog
from cdc.sources.sqlserver.changes import Position
from cdc.sources.sqlserver.config import SNAPSHOT_MODES
from cdc.sources.sqlserver.connection import QueryLayer
from cdc.sources.sqlserver.events import EventBuilder
from cdc.sources.sqlserver.signals import SqlServerSignals
from cdc.sources.sqlserver.snapshot import Restart, Snapshot
from cdc.sources.sqlserver.stream import DatabaseStream, Streamer, StreamSettings
from cdc.sources.sqlserver.tables import CaptureInstance, TableState

log = logging.getLogger(__name__)

Offset = dict[str, Any]


class SqlServerChangeEventSources:
    """The start-up parts SqlServerSource wires. ``held``: the offsets of databases not streaming (initial_only,
    snapshot taken; in a snapshot, its restart marker), shared with the source's ``offset``; ``resume`` makes a
    stream continuing after a database's offset (the streamer's reconnects use it too)."""

    schema_is_snapshot = True  # no_data: the structure read in the snapshot's steps, then the stream from its LSN

    def __init__(self, config: Config, common: SourceSettings, *, databases: list[str], signals: SqlServerSignals,
                 streamer: Streamer, held: dict[str, Offset], open_conn: Callable[[str], QueryLayer],
                 close_conn: Callable[[QueryLayer], None], builder: Callable[[str], EventBuilder],
                 state: Callable[[CaptureInstance], TableState], stream_settings: Callable[[], StreamSettings],
                 resume: Callable[..., DatabaseStream], offset: Callable[[], Offset],
                 stopping: Callable[[], bool]) -> None:
        self._config, self._common, self._databases = config, common, databases
        self._signals, self._streamer, self._held = signals, streamer, held
        self._open, self._close, self._builder, self._state = open_conn, close_conn, builder, state
        self._stream_settings, self._resume, self._offset, self._stopping = stream_settings, resume, offset, stopping
        # per database being started: its connection, its capture instances, why its offset is gone
        self._conns: dict[str, QueryLayer] = {}
        self._instances: dict[str, list[CaptureInstance]] = {}
        self._gone: dict[str, CdcError | None] = {}

    # ---- the coordinator's steps (cdc.core.source.PartitionedChangeEventSources) ---------------

    def partitions(self, offset: Offset | None) -> list[Partition]:
        stored = self.stored(offset)
        return [Partition(db, stored.get(db), f"database {db}") for db in self._databases]

    def prepare(self, partition: str, offset: Offset | None) -> None:
        conn = self._conns[partition] = self._open(partition)
        self._instances[partition] = self._check_tables(conn)
        self._gone[partition] = None

    def locate(self, partition: str, offset: Offset) -> tuple[Offset, bool]:
        gone = self._gone[partition] = catalog.purged(self._conns[partition], self._instances[partition],
                                                      Position.from_offset(offset).commit_lsn)
        return offset, gone is None

    def log_gone(self, partition: str, offset: Offset) -> CdcError:
        gone = self._gone[partition]
        assert gone is not None
        return gone

    def hold(self, partition: str, offset: Offset | None) -> None:
        self._held[partition] = offset or {}

    def snapshot(self, partition: str, decision: Decision, offset: Offset | None,
                 attempt: int) -> Generator[Batch, None, Offset | None]:
        if decision.plan is Plan.RESUME_SNAPSHOT:
            raise _unsupported(partition, decision)
        gone = self._gone[partition]
        if gone is not None:
            log.warning("%s; taking a new snapshot (%s)", gone.message, decision.reason)
        return (yield from self._snapshot_database(self._conns[partition], self._instances[partition],
                                                   with_data=decision.plan is Plan.SNAPSHOT,
                                                   then_stop=decision.then_stop, attempt=attempt))

    def start_log(self, partition: str, decision: Decision, offset: Offset | None) -> Generator[Batch, None, Offset]:
        if decision.plan is not Plan.STREAM:  # LOG_START (never): a mode SQL Server has not
            raise _unsupported(partition, decision)
        assert offset is not None
        self._streamer.add(self._resume(self._conns[partition], offset, self._instances[partition]))
        yield from ()
        return offset

    def stream_from(self, starts: dict[str, Offset]) -> Iterator[Batch]:
        return self._streamer.run()

    # ---- the offset, the tables -----------------------------------------------------------------

    def stored(self, offset: Offset | None) -> dict[str, Offset]:
        """Each database's entry of the stored offset."""
        if not offset:
            return {}
        if "databases" in offset:
            return dict(offset["databases"])
        if "commit_lsn" in offset and len(self._databases) == 1:  # Debezium's single-database shape
            return {self._databases[0]: offset}
        raise SourceError("the stored offset is not a SQL Server offset", fix="delete it to start over")

    def _check_tables(self, conn: QueryLayer) -> list[CaptureInstance]:
        """CDC on ``conn``'s database and its included tables, the signal table as it must be: the capture
        instances of the included tables, the signal table's left out."""
        catalog.check_database(conn)
        instances = catalog.read_instances(conn, self._common.table_filter)
        catalog.require_instances(conn, instances, self._common.table_filter)
        self._signals.check_table(conn)
        return [i for i in instances if not self._signals.is_signal_table(conn.database, i)]

    # ---- one database's snapshot --------------------------------------------------------------------

    def _snapshot_database(self, conn: QueryLayer, instances: list[CaptureInstance], *, with_data: bool,
                           then_stop: bool, attempt: int) -> Generator[Batch, None, Offset | None]:
        """The snapshot (snapshot.py), then the database's stream from its LSN (or, initial_only, its offset
        held: None). Before its first row this database's offset is the restart marker of attempt ``attempt`` + 1
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
        self._close(snap_conn)
        self._held.pop(database, None)
        stream = DatabaseStream(conn, builder, self._stream_settings(), Position(snapshot.lsn), self._state)
        self._signals.wire(stream)
        stream.start([plan.current for plan in snapshot.plans.values()]
                     + [plan.next for plan in snapshot.plans.values() if plan.next is not None])
        start: Offset | None = None
        if then_stop:
            self._held[database] = {**stream.offset(), "snapshot_only": True}
        else:
            self._streamer.add(stream)
            start = stream.offset()
            if chunked:
                self._signals.queue_initial_snapshot(database, lambda name: self._common.snapshot.snapshots(
                    _table_name(name)))
        yield Batch([], self._offset())
        return start

    def _chunked(self, database: str, resumable: bool) -> bool:
        """Whether snapshot.resumable reads the rows in chunks between watermarks while streaming."""
        if not resumable or not self._config.get("snapshot.resumable"):
            return False
        if not self._signals.reads_watermarks(database):
            log.warning("snapshot.resumable needs the signal table (signal.data.collection, channel 'source') in "
                        "database %s for the watermarks of its chunks: taking the classic snapshot", database)
            return False
        self._common.snapshot.refuse_overrides("snapshot.resumable (its chunks are read by key, between "
                                               "watermarks)", "leave out snapshot.resumable or the overrides")
        return True

    def _snapshotter(self, conn: QueryLayer, builder: EventBuilder, *, with_data: bool,
                     row_counts: dict[int, int]) -> Snapshot:
        config, database, table_filter = self._config, conn.database, self._common.table_filter
        snapshot = Snapshot(conn, builder, isolation=config.get("snapshot.isolation.mode"),
                            lock_timeout_ms=config.get("snapshot.lock.timeout.ms"),
                            fetch_size=config.get("snapshot.fetch.size"), with_data=with_data,
                            read_structure=lambda: [i for i in catalog.read_instances(conn, table_filter)
                                                    if not self._signals.is_signal_table(database, i)],
                            make_state=self._state, stopping=self._stopping,
                            progress=config.get("snapshot.progress"),
                            estimated_rows=lambda instance: row_counts.get(instance.source_object_id))
        snapshot.notifier = self._common.notifier
        snapshot.selection = self._common.snapshot
        return snapshot


def _unsupported(database: str, decision: Decision) -> SourceError:
    """LOG_START (never), RESUME_SNAPSHOT: a mode and an offset SQL Server has not."""
    return SourceError(f"database {database}: {decision.plan.value} ({decision.reason}) is not something the "
                       "SQL Server source does", fix=f"set snapshot.mode to one of {', '.join(SNAPSHOT_MODES)}")


def _table_name(qualified: str) -> TableName:
    """database.schema.table as Debezium's SQL Server connector names a table."""
    database, schema, table = qualified.split(".", 2)
    return database, schema, table
