"""The initial snapshot of one database, in the reference's steps.

    1. the tables to capture (given)
    2. lock them as snapshot.isolation.mode says (exclusive: TABLOCKX for the whole snapshot;
       repeatable_read: shared TABLOCK while the structure is read; snapshot, read_committed,
       read_uncommitted: no table locks)
    3. read the maximum LSN: the point the stream starts after
    4. read the structure (capture instances, columns): CREATE schema change events
    5. release the locks (repeatable_read)
    6. store the restart marker (cdc.core.snapshot_restart): this database's offset says a snapshot
       attempt is under way until the snapshot completes
    7. read every row as an ``op: r`` event through core's runner (cdc.core.snapshot_runner: marks,
       progress with the server's row counts, stop between batches; after an interrupted attempt a
       truncate per table first); skipped for snapshot.mode=no_data
    8. the caller records the completed snapshot in the offset

Only ``snapshot`` and ``exclusive`` give a snapshot exactly consistent with the LSN of step 3;
with the others a change committed during the snapshot may show in both the snapshot and the
stream (Debezium documents the same).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from cdc.core.errors import SourceError
from cdc.core.notifications import SILENT, Notifier
from cdc.core.records import Batch, ChangeEvent
from cdc.core.snapshot_runner import RowBatch, SnapshotTable, read_tables
from cdc.core.snapshot_selection import SnapshotSelection, TableName, match_columns
from cdc.sources.sqlserver import catalog
from cdc.sources.sqlserver import queries as q
from cdc.sources.sqlserver.connection import QueryLayer
from cdc.sources.sqlserver.events import EventBuilder
from cdc.sources.sqlserver.lsn import NULL, Lsn
from cdc.sources.sqlserver.source_info import source_block
from cdc.sources.sqlserver.tables import CaptureInstance, TablePlan, TableState, plan_tables

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Restart:
    """Step 6: the offset stored before the first row (the source's, this database's entry
    ``{"snapshot_attempt": n}``), and whether an earlier attempt was interrupted (truncates first)."""

    offset: dict[str, Any]
    restarted: bool


class Snapshot:
    """Runs the steps; ``lsn`` and ``plans`` are set once the structure has been read. ``estimated_rows``
    gives a table's size for the progress (None: unknown)."""

    def __init__(self, conn: QueryLayer, builder: EventBuilder, *, isolation: str, lock_timeout_ms: int,
                 fetch_size: int, with_data: bool, read_structure: Callable[[], list[CaptureInstance]],
                 make_state: Callable[[CaptureInstance], TableState], stopping: Callable[[], bool],
                 progress: str = "auto",
                 estimated_rows: Callable[[CaptureInstance], int | None] = lambda instance: None) -> None:
        self.conn = conn
        self.builder = builder
        self.isolation = isolation
        self.lock_timeout_ms = lock_timeout_ms
        self.fetch_size = fetch_size
        self.with_data = with_data
        self.read_structure = read_structure
        self.make_state = make_state
        self.stopping = stopping
        self.notifier: Notifier = SILENT  # Debezium's notifications of the snapshot (the coordinator's)
        self.selection = SnapshotSelection()  # snapshot.include.collection.list, snapshot.select.statement.overrides
        self.progress = progress
        self.estimated_rows = estimated_rows
        self.lsn: Lsn = NULL
        self.plans: dict[str, TablePlan] = {}

    def run(self, tables: list[CaptureInstance], restart: Restart | None = None) -> Generator[Batch, None, None]:
        """The steps; ``restart``: the marker stored before the first row (None: none, as without rows)."""
        conn, mode = self.conn, self.isolation
        conn.set_isolation(mode)
        conn.execute(q.lock_timeout(self.lock_timeout_ms))
        conn.execute(q.BEGIN)
        try:
            if mode in ("exclusive", "repeatable_read"):
                for schema, table in sorted({(t.schema, t.table) for t in tables}):
                    conn.query(q.lock_table(schema, table, exclusive=mode == "exclusive"))
            self.lsn = catalog.max_lsn(conn)
            log.info("snapshot of database %s at LSN %s (%s)", conn.database, self.lsn, mode)
            structure = self._structure()
            if mode == "repeatable_read":
                conn.execute(q.COMMIT)  # step 5: release the shared locks
                conn.execute(q.BEGIN)
            yield Batch(structure)
            if self.with_data:
                yield from self._rows(restart)
            conn.execute(q.COMMIT)
        except BaseException:
            try:
                conn.execute(q.ROLLBACK)
            except SourceError:
                pass
            raise

    def _structure(self) -> list[ChangeEvent]:
        """Step 4: the capture instances in effect at the LSN, registered with the builder, as CREATE
        schema change events (a newer instance is scheduled to take over at its start LSN)."""
        self.plans = plan_tables(self.read_structure(), self.lsn)
        structure: list[ChangeEvent] = []
        for name in sorted(self.plans):
            plan = self.plans[name]
            state = self.make_state(plan.current)
            self.builder.register(plan.current, state)
            event = self.builder.schema_event("CREATE", state, self.lsn, snapshot=True)
            if event is not None:
                structure.append(event)
            if plan.next is not None:
                self.builder.schedule_switch(self.make_state(plan.next))
        return structure

    def _rows(self, restart: Restart | None) -> Iterator[Batch]:
        """Steps 6 and 7."""
        if restart is not None:
            yield Batch([], restart.offset, commit_now=True)  # durable before any row goes out
        restarted = restart is not None and restart.restarted
        names = [name for name in sorted(self.plans) if self.selection.snapshots(self._name(name))]
        last = yield from read_tables([self._table(name, restarted) for name in names],
                                      progress=self.progress, stopping=self.stopping, restarted=restarted,
                                      notifier=self.notifier)
        if last is not None:
            yield Batch([last])

    def _name(self, name: str) -> TableName:
        """A captured table as Debezium's SQL Server connector names it: database.schema.table."""
        instance = self.plans[name].current
        return self.builder.database, instance.schema, instance.table

    def _table(self, name: str, restarted: bool) -> SnapshotTable:
        """One captured table of the snapshot: its rows in pages of fetch_size (``restarted``: after an
        interrupted attempt, with the truncate that starts it again)."""
        builder = self.builder
        state = builder.states[self.plans[name].current.name]
        instance = state.instance
        columns = [c.name for c in instance.columns]

        def source(now: int) -> dict[str, Any]:
            return source_block(builder.prefix, builder.database, instance.schema, instance.table, ts_ns=now,
                                snapshot="true", commit_lsn=self.lsn)

        override = self.selection.select_for(self._name(name))
        select = q.select_rows(instance.schema, instance.table, columns) if override is None else override

        def batches() -> Iterator[RowBatch]:
            for rows in self.conn.batches(select, (), self.fetch_size):
                if override is not None:
                    rows = by_column_names(rows, columns, f"snapshot.select.statement.overrides.{name}")
                now = builder.clock()
                yield RowBatch([state.row(values) for values in rows], source(now), (self.lsn.as_int(), 0),
                               (now // 1_000_000, now // 1000, now))

        return SnapshotTable(state.envelope, batches, estimated_rows=lambda: self.estimated_rows(instance),
                             restart_source=source(builder.clock()) if restarted else {},
                             restart_position=(self.lsn.as_int(), 0))


def by_column_names(rows: list[dict[str, Any]], columns: list[str], option: str) -> list[dict[str, Any]]:
    """Rows of an override's SELECT keyed by the table's column names, as Debezium reads its result: by name
    without regard to case, a column it leaves out null, one the table does not have an error."""
    if not rows:
        return rows
    names = list(rows[0])
    if names == columns:
        return rows
    picked = match_columns(names, columns, option)
    return [{c: (row[names[i]] if i is not None else None) for c, i in zip(columns, picked, strict=True)}
            for row in rows]
