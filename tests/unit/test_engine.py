"""The engine's promise (cdc/engine.py): an offset is stored only after the sink has flushed every
record before it, and the source hears of it only after it is stored."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from cdc.core.converters import JsonConverter
from cdc.core.errors import RetriableSourceError, SinkError, SourceError
from cdc.core.records import Batch, SinkRecord
from cdc.core.retry import RetryPolicy
from cdc.engine import Engine
from tests.unit.test_emitter import envelope

CALLS: list[str] = []


class Source:
    def __init__(self, batches: list[Batch], fail_after: bool = False) -> None:
        self.batches = batches
        self.fail_after = fail_after
        self.closed = False

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        CALLS.append(f"stream from {offset}")
        yield from self.batches
        if self.fail_after:
            raise SourceError("the log broke")

    def acknowledge(self, offset: dict[str, Any]) -> None:
        CALLS.append(f"acknowledge {offset['n']}")

    def stop(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class Sink:
    def __init__(self, flush_fails: bool = False) -> None:
        self.flush_fails = flush_fails
        self.closed = False

    def write(self, records: Sequence[SinkRecord]) -> None:
        CALLS.append(f"write {len(records)}")

    def flush(self) -> None:
        if self.flush_fails:
            raise SinkError("disk full")
        CALLS.append("flush")

    def close(self) -> None:
        self.closed = True


class Store:
    def __init__(self, stored: dict[str, Any] | None = None) -> None:
        self.stored = stored

    def load(self) -> dict[str, Any] | None:
        return self.stored

    def save(self, offset: dict[str, Any]) -> None:
        CALLS.append(f"save {offset['n']}")
        self.stored = offset

    def close(self) -> None:
        pass


def batch(n: int, events: int = 1, offset: bool = True) -> Batch:
    env = envelope()
    return Batch([env.event("c", None, {"id": i, "name": "x"}, {}) for i in range(events)],
                 {"n": n} if offset else None)


@pytest.fixture(autouse=True)
def calls() -> Iterator[list[str]]:
    CALLS.clear()
    yield CALLS


def test_flush_then_save_then_acknowledge_in_that_order(calls: list[str]) -> None:
    source, sink, store = Source([batch(1), batch(2, offset=False), batch(3)]), Sink(), Store({"n": 0})
    Engine(source, sink, JsonConverter(), store, flush_interval_s=0).run()
    assert calls == ["stream from {'n': 0}", "write 1", "flush", "save 1", "acknowledge 1", "write 1",
                     "write 1", "flush", "save 3", "acknowledge 3", "flush"]  # a clean stop flushes once more
    assert store.stored == {"n": 3} and source.closed and sink.closed


def test_a_batch_ending_inside_a_transaction_is_written_but_its_offset_waits(calls: list[str]) -> None:
    source, store = Source([batch(1), batch(2, offset=False)]), Store()
    Engine(source, Sink(), JsonConverter(), store, flush_interval_s=3600).run()
    assert calls[-3:] == ["flush", "save 1", "acknowledge 1"]  # at the end: the last whole offset only


class TransactionalSink(Sink):
    """A sink that commits records and offset together (the Kafka sink under exactly.once.support):
    what a commit holds is what was written since the last one; close aborts the rest."""

    transactional = True

    def __init__(self) -> None:
        super().__init__()
        self.open: list[int] = []
        self.transactions: list[list[int]] = []

    def write(self, records: Sequence[SinkRecord]) -> None:
        super().write(records)
        self.open += [int(r.value.split(b'"id":')[1].split(b",")[0]) for r in records]  # type: ignore[union-attr]


class TransactionalStore(Store):
    def __init__(self, sink: TransactionalSink) -> None:
        super().__init__()
        self.sink = sink

    def save(self, offset: dict[str, Any]) -> None:
        super().save(offset)
        self.sink.transactions.append(self.sink.open)
        self.sink.open = []


def numbered(n: int, first: int, count: int, offset: bool = True) -> Batch:
    env = envelope()
    return Batch([env.event("c", None, {"id": i, "name": "x"}, {}) for i in range(first, first + count)],
                 {"n": n} if offset else None)


@pytest.mark.parametrize("interval", [0, 3600])
def test_a_transactional_sink_never_commits_an_offset_with_rows_past_it(calls: list[str], interval: float) -> None:
    """Rows handed over inside a source transaction (no offset) are written after the pending offset is
    committed, not in its transaction: a restart from that offset would deliver them twice. At a clean
    stop they stay uncommitted (aborted), for the restart to deliver once."""
    sink = TransactionalSink()
    store = TransactionalStore(sink)
    source = Source([numbered(1, 0, 2), numbered(2, 2, 2, offset=False), numbered(3, 4, 1),
                     numbered(4, 5, 2, offset=False)])
    Engine(source, sink, JsonConverter(), store, flush_interval_s=interval).run()
    assert sink.transactions == [[0, 1], [2, 3, 4]]
    assert store.stored == {"n": 3} and sink.open == [5, 6]  # never committed: close aborts them


def test_after_a_source_error_the_batches_before_it_are_stored_and_the_error_is_raised(calls: list[str]) -> None:
    source, store = Source([batch(1), batch(2)], fail_after=True), Store()
    with pytest.raises(SourceError, match="the log broke"):
        Engine(source, Sink(), JsonConverter(), store, flush_interval_s=3600).run()
    assert calls[-3:] == ["flush", "save 2", "acknowledge 2"] and store.stored == {"n": 2}


def test_when_the_sink_cannot_flush_nothing_is_stored_and_the_first_error_is_the_one_raised(
        calls: list[str]) -> None:
    source, store = Source([batch(1)], fail_after=True), Store({"n": 0})
    with pytest.raises(SourceError, match="the log broke"):  # not the sink's error during the clean-up
        Engine(source, Sink(flush_fails=True), JsonConverter(), store, flush_interval_s=3600).run()
    assert store.stored == {"n": 0} and not any(c.startswith(("save", "acknowledge")) for c in calls)


def test_a_corrupt_offset_store_still_closes_source_and_sink() -> None:
    class Corrupt(Store):
        def load(self) -> dict[str, Any] | None:
            raise SourceError("offset file o.json is corrupt")
    source, sink = Source([]), Sink()
    with pytest.raises(SourceError, match="corrupt"):
        Engine(source, sink, JsonConverter(), Corrupt(), flush_interval_s=0).run()
    assert source.closed and sink.closed


class Flaky(Source):
    """Hands over its batches, then loses its connection ``failures`` times before it ends."""

    def __init__(self, batches: list[Batch], failures: int) -> None:
        super().__init__(batches)
        self.failures = failures

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        CALLS.append(f"stream from {offset}")
        start = offset["n"] if offset else 0
        for b in self.batches:
            if b.offset is None or b.offset["n"] > start:
                yield b
        if self.failures:
            self.failures -= 1
            raise RetriableSourceError("connection lost")


def test_a_retriable_source_error_restarts_the_source_from_the_stored_offset(calls: list[str]) -> None:
    source, store = Flaky([batch(1), batch(2)], failures=2), Store()
    retry = RetryPolicy(max_retries=3, first_wait_s=0, sleep=lambda s: None)
    Engine(source, Sink(), JsonConverter(), store, flush_interval_s=3600, retry=retry).run()
    starts = [c for c in calls if c.startswith("stream from")]
    assert starts == ["stream from None", "stream from {'n': 2}", "stream from {'n': 2}"]
    assert calls.count("write 1") == 2 and store.stored == {"n": 2}  # stored before each restart, nothing repeated


def test_retries_end_with_the_error(calls: list[str]) -> None:
    retry = RetryPolicy(max_retries=2, first_wait_s=0, sleep=lambda s: None)
    with pytest.raises(RetriableSourceError, match="connection lost"):
        Engine(Flaky([], failures=5), Sink(), JsonConverter(), Store(), flush_interval_s=0, retry=retry).run()
    assert len([c for c in calls if c.startswith("stream from")]) == 3  # the first run and two restarts
    with pytest.raises(SourceError, match="the log broke"):  # not retriable: at once
        Engine(Source([], fail_after=True), Sink(), JsonConverter(), Store(), retry=retry).run()
