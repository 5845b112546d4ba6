"""The blocking snapshot's rules, the same for every source: requests in order, each removed once
read; a table no longer captured or failing to read is skipped and the others are still read; the
offset goes out after each request."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cdc.core.blocking_snapshot import ReadTable, blocking_snapshots
from cdc.core.errors import SourceError
from cdc.core.records import ChangeEvent


def _event(table: str, n: int) -> ChangeEvent:
    return ChangeEvent(f"t.{table}", None, {"n": n}, None, {"op": "r", "after": {"n": n}})


def test_requests_are_read_in_order_skipping_what_cannot_be_read() -> None:
    opened: list[str] = []

    def rows(name: str, condition: str | None) -> Iterator[list[ChangeEvent]] | None:
        if name == "db.gone":
            return None

        def read() -> Iterator[list[ChangeEvent]]:
            yield [_event(name, 1), _event(name, 2)]
            if name == "db.broken":
                raise SourceError("permission denied for table broken")
            if condition:
                yield [_event(name, 3)]
        return read()

    @contextmanager
    def reader() -> Iterator[ReadTable]:
        opened.append("open")
        yield rows
        opened.append("close")

    requests = [{"tables": ["db.a", "db.gone", "db.broken", "db.b"]},
                {"tables": ["db.c"], "conditions": {"db.c": "n > 2"}}]
    offsets = iter([{"pos": 1}, {"pos": 2}])
    batches = list(blocking_snapshots(requests, reader, lambda: next(offsets)))

    assert requests == []
    assert opened == ["open", "close", "open", "close"]
    assert [([(e.topic, e.value["after"]["n"]) for e in b.events], b.offset) for b in batches] == [
        ([("t.db.a", 1), ("t.db.a", 2)], None),
        ([("t.db.broken", 1), ("t.db.broken", 2)], None),  # delivered before the failure; then skipped
        ([("t.db.b", 1), ("t.db.b", 2)], None),
        ([], {"pos": 1}),
        ([("t.db.c", 1), ("t.db.c", 2)], None),
        ([("t.db.c", 3)], None),
        ([], {"pos": 2}),
    ]


def test_no_offset_batch_when_the_source_hands_out_none() -> None:
    @contextmanager
    def reader() -> Iterator[ReadTable]:
        yield lambda name, condition: iter([[_event(name, 1)]])

    batches = list(blocking_snapshots([{"tables": ["db.a"]}], reader, lambda: None))
    assert [(len(b.events), b.offset) for b in batches] == [(1, None)]
