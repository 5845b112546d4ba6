"""Streaming: poll the change tables by LSN window, one database after the other.

    Streamer (every poll.interval.ms when idle), for each database, its DatabaseStream:
      to = sys.fn_cdc_get_max_lsn()              NULL: say whether the Agent runs
      nothing after the position?  -> idle
      re-read the capture instances                a table enabled/disabled, a new instance
      read every instance's rows with position.commit_lsn <= __$start_lsn <= to
      merge, pair, skip what was delivered (changes.py) -> events (events.py)
      the position becomes {commit_lsn: to}: the whole window is delivered

An instance's rows are read completely before merging because one ODBC connection cannot
hold several open result sets (no MARS); a window is bounded by what the capture job wrote
since the last poll. The :class:`Streamer` polls every database in turn; a lost connection is opened
again under the retry policy and the stream goes on after the last batch it handed out.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from cdc.core.errors import SourceError
from cdc.core.filters import TableFilter
from cdc.core.heartbeat import Heartbeat
from cdc.core.records import Batch, ChangeEvent
from cdc.core.retry import RetryPolicy
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
class StreamSignals:
    """The signal table of this database (``schema.table``, CDC-enabled) and what to do with its rows:
    they are signals and watermarks, never events; changes of the table whose incremental-snapshot
    window is open are shown to ``observe``."""

    table: str
    on_row: Callable[[dict[str, Any], list[ChangeEvent], tuple[int, ...]], None]
    observe: Callable[[ChangeEvent], None]
    window_table: Callable[[], str | None]


class _WithTable:
    """A table filter that also lets one table through (the signal table)."""

    def __init__(self, inner: TableFilter, table: str, database: str) -> None:
        self.inner = inner
        self.names = {table, f"{database}.{table}"}
        self.is_open = inner.is_open

    def __call__(self, name: str, schema: str | None = None) -> bool:
        return name in self.names or self.inner(name, schema)  # the signal table whatever the schema lists say


@dataclass
class StreamSettings:
    table_filter: TableFilter
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
        self.signals: StreamSignals | None = None
        self.signal_instances: dict[str, CaptureInstance] = {}
        self._signal_missing_reported = False

    def set_signals(self, signals: StreamSignals) -> None:
        """Read the signal table's change rows from now on (before :meth:`start`)."""
        self.signals = signals

    def _is_signal(self, instance: CaptureInstance) -> bool:
        return self.signals is not None and instance.table_name == self.signals.table

    def _read_instances(self) -> list[CaptureInstance]:
        """Included tables' instances, and the signal table's (kept apart in ``signal_instances``)."""
        if self.signals is None:
            return catalog.read_instances(self.conn, self.settings.table_filter)
        wide = _WithTable(self.settings.table_filter, self.signals.table, self.database)
        found = catalog.read_instances(self.conn, wide)  # type: ignore[arg-type]
        signal = [i for i in found if self._is_signal(i)]
        if signal:
            newest = plan_tables(signal, self.position.commit_lsn)[self.signals.table].current
            self.signal_instances = {newest.name: newest}
            self._signal_missing_reported = False
        else:
            self.signal_instances = {}
            if not self._signal_missing_reported:
                log.error("the signal table %s.%s is not CDC-enabled: no signals are read from it and incremental "
                          "snapshots cannot close their windows; fix: %s", self.database, self.signals.table,
                          q.enable_table_sql(self.database, *self.signals.table.split(".", 1)))
                self._signal_missing_reported = True
        return [i for i in found if not self._is_signal(i) and catalog.included(
            self.settings.table_filter, self.database, i.schema, i.table)]

    @property
    def database(self) -> str:
        return self.conn.database

    def start(self, known: list[CaptureInstance] | None = None) -> None:
        """Take the instances in effect at the position (after a snapshot: those it registered)."""
        read = self._read_instances() if known is None or self.signals is not None else []
        if self.signals is not None and not self.signal_instances:
            schema, table = self.signals.table.split(".", 1)
            raise SourceError(f"the signal table {self.database}.{self.signals.table} (signal.data.collection) is not "
                              "CDC-enabled: its rows (signals, and the watermarks of incremental snapshots) are read "
                              "from its change table", fix=q.enable_table_sql(self.database, schema, table))
        instances = [i for i in (known if known is not None else read) if not self._is_signal(i)]
        for plan in plan_tables(instances, self.position.commit_lsn).values():
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
        found = {i.name: i for i in self._read_instances()}
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
        for instance in list(self.signal_instances.values()):
            streams.append(self._rows(instance, low, high))
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
        signals = self.signals
        for change in changes(rows, position, self.stops):
            if change.instance in self.signal_instances and signals is not None:
                if change.op == "c" and change.after is not None:  # inserts only: updates, deletes are not signals
                    signals.on_row(change.after, events, (change.commit_lsn.as_int(), change.change_lsn.as_int(),
                                                          change.event_serial_no))
            elif change.instance not in builder.states:
                continue
            else:
                built = builder.events(change)
                if signals is not None:
                    window = signals.window_table()
                    if window is not None and window == builder.states[change.instance].data_collection:
                        for event in built:
                            signals.observe(event)
                events.extend(built)
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


