"""The start-up sequence of every source, written once (Debezium's ``ChangeEventSourceCoordinator``).

A source hands the coordinator its parts (:class:`cdc.core.source.ChangeEventSources`, Debezium's
``ChangeEventSourceFactory``): how it connects and checks its server, whether its log still reaches a
stored offset, its snapshot steps, where its log starts without a snapshot, and its stream. The
coordinator runs them in one order, the same for every database:

    for each partition (one, but SQL Server's databases):
    parts.prepare(offset)                 connect, check the server, the captured tables
    a marker offset?                      slot_pending, snapshot_attempt (cdc.core.snapshot_restart):
                                          an interrupted snapshot is taken again, its number passed on
    parts.locate(offset)                  the offset checked (another connector's refused) and whether the
                                          server's log still reaches it
    decide(snapshot.mode, offset, ...)    cdc.core.snapshot_mode: the plan
      NOTHING                             no stream (initial_only, taken before): parts.hold
      LOG_GONE                            parts.log_gone(offset): the error with its fix
      (a plan without a snapshot of the data: the SKIPPED notification)
      SNAPSHOT, RESUME_SNAPSHOT, SCHEMA*  snapshot.delay.ms; parts.snapshot(...) -> the offset streaming
                                          starts at (None: stop here); streaming.delay.ms
      STREAM, LOG_START, SCHEMA           parts.start_log(...) -> the offset streaming starts at
    stopping? the run ends here
    parts.stream_from(start)              (if a partition streams) the log, batch by batch: each batch
                                          carries the offset to hand over after it; signals (blocking and
                                          incremental snapshots) are acted on between transactions by it

``SCHEMA*``: where the source reads the structure as a snapshot (``schema_is_snapshot``: MySQL records its
tables in the schema history), the delays apply; where it only starts its log (PostgreSQL's slot), not.

Retries: a retriable error ends the run and the engine starts ``stream`` again from the stored offset
(cdc.engine, cdc.core.retry), which comes back here; inside a run the parts reconnect under the same
:class:`~cdc.core.retry.RetryPolicy`.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdc.core.delays import wait
from cdc.core.notifications import SILENT, Notifier, snapshot_skipped
from cdc.core.records import Batch
from cdc.core.snapshot_mode import Plan, decide
from cdc.core.snapshot_restart import interrupted_attempt, is_slot_pending
from cdc.core.source import ChangeEventSources, Partition, PartitionedChangeEventSources

if TYPE_CHECKING:
    from cdc.core.errors import CdcError
    from cdc.core.snapshot_mode import Decision

log = logging.getLogger(__name__)

SNAPSHOT_PLANS = (Plan.SNAPSHOT, Plan.RESUME_SNAPSHOT)


@dataclass(frozen=True)
class StartSettings:
    """What the coordinator reads of the configuration (the options every source declares)."""

    snapshot_mode: str
    snapshot_delay_ms: int = 0  # snapshot.delay.ms
    streaming_delay_ms: int = 0  # streaming.delay.ms
    notifier: Notifier = SILENT  # the initial snapshot's SKIPPED notification


class Coordinator:
    """Runs a source's parts in the start-up sequence above; ``run(offset)`` is the source's ``stream``.
    A source of one log hands ChangeEventSources, run as one partition. A source with partitions (SQL Server's
    databases, each with its entry in the offset: Debezium's partitions) hands PartitionedChangeEventSources
    (``Coordinator.partitioned``): each partition is decided and snapshotted in turn, then one stream reads
    them all."""

    def __init__(self, parts: ChangeEventSources, settings: StartSettings, stopping: Callable[[], bool]) -> None:
        self.parts: PartitionedChangeEventSources = OnePartition(parts)
        self.settings = settings
        self.stopping = stopping

    @classmethod
    def partitioned(cls, parts: PartitionedChangeEventSources, settings: StartSettings,
                    stopping: Callable[[], bool]) -> Coordinator:
        coordinator = cls.__new__(cls)
        coordinator.parts, coordinator.settings, coordinator.stopping = parts, settings, stopping
        return coordinator

    def run(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        starts: dict[str, dict[str, Any]] = {}
        for partition in self.parts.partitions(offset):
            start = yield from self._start(partition)
            if start is not None:
                starts[partition.name] = start
            if self.stopping():  # (during a wait of snapshot.delay.ms / streaming.delay.ms, or a snapshot)
                return
        if starts:  # none: initial_only, every partition has its snapshot
            yield from self.parts.stream_from(starts)

    def _start(self, partition: Partition) -> Generator[Batch, None, dict[str, Any] | None]:
        """What one partition does first; the offset its stream starts at (None: it does not stream)."""
        parts, name, offset = self.parts, partition.name, partition.offset
        said = f"{partition.label}: " if partition.label else ""
        parts.prepare(name, offset)
        if is_slot_pending(offset):
            # Stored just before the source made the server-side state its offsets point into (a slot): that
            # state, if it got made, is this pipeline's own, and nothing was read from it yet.
            offset = None
        attempt = interrupted_attempt(offset)
        if attempt:
            log.warning("%sthe snapshot of an earlier run was interrupted: taking it again (each table starts with "
                        "a truncate event, so consumers drop what they applied of the first attempt)", said)
            offset = None
        reaches = False
        if offset is not None:
            offset, reaches = parts.locate(name, offset)
        decision = decide(self.settings.snapshot_mode, offset, log_reaches=reaches)
        log.info("%sstart: %s (%s)", said, decision.plan.value, decision.reason)
        if decision.plan is Plan.NOTHING:
            parts.hold(name, offset)
            return None
        if decision.plan is Plan.LOG_GONE:
            assert offset is not None
            raise parts.log_gone(name, offset)
        if skipped := snapshot_skipped(self.settings.notifier, decision.plan):
            yield Batch(skipped)
        if not (decision.plan in SNAPSHOT_PLANS or (decision.plan is Plan.SCHEMA and parts.schema_is_snapshot)):
            return (yield from parts.start_log(name, decision, offset))
        before = f"the snapshot of {partition.label}" if partition.label else "the snapshot"
        if not (yield from wait(self.settings.snapshot_delay_ms, "snapshot.delay.ms", before, self.stopping)):
            return None
        start = yield from parts.snapshot(name, decision, offset, attempt)
        if start is None:
            return None
        if not (yield from wait(self.settings.streaming_delay_ms, "streaming.delay.ms", "streaming", self.stopping)):
            return None
        return start


class OnePartition:
    """A source of one log (ChangeEventSources) as a source of one partition."""

    def __init__(self, parts: ChangeEventSources) -> None:
        self.parts = parts
        self.schema_is_snapshot = parts.schema_is_snapshot

    def partitions(self, offset: dict[str, Any] | None) -> list[Partition]:
        return [Partition("", offset)]

    def prepare(self, partition: str, offset: dict[str, Any] | None) -> None:
        self.parts.prepare(offset)

    def locate(self, partition: str, offset: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        return self.parts.locate(offset)

    def log_gone(self, partition: str, offset: dict[str, Any]) -> CdcError:
        return self.parts.log_gone(offset)

    def hold(self, partition: str, offset: dict[str, Any] | None) -> None:
        pass  # the run ends: nothing streams

    def snapshot(self, partition: str, decision: Decision, offset: dict[str, Any] | None,
                 attempt: int) -> Generator[Batch, None, dict[str, Any] | None]:
        return self.parts.snapshot(decision, offset, attempt)

    def start_log(self, partition: str, decision: Decision,
                  offset: dict[str, Any] | None) -> Generator[Batch, None, dict[str, Any] | None]:
        return self.parts.start_log(decision, offset)

    def stream_from(self, starts: dict[str, dict[str, Any]]) -> Iterator[Batch]:
        return self.parts.stream_from(starts[""])
