"""Signals and the incremental-snapshot window, without a server: a fake table and a fake log."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdc.core import signals as sig
from cdc.core.incremental import ChunkError, IncrementalSnapshot, TableTask, event_key
from cdc.core.records import ChangeEvent


def read_event(table: str, key: int, value: str) -> ChangeEvent:
    row = {"id": key, "val": value}
    return ChangeEvent(table, None, {"id": key}, None, {"op": "r", "before": None, "after": row}, table_id=table)


def change(table: str, op: str, key: int, value: str | None = None) -> ChangeEvent:
    row = {"id": key, "val": value}
    before, after = (row, None) if op == "d" else (None, row)
    return ChangeEvent(table, None, {"id": key}, None, {"op": op, "before": before, "after": after}, table_id=table)


class FakeTable:
    """A table as a dict; reads in key order between bounds, like the SQL the source runs."""

    def __init__(self, rows: dict[int, str], fail: str | None = None) -> None:
        self.rows = rows
        self.fail = fail
        self.reads: list[tuple[Any, int]] = []

    def bounds(self, task: TableTask) -> tuple[list[str], list[Any] | None]:
        if self.fail:
            raise ChunkError(self.fail)
        return ["id"], ([max(self.rows)] if self.rows else None)

    def read(self, task: TableTask, limit: int) -> list[tuple[list[Any], ChangeEvent]]:
        after = task.last_key[0] if task.last_key else None
        self.reads.append((after, limit))
        keys = sorted(k for k in self.rows if (after is None or k > after) and k <= task.max_key[0])[:limit]
        return [([k], read_event(task.table, k, self.rows[k])) for k in keys]


class Log:
    """The watermarks the snapshot writes, as a change log would carry them."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, str]] = []
        self.data: dict[tuple[str, str], dict[str, Any] | None] = {}

    def write(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        self.marks.append((kind, chunk_id))
        self.data[kind, chunk_id] = data


def run_chunk(snap: IncrementalSnapshot, log: Log, during: list[ChangeEvent] = ()) -> list[ChangeEvent]:  # type: ignore[assignment]
    """One chunk: open, stream `during` inside the window, close; returns what the close emits."""
    snap.start_chunk()
    (open_kind, chunk), (close_kind, _) = log.marks[-2:]
    assert snap.on_watermark(open_kind, chunk) == []
    for event in during:
        snap.observe(event)
    return snap.on_watermark(close_kind, chunk)


def ids(events: list[ChangeEvent]) -> list[int]:
    return [e.value["after"]["id"] for e in events]


def test_window_drops_keys_changed_inside_it() -> None:
    table = FakeTable({k: f"v{k}" for k in range(1, 8)})
    log = Log()
    snap = IncrementalSnapshot(table, log.write, chunk_size=4)
    snap.add([TableTask("s.t")])
    out = run_chunk(snap, log, [change("s.t", "u", 2, "new"), change("s.t", "d", 3), change("s.other", "u", 4, "x")])
    assert ids(out) == [1, 4]  # 2 updated, 3 deleted in the window: the stream carries them
    assert snap.state()["tables"][0]["last_key"] == [4]  # progress moves past the whole chunk
    out = run_chunk(snap, log, [change("s.t", "c", 99, "beyond the bound")])
    assert ids(out) == [5, 6, 7]
    assert snap.state() is None and not snap.active  # fewer rows than a chunk: done
    assert snap.rows_dropped == 2 and snap.rows_emitted == 5


def test_changes_before_the_open_watermark_do_not_remove_rows() -> None:
    table = FakeTable({1: "a", 2: "b"})
    log = Log()
    snap = IncrementalSnapshot(table, log.write, chunk_size=10)
    snap.add([TableTask("s.t")])
    snap.start_chunk()
    (_, chunk), _ = log.marks
    snap.observe(change("s.t", "u", 1, "older than the read"))  # before window-open in the log
    snap.on_watermark(sig.WINDOW_OPEN, chunk)
    assert ids(snap.on_watermark(sig.WINDOW_CLOSE, chunk)) == [1, 2]


def test_unknown_watermarks_are_ignored_and_stop_drops_the_window() -> None:
    table = FakeTable({k: "x" for k in range(1, 50)})
    log = Log()
    snap = IncrementalSnapshot(table, log.write, chunk_size=10)
    snap.add([TableTask("s.t"), TableTask("s.u")])
    snap.add([TableTask("s.t")])  # already queued: not twice
    assert [t.table for t in snap.tables] == ["s.t", "s.u"]
    snap.start_chunk()
    (_, chunk), _ = log.marks
    assert snap.on_watermark(sig.WINDOW_CLOSE, "an-earlier-run-7") == []
    snap.on_watermark(sig.WINDOW_OPEN, chunk)
    snap.stop(["s.t"])
    assert snap.on_watermark(sig.WINDOW_CLOSE, chunk) == []
    assert [t.table for t in snap.tables] == ["s.u"]


def test_pause_resume_restore_and_failing_tables() -> None:
    table = FakeTable({k: "x" for k in range(1, 26)})
    log = Log()
    snap = IncrementalSnapshot(table, log.write, chunk_size=10)
    snap.add([TableTask("s.t")])
    run_chunk(snap, log)
    snap.pause()
    assert not snap.wants_chunk and snap.state()["paused"] is True
    # a restart from the stored state continues after the last closed chunk
    again = IncrementalSnapshot(table, log.write, chunk_size=10)
    again.restore(json.loads(json.dumps(snap.state())))
    assert not again.wants_chunk
    again.resume()
    assert ids(run_chunk(again, log)) == list(range(11, 21))
    assert table.reads[-1] == (10, 10)
    # a table that cannot be read is skipped, the next one goes on
    bad = IncrementalSnapshot(FakeTable({}, fail="column x does not exist"), log.write, chunk_size=10)
    bad.add([TableTask("s.bad")])
    bad.start_chunk()
    assert bad.state() is None


def test_event_key_uses_after_then_before_then_key() -> None:
    assert event_key(change("t", "u", 5, "x"), ("id",)) == (5,)
    assert event_key(change("t", "d", 6), ("id",)) == (6,)
    tombstone = ChangeEvent("t", None, {"id": 7}, None, None, table_id="t")
    assert event_key(tombstone, ("id",)) == (7,)


@pytest.mark.parametrize("type_, data, reason", [
    ("", "{}", "no type"),
    ("fire", "{}", "unknown signal type 'fire'"),
    ("execute-snapshot", "{oops", "not valid JSON"),
    ("execute-snapshot", "[1]", "must be a JSON object"),
])
def test_malformed_signals(type_: str, data: str, reason: str) -> None:
    with pytest.raises(sig.SignalError, match=reason):
        sig.parse_signal("x", type_, data)


@pytest.mark.parametrize("data, reason", [
    ({}, "data-collections must be a non-empty list"),
    ({"data-collections": ["a("]}, "not a valid regular expression"),
    ({"data-collections": ["a"], "type": "sideways"}, "snapshot type 'sideways'"),
    ({"data-collections": ["a"], "additional-conditions": [{"filter": "x"}]}, "needs data-collection and filter"),
])
def test_malformed_snapshot_requests(data: dict[str, Any], reason: str) -> None:
    with pytest.raises(sig.SignalError, match=reason):
        sig.parse_snapshot_request(sig.parse_signal("x", "execute-snapshot", json.dumps(data)))


def test_snapshot_request_conditions_and_matching() -> None:
    request = sig.parse_snapshot_request(sig.parse_signal("x", "execute-snapshot", json.dumps({
        "data-collections": ["public\\.p.*", "public.q"], "type": "BLOCKING",
        "additional-conditions": [{"data-collection": "public.products", "filter": "color = 'blue'"},
                                  {"data-collection": "public\\.p.*", "filter": "qty > 1"}]})))
    assert request.kind == "blocking"
    assert request.condition_for("public.products") == "(color = 'blue') AND (qty > 1)"
    assert request.condition_for("public.q") is None
    assert sig.matching(request.patterns, ["public.q", "public.products", "public.pens", "other.p"]) == [
        "public.pens", "public.products", "public.q"]
    legacy = sig.parse_snapshot_request(sig.parse_signal("x", "execute-snapshot", json.dumps({
        "data-collections": ["public.q"], "additional-condition": "id > 5"})))
    assert legacy.condition_for("public.q") == "(id > 5)"


def test_file_channel_reads_whole_lines_once(tmp_path: Path) -> None:
    path = tmp_path / "signals.jsonl"
    channel = sig.FileChannel(path)
    assert channel.poll() == []  # no file yet
    sig.append_to_file(path, "1", "log", {"message": "hi"})
    with path.open("a") as f:
        f.write("garbage\n")
        f.write('{"id": "2", "type": "pause-snapshot"')  # not finished yet
    got = channel.poll()
    assert [(s.id, s.type, s.channel) for s in got] == [("1", "log", "file")]
    with path.open("a") as f:
        f.write("}\n")
    assert [s.id for s in channel.poll()] == ["2"]
    assert channel.poll() == [] and channel.position == path.stat().st_size


def test_read_only_visibility_of_a_chunk_snapshot() -> None:
    """PostgreSQL read.only: which streamed transactions a chunk's snapshot already contains."""
    from cdc.sources.postgres.chunks import Visibility

    seen = Visibility(xmin=10, xmax=20, in_progress=frozenset({12, 15}), wal_lsn=1000)
    assert [xid for xid in (5, 9, 10, 11, 12, 15, 19, 20, 25) if seen.sees(xid)] == [5, 9, 10, 11, 19]


def test_a_replay_reads_the_same_chunks_again_without_new_watermarks() -> None:
    """A Spark micro-batch replayed after a crash: the windows of the run it holds are found in the
    log (their watermarks describe the chunks), each chunk is read again over the same key range,
    minus the keys streamed inside the window; no chunk is started and nothing is written."""
    table = FakeTable({k: f"v{k}" for k in range(1, 11)})
    log = Log()
    live = IncrementalSnapshot(table, log.write, chunk_size=4, run="r1")
    live.add([TableTask("s.t")])
    start = live.state()
    # the log the live run streamed: per chunk, open, the changes inside the window, close
    stream: list[tuple[str, Any]] = []
    emitted: list[list[int]] = []
    for during in ([change("s.t", "u", 2, "new")], [], [change("s.t", "d", 9)]):
        live.start_chunk()
        (open_kind, chunk), (close_kind, _) = log.marks[-2:]
        assert chunk.split(".")[1] == "r1"
        assert live.on_watermark(open_kind, chunk, log.data[open_kind, chunk]) == []
        assert live.state()["window"] == chunk  # a micro-batch may not end here
        for event in during:
            live.observe(event)
        emitted.append(ids(live.on_watermark(close_kind, chunk, log.data[close_kind, chunk])))
        stream += [("mark", (open_kind, chunk)), *(("change", e) for e in during), ("mark", (close_kind, chunk))]
        if during and during[0].value["op"] == "d":
            del table.rows[9]
    assert emitted == [[1, 3, 4], [5, 6, 7, 8], [10]] and live.state() is None

    def replay(run: str) -> tuple[list[list[int]], IncrementalSnapshot]:
        marks = len(log.marks)
        again = IncrementalSnapshot(table, log.write, chunk_size=4, replay_run=run)
        again.restore(json.loads(json.dumps(start)))
        out = []
        for kind, item in stream:
            again.start_chunk()  # the source asks between transactions: nothing is started
            if kind == "change":
                again.observe(item)
            else:
                got = again.on_watermark(item[0], item[1], log.data[item])
                if item[0] == sig.WINDOW_CLOSE:
                    out.append(ids(got))
        assert len(log.marks) == marks  # no watermark written
        return out, again

    out, again = replay("r1")
    assert out == emitted and again.state() is None and again.replayed_chunks == 3
    # values are read again: a row changed since comes with its value now
    table.rows[5] = "changed since"
    out, again = replay("r1")
    assert out == emitted
    # the windows of another run (one that crashed before its micro-batch was planned) are not read
    out, again = replay("r2")
    assert out == [[], [], []] and again.replayed_chunks == 0


def test_watermarks_stay_debeziums_without_a_run() -> None:
    table = FakeTable({1: "a"})
    log = Log()
    snap = IncrementalSnapshot(table, log.write, chunk_size=4)
    snap.add([TableTask("s.t")])
    snap.start_chunk()
    assert all(data is None for data in log.data.values())
    (_, chunk), _ = log.marks
    snap.on_watermark(sig.WINDOW_OPEN, chunk)
    assert "window" not in snap.state()
