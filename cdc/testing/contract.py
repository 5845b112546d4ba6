"""The contract every source keeps, as checks its tests call — a plugin from another package too.

A source's test makes its log hold this workload, in one table with an int key ``id`` and a text
column ``v`` (its topic is ``topic``), and nothing else after the position it starts from::

    T1  INSERT (1, 'a'); INSERT (2, 'b')
    T2  UPDATE SET v = 'a2' WHERE id = 1; UPDATE SET id = 3 WHERE id = 2      (a key change)
    T3  DELETE WHERE id = 1

and gives a ``run(properties, offset)`` that builds the source with ``properties`` added to its
own, streams from ``offset`` (None: where the workload starts, or with ``snapshot.mode=initial``, a
snapshot of the table as the workload left it, then the stream) until it has handed everything
over (a batch with ``caught_up``), and returns the batches in order, without acknowledging them
(so the log stays readable from any offset). :func:`check_source` then checks what every source
owes its users, whatever its database:

* the events of the workload, with Debezium's tombstones and key-change headers
* ``tombstones.on.delete=false``; ``skipped.operations`` (a key change is an update)
* ``provide.transaction.metadata``: BEGIN/END around each transaction, the ``transaction`` blocks
* a restart from every offset the source handed out repeats nothing and loses nothing
* the initial snapshot (``snapshot.mode=initial``): the rows as they are, ``op: r``, no ``before``,
  Debezium's ``source.snapshot`` marks (first ... last), and nothing twice after it

and, where the source has them:

* schema changes (``schema``: a second runner, over a log of the SCHEMA workload, below): rows carry
  the columns of their time, the value schema changes with them, schema change events (if the source
  emits them) come between, and a restart from every offset decodes with the schema of its time
* signals (``make``: the source built, not started, to ask what it offers; cdc.core.source.TakesSignals):
  an ``execute-snapshot`` signal sent through the source's own ``send_signal`` on the file channel
  reads the table again (``op: r``) where the stream stands

The SCHEMA workload, in a table of the same shape (its topic is ``schema_topic``), alone in its log::

    S1  INSERT (1, 'a')
    S2  ALTER TABLE ADD COLUMN w int                                           (nullable)
    S3  INSERT (2, 'b', 20); UPDATE SET w = 10 WHERE id = 1
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from cdc.core.envelope import NEW_KEY_HEADER, OLD_KEY_HEADER
from cdc.core.records import Batch, ChangeEvent
from cdc.core.snapshot_marks import snapshot_flag
from cdc.core.source import TakesSignals

Runner = Callable[[dict[str, str], dict[str, Any] | None], list[Batch]]
Maker = Callable[[dict[str, str]], Any]  # the source with these properties added, built, not started

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


def _reads(batches: list[Batch]) -> list[ChangeEvent]:
    return [e for b in batches for e in b.events if e.value is not None and e.value.get("op") == "r"]


def _last_offset(batches: list[Batch]) -> dict[str, Any]:
    offsets = [b.offset for b in batches if b.offset is not None]
    assert offsets, "the source handed out no offset"
    return offsets[-1]


def check_snapshot(run: Runner, topic: str) -> None:
    """``snapshot.mode=initial`` from no offset: the table as the workload left it, read, then the stream."""
    batches = run({"snapshot.mode": "initial"}, None)
    reads = _reads(batches)  # every captured table's: the marks run across tables
    assert reads, "the initial snapshot read no rows"
    tables = [e.table_id for e in reads]
    expected = [snapshot_flag(first=i == 0, first_in_table=i == 0 or tables[i - 1] != table,
                              last_in_table=i == len(tables) - 1 or tables[i + 1] != table, last=i == len(tables) - 1)
                for i, table in enumerate(tables)]
    marks = [(e.value or {})["source"].get("snapshot") for e in reads]
    assert marks == expected, (marks, expected)
    ours = [e for e in reads if e.topic == topic]
    assert [(e.value or {})["before"] for e in ours] == [None], ours
    assert [((e.value or {})["after"]["id"], (e.value or {})["after"]["v"]) for e in ours] == [(3, "b")], ours
    assert (ours[0].key or {}).get("id") == 3, ours[0].key
    assert [_shape(e) for e in _data(batches, topic)] == [("r", 3, ())], "the stream repeated the snapshot's rows"
    again = _data(run({"snapshot.mode": "initial"}, _last_offset(batches)), topic)
    assert again == [], ("a restart after the snapshot read again", again)


def _after_fields(event: ChangeEvent) -> list[str]:
    schema = event.value_schema.definition if event.value_schema is not None else {}
    after: dict[str, Any] = next((f for f in schema.get("fields", ()) if f.get("field") == "after"), {})
    return [f["field"] for f in after.get("fields", ())]


def check_schema_change(schema: Runner, topic: str) -> None:
    """The SCHEMA workload: each row with the columns of its time, however far back a restart goes."""
    batches = schema({}, None)
    events = [e for b in batches for e in b.events if e.topic == topic and e.value is not None]
    rows = [((e.value or {})["op"], (e.value or {})["after"]) for e in events]
    assert rows == [("c", {"id": 1, "v": "a"}), ("c", {"id": 2, "v": "b", "w": 20}),
                    ("u", {"id": 1, "v": "a", "w": 10})], rows
    assert [_after_fields(e) for e in events] == [["id", "v"], ["id", "v", "w"], ["id", "v", "w"]], \
        [_after_fields(e) for e in events]
    flat = [e for b in batches for e in b.events]
    changes = [i for i, e in enumerate(flat) if e.value is not None and "tableChanges" in e.value]
    if changes:  # the source emits schema change events: the ALTER's comes between the rows
        first, second = flat.index(events[0]), flat.index(events[1])
        assert any(first < i < second for i in changes), "no schema change event between the rows"
    done = 0
    full = [_row(e) for e in events]
    for batch in batches:
        done += len([e for e in batch.events if e.topic == topic and e.value is not None])
        if batch.offset is None:
            continue
        tail = [e for e in _data(schema({}, batch.offset), topic) if e.value is not None]
        assert [_row(e) for e in tail] == full[done:], (batch.offset, [_row(e) for e in tail], full[done:])
        assert [_after_fields(e) for e in tail] == [_after_fields(e) for e in events[done:]], batch.offset


def check_signals(run: Runner, topic: str, make: Maker, snapshot_type: str = "blocking",
                  streamed: list[Batch] | None = None) -> None:
    """An ``execute-snapshot`` signal, sent with the source's own ``send_signal`` (cdc.core.source.TakesSignals)
    on the file channel, reads the table again where the stream stands: its one row, ``op: r``.
    ``streamed``: the workload's batches from its start, read before any restart (a run from an offset may
    release the log before it: PostgreSQL's slot)."""
    streamed = streamed if streamed is not None else run({}, None)
    table = _data(streamed, topic)[0].table_id
    end = _last_offset(streamed)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "signals.jsonl")
        props = {"signal.enabled.channels": "file", "signal.file": path}
        source = make(props)
        try:
            signals = source
            assert isinstance(signals, TakesSignals), "the source does not take signals"
            signals.send_signal("execute-snapshot", {"data-collections": [table], "type": snapshot_type})
        finally:
            source.close()
        batches = run(props, end)
    reads = [e for e in _reads(batches) if e.topic == topic]
    assert [((e.value or {})["after"]["id"], (e.value or {})["after"]["v"]) for e in reads] == [(3, "b")], reads
    assert [e for e in _data(batches, topic) if e.value is not None and e.value["op"] != "r"] == [], \
        "the signal's run streamed changes again"


def check_source(run: Runner, topic: str, *, make: Maker | None = None, schema: Runner | None = None,
                 schema_topic: str | None = None, snapshot: bool = True) -> None:
    """Every check that applies, in order; an AssertionError says which and what came instead.
    ``snapshot=False`` leaves out the initial snapshot (a test whose log cannot be snapshotted);
    ``schema`` and ``schema_topic``: the SCHEMA workload's runner and topic; ``make``: the source built
    with properties added, to send a signal where it takes them."""
    for check in (check_events, check_tombstones_off, check_skipped_operations, check_transaction_metadata):
        check(run, topic)
    streamed = run({}, None)  # before the restarts: a run from an offset may release the log before it
    check_restart_from_every_offset(run, topic)
    if snapshot:
        check_snapshot(run, topic)
    if schema is not None:
        check_schema_change(schema, schema_topic or topic)
    if make is not None:
        probe = make({})
        try:
            takes_signals = isinstance(probe, TakesSignals)
        finally:
            probe.close()
        if takes_signals:
            check_signals(run, topic, make, streamed=streamed)
