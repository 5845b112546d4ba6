"""The driver reads the source's log in a thread while Spark applies the previous micro-batch.

Spark runs micro-batches one after another: without this, the driver decodes the log only between
two batches, and decoding and applying never overlap. The thread collects the rows of each batch
of the source (cheap lists) and marks where a micro-batch may end (between transactions, or after
a large enough piece of a snapshot read on the driver). It converts them in groups: about
``GROUP_ROWS`` rows (or a micro-batch's, if fewer), or what it has when the source has caught up
with its log or the group is ``GROUP_S`` old. Converting costs a fixed amount per call (Arrow's
JSON parser), which a transaction's few rows would pay each. A group is handed over as one piece
ending at its last end mark, and what follows that mark as another, without one. ``take`` hands
over what is buffered up to an end mark. The thread stops reading while twice a micro-batch is
waiting past an end mark, so memory stays bounded; rows with no end mark after them (a transaction,
or an incremental chunk's window, larger than that) are read on, since the micro-batch that takes
them must hold them all.

A trigger takes what the log held when it fired, up to a micro-batch, as Spark's Kafka source takes
the offsets there are: while the source is still reading a backlog (its last batch did not say it
caught up), ``take`` waits for it to catch up or for a micro-batch's rows, ``BACKLOG_WAIT_S`` at
most. Without this, a burst's first trigger takes the few rows read so far, and their MERGE, whose
cost hardly depends on its size, holds back the rest.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sized
from dataclasses import dataclass
from typing import Any

from cdc.core.records import Batch

log = logging.getLogger(__name__)

# (source batch, rows converted since the last end) -> the offset a micro-batch may end at, or None
EndOf = Callable[[Batch, int], dict[str, Any] | None]


Raw = Sized  # a source batch's rows as collected (len() counts them)
Rows = Sized  # rows converted for Spark (a pyarrow.RecordBatch)

GROUP_ROWS = 20_000
GROUP_S = 0.2
BACKLOG_WAIT_S = 10.0  # a quiet stream never waits: its source has caught up


@dataclass
class Piece:
    rows: Rows | None  # None: no row (heartbeats, a transaction's end)
    end: dict[str, Any] | None

    @property
    def count(self) -> int:
        return len(self.rows) if self.rows is not None else 0


class Prefetcher:
    def __init__(self, stream: Iterator[Batch], collect: Callable[[Batch], Raw | None],
                 convert: Callable[[list[Raw]], Rows], end_of: EndOf, max_rows: int) -> None:
        self._stream = stream
        self._collect = collect
        self._convert = convert
        self._end_of = end_of
        self._max_rows = max_rows
        self._group_rows = min(GROUP_ROWS, max_rows)
        self._pieces: deque[Piece] = deque()
        self._buffered = 0
        self._cond = threading.Condition()
        self._stopped = False
        self.finished = False  # the source's stream ended (initial_only)
        self._behind = False  # the source's last batch did not say it caught up with its log
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="cdc-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        since_end = 0
        group: list[tuple[Raw | None, dict[str, Any] | None]] = []  # collected, not yet converted
        group_rows, group_began = 0, 0.0
        try:
            for batch in self._stream:
                if not batch.caught_up and not self._behind:
                    self._behind = True  # (False again when a caught-up batch is handed over)
                raw = self._collect(batch)
                count = len(raw) if raw is not None else 0
                since_end += count
                end = self._end_of(batch, since_end)
                if end is not None:
                    since_end = 0
                if not group:
                    group_began = time.monotonic()
                group.append((raw, end))
                group_rows += count
                if group_rows < self._group_rows and not batch.caught_up and time.monotonic() - group_began < GROUP_S:
                    continue
                self._hand_over(group, caught_up=batch.caught_up)
                group, group_rows = [], 0
                with self._cond:
                    while self._buffered >= 2 * self._max_rows and not self._stopped and self._has_end():
                        self._cond.wait(0.5)
                    if self._stopped:
                        return
            self._hand_over(group)  # the stream ended (a snapshot without streaming)
        except BaseException as exc:  # noqa: BLE001 - raised again on the Spark thread by take()
            self._error = exc
        with self._cond:
            self.finished = True
            self._cond.notify_all()

    def _hand_over(self, group: list[tuple[Raw | None, dict[str, Any] | None]], caught_up: bool = False) -> None:
        pieces = self._converted(group)
        with self._cond:
            if caught_up:
                self._behind = False
            for piece in pieces:
                self._pieces.append(piece)
                self._buffered += piece.count
            self._cond.notify_all()

    def _converted(self, group: list[tuple[Raw | None, dict[str, Any] | None]]) -> list[Piece]:
        """A group as up to two pieces: up to its last end mark, and after it."""
        last = max((i for i, (_, end) in enumerate(group) if end is not None), default=-1)
        pieces = []
        for part, end in ((group[:last + 1], group[last][1] if last >= 0 else None), (group[last + 1:], None)):
            raws = [raw for raw, _ in part if raw is not None and len(raw)]
            count = sum(len(raw) for raw in raws)
            if part and (count or end is not None):
                pieces.append(Piece(self._convert(raws) if count else None, end))
        return pieces

    def _has_end(self) -> bool:
        return any(p.end is not None for p in self._pieces)

    def _rows_to_end(self) -> int:
        """Rows buffered up to the last end mark."""
        count = counted = 0
        for piece in self._pieces:
            count += piece.count
            if piece.end is not None:
                counted = count
        return counted

    def _backlog_read(self) -> bool:
        """Whether a take need not wait for the source's backlog (see the module's docstring)."""
        return (self._error is not None or self.finished or self._stopped or not self._behind
                or self._rows_to_end() >= self._max_rows or self._buffered >= 2 * self._max_rows)

    def take(self, wait_s: float, min_rows: int = 0) -> tuple[list[Rows], dict[str, Any] | None]:
        """The buffered rows up to the last end mark (at most about ``max_rows``: the first mark past
        them), waiting up to ``wait_s`` for a first mark; ([], None) when there is none, or when
        fewer than ``min_rows`` rows come before it (they stay buffered for the next call)."""
        with self._cond:
            self._cond.wait_for(lambda: self._error is not None or self.finished
                                or self._has_end(), wait_s)
            if self._has_end():
                self._cond.wait_for(self._backlog_read, BACKLOG_WAIT_S)
            if self._error is not None:
                raise self._error
            count, last, counted = 0, -1, 0
            for index, piece in enumerate(self._pieces):
                count += piece.count
                if piece.end is not None:
                    last, counted = index, count
                    if count >= self._max_rows:
                        break
            if counted < min_rows and not self.finished:
                return [], None
            rows: list[Rows] = []
            end = None
            for _ in range(last + 1):
                piece = self._pieces.popleft()
                if piece.rows is not None:
                    rows.append(piece.rows)
                self._buffered -= piece.count
                end = piece.end if piece.end is not None else end
            self._cond.notify_all()
            return rows, end

    def has_rows(self) -> bool:
        """Whether rows are buffered (held back by ``min_rows``, or without an end mark yet)."""
        with self._cond:
            return self._buffered > 0

    def stop(self, source: Any) -> None:
        """Stop reading: the source is asked to stop, the thread joined (before the source is closed)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        source.stop()
        self._thread.join(30)
        if self._thread.is_alive():
            log.warning("the source's reading thread did not stop within 30 s")
