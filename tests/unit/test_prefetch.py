"""The driver's reading thread (cdc.spark.prefetch) hands over rows only up to an end mark."""
from __future__ import annotations

from typing import Any

from cdc.core.records import Batch
from cdc.spark.prefetch import Prefetcher


def stream(sizes_and_ends: list[tuple[int, bool]]) -> list[Batch]:
    return [Batch([], {"n": n, "end": end}) for n, (_, end) in enumerate(sizes_and_ends)]


def run(plan: list[tuple[int, bool]], max_rows: int) -> list[tuple[int, Any]]:
    """Take until every row is handed over; (rows taken, end offset) per take."""
    sizes = {n: size for n, (size, _) in enumerate(plan)}
    prefetch = Prefetcher(iter(stream(plan)), lambda b: [(b.offset["n"],)] * sizes[b.offset["n"]],
                          lambda b, _since: dict(b.offset) if b.offset["end"] else None, max_rows)
    taken: list[tuple[int, Any]] = []
    total = sum(size for size, _ in plan)
    for _ in range(20):
        rows, end = prefetch.take(wait_s=0.5)
        if rows:
            taken.append((len(rows), end["n"]))
        if sum(n for n, _ in taken) == total:
            break
    prefetch.stop(type("Source", (), {"stop": lambda self: None})())
    return taken


def test_a_transaction_larger_than_twice_a_micro_batch_is_read_whole() -> None:
    # 10 rows a micro-batch; one transaction of 60 rows in 6 pieces, its end mark after the last:
    # the thread must read past the usual bound (20 rows), or take() would wait forever
    plan = [(5, True), *[(10, False)] * 5, (10, True), (3, True)]
    assert run(plan, max_rows=10) == [(5, 0), (60, 6), (3, 7)]


def test_reading_pauses_while_two_micro_batches_wait() -> None:
    plan = [(10, True)] * 6
    assert run(plan, max_rows=10) == [(10, n) for n in range(6)]