SLEEP_SLICE_S = 0.1


class Streamer:
    """Every streaming database's change tables, polled in turn (Debezium's streaming change event source):

        until stopped:
          for each database: its new changes (a lost connection: ``reconnect`` under the retry policy,
                             from the last batch handed out), then what the signals do between polls,
                             then END of an open transaction after transaction.end.idle.ms
          a caught-up batch (with a heartbeat when due); nothing new anywhere: sleep poll.interval.ms

    ``offset()`` is the source's whole offset now (every database, the signals' state);
    ``between_polls(stream)`` returns whether it wrote a chunk's watermarks (read them at once)."""

    def __init__(self, *, policy: RetryPolicy, reconnect: Callable[[str, dict[str, Any]], DatabaseStream],
                 between_polls: Callable[[DatabaseStream], Generator[Batch, None, bool]],
                 offset: Callable[[], dict[str, Any]], stopping: Callable[[], bool], clock: Callable[[], int],
                 sleep: Callable[[float], None], poll_s: float, end_idle_s: float, heartbeat: Heartbeat) -> None:
        self.streams: dict[str, DatabaseStream] = {}
        self.policy = policy
        self._reconnect = reconnect
        self._between_polls = between_polls
        self._offset = offset
        self._stopping = stopping
        self.clock = clock
        self._sleep = sleep
        self.poll_s = poll_s
        self.idle_ns = int(end_idle_s * 1e9)
        self.heartbeat = heartbeat

    def add(self, stream: DatabaseStream) -> None:
        self.streams[stream.database] = stream

    def run(self) -> Iterator[Batch]:
        last_change = {db: self.clock() for db in self.streams}
        while not self._stopping():
            busy = False
            for db in list(self.streams):
                for events, _ in self._poll(self.streams[db]):
                    if events:
                        busy = True
                        last_change[db] = self.clock()
                    yield Batch(events, self._offset())
                stream = self.streams[db]  # a reconnect replaces it
                busy = (yield from self._between_polls(stream)) or busy
                if self.idle_ns > 0 and self.clock() - last_change[db] >= self.idle_ns:
                    ended = stream.builder.end_transaction()
                    if ended:
                        yield Batch(ended, self._offset())
            beat = None if busy else self.heartbeat.due()
            yield Batch([beat] if beat is not None else [], self._offset(), caught_up=True)
            if not busy:
                self._pause()

    def _poll(self, stream: DatabaseStream) -> Iterator[tuple[list[ChangeEvent], Position]]:
        current = stream

        def reconnect() -> None:
            nonlocal current
            current.conn.close()
            # Start again after the last batch handed out: events built after it (and the
            # transaction numbering they advanced) are rebuilt, not lost or counted twice.
            current = self.streams[current.database] = self._reconnect(current.database, current.delivered)

        yield from self.policy.resumed(f"polling the change tables of {stream.database}", lambda: current.poll(),
                                       reconnect, self._stopping)

    def _pause(self) -> None:
        waited = 0.0
        while waited < self.poll_s and not self._stopping():
            step = min(SLEEP_SLICE_S, self.poll_s - waited)
            self._sleep(step)
            waited += step
