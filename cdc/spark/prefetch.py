"""The driver reads the source's log in a thread while Spark applies the previous micro-batch.

Spark runs micro-batches one after another: without this, the driver decodes the log only between
two batches, and decoding and applying never overlap. The thread turns each batch of the source
into rows and marks where a micro-batch may end (between transactions, or after a large enough
piece of a snapshot read on the driver); ``take`` hands over what is buffered up to such a mark.
It stops reading while twice a micro-batch is waiting past an end mark, so memory stays bounded;
rows with no end mark after them (a transaction, or an incremental chunk's window, larger than
that) are read on, since the micro-batch that takes them must hold them all.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cdc.core.records import Batch

log = logging.getLogger(__name__)

# (source batch, rows converted since the last end) -> the offset a micro-batch may end at, or None
EndOf = Callable[[Batch, int], dict[str, Any] | None]


@dataclass
class Piece:
    rows: list[tuple]
    end: dict[str, Any] | None


class Prefetcher:
    def __init__(self, stream: Iterator[Batch], to_rows: Callable[[Batch], list[tuple]], end_of: EndOf,
                 max_rows: int) -> None:
        self._stream = stream
        self._to_rows = to_rows
        self._end_of = end_of
        self._max_rows = max_rows
        self._pieces: deque[Piece] = deque()
        self._buffered = 0
        self._cond = threading.Condition()
        self._stopped = False
        self.finished = False  # the source's stream ended (initial_only)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="cdc-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        since_end = 0
        try:
            for batch in self._stream:
                rows = self._to_rows(batch)
                since_end += len(rows)
                end = self._end_of(batch, since_end)
                if end is not None:
                    since_end = 0
                with self._cond:
                    self._pieces.append(Piece(rows, end))
                    self._buffered += len(rows)
                    self._cond.notify_all()
                    while self._buffered >= 2 * self._max_rows and not self._stopped and self._has_end():
                        self._cond.wait(0.5)
                    if self._stopped:
                        return
        except BaseException as exc:  # noqa: BLE001 - raised again on the Spark thread by take()
            self._error = exc
        with self._cond:
            self.finished = True
            self._cond.notify_all()

    def _has_end(self) -> bool:
        return any(p.end is not None for p in self._pieces)

    def take(self, wait_s: float) -> tuple[list[tuple], dict[str, Any] | None]:
        """The buffered rows up to the last end mark (at most about ``max_rows``: the first mark past
        them), waiting up to ``wait_s`` for a first mark; (rows, None) when there is none."""
        with self._cond:
            self._cond.wait_for(lambda: self._error is not None or self.finished
                                or self._has_end(), wait_s)
            if self._error is not None:
                raise self._error
            count, last = 0, -1
            for index, piece in enumerate(self._pieces):
                count += len(piece.rows)
                if piece.end is not None:
                    last = index
                    if count >= self._max_rows:
                        break
            rows: list[tuple] = []
            end = None
            for _ in range(last + 1):
                piece = self._pieces.popleft()
                rows.extend(piece.rows)
                self._buffered -= len(piece.rows)
                end = piece.end if piece.end is not None else end
            self._cond.notify_all()
            return rows, end

    def stop(self, source: Any) -> None:
        """Stop reading: the source is asked to stop, the thread joined (before the source is closed)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        source.stop()
        self._thread.join(30)
        if self._thread.is_alive():
            log.warning("the source's reading thread did not stop within 30 s")
