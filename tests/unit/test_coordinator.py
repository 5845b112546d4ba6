"""The start-up sequence written once (cdc.core.coordinator): which of a source's parts run, in which order, for
each plan, with the markers, the delays and the SKIPPED notification; a fake source's parts record the calls."""
from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest

from cdc.core import delays
from cdc.core.coordinator import Coordinator, StartSettings
from cdc.core.errors import CdcError, SourceError
from cdc.core.records import Batch
from cdc.core.snapshot_mode import Decision
from cdc.core.snapshot_restart import attempt_offset, slot_pending_offset
from cdc.core.source import ChangeEventSources, Partition


class Parts(ChangeEventSources):
    def __init__(self, *, reaches: bool = True, schema_is_snapshot: bool = False) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.reaches = reaches
        self.schema_is_snapshot = schema_is_snapshot

    def prepare(self, offset: dict[str, Any] | None) -> None:
        self.calls.append(("prepare", offset))

    def locate(self, offset: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        self.calls.append(("locate", offset))
        return {**offset, "located": True}, self.reaches

    def log_gone(self, offset: dict[str, Any]) -> CdcError:
        return SourceError("gone")

    def snapshot(self, decision: Decision, offset: dict[str, Any] | None,
                 attempt: int) -> Generator[Batch, None, dict[str, Any] | None]:
        self.calls.append(("snapshot", decision.plan.value, offset, attempt))
        yield Batch([], {"pos": 5})
        return None if decision.then_stop else {"pos": 5}

    def start_log(self, decision: Decision, offset: dict[str, Any] | None) -> Generator[Batch, None, dict[str, Any]]:
        self.calls.append(("start_log", decision.plan.value, offset))
        yield from ()
        return offset if offset is not None else {"pos": 0}

    def stream_from(self, start: dict[str, Any]) -> Iterator[Batch]:
        self.calls.append(("stream", start))
        yield Batch([], start, caught_up=True)


def run(parts: Parts, mode: str, offset: dict[str, Any] | None, **settings: Any) -> list[Batch]:
    return list(Coordinator(parts, StartSettings(mode, **settings), lambda: False).run(offset))


def test_no_offset_snapshot_then_stream() -> None:
    parts = Parts()
    batches = run(parts, "initial", None)
    assert parts.calls == [("prepare", None), ("snapshot", "snapshot", None, 0), ("stream", {"pos": 5})]
    assert [b.offset for b in batches] == [{"pos": 5}, {"pos": 5}]


def test_initial_only_stops_after_the_snapshot_and_does_nothing_with_an_offset() -> None:
    parts = Parts()
    run(parts, "initial_only", None)
    assert parts.calls[-1] == ("snapshot", "snapshot", None, 0)
    parts = Parts()
    assert run(parts, "initial_only", {"pos": 3}) == []
    assert [c[0] for c in parts.calls] == ["prepare", "locate"]


def test_a_stored_offset_is_located_and_streamed_from() -> None:
    parts = Parts()
    run(parts, "initial", {"pos": 3})
    assert parts.calls == [("prepare", {"pos": 3}), ("locate", {"pos": 3}),
                           ("start_log", "stream", {"pos": 3, "located": True}),
                           ("stream", {"pos": 3, "located": True})]


def test_markers_start_over_and_an_interrupted_attempt_is_passed_on() -> None:
    parts = Parts()
    run(parts, "initial", attempt_offset(1))
    assert parts.calls[1] == ("snapshot", "snapshot", None, 2)
    parts = Parts()
    run(parts, "initial", slot_pending_offset())
    assert parts.calls[0] == ("prepare", slot_pending_offset())
    assert parts.calls[1] == ("snapshot", "snapshot", None, 0)


def test_the_log_gone_is_the_parts_error_or_a_new_snapshot_when_needed() -> None:
    with pytest.raises(SourceError, match="gone"):
        run(Parts(reaches=False), "initial", {"pos": 3})
    parts = Parts(reaches=False)
    run(parts, "when_needed", {"pos": 3})
    assert parts.calls[2] == ("snapshot", "snapshot", {"pos": 3, "located": True}, 0)


@pytest.mark.parametrize("schema_is_snapshot", [True, False])
def test_schema_only_is_a_snapshot_where_the_source_says(schema_is_snapshot: bool) -> None:
    parts = Parts(schema_is_snapshot=schema_is_snapshot)
    run(parts, "no_data", None)
    assert parts.calls[1][0] == ("snapshot" if schema_is_snapshot else "start_log")


def test_delays_wait_around_a_snapshot_only(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(delays, "clock", lambda: now[0])
    monkeypatch.setattr(delays, "pause", lambda s: now.__setitem__(0, now[0] + s))
    batches = run(Parts(), "initial", None, snapshot_delay_ms=300, streaming_delay_ms=200)
    assert sum(1 for b in batches if b.commit_now) == 5  # 3 ticks before the snapshot, 2 before streaming
    now[0] = 0.0
    assert not any(b.commit_now for b in run(Parts(), "initial", {"pos": 1}, snapshot_delay_ms=300))


def test_skipped_notification_on_a_start_without_a_snapshot() -> None:
    from cdc.core.config import Config
    from cdc.core.notifications import Notifier
    from cdc.core.options import CORE_OPTIONS

    notifier = Notifier.from_config(Config({"topic.prefix": "x", "notification.enabled.channels": "sink",
                                            "notification.sink.topic.name": "n"}).declare(CORE_OPTIONS))
    batches = run(Parts(), "initial", {"pos": 1}, notifier=notifier)
    assert batches[0].events and batches[0].offset is None
    assert not run(Parts(), "initial", None, notifier=notifier)[0].events


class Databases:
    """Partitioned parts: two databases, each with its entry in the offset (as SQL Server's)."""

    schema_is_snapshot = True

    def __init__(self, stop_after: str | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.stop_after = stop_after
        self.stopped = False

    def partitions(self, offset: dict[str, Any] | None) -> list[Partition]:
        stored = (offset or {}).get("databases", {})
        return [Partition(db, stored.get(db), f"database {db}") for db in ("a", "b")]

    def prepare(self, partition: str, offset: dict[str, Any] | None) -> None:
        self.calls.append(("prepare", partition))

    def locate(self, partition: str, offset: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        return offset, True

    def log_gone(self, partition: str, offset: dict[str, Any]) -> CdcError:
        return SourceError(partition)

    def hold(self, partition: str, offset: dict[str, Any] | None) -> None:
        self.calls.append(("hold", partition))

    def snapshot(self, partition: str, decision: Decision, offset: dict[str, Any] | None,
                 attempt: int) -> Generator[Batch, None, dict[str, Any] | None]:
        self.calls.append(("snapshot", partition, attempt))
        self.stopped = partition == self.stop_after
        yield Batch([], {"databases": {partition: {"lsn": 1}}})
        return None if decision.then_stop else {"lsn": 1}

    def start_log(self, partition: str, decision: Decision,
                  offset: dict[str, Any] | None) -> Generator[Batch, None, dict[str, Any] | None]:
        self.calls.append(("start_log", partition))
        yield from ()
        return offset

    def stream_from(self, starts: dict[str, dict[str, Any]]) -> Iterator[Batch]:
        self.calls.append(("stream", starts))
        yield Batch(caught_up=True)


def test_partitions_are_decided_in_turn_then_streamed_together() -> None:
    parts = Databases()
    offset = {"databases": {"a": {"lsn": 7}, "b": attempt_offset(0)}}
    list(Coordinator.partitioned(parts, StartSettings("initial"), lambda: parts.stopped).run(offset))
    assert parts.calls == [("prepare", "a"), ("start_log", "a"), ("prepare", "b"), ("snapshot", "b", 1),
                           ("stream", {"a": {"lsn": 7}, "b": {"lsn": 1}})]


def test_initial_only_partitions_hold_and_nothing_streams() -> None:
    parts = Databases()
    offset = {"databases": {"a": {"lsn": 7, "snapshot_only": True}}}
    list(Coordinator.partitioned(parts, StartSettings("initial_only"), lambda: False).run(offset))
    assert parts.calls == [("prepare", "a"), ("hold", "a"), ("prepare", "b"), ("snapshot", "b", 0)]


def test_a_stop_during_a_partition_ends_the_run() -> None:
    parts = Databases(stop_after="a")
    list(Coordinator.partitioned(parts, StartSettings("initial"), lambda: parts.stopped).run(None))
    assert parts.calls == [("prepare", "a"), ("snapshot", "a", 0)]
