"""Debezium's waits at start-up, for every source:

    snapshot.delay.ms    before an initial snapshot starts (several connectors started together do
                         not all snapshot at once)
    streaming.delay.ms   before streaming starts after a snapshot this run took (its offset is stored
                         meanwhile, so a failure right after the snapshot does not take it again)

A stop during a wait ends it at once: the source's generator hands the engine an empty batch every tick,
so that the engine flushes what is pending on time and sees the stop, and the wait returns False.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator

from cdc.core.records import Batch

log = logging.getLogger(__name__)

TICK_S = 0.1  # how soon a stop ends a wait
# the time the waits read and pass (the tests' own clock replaces them)
clock: Callable[[], float] = time.monotonic
pause: Callable[[float], None] = time.sleep


def wait(delay_ms: int, option: str, before: str, stopping: Callable[[], bool]) -> Generator[Batch, None, bool]:
    """Wait ``delay_ms`` (``option`` names it in the log, ``before`` says what follows); True once waited,
    False when stopped first."""
    if delay_ms <= 0:
        return True
    log.info("waiting %.1f s before %s (%s)", delay_ms / 1000, before, option)
    end = clock() + delay_ms / 1000
    while not stopping():
        left = end - clock()
        if left <= 0:
            return True
        yield Batch([], commit_now=True)  # stores what is pending (streaming.delay.ms: the snapshot's offset)
        pause(min(TICK_S, left))
    log.info("stopped while waiting before %s", before)
    return False
