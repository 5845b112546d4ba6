"""The contract every source keeps, as checks its tests call — a plugin from another package too.

A source's test makes its log hold this workload, in one table with an int key ``id`` and a text
column ``v`` (its topic is ``topic``), and nothing else after the position it starts from::

    T1  INSERT (1, 'a'); INSERT (2, 'b')
    T2  UPDATE SET v = 'a2' WHERE id = 1; UPDATE SET id = 3 WHERE id = 2      (a key change)
    T3  DELETE WHERE id = 1

and gives a ``run(properties, offset)`` that builds the source with ``properties`` added to its
own, streams from ``offset`` (None: where the workload starts) until it has handed everything
over (a batch with ``caught_up``), and returns the batches in order, without acknowledging them
(so the log stays readable from any offset). :func:`check_source` then checks what every source
owes its users, whatever its database:

* the events of the workload, with Debezium's tombstones and key-change headers
* ``tombstones.on.delete=false``; ``skipped.operations`` (a key change is an update)
* ``provide.transaction.metadata``: BEGIN/END around each transaction, the ``transaction`` blocks
* a restart from every offset the source handed out repeats nothing and loses nothing
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc.core.envelope import NEW_KEY_HEADER, OLD_KEY_HEADER
from cdc.core.records import Batch, ChangeEvent

Runner = Callable[[dict[str, str], dict[str, Any] | None], list[Batch]]

# (op, key id, headers) of the workload's events with the default options; None: a tombstone
EXPECTED: list[tuple[str | None, int, tuple[str, ...]]] = [
    ("c", 1, ()), ("c", 2, ()),
    ("u", 1, ()), ("d", 2, (NEW_KEY_HEADER,)), (None, 2, (NEW_KEY_HEADER,)), ("c", 3, (OLD_KEY_HEADER,)),
    ("d", 1, ()), (None, 1, ()),
]
TRANSACTIONS = [2, 3, 1]  # data events (not tombstones) per transaction


def _data(batches: list[Batch], topic: str) -> list[ChangeEvent]:
    return [e for b in batches for e in b.events if e.topic == topic]


def _shape(event: ChangeEvent) -> tuple[Any, Any, tuple[str, ...]]:
    key = event.key or {}
    headers = tuple(h[0] for h in event.headers or () if not h[0].startswith("__debezium.context."))
    return (event.value["op"] if event.value is not None else None, key.get("id"), headers)


def _row(event: ChangeEvent) -> Any:
    value = event.value
    return None if value is None else (value["op"], value.get("before"), value.get("after"))


def check_events(run: Runner, topic: str) -> None:
    events = _data(run({}, None), topic)
    assert [_shape(e) for e in events] == EXPECTED, [_shape(e) for e in events]
    after = [e.value["after"] for e in events if e.value is not None and e.value["op"] in ("c", "u")]
    assert [(r["id"], r["v"]) for r in after] == [(1, "a"), (2, "b"), (1, "a2"), (3, "b")], after
    deleted = events[-2].value
    assert deleted is not None and deleted["before"]["id"] == 1 and deleted["after"] is None


def check_tombstones_off(run: Runner, topic: str) -> None:
    events = _data(run({"tombstones.on.delete": "false"}, None), topic)
    assert [_shape(e) for e in events] == [s for s in EXPECTED if s[0] is not None], [_shape(e) for e in events]


def check_skipped_operations(run: Runner, topic: str) -> None:
    assert _data(run({"skipped.operations": "c,u,d"}, None), topic) == []
    events = _data(run({"skipped.operations": "u"}, None), topic)
    assert [_shape(e) for e in events] == [("c", 1, ()), ("c", 2, ()), ("d", 1, ()), (None, 1, ())], \
        [_shape(e) for e in events]


def check_transaction_metadata(run: Runner, topic: str) -> None:
    batches = run({"provide.transaction.metadata": "true"}, None)
    events = [e for b in batches for e in b.events if e.topic == topic or (e.value or {}).get("status")]
    statuses = [(e.value or {}).get("status") for e in events]
    assert statuses.count("BEGIN") == 3 and statuses.count("END") == 3, statuses
    begun: str | None = None
    seen = 0
    counts: list[int] = []
    for event in events:
        value = event.value
        if value is None:
            continue
        if value.get("status") == "BEGIN":
            begun, seen = value["id"], 0
        elif value.get("status") == "END":
            assert value["id"] == begun and value["event_count"] == seen, (value, seen)
            counts.append(seen)
        else:
            block = value["transaction"]
            seen += 1
            assert block["id"] == begun and block["total_order"] == seen, (block, seen)
    assert counts == TRANSACTIONS, counts


def check_restart_from_every_offset(run: Runner, topic: str) -> None:
    batches = run({}, None)
    full = [_row(e) for e in _data(batches, topic)]
    done = 0
    for batch in batches:
        done += len([e for e in batch.events if e.topic == topic])
        if batch.offset is None:
            continue
        again = [_row(e) for e in _data(run({}, batch.offset), topic)]
        assert again == full[done:], (batch.offset, again, full[done:])


def check_source(run: Runner, topic: str) -> None:
    """Every check, in order; an AssertionError says which and what came instead."""
    for check in (check_events, check_tombstones_off, check_skipped_operations, check_transaction_metadata,
                  check_restart_from_every_offset):
        check(run, topic)
