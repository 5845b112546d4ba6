"""Changes -> Debezium events for one database (pure: the clock is injected).

Adds what the rows do not say: the source block, tombstones, key-change headers, the
transaction BEGIN/END events (a transaction is one commit LSN; its END is only known when the
next one begins, or after a quiet interval) and the ALTER schema change event when a table
moves to its newer capture instance.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cdc.core.emitter import ChangeEmitter
from cdc.core.records import ChangeEvent
from cdc.core.schema import table_change
from cdc.core.schema_change import SchemaChangeEvents
from cdc.sources.sqlserver.changes import Change
from cdc.sources.sqlserver.lsn import Lsn
from cdc.sources.sqlserver.source_info import source_block
from cdc.sources.sqlserver.tables import CaptureInstance, TableState

log = logging.getLogger(__name__)

Clock = Callable[[], int]  # nanoseconds since the epoch


class EventBuilder:
    def __init__(self, *, prefix: str, database: str, emitter: ChangeEmitter, schema_changes: SchemaChangeEvents | None,
                 clock: Clock) -> None:
        self.prefix = prefix
        self.database = database
        self.emitter = emitter
        self.schema_changes = schema_changes
        self.tracker = emitter.tracker
        self.clock = clock
        self.states: dict[str, TableState] = {}  # by capture instance name
        self.current: dict[str, str] = {}  # schema.table -> capture instance in effect
        self.switches: list[tuple[Lsn, TableState]] = []  # newer instances, by start LSN
        self.tx_ts_ms = 0

    # ---- structure ----------------------------------------------------------------------------

    def schema_event(self, kind: str, state: TableState, commit_lsn: Lsn | None, *, snapshot: bool,
                     ts_ns: int | None = None) -> ChangeEvent | None:
        if self.schema_changes is None:
            return None
        instance = state.instance
        now = self.clock()
        source = source_block(self.prefix, self.database, instance.schema, instance.table,
                              ts_ns=ts_ns if ts_ns is not None else now,
                              snapshot="true" if snapshot else "false", commit_lsn=commit_lsn)
        return self.schema_changes.event(source, self.database, None, [table_change(kind, state.table)],
                                         ts_ms=now // 1_000_000, schema_name=instance.schema)

    def schedule_switch(self, state: TableState) -> None:
        """``state``'s instance takes over its table at its start LSN."""
        if all(s.instance.name != state.instance.name for _, s in self.switches):
            self.switches.append((state.instance.start_lsn, state))
            self.switches.sort(key=lambda item: item[0])
        self.states[state.instance.name] = state

    def switches_due(self, lsn: Lsn, ts_ns: int | None = None) -> list[ChangeEvent]:
        """ALTER events of every switch at or before ``lsn`` (Debezium's migrateTable)."""
        events: list[ChangeEvent] = []
        while self.switches and self.switches[0][0] <= lsn:
            start, state = self.switches.pop(0)
            instance = state.instance
            old_name = self.current.get(instance.table_name)
            old = self.states.get(old_name) if old_name else None
            self.current[instance.table_name] = instance.name
            if old is not None and old.table == state.table:
                log.info("capture instance %s replaces %s with the same structure", instance.name, old_name)
                continue
            log.info("table %s.%s: switching to capture instance %s at %s", self.database, instance.table_name,
                     instance.name, start)
            event = self.schema_event("ALTER", state, start, snapshot=False, ts_ns=ts_ns)
            if event is not None:
                events.append(event)
        return events

    # ---- data ---------------------------------------------------------------------------------

    def events(self, change: Change) -> list[ChangeEvent]:
        out = self.switches_due(change.commit_lsn, change.commit_ns)
        state = self.states[change.instance]
        commit_ns = change.commit_ns if change.commit_ns is not None else self.clock()
        tracker = self.tracker
        if tracker is not None:
            tx_id = str(change.commit_lsn)
            if tracker.id != tx_id:
                if tracker.active:
                    # Debezium stamps the END with the time of the event that revealed it.
                    out.append(tracker.end(commit_ns // 1_000_000))
                out.append(tracker.begin(tx_id, commit_ns // 1_000_000))
        now = self.clock()
        ts = (now // 1_000_000, now // 1000, now)
        envelope = state.envelope
        position = (change.commit_lsn.as_int(), change.change_lsn.as_int(), change.event_serial_no)
        instance = state.instance
        emit = self.emitter

        def source(serial: int) -> dict[str, Any]:
            return source_block(self.prefix, self.database, instance.schema, instance.table, ts_ns=commit_ns,
                                commit_lsn=change.commit_lsn, change_lsn=change.change_lsn, event_serial_no=serial)

        before = state.row(change.before) if change.before is not None else None
        after = state.row(change.after) if change.after is not None else None
        if change.op == "c":
            assert after is not None
            emit.create(out, envelope, after, source(change.event_serial_no), position, ts)
        elif change.op == "d":
            assert before is not None
            emit.delete(out, envelope, before, source(change.event_serial_no), position, ts)
        elif change.op == "k" and not state.key_names:
            # no key to change (a keyless table): a plain delete and insert at one change LSN
            assert before is not None and after is not None
            if not change.delete_delivered:
                emit.delete(out, envelope, before, source(1), position, ts)
            emit.create(out, envelope, after, source(change.event_serial_no), position, ts)
        elif change.op == "u" and state.key(before) == state.key(after):
            assert after is not None
            emit.update(out, envelope, before, after, source(change.event_serial_no), position, ts)
        else:  # a key change: a 1/2 pair, or a 3/4 pair whose key differs
            assert before is not None and after is not None
            delete_serial = 1 if change.op == "k" else change.event_serial_no
            emit.key_change(out, envelope, before, after, source(delete_serial), source(change.event_serial_no),
                            position, ts, include_delete=not change.delete_delivered)
        return out

    # ---- transactions -------------------------------------------------------------------------

    def end_transaction(self) -> list[ChangeEvent]:
        """The END of the open transaction (after the quiet interval), stamped with the clock."""
        if self.tracker is None or not self.tracker.active:
            return []
        return [self.tracker.end(self.clock() // 1_000_000)]

    def transaction_state(self) -> dict[str, Any] | None:
        """The open transaction, for the offset: a restart continues its numbering and ends it."""
        tracker = self.tracker
        if tracker is None or not tracker.active:
            return None
        return {"transaction_id": tracker.id, "transaction_event_count": tracker.total,
                "transaction_data_collection_order": dict(tracker.per_table)}

    def restore_transaction(self, offset: dict[str, Any]) -> None:
        if self.tracker is not None and offset.get("transaction_id"):
            self.tracker.id = offset["transaction_id"]
            self.tracker.total = int(offset.get("transaction_event_count") or 0)
            self.tracker.per_table = dict(offset.get("transaction_data_collection_order") or {})

    def register(self, instance: CaptureInstance, state: TableState) -> None:
        self.states[instance.name] = state
        self.current[instance.table_name] = instance.name
