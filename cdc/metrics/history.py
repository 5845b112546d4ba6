"""The last hour of a pipeline, for the status page's charts: one sample per interval in a ring buffer."""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

WINDOW_S = 3600.0


@dataclass(frozen=True, slots=True)
class Sample:
    time: float  # seconds since the epoch
    rate: float | None  # change events per second since the sample before (None for the first)
    behind_ms: float | None  # MilliSecondsBehindSource then
    lag_bytes: float | None  # the source's own lag then (slot lag, binlog behind), when known


class History:
    def __init__(self, interval_s: float = 10.0, window_s: float = WINDOW_S) -> None:
        self.interval_s = interval_s
        self._samples: deque[Sample] = deque(maxlen=max(2, int(window_s / interval_s)))
        self._last: tuple[float, float] | None = None  # (time, events total) of the last sample
        self._lock = threading.Lock()

    def add(self, now: float, events_total: float, behind_ms: float | None, lag_bytes: float | None) -> None:
        rate = None
        if self._last is not None and now > self._last[0]:
            rate = max(0.0, (events_total - self._last[1]) / (now - self._last[0]))
        self._last = (now, events_total)
        with self._lock:
            self._samples.append(Sample(now, rate, behind_ms, lag_bytes))

    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._samples)
