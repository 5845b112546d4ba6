"""The driver's reading thread (cdc.spark.prefetch) hands over rows only up to an end mark, and
converts them in groups."""
from __future__ import annotations

from typing import Any

from cdc.core.records import Batch
from cdc.spark.prefetch import Prefetcher


def run(plan: list[tuple[int, bool] | tuple[int, bool, bool]], max_rows: int) -> tuple[list[tuple[int, Any]], int]:
    """Take until every row is handed over: (rows taken, end offset's batch number) per take, and
    how many times rows were converted. Plan: (rows, ends a transaction[, the source caught up])
    per source batch; a batch's rows are a list here (the driver's are record batches)."""
    batches = [Batch([], {"n": n, "end": step[1]}, caught_up=len(step) > 2 and bool(step[2]))
               for n, step in enumerate(plan)]
    sizes = {n: step[0] for n, step in enumerate(plan)}
    conversions = []

    def convert(parts: list[list[tuple]]) -> list[tuple]:
        conversions.append(len(parts))
        return [row for part in parts for row in part]
    prefetch = Prefetcher(iter(batches), lambda b: [(b.offset["n"],)] * sizes[b.offset["n"]] or None, convert,
                          lambda b, _since: dict(b.offset) if b.offset["end"] else None, max_rows)
    taken: list[tuple[int, Any]] = []
    total = sum(step[0] for step in plan)
    for _ in range(20):
        pieces, end = prefetch.take(wait_s=0.5)
        rows = [row for piece in pieces for row in piece]
        if rows:
            taken.append((len(rows), end["n"]))
        if sum(n for n, _ in taken) == total:
            break
    prefetch.stop(type("Source", (), {"stop": lambda self: None})())
    return taken, len(conversions)


def test_a_transaction_larger_than_twice_a_micro_batch_is_read_whole() -> None:
    # 10 rows a micro-batch; one transaction of 60 rows in 6 pieces, its end mark after the last:
    # the thread must read past the usual bound (20 rows), or take() would wait forever
    plan = [(5, True), *[(10, False)] * 5, (10, True), (3, True)]
    assert run(plan, max_rows=10)[0] == [(5, 0), (60, 6), (3, 7)]


def test_reading_pauses_while_two_micro_batches_wait() -> None:
    plan = [(10, True)] * 6
    assert run(plan, max_rows=10)[0] == [(10, n) for n in range(6)]


def test_small_transactions_are_converted_together() -> None:
    # a group is converted once it holds a micro-batch's rows (here fewer than GROUP_ROWS), and
    # handed over up to its last end mark; the rest of the stream when it ends
    plan = [(30, True), (30, True), (30, False), (30, True), (5, True)]
    assert run(plan, max_rows=100) == ([(120, 3), (5, 4)], 2)


def test_a_source_that_caught_up_hands_over_at_once() -> None:
    # caught up, the source has nothing more for now: its group is converted then (a batch without
    # rows still carries the end mark), and the rest apart
    plan = [(4, False), (0, True, True), (6, True)]
    assert run(plan, max_rows=100) == ([(10, 2)], 2)


def test_fewer_rows_than_min_rows_stay_buffered() -> None:
    """minRowsPerBatch: a take with fewer rows before the last end mark hands over nothing and
    keeps them; once enough came (or the caller stops asking for a minimum), they go together."""
    import threading
    import time

    more = threading.Event()

    def stream() -> Any:
        yield Batch([], {"n": 0}, caught_up=True)
        more.wait(5)
        yield Batch([], {"n": 1}, caught_up=True)

    sizes = {0: 3, 1: 4}
    prefetch = Prefetcher(stream(), lambda b: [(b.offset["n"],)] * sizes[b.offset["n"]],
                          lambda parts: [row for part in parts for row in part], lambda b, _since: dict(b.offset), 100)
    try:
        assert prefetch.take(wait_s=1, min_rows=5) == ([], None)  # 3 rows buffered, 5 wanted
        more.set()
        for _ in range(50):  # take returns at once while an end mark is buffered: as Spark's triggers, spaced
            pieces, end = prefetch.take(wait_s=0.5, min_rows=5)
            if pieces:
                break
            time.sleep(0.1)
        assert [row for piece in pieces for row in piece] == [(0,)] * 3 + [(1,)] * 4 and end == {"n": 1}
    finally:
        prefetch.stop(type("Source", (), {"stop": lambda self: None})())



def _stream(*steps: tuple[float, Batch]) -> Any:
    """Batches, each after its pause."""
    import time

    for pause, batch in steps:
        time.sleep(pause)
        yield batch


def _take_once(stream: Any, sizes: dict[int, int], max_rows: int = 100) -> tuple[list[tuple], Any, float]:
    """One trigger's take: its rows, its end, how long it waited."""
    import time

    prefetch = Prefetcher(stream, lambda b: [(b.offset["n"],)] * sizes[b.offset["n"]] or None,
                          lambda parts: [row for part in parts for row in part],
                          lambda b, _since: dict(b.offset) if sizes[b.offset["n"]] else None, max_rows)
    try:
        time.sleep(0.4)  # the first batches are read and handed over (GROUP_S) before the trigger
        began = time.monotonic()
        pieces, end = prefetch.take(wait_s=2)
        return [row for piece in pieces for row in piece], end, time.monotonic() - began
    finally:
        prefetch.stop(type("Source", (), {"stop": lambda self: None})())


def test_a_trigger_during_a_backlog_waits_for_the_source_to_catch_up() -> None:
    """The source is still reading (its batches are not caught up): the trigger takes the backlog's rows
    together once it caught up, not the first few alone (their MERGE would hold the rest back)."""
    rows, end, waited = _take_once(_stream((0, Batch([], {"n": 0})), (0.3, Batch([], {"n": 1})),
                                           (0.8, Batch([], {"n": 2}, caught_up=True))), {0: 3, 1: 0, 2: 4})
    assert rows == [(0,)] * 3 + [(2,)] * 4 and end == {"n": 2} and waited > 0.3


def test_a_trigger_takes_a_full_micro_batch_without_waiting_for_the_rest_of_the_backlog() -> None:
    rows, end, waited = _take_once(_stream((0, Batch([], {"n": 0})), (0.3, Batch([], {"n": 1})),
                                           (1.5, Batch([], {"n": 2}, caught_up=True))), {0: 8, 1: 0, 2: 4},
                                   max_rows=8)
    assert rows == [(0,)] * 8 and end == {"n": 0} and waited < 1


def test_a_caught_up_source_is_not_waited_for() -> None:
    rows, end, waited = _take_once(_stream((0, Batch([], {"n": 0}, caught_up=True)),
                                           (1.5, Batch([], {"n": 1}, caught_up=True))), {0: 3, 1: 4})
    assert rows == [(0,)] * 3 and end == {"n": 0} and waited < 1
