"""Snapshot progress: a bar with rows, rows/s and the time left per table on a terminal, log lines
otherwise. Both show the same rate (rows read since the table started, over the time since), and the
bar's total, an estimate from the server, becomes the real count when the table ends."""
from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("cdc.snapshot")


class TableProgress:
    def __init__(self, table: str, estimated_rows: int | None, mode: str = "auto") -> None:
        self.table = table
        self.rows = 0
        self.estimated = estimated_rows if estimated_rows is not None and estimated_rows >= 0 else None
        self.started = time.monotonic()
        self._last_log = self.started
        use_bar = mode == "bar" or (mode == "auto" and sys.stderr.isatty())
        self._quiet = mode == "off"
        self._bar = None
        if use_bar:
            from tqdm import tqdm

            self._bar = tqdm(
                total=self.estimated or None, desc=f"snapshot {table}", unit=" rows", unit_scale=True, leave=True,
                file=sys.stderr, smoothing=0,  # the average since the start: the rate the log lines give
            )
        elif not self._quiet:
            log.info("snapshot of %s started (%s)", table,
                     f"about {self.estimated} rows" if self.estimated is not None else "its size is unknown")

    def advance(self, rows: int) -> None:
        self.rows += rows
        if self._bar is not None:
            if self._bar.total is not None and self.rows > self._bar.total:
                self._bar.total = self.rows  # the estimate was low: never past 100 %
            self._bar.update(rows)
            return
        now = time.monotonic()
        if not self._quiet and now - self._last_log >= 5:
            self._last_log = now
            log.info("snapshot of %s: %s", self.table, self.status(now))

    def status(self, now: float | None = None) -> str:
        """``5000 of about 60000 rows (8 %), 1200 rows/s, about 46 s left``."""
        elapsed = max((now or time.monotonic()) - self.started, 1e-9)
        rate = self.rows / elapsed
        if self.estimated and self.rows <= self.estimated:
            left = (self.estimated - self.rows) / rate if rate > 0 else None
            return (f"{self.rows} of about {self.estimated} rows ({100 * self.rows // self.estimated} %), "
                    f"{rate:.0f} rows/s" + (f", about {left:.0f} s left" if left is not None else ""))
        return f"{self.rows} rows, {rate:.0f} rows/s"

    def done(self) -> None:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        if self._bar is not None:
            self._bar.total = self.rows  # the count, not the estimate: 100 % when it ends
            self._bar.refresh()
            self._bar.close()
        if not self._quiet:
            log.info("snapshot of %s done: %d rows in %.1f s (%.0f rows/s)", self.table, self.rows, elapsed,
                     self.rows / elapsed)
