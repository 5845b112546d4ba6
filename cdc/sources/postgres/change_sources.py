"""PostgreSQL's parts for the core's coordinator (cdc.core.source.ChangeEventSources, Debezium's
``PostgresChangeEventSourceFactory``): what each step of the start-up sequence (cdc.core.coordinator) is here.

    prepare       the server checked, the captured tables, the publication that holds them, the slot looked at
    locate        the offset's LSN (another connector's offset refused), where it continues on this server
                  (after a failover: the promoted standby's timeline); the log reaches it while the slot exists
    snapshot      a new slot exporting its snapshot, the tables read in it (whole, or resumable in key chunks);
                  or a resumable snapshot stopped half way, on from its last chunk
    start_log     no snapshot: a slot made now (no_data, never), or the slot there is, once free
    stream_from   START_REPLICATION from the start offset (streamer.py)
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from typing import Any

from cdc.core.records import Batch
from cdc.core.snapshot_mode import Decision, Plan
from cdc.core.snapshot_restart import attempt_offset, slot_pending_offset
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import failover
from cdc.sources.postgres import pgoutput as po
from cdc.sources.postgres.position import PgPosition
from cdc.sources.postgres.publication import Publication, warn_about_keys
from cdc.sources.postgres.relations import Relations
from cdc.sources.postgres.replica_identity import ReplicaIdentities
from cdc.sources.postgres.replication import SlotMissingError
from cdc.sources.postgres.server import ServerInfo
from cdc.sources.postgres.slot import ReplicationSlot
from cdc.sources.postgres.snapshotter import Snapshotter
from cdc.sources.postgres.streamer import Streamer

log = logging.getLogger(__name__)

Offset = dict[str, Any]


class PostgresChangeEventSources:
    """The parts PostgresSource wires, in the order the coordinator runs them; ``server`` is known once checked."""

    schema_is_snapshot = False  # no_data: a slot made now, no snapshot of the structure (pgoutput describes it)

    def __init__(self, *, catalog: Callable[[], Any], read_server: Callable[[], ServerInfo], publication: Publication,
                 replica_identities: ReplicaIdentities, relations: Relations, slot: ReplicationSlot,
                 snapshotter: Snapshotter, streamer: Streamer, resumable: bool) -> None:
        self._catalog, self._read_server = catalog, read_server
        self._publication, self._replica_identities, self._relations = publication, replica_identities, relations
        self._slot, self._snapshotter, self._streamer = slot, snapshotter, streamer
        self._resumable = resumable
        self.server: ServerInfo | None = None
        self._tables: list[cat.CatalogTable] = []
        self._slot_info: cat.SlotInfo | None = None

    @property
    def standby(self) -> bool:
        """The server is a standby (known once checked): the slot is made there, waiting for its primary."""
        return self.server is not None and self.server.standby

    def captured(self, ours: bool) -> tuple[list[cat.CatalogTable], cat.SlotInfo]:
        """Check the server, find the captured tables, make sure the publication holds them; the slot.
        ``ours``: this pipeline has a stored offset, so the slot and publication of its names are its own."""
        conn = self._catalog()
        self.server = self._read_server()
        everything = cat.read_tables(conn)
        tables = self._publication.prepare(everything, ours=ours, standby=self.server.standby)
        if self._replica_identities.apply(conn, tables):  # replica.identity.autoset.values: keys may change
            everything = cat.read_tables(conn)
            tables = self._publication.refresh(everything)
        self._relations.remember(everything)
        warn_about_keys(tables)
        slot = self._slot.inspect(ours)
        failover.check(conn, self.server, self._slot.name, failover=self._slot.failover)
        return tables, slot

    # ---- the coordinator's steps (cdc.core.source.ChangeEventSources) ---------------------------

    def prepare(self, offset: Offset | None) -> None:
        self._tables, self._slot_info = self.captured(ours=offset is not None)

    def locate(self, offset: Offset) -> tuple[Offset, bool]:
        assert self.server is not None and self._slot_info is not None
        PgPosition.from_offset(offset)  # refuse another connector's offset before anything else
        # after a failover: where it continues on the promoted standby
        return self.server.check(offset), self._slot_info.exists

    def log_gone(self, offset: Offset) -> SlotMissingError:
        return SlotMissingError(
            f"replication slot {self._slot.name!r} is gone, but an offset is stored for this pipeline "
            f"(lsn {po.format_lsn(int(offset.get('lsn') or 0))}): changes since then cannot be read",
            fix="set snapshot.mode=when_needed to re-snapshot, or delete the offset file to start over",
        )

    def snapshot(self, decision: Decision, offset: Offset | None,
                 attempt: int) -> Generator[Batch, None, Offset | None]:
        assert self._slot_info is not None
        if decision.plan is Plan.RESUME_SNAPSHOT:
            assert offset is not None
            return (yield from self._resume_snapshot(self._slot_info, offset))
        if offset is not None and offset.get("snapshot_progress") is not None:
            log.warning("the stored offset is inside an initial snapshot but slot %s is gone: starting over",
                        self._slot.name)
        return (yield from self._initial_snapshot(self._slot_info, temporary=decision.then_stop, attempt=attempt))

    def start_log(self, decision: Decision, offset: Offset | None) -> Generator[Batch, None, Offset]:
        """SCHEMA / LOG_START: a slot made now, without a snapshot; STREAM: the slot there is, once free."""
        slot = self._slot_info
        assert slot is not None
        if not slot.exists:
            yield slot_pending()
            start_lsn, _ = self._slot.create(export=False, temporary=False, standby=self.standby)
            return {"lsn": start_lsn, "txId": None, "ts_usec": None}
        self._slot.acquire(slot)
        if not decision.uses_offset or offset is None:
            return {"lsn": slot.confirmed_flush_lsn or 0, "txId": None, "ts_usec": None}
        return offset

    def stream_from(self, start: Offset) -> Iterator[Batch]:
        assert self.server is not None
        return self._streamer.stream(start, self.server)

    # ---- the snapshots ----------------------------------------------------------------------------

    def _resume_snapshot(self, slot: cat.SlotInfo, offset: Offset) -> Generator[Batch, None, Offset | None]:
        """A resumable snapshot goes on from its last chunk, as the tables are now (its exported snapshot is gone)."""
        assert self.server is not None
        self._slot.acquire(slot)
        progress = offset["snapshot_progress"]
        log.info("resuming the initial snapshot (snapshot.resumable): %d table(s) left",
                 len(progress.get("tables") or ()))
        return (yield from self._snapshotter.resumable(self._tables, None, int(offset["lsn"]), self.server, progress))

    def _initial_snapshot(self, slot: cat.SlotInfo, *, temporary: bool,
                          attempt: int = 0) -> Generator[Batch, None, Offset | None]:
        """A new slot exporting its snapshot, the tables read in it; returns the offset streaming starts from
        (None: stop here: initial_only, or stopped half way through a resumable snapshot)."""
        assert self.server is not None
        if slot.exists and not temporary:
            self._slot.drop_for_snapshot(slot, "recreating it so the snapshot and the stream meet at one "
                                               "consistent point")
        resumable = self._resumable and not temporary
        # Stored before the slot exists, not after: a run killed between the slot's creation and its first
        # stored offset would find a slot and no offset, and refuse its own slot as another consumer's.
        if resumable:
            yield slot_pending()
        else:
            yield Batch([], attempt_offset(attempt), commit_now=True)
        start_lsn, snapshot_name = self._slot.create(export=True, temporary=temporary, standby=self.standby)
        if resumable:
            return (yield from self._snapshotter.resumable(self._tables, snapshot_name, start_lsn, self.server, None))
        if self._resumable:
            log.info("snapshot.resumable does not apply to snapshot.mode=initial_only (its slot is temporary)")
        start = yield from self._snapshotter.initial(self._tables, snapshot_name, start_lsn, self.server,
                                                     final=temporary, attempt=attempt)
        return None if temporary else start


def slot_pending() -> Batch:
    """Stored right before the slot is created (snapshot_restart.SLOT_PENDING_KEY)."""
    return Batch([], slot_pending_offset(), commit_now=True)
