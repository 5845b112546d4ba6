"""Snapshot progress: a bar with rows and rows/s per table on a terminal, log lines otherwise."""
from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("cdc.snapshot")


class TableProgress:
    def __init__(self, table: str, estimated_rows: int | None, mode: str = "auto") -> None:
        self.table = table
        self.rows = 0
        self.started = time.monotonic()
        self._last_log = self.started
        use_bar = mode == "bar" or (mode == "auto" and sys.stderr.isatty())
        self._quiet = mode == "off"
        self._bar = None
        if use_bar:
            from tqdm import tqdm

            self._bar = tqdm(
                total=estimated_rows if estimated_rows and estimated_rows > 0 else None,
                desc=f"snapshot {table}", unit=" rows", unit_scale=True, leave=True, file=sys.stderr,
            )
        elif not self._quiet:
            log.info("snapshot of %s started (about %s rows)", table,
                     estimated_rows if estimated_rows and estimated_rows > 0 else "?")

    def advance(self, rows: int) -> None:
        self.rows += rows
        if self._bar is not None:
            self._bar.update(rows)
            return
        now = time.monotonic()
        if not self._quiet and now - self._last_log >= 5:
            self._last_log = now
            log.info("snapshot of %s: %d rows, %.0f rows/s", self.table, self.rows, self.rows / (now - self.started))

    def done(self) -> None:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        if self._bar is not None:
            self._bar.close()
        if not self._quiet:
            log.info("snapshot of %s done: %d rows in %.1f s (%.0f rows/s)", self.table, self.rows, elapsed,
                     self.rows / elapsed)
