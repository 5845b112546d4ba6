"""MySQL / MariaDB's parts for the core's coordinator (cdc.core.source.ChangeEventSources, Debezium's
``MySqlChangeEventSourceFactory``): what each step of the start-up sequence (cdc.core.coordinator) is here.

    prepare       the control connection, the server checked (binlog on, ROW format, FULL row image, grants),
                  the signal table
    locate        where the stored offset continues on this server (resume.py): by GTID where the server has
                  them, else by file and position; another server's offset refused; the log reaches it unless
                  its binlog was purged (or, by GTID, this server lacks transactions delivered)
    snapshot      SNAPSHOT and SCHEMA (no_data, recovery: the tables recorded in the schema history): the
                  consistent binlog point, the schema, the rows unless resumable (then in chunks while
                  streaming, queued in the snapshot's offset)
    start_log     STREAM: the schema as the history has it at the offset (rebuilt from the tables when there
                  is none); LOG_START (never): the oldest binlog, the schema from its DDL alone
    stream_from   the binlog from the start offset (the source wires the decoder: ``stream``)
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pymysql

from cdc.core.config import Config
from cdc.core.errors import OffsetStoreError, SourceError
from cdc.core.filters import NameFilter
from cdc.core.records import Batch
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.snapshot_mode import Decision, Plan
from cdc.core.snapshot_selection import SnapshotSelection, TableName
from cdc.sources.mysql.connection import ServerInfo, binlog_files
from cdc.sources.mysql.history import SchemaHistoryRecords
from cdc.sources.mysql.resume import Resume, plan, read_server_gtids
from cdc.sources.mysql.signals import MySqlSignals
from cdc.sources.mysql.snapshotter import MySqlSnapshotter
from cdc.sources.mysql.tables import TableCatalog

log = logging.getLogger(__name__)

Offset = dict[str, Any]


class MySqlChangeEventSources:
    """The start-up parts MySqlSource wires. ``connect`` opens the control connection and checks the server
    (the source keeps the server's facts: ``server``, ``schema_events``); ``stream`` reads the binlog from an
    offset, by GTID from ``resume.gtids`` where set; ``offset`` stamps a position with the signals' state."""

    schema_is_snapshot = True  # no_data, recovery: the tables' structure recorded in the history, as a snapshot

    def __init__(self, config: Config, *, snapshot_mode: str, connect: Callable[[], pymysql.connections.Connection],
                 control_conn: Callable[[], pymysql.connections.Connection], server: Callable[[], ServerInfo],
                 schema_events: Callable[[], SchemaChangeEvents], gtid_sources: NameFilter, signals: MySqlSignals,
                 snapshotter: MySqlSnapshotter, tables: TableCatalog, history: SchemaHistoryRecords,
                 selection: SnapshotSelection, offset: Callable[[Offset], Offset],
                 stream: Callable[[Offset], Iterator[Batch]]) -> None:
        self._config, self._snapshot_mode = config, snapshot_mode
        self._connect, self._control_conn, self._server, self._schema_events = connect, control_conn, server, \
            schema_events
        self._gtid_sources, self._signals, self._snapshotter = gtid_sources, signals, snapshotter
        self._tables, self._history, self._selection = tables, history, selection
        self._offset, self._stream = offset, stream
        self.resume = Resume()  # how the stream starts: set by locate, and after a snapshot
        self._conn: pymysql.connections.Connection | None = None

    # ---- the coordinator's steps (cdc.core.source.ChangeEventSources) ---------------------------

    def prepare(self, offset: Offset | None) -> None:
        self._conn = self._connect()
        self._signals.check_table(self._conn)
        self.resume = Resume()

    def locate(self, offset: Offset) -> tuple[Offset, bool]:
        """How the stored offset continues on this server (resume.py); one written on another server is refused,
        unless the stream goes by GTID and this server belongs to the same topology."""
        conn = self._conn
        assert conn is not None
        info = self._server()
        ignore = self._config.get("gtid.ignore.on.recovery")
        self.resume = resume = plan(offset, None if ignore else read_server_gtids(conn, info),
                                    lambda: binlog_files(conn), self._gtid_sources)
        stored = offset.get("server_identity")
        info.check_written_here("stored offset", stored, OffsetStoreError, topology=resume.by_gtid)
        if resume.by_gtid:
            where = "" if stored in (None, info.identity) else f", written on {stored}: another server of the topology"
            log.info("resuming by GTID from %s%s", offset.get("gtids"), where)
        return offset, resume.reaches

    def log_gone(self, offset: Offset) -> SourceError:
        """This server cannot continue the stored offset: its binlog was purged; by GTID, it also lacks
        transactions delivered."""
        return SourceError(self.resume.gone or "the stored offset is no longer in the binlog", fix=self.resume.fix)

    def snapshot(self, decision: Decision, offset: Offset | None,
                 attempt: int) -> Generator[Batch, None, Offset | None]:
        if decision.plan is Plan.SNAPSHOT and self.resume.gone is not None:
            log.warning("%s; taking a new snapshot (snapshot.mode=when_needed)", self.resume.gone)
        with_data = decision.plan is Plan.SNAPSHOT
        chunked = with_data and self._config.get("snapshot.resumable") and not decision.then_stop \
            and self._signals.chunked_snapshot_possible()
        if chunked:
            self._selection.refuse_overrides("snapshot.resumable (its chunks are read by key, between "
                                             "watermarks)", "leave out snapshot.resumable or the overrides")
        position = yield from self.take(with_data=with_data and not chunked, final=decision.then_stop,
                                        chunked=chunked, attempt=attempt)
        if decision.then_stop:
            return None
        self.resume = self._after_snapshot(position)
        return self._offset(position)

    def start_log(self, decision: Decision, offset: Offset | None) -> Generator[Batch, None, Offset]:
        if decision.plan is Plan.LOG_START:  # the whole binlog that is left, schema from its DDL alone
            first = binlog_files(self._control_conn())[0]
            log.warning("snapshot.mode=never: reading from the oldest binlog %s; tables created before it are unknown",
                        first)
            self._tables.use(self._tables.new_schema())
            return {"file": first, "pos": 4, "event": 0, "row": 0}
        # STREAM: the schema as the history has it at the offset
        assert offset is not None
        self._history.require(offset, self._snapshot_mode)
        schema = self._history.replay(offset, self._tables.new_schema, by_gtid=self.resume.by_gtid)
        self._tables.use(schema)
        if schema is None:  # recovery: no history, rebuild it from the tables as they are now
            yield from self.take(with_data=False, final=False, at=offset)
        return offset

    def stream_from(self, start: Offset) -> Iterator[Batch]:
        return self._stream(start)

    # ---- the snapshot -----------------------------------------------------------------------------

    def take(self, *, with_data: bool, final: bool, at: Offset | None = None, chunked: bool = False,
             attempt: int = 0) -> Generator[Batch, None, Offset]:
        """The snapshot's batches, the last one with the offset after it; returns the position it ends at."""
        last, position = yield from self._snapshotter.take(self._server(), self._schema_events(), with_data=with_data,
                                                           final=final, at=at, attempt=attempt)
        if chunked:  # the rows come in chunks while streaming; the queue is in this very offset
            self._signals.queue_initial_snapshot(lambda name: self._selection.snapshots(_table_name(name)))
        yield Batch([last] if last is not None else [], self._offset(position), caught_up=final)
        return position

    def _after_snapshot(self, position: Offset) -> Resume:
        """How the stream goes on from this run's snapshot: by GTID, as Debezium's, when its GTIDs are exactly the
        transactions before its position (a server that serves only GTID dumps needs it), else by its binlog file
        and position (MySQL's snapshot under table locks: a commit elsewhere may slip between the two reads)."""
        gtids = str(position.get("gtids") or "").replace("\n", "").strip()
        if gtids and self._server().gtid_mode and self._snapshotter.gtids_exact \
                and not self._config.get("gtid.ignore.on.recovery"):
            return Resume(gtids)
        return Resume()


def _table_name(qualified: str) -> TableName:
    """database.table as Debezium's MySQL connector names a table (a catalog, no schema)."""
    database, _, table = qualified.partition(".")
    return database, None, table
