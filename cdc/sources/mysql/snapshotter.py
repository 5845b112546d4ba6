"""The MySQL / MariaDB snapshot (Debezium's snapshot change event source), its steps in order:

    a consistent point      snapshot.py: the binlog position the rows and the schema are read at (or, for
                            snapshot.mode=recovery, the stored offset's)
    the schema              every DDL into the schema history, schema change events, the model in use
    the rows                each captured table through core's snapshot runner (op r, marks, progress)
    returns                 the last event, held back to be marked last, and the position streaming starts at

It reaches the rest of the source through callables the source wires: a connection, the table filter,
the schema model's setters and each table's decoding state, the history's ``record``.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

import pymysql

from cdc.config import Config
from cdc.core.envelope import now_ts
from cdc.core.filters import warn_if_nothing_captured
from cdc.core.notifications import SILENT, Notifier
from cdc.core.records import Batch, ChangeEvent
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.snapshot_restart import attempt_offset
from cdc.core.snapshot_runner import RowBatch, SnapshotTable, read_tables
from cdc.core.snapshot_selection import SnapshotSelection
from cdc.sources.mysql import snapshot as snap
from cdc.sources.mysql.capture import CaptureFilter
from cdc.sources.mysql.connection import ServerInfo
from cdc.sources.mysql.ddl import MySqlSchema
from cdc.sources.mysql.position import position_key
from cdc.sources.mysql.snapshot_rows import TextRowEncoder, TextRows, row_batch
from cdc.sources.mysql.source_info import source_block
from cdc.sources.mysql.tables import TableState

log = logging.getLogger(__name__)

Record = Callable[[dict[str, Any], str | None, str, list[dict[str, Any]]], None]  # (position, database, ddl, changes)
# what a snapshot leaves: its last event (not yet handed over) and the position streaming starts at
SnapshotEnd = tuple[ChangeEvent | None, dict[str, Any]]


@dataclass(frozen=True)
class SnapshotSettings:
    prefix: str
    locking: str  # snapshot.locking.mode
    fetch_size: int  # snapshot.fetch.size
    progress: str  # snapshot.progress
    include_schema_changes: bool
    # the tables whose rows are read, and how (snapshot.include.collection.list, snapshot.select.statement.overrides)
    selection: SnapshotSelection = SnapshotSelection()

    @classmethod
    def from_config(cls, config: Config, prefix: str, selection: SnapshotSelection | None = None) -> SnapshotSettings:
        return cls(prefix=prefix, locking=config.get("snapshot.locking.mode"),
                   fetch_size=config.get("snapshot.fetch.size"), progress=config.get("snapshot.progress"),
                   include_schema_changes=config.get("include.schema.changes"),
                   selection=selection or SnapshotSelection())


class MySqlSnapshotter:
    def __init__(self, settings: SnapshotSettings, *, connect: Callable[[], pymysql.connections.Connection],
                 capture: CaptureFilter, new_schema: Callable[[], MySqlSchema],
                 use_schema: Callable[[MySqlSchema], None], table_state: Callable[[str, str], TableState | None],
                 record: Record, stopping: Callable[[], bool]) -> None:
        self.settings = settings
        self._connect = connect
        self._capture = capture
        self._new_schema = new_schema
        self._use_schema = use_schema
        self._table_state = table_state
        self.notifier: Notifier = SILENT  # Debezium's notifications of the snapshot (the coordinator's)
        self.gtids_exact = False  # the last snapshot's GTIDs are exactly the transactions before its position
        self._record = record
        self._stopping = stopping
        # Rows also in batches the compiled codec encoded (cdc.sources.mysql.snapshot_rows): set by the
        # source when the pipeline asks for encoded batches and the codec is installed.
        self.encoded = False

    def take(self, server: ServerInfo, schema_events: SchemaChangeEvents, *, with_data: bool, final: bool,
             at: dict[str, Any] | None = None, attempt: int = 0) -> Generator[Batch, None, SnapshotEnd]:
        """The schema (and with ``with_data`` the rows) as batches. ``at``: recovery, the schema now recorded
        at that stored position, nothing locked; ``attempt``: the attempts interrupted before this one
        (stored before the first row, so that a restart knows)."""
        conn = self._connect()
        last: ChangeEvent | None = None
        try:
            point = self._consistent_point(conn, server, at)
            self.gtids_exact = point.gtids_exact
            log.info("snapshot at binlog %s:%d%s", point.file, point.pos,
                     f" (GTIDs {point.gtids})" if point.gtids else "")
            read = snap.read_schema(conn, self._capture.schema_database)
            snap.release_global_lock(conn, point)
            ts_ms = int(time.time() * 1000)
            events = self._record_schema(read, point, server, schema_events, ts_ms)
            if events and not with_data:  # the snapshot's last event
                events[-1].value["source"]["snapshot"] = "last"  # type: ignore[index]
            if events:
                yield Batch(events)
            if with_data:
                yield Batch([], attempt_offset(attempt), commit_now=True)  # durable before any row goes out
                last = yield from self._rows(conn, read, point, server, ts_ms, restarted=attempt > 0)
            if at is None:
                snap.finish(conn, point)
        finally:
            conn.close()
        return last, {"file": point.file, "pos": point.pos, "gtids": point.gtids, "event": 0, "row": 0,
                      "server_id": server.server_id, "ts_sec": int(time.time()), "snapshot_completed": True,
                      **({"snapshot_only": True} if final else {})}

    def _consistent_point(self, conn: pymysql.connections.Connection, server: ServerInfo,
                          at: dict[str, Any] | None) -> snap.SnapshotPoint:
        if at is not None:  # recovery: the schema now, recorded at the stored position
            return snap.SnapshotPoint(at["file"], int(at["pos"]), at.get("gtids"))
        return snap.begin(conn, mariadb=server.mariadb, locking=self.settings.locking,
                          tables_to_lock=lambda: self._capture.tables_now(conn))

    def _record_schema(self, read: snap.SchemaRead, point: snap.SnapshotPoint, server: ServerInfo,
                       schema_events: SchemaChangeEvents, ts_ms: int) -> list[ChangeEvent]:
        """Every DDL of the schema read into the history and a new model (then in use); the schema change
        events of the captured databases."""
        position = {"ts_sec": ts_ms // 1000, "file": point.file, "pos": point.pos, "gtids": point.gtids,
                    "snapshot": True, "server_id": server.server_id}
        capture = self._capture
        schema = self._new_schema()
        events: list[ChangeEvent] = []
        statements = snap.schema_statements(read, server.charset, server.collation)
        for index, (database, table, ddl, dropped, emitted) in enumerate(statements):
            # a replay starts from these records: DROP of a table that is not in our (empty) model yet
            changes = [{"type": "DROP", "id": f'"{database}"."{dropped}"'}] if dropped else \
                schema.apply(ddl, database or None)
            if table is not None and capture.only_captured_tables_ddl and not capture.captured(database, table):
                continue
            if not emitted and not capture.captured_database(database):
                continue  # an empty database: kept in the history only if captured (its charset)
            self._record({**position, "snapshot_start": True} if index == 0 else position, database, ddl, changes)
            if self.settings.include_schema_changes and emitted:
                source = source_block(server.flavor, self.settings.prefix, database, table,
                                      ts_ms=int(time.time() * 1000), server_id=0, file=point.file, pos=point.pos,
                                      snapshot="true")
                events.append(schema_events.event(source, database, ddl, changes, ts_ms=now_ts()[0]))
        self._use_schema(schema)
        return events

    def _rows(self, conn: pymysql.connections.Connection, read: snap.SchemaRead, point: snap.SnapshotPoint,
              server: ServerInfo, ts_ms: int, restarted: bool) -> Generator[Batch, None, ChangeEvent | None]:
        """``op: r`` events of every captured table (cdc.core.snapshot_runner); returns the last one."""
        capture = self._capture
        captured = [(d, t, s) for d, t, _ in read.tables
                    if capture.captured(d, t) and (s := self._table_state(d, t)) is not None]
        captured.sort(key=lambda c: capture.order_key(c[0], c[1]))  # Debezium's table order
        warn_if_nothing_captured([f"{d}.{t}" for d, t, _ in captured],
                                 sorted(f"{d}.{t}" for d, t, _ in read.tables if d not in snap.SYSTEM_DATABASES),
                                 "database.include.list / table.include.list")
        captured = [c for c in captured if self.settings.selection.snapshots((c[0], None, c[1]))]
        tables = [self._table(conn, server.flavor, d, t, s, point, ts_ms) for d, t, s in captured]
        return (yield from read_tables(tables, progress=self.settings.progress, stopping=self._stopping,
                                       restarted=restarted, notifier=self.notifier))

    def _table(self, conn: pymysql.connections.Connection, flavor: str, database: str, table: str,
               state: TableState, point: snap.SnapshotPoint, ts_ms: int) -> SnapshotTable:
        base = (position_key(point.file, 0)[0], point.pos, 0)
        prefix, fetch_size = self.settings.prefix, self.settings.fetch_size
        override = self.settings.selection.select_for((database, None, table))

        def source() -> dict[str, Any]:  # no binlog event: server 0
            return source_block(flavor, prefix, database, table, ts_ms=ts_ms, server_id=0, file=point.file,
                                pos=point.pos)

        def batches() -> Iterator[RowBatch]:
            shared = {**source(), "snapshot": "true"}
            encoder: TextRowEncoder | None = None
            # the codec writes rows as they come: not for a table the column options change the rows of
            encoded = self.encoded and not state.stage.changes_rows and override is None
            chunks = snap.select_packets(conn, database, table, fetch_size) if encoded \
                else snap.select_rows(conn, database, table, fetch_size) if override is None \
                else snap.select_statement(conn, database, table, override, [c.name for c in state.table.columns],
                                           fetch_size)
            for chunk in chunks:
                if isinstance(chunk, TextRows):
                    encoder = encoder or TextRowEncoder(state, chunk.columns)
                    yield row_batch(chunk, state, encoder, shared, base)
                else:
                    yield RowBatch(state.rows(chunk), shared, base, now_ts())

        return SnapshotTable(state.envelope, batches, lambda: snap.estimate_rows(conn, database, table),
                             source(), (*base, 0))
