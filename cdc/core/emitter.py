"""The rules that turn one row change into Debezium's events, the same for every source.

    create  -> c
    update  -> u, or, when the key changed: d (header __debezium.newkey)
                                            + tombstone (same header)
                                            + c (header __debezium.oldkey)
    delete  -> d + tombstone (tombstones.on.delete; a keyless table's tombstone has a null key)
    truncate-> t (no key)

``skipped.operations`` drops c, u, d or t (a key change is an update: skipping u drops it whole);
``skip.messages.without.change`` drops an update whose before and after images hold the same values
in the columns events carry (column.include.list / column.exclude.list);
with ``provide.transaction.metadata`` every data event gets its ``transaction`` block, numbered
over the transaction and per table, between the BEGIN and END events. A source decodes its log
and calls these; nothing else decides what a change becomes.
"""
from __future__ import annotations

from typing import Any

from cdc.core.envelope import (
    NEW_KEY_HEADER,
    OLD_KEY_HEADER,
    OP_CREATE,
    OP_DELETE,
    OP_TRUNCATE,
    OP_UPDATE,
    TableEnvelope,
)
from cdc.core.records import ChangeEvent
from cdc.core.transactions import TransactionTracker

Row = dict[str, Any]
Timestamps = tuple[int, int, int] | None


class ChangeEmitter:
    __slots__ = ("tombstones", "skipped", "tracker", "skip_unchanged")

    def __init__(self, *, tombstones: bool, skipped: frozenset[str], tracker: TransactionTracker | None,
                 skip_unchanged: bool = False) -> None:
        self.tombstones = tombstones
        self.skipped = skipped
        self.tracker = tracker
        self.skip_unchanged = skip_unchanged  # skip.messages.without.change

    @classmethod
    def from_settings(cls, settings: Any) -> ChangeEmitter:
        """From :class:`cdc.core.source.SourceSettings` (tombstones, skipped operations, transactions)."""
        return cls(tombstones=settings.tombstones, skipped=settings.skipped_operations,
                   tracker=settings.transaction_tracker(), skip_unchanged=settings.skip_unchanged)

    def emits(self, op: str) -> bool:
        return op not in self.skipped

    def _block(self, envelope: TableEnvelope) -> dict[str, Any] | None:
        return self.tracker.block(envelope.table_id) if self.tracker is not None else None

    # ---- data changes -------------------------------------------------------------------------

    def create(self, out: list[ChangeEvent], envelope: TableEnvelope, after: Row, source: dict[str, Any],
               position: tuple[int, ...] = (), ts: Timestamps = None, key: dict[str, Any] | None = None) -> None:
        """``key``: the event's key when the source already has it (else read from ``after``)."""
        if OP_CREATE in self.skipped:
            return
        out.append(envelope.event(OP_CREATE, None, after, source, self._block(envelope), position=position, ts=ts,
                                  key=key))

    def delete(self, out: list[ChangeEvent], envelope: TableEnvelope, before: Row, source: dict[str, Any],
               position: tuple[int, ...] = (), ts: Timestamps = None) -> None:
        if OP_DELETE in self.skipped:
            return
        out.append(envelope.event(OP_DELETE, before, None, source, self._block(envelope), position=position, ts=ts))
        if self.tombstones:
            out.append(envelope.tombstone(envelope.key_of(before), position))

    def update(self, out: list[ChangeEvent], envelope: TableEnvelope, before: Row | None, after: Row,
               source: dict[str, Any], position: tuple[int, ...] = (), ts: Timestamps = None, *,
               key_row: Row | None = None, old_key: dict[str, Any] | None = None) -> None:
        """``before`` is the image the event shows (None when the log has none); ``key_row`` the image
        a key change's delete shows (PostgreSQL's key-only old tuple); ``old_key`` the old key as the
        log gave it, when it is not simply read from that image."""
        if OP_UPDATE in self.skipped:
            return
        old = key_row if key_row is not None else before
        if envelope.key_schema is not None and old is not None:
            if old_key is None:
                old_key = envelope.key_of(old)
            if old_key != envelope.key_of(after) and envelope.key_known(old_key):  # type: ignore[arg-type]
                self.key_change(out, envelope, old, after, source, source, position, ts)
                return
        if self.skip_unchanged and before is not None and envelope.unchanged(before, after):
            return  # no column the events hold changed (skip.messages.without.change)
        # a row the codec wrote carries its key (cdc.core.native_row.NativeRow): not read back from it
        out.append(envelope.event(OP_UPDATE, before, after, source, self._block(envelope), position=position, ts=ts,
                                  key=getattr(after, "key", None)))

    def key_change(self, out: list[ChangeEvent], envelope: TableEnvelope, before: Row, after: Row,
                   delete_source: dict[str, Any], create_source: dict[str, Any], position: tuple[int, ...] = (),
                   ts: Timestamps = None, *, include_delete: bool = True) -> None:
        """Delete under the old key (+ tombstone), then create under the new one, linked by headers.
        ``include_delete=False`` when the delete was delivered before a restart."""
        if OP_UPDATE in self.skipped:
            return
        old_key, new_key = envelope.key_of(before), envelope.key_of(after)
        new_key_header = [(NEW_KEY_HEADER, envelope.key_schema, new_key)]
        if include_delete:
            out.append(envelope.event(OP_DELETE, before, None, dict(delete_source), self._block(envelope),
                                      key=old_key, headers=new_key_header, position=position, ts=ts))
            if self.tombstones:
                out.append(envelope.tombstone(old_key, position, headers=new_key_header))
        out.append(envelope.event(OP_CREATE, None, after, dict(create_source), self._block(envelope), key=new_key,
                                  headers=[(OLD_KEY_HEADER, envelope.key_schema, old_key)], position=position, ts=ts))

    def truncate(self, out: list[ChangeEvent], envelope: TableEnvelope, source: dict[str, Any],
                 position: tuple[int, ...] = ()) -> None:
        if OP_TRUNCATE in self.skipped:
            return
        out.append(envelope.truncate(source, self._block(envelope), position))

    # ---- transactions -------------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        return self.tracker is not None and self.tracker.active

    def begin(self, out: list[ChangeEvent], tx_id: str, ts_ms: int) -> None:
        if self.tracker is not None:
            out.append(self.tracker.begin(tx_id, ts_ms))

    def end(self, out: list[ChangeEvent], ts_ms: int) -> None:
        if self.tracker is not None and self.tracker.active:
            out.append(self.tracker.end(ts_ms))
