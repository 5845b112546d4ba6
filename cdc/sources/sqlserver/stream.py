"""Streaming one database: poll the change tables by LSN window.

    loop (source.py drives it, every poll.interval.ms when idle):
      to = sys.fn_cdc_get_max_lsn()              NULL: say whether the Agent runs
      nothing after the position?  -> idle
      re-read the capture instances                a table enabled/disabled, a new instance
      read every instance's rows with position.commit_lsn <= __$start_lsn <= to
      merge, pair, skip what was delivered (changes.py) -> events (events.py)
      the position becomes {commit_lsn: to}: the whole window is delivered

An instance's rows are read completely before merging because one ODBC connection cannot
hold several open result sets (no MARS); a window is bounded by what the capture job wrote
since the last poll.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from cdc.core.errors import SourceError
from cdc.core.filters import NameFilter
from cdc.core.records import ChangeEvent
from cdc.sources.sqlserver import catalog
from cdc.sources.sqlserver import queries as q
from cdc.sources.sqlserver.changes import ChangeRow, Position, change_row, changes, merge
from cdc.sources.sqlserver.connection import QueryLayer
from cdc.sources.sqlserver.events import EventBuilder
from cdc.sources.sqlserver.lsn import Lsn
from cdc.sources.sqlserver.tables import CaptureInstance, TableState, plan_tables

log = logging.getLogger(__name__)

_MISSING_CT = re.compile(r"Invalid object name 'cdc\.(?:\[)?(?:fn_cdc_get_all_changes_)?([^'\]]+?)(?:_CT)?(?:\])?'")


class CaptureInstanceDroppedError(SourceError):
    """A capture instance disappeared while the source was reading it."""


@dataclass
class StreamSettings:
    table_filter: NameFilter
    data_query_mode: str
    agent_query: str
    max_batch: int


class DatabaseStream:
    def __init__(self, conn: QueryLayer, builder: EventBuilder, settings: StreamSettings, position: Position,
                 make_state: Callable[[CaptureInstance], TableState]) -> None:
        self.conn = conn
        self.builder = builder
        self.settings = settings
        self.position = position
        self.make_state = make_state
        self.instances: dict[str, CaptureInstance] = {}  # every instance being read, by name
        self.stops: dict[str, Lsn] = {}
        self._no_max_lsn_reported = False
        self.delivered: dict[str, Any] = self.offset()  # the offset of the last batch handed out

    @property
    def database(self) -> str:
        return self.conn.database

    def start(self, known: list[CaptureInstance] | None = None) -> None:
        """Take the instances in effect at the position (after a snapshot: those it registered)."""
        instances = known if known is not None else catalog.read_instances(self.conn, self.settings.table_filter)
        for name, plan in plan_tables(instances, self.position.commit_lsn).items():
            if plan.current.name not in self.builder.states:
                self.builder.register(plan.current, self.make_state(plan.current))
            self.instances[plan.current.name] = plan.current
            if plan.next is not None:
                self._add_next(plan.current, plan.next)

    def _add_next(self, current: CaptureInstance, newer: CaptureInstance) -> None:
        if newer.name not in self.instances:
            self.builder.schedule_switch(self.make_state(newer))
            self.instances[newer.name] = newer
        self.stops[current.name] = newer.start_lsn

    def refresh(self) -> list[ChangeEvent]:
        """Notice tables whose CDC was enabled or disabled, and new capture instances."""
        events: list[ChangeEvent] = []
        found = {i.name: i for i in catalog.read_instances(self.conn, self.settings.table_filter)}
        for name in list(self.instances):
            if name not in found:
                self._dropped(name)
        by_table: dict[str, list[CaptureInstance]] = {}
        for instance in found.values():
            by_table.setdefault(instance.table_name, []).append(instance)
        for table, group in by_table.items():
            group.sort(key=lambda i: i.start_lsn)
            reading = [i for i in group if i.name in self.instances]
            if not reading:  # CDC enabled on a table while running
                newest = group[-1]
                log.info("CDC was enabled on %s.%s (capture instance %s): capturing it from %s",
                         self.database, table, newest.name, newest.start_lsn)
                state = self.make_state(newest)
                self.builder.register(newest, state)
                self.instances[newest.name] = newest
                event = self.builder.schema_event("CREATE", state, newest.start_lsn, snapshot=False)
                if event is not None:
                    events.append(event)
                continue
            current = self.instances[reading[0].name]
            for newer in group:
                if newer.start_lsn > current.start_lsn and newer.name not in self.instances:
                    log.info("table %s.%s has a new capture instance %s from %s", self.database, table, newer.name,
                             newer.start_lsn)
                    self._add_next(current, newer)
        return events

    def _dropped(self, name: str) -> None:
        instance = self.instances.pop(name)
        self.stops.pop(name, None)
        others = [i for i in self.instances.values() if i.table_name == instance.table_name]
        if others:
            log.info("capture instance %s of %s.%s was dropped; %s continues", name, self.database,
                     instance.table_name, others[0].name)
            self.builder.current[instance.table_name] = others[0].name
            return
        error = CaptureInstanceDroppedError(
            f"capture instance {name} of table {self.database}.{instance.table_name} was dropped while running "
            "(sys.sp_cdc_disable_table): its changes are no longer captured",
            fix=f"re-enable it with {q.enable_table_sql(self.database, instance.schema, instance.table)} "
                "and take a new snapshot of the table (rows changed meanwhile were not captured)")
        log.warning("%s", error)
        self.builder.current.pop(instance.table_name, None)

    def _rows(self, instance: CaptureInstance, low: Lsn, high: Lsn) -> list[ChangeRow]:
        if self.settings.data_query_mode == "function":
            # The function refuses a lower bound below the instance's own start.
            sql, low = q.changes_function(instance.name), max(low, instance.start_lsn)
        else:
            sql = q.changes_direct(instance.name)
        rows: list[ChangeRow] = []
        for batch in self.conn.batches(sql, (low.raw, high.raw), 5000):
            rows.extend(change_row(instance.name, record) for record in batch)
        return rows

    def _read_window(self, low: Lsn, high: Lsn) -> list[list[ChangeRow]]:
        streams = []
        for instance in list(self.instances.values()):
            try:
                streams.append(self._rows(instance, low, high))
            except SourceError as exc:
                if not _MISSING_CT.search(exc.message) or instance.name in {
                        i.name for i in catalog.read_instances(self.conn, self.settings.table_filter)}:
                    raise
                self._dropped(instance.name)  # disabled between listing and reading
        return streams

    def poll(self) -> Iterator[tuple[list[ChangeEvent], Position]]:
        """Events of the changes committed since the position, in batches, each with the position
        after it; the last batch of a window carries ``{commit_lsn: max LSN}``."""
        high = catalog.max_lsn(self.conn)
        if not high.available:
            if not self._no_max_lsn_reported:
                catalog.explain_no_max_lsn(self.conn, self.settings.agent_query)
                self._no_max_lsn_reported = True
            return
        self._no_max_lsn_reported = False
        position = self.position
        if high < position.commit_lsn or (high == position.commit_lsn and position.change_lsn is None):
            return
        events = self.refresh()
        builder = self.builder
        max_batch = self.settings.max_batch
        rows = merge(self._read_window(position.commit_lsn, high))
        for change in changes(rows, position, self.stops):
            if change.instance not in builder.states:
                continue
            events.extend(builder.events(change))
            if len(events) >= max_batch:
                self.position = change.position
                self.delivered = self.offset()
                yield events, self.position
                events = []
        events.extend(builder.switches_due(high))
        self._retire_stopped(high)
        self.position = Position(high)
        self.delivered = self.offset()
        yield events, self.position

    def _retire_stopped(self, high: Lsn) -> None:
        """Stop reading an older instance once the window passed the newer one's start."""
        for name, stop in list(self.stops.items()):
            if stop <= high:
                del self.stops[name]
                self.instances.pop(name, None)
                self.builder.states.pop(name, None)

    def offset(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.position.to_offset(), "snapshot_completed": True}
        tx = self.builder.transaction_state()
        if tx is not None:
            out.update(tx)
        return out
