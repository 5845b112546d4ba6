"""The start-up sequence of every source, written once (Debezium's ``ChangeEventSourceCoordinator``).

A source hands the coordinator its parts (:class:`cdc.core.source.ChangeEventSources`, Debezium's
``ChangeEventSourceFactory``): how it connects and checks its server, whether its log still reaches a
stored offset, its snapshot steps, where its log starts without a snapshot, and its stream. The
coordinator runs them in one order, the same for every database:

    parts.prepare(offset)                 connect, check the server, the captured tables
    a marker offset?                      slot_pending, snapshot_attempt (cdc.core.snapshot_restart):
                                          an interrupted snapshot is taken again, its number passed on
    parts.locate(offset)                  the offset checked (another connector's refused) and whether the
                                          server's log still reaches it
    decide(snapshot.mode, offset, ...)    cdc.core.snapshot_mode: the plan
      NOTHING                             stop (initial_only, taken before)
      LOG_GONE                            parts.log_gone(offset): the error with its fix
      (a plan without a snapshot of the data: the SKIPPED notification)
      SNAPSHOT, RESUME_SNAPSHOT, SCHEMA*  snapshot.delay.ms; parts.snapshot(...) -> the offset streaming
                                          starts at (None: stop here); streaming.delay.ms
      STREAM, LOG_START, SCHEMA           parts.start_log(...) -> the offset streaming starts at
    parts.stream_from(start)              the log, batch by batch: each batch carries the offset to hand
                                          over after it; signals (blocking and incremental snapshots)
                                          are acted on between transactions by the source's stream

``SCHEMA*``: where the source reads the structure as a snapshot (``schema_is_snapshot``: MySQL records its
tables in the schema history), the delays apply; where it only starts its log (PostgreSQL's slot), not.

Retries: a retriable error ends the run and the engine starts ``stream`` again from the stored offset
(cdc.engine, cdc.core.retry), which comes back here; inside a run the parts reconnect under the same
:class:`~cdc.core.retry.RetryPolicy`.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdc.core.delays import wait
from cdc.core.notifications import SILENT, Notifier, snapshot_skipped
from cdc.core.records import Batch
from cdc.core.snapshot_mode import Plan, decide
from cdc.core.snapshot_restart import interrupted_attempt, is_slot_pending

if TYPE_CHECKING:
    from cdc.core.source import ChangeEventSources

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
    """Runs one source's parts in the start-up sequence above; ``run(offset)`` is the source's ``stream``."""

    def __init__(self, parts: ChangeEventSources, settings: StartSettings, stopping: Callable[[], bool]) -> None:
        self.parts = parts
        self.settings = settings
        self.stopping = stopping

    def run(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        parts = self.parts
        parts.prepare(offset)
        if is_slot_pending(offset):
            # Stored just before the source made the server-side state its offsets point into (a slot): that
            # state, if it got made, is this pipeline's own, and nothing was read from it yet.
            offset = None
        attempt = interrupted_attempt(offset)
        if attempt:
            log.warning("the snapshot of an earlier run was interrupted: taking it again (each table starts with a "
                        "truncate event, so consumers drop what they applied of the first attempt)")
            offset = None
        reaches = False
        if offset is not None:
            offset, reaches = parts.locate(offset)
        decision = decide(self.settings.snapshot_mode, offset, log_reaches=reaches)
        log.info("start: %s (%s)", decision.plan.value, decision.reason)
        if decision.plan is Plan.NOTHING:
            return
        if decision.plan is Plan.LOG_GONE:
            assert offset is not None
            raise parts.log_gone(offset)
        if skipped := snapshot_skipped(self.settings.notifier, decision.plan):
            yield Batch(skipped)
        snapshot = decision.plan in SNAPSHOT_PLANS or (decision.plan is Plan.SCHEMA and parts.schema_is_snapshot)
        if snapshot:
            if not (yield from wait(self.settings.snapshot_delay_ms, "snapshot.delay.ms", "the snapshot",
                                    self.stopping)):
                return
            start = yield from parts.snapshot(decision, offset, attempt)
            if start is None:
                return
            if not (yield from wait(self.settings.streaming_delay_ms, "streaming.delay.ms", "streaming",
                                    self.stopping)):
                return
        else:
            start = yield from parts.start_log(decision, offset)
            if start is None:
                return
        yield from parts.stream_from(start)
