"""Running a source over its log until it has handed everything over (for cdc.testing.contract)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cdc.config import CORE_OPTIONS, Config
from cdc.core.records import Batch


def drain(make: Callable[[Config], Any], props: dict[str, str], offset: dict[str, Any] | None,
          quiet_s: float = 0.8, timeout_s: float = 30) -> list[Batch]:
    """The batches of a new source from ``offset`` until it is caught up and has had nothing new for
    ``quiet_s`` (a stream may be caught up for a moment in the middle of what the server sends)."""
    source = make(Config(dict(props)).declare(CORE_OPTIONS))
    batches: list[Batch] = []
    stream = source.stream(offset)
    last_event = time.monotonic()
    deadline = last_event + timeout_s
    try:
        for batch in stream:
            batches.append(batch)
            if batch.events:
                last_event = time.monotonic()
            if batch.caught_up and not batch.events and time.monotonic() - last_event >= quiet_s:
                break
            assert time.monotonic() < deadline, "the source never caught up"
    finally:
        source.stop()
        stream.close()
        source.close()
    return batches
