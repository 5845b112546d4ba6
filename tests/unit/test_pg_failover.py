"""PostgreSQL failovers without a server: offsets across timelines (a promoted standby continues them, another
branch of the cluster refuses them), the server's identity, the errors a standby or a failover slot gives, and
the checks of slot.failover and of reading from a standby (a fake catalog connection)."""
from __future__ import annotations

import logging
from typing import Any

import pytest

from cdc.core.errors import OffsetStoreError, RetriableSourceError, SourceError
from cdc.sources.postgres import failover, guards
from cdc.sources.postgres.pgoutput import parse_lsn
from cdc.sources.postgres.replication import SlotMissingError, replication_error
from cdc.sources.postgres.server import ServerInfo
from cdc.sources.postgres.timeline import Timelines, resume_point

IDENTITY = "postgres:7713153086166616271:app"
# Timeline 3's history: 1 ended at 0/3000148, 2 at 0/5000000.
HISTORY = "1\t0/3000148\tno recovery target specified\n\n2\t0/5000000\tno recovery target specified\n"


def test_a_history_file_gives_where_each_ancestor_ended() -> None:
    timelines = Timelines.parse_history(3, HISTORY)
    assert timelines == Timelines(3, {1: parse_lsn("0/3000148"), 2: parse_lsn("0/5000000")})


def test_an_offset_of_an_ancestor_before_its_end_continues_as_it_is() -> None:
    timelines = Timelines.parse_history(3, HISTORY)
    offset = {"lsn": parse_lsn("0/4FFFF00"), "txId": 7, "server_timeline": 2}
    assert resume_point(offset, timelines) is offset
    inside = {"lsn": parse_lsn("0/2000000"), "lsn_commit": parse_lsn("0/3000100"), "lsn_proc": parse_lsn("0/3000000"),
              "server_timeline": 1}
    assert resume_point(inside, timelines) is inside


def test_an_offset_past_the_end_of_its_timeline_resumes_at_the_switch_point(caplog: pytest.LogCaptureFixture) -> None:
    """The old primary wrote WAL the promoted standby never received: streaming resumes where this server's
    history left that timeline, so that nothing it wrote since is skipped."""
    timelines = Timelines.parse_history(3, HISTORY)
    offset = {"lsn": parse_lsn("0/5000000"), "lsn_commit": parse_lsn("0/5000200"), "lsn_proc": parse_lsn("0/5000100"),
              "txId": 9, "ts_usec": 1, "server_timeline": 2, "incremental": {"kept": True}}
    with caplog.at_level(logging.WARNING):
        resumed = resume_point(offset, timelines)
    assert resumed == {"lsn": parse_lsn("0/5000000"), "txId": None, "ts_usec": None, "server_timeline": 2,
                       "incremental": {"kept": True}}
    assert "lost in the failover" in caplog.text and "synchronized_standby_slots" in caplog.text


@pytest.mark.parametrize("stored", [4, 5])
def test_an_offset_of_another_branch_is_refused(stored: int) -> None:
    """A timeline this server's history does not hold: a newer one (the old primary, back after a failover) or a
    sibling (another promoted standby)."""
    with pytest.raises(OffsetStoreError) as error:
        resume_point({"lsn": 1, "server_timeline": stored}, Timelines.parse_history(3, HISTORY))
    assert f"written on timeline {stored} of this cluster, which is not in the history" in str(error.value)
    assert error.value.fix and "the server that was promoted" in error.value.fix


def test_offsets_without_a_timeline_or_on_this_one_are_taken_as_they_are() -> None:
    timelines = Timelines.parse_history(3, HISTORY)
    for offset in ({"lsn": 5}, {"lsn": 5, "server_timeline": 3}):
        assert resume_point(offset, timelines) is offset
    assert resume_point({"lsn": 5, "server_timeline": 1}, None) == {"lsn": 5, "server_timeline": 1}


def test_a_primary_stamps_its_timeline_a_standby_does_not() -> None:
    primary = ServerInfo(170005, IDENTITY, timelines=Timelines(2, {1: 100}))
    assert primary.stamp({"lsn": 1}) == {"lsn": 1, "server_identity": IDENTITY, "server_timeline": 2}
    standby = ServerInfo(170005, IDENTITY, standby=True)
    assert standby.stamp({"lsn": 1}) == {"lsn": 1, "server_identity": IDENTITY}


def test_a_promoted_standby_is_the_same_cluster_another_cluster_is_not() -> None:
    promoted = ServerInfo(170005, IDENTITY, timelines=Timelines(2, {1: 100}))
    offset = {"lsn": 90, "server_identity": IDENTITY, "server_timeline": 1}
    assert promoted.check(offset) is offset
    with pytest.raises(OffsetStoreError, match="written on another server"):
        promoted.check({**offset, "server_identity": "postgres:1:app"})
    assert promoted.check({"lsn": 90}) == {"lsn": 90}  # Debezium's offset: taken as it is


def test_a_reconnection_to_another_server_is_noticed() -> None:
    before = ServerInfo(170005, IDENTITY, timelines=Timelines(1))
    assert before.same_server(ServerInfo(170005, IDENTITY, timelines=Timelines(1)))
    assert not before.same_server(ServerInfo(170005, IDENTITY, timelines=Timelines(2, {1: 100})))  # promoted
    assert not before.same_server(ServerInfo(170005, IDENTITY, standby=True))
    assert not before.same_server(ServerInfo(170005, "postgres:1:app", timelines=Timelines(1)))


def test_what_a_standby_answers_is_explained() -> None:
    synced = replication_error('ERROR:  cannot use replication slot "s" for logical decoding\nDETAIL:  This '
                               "replication slot is being synchronized from the primary server.", "s")
    assert isinstance(synced, RetriableSourceError) and synced.fix and "promote the standby" in synced.fix
    level = replication_error("ERROR:  logical decoding on standby requires \"wal_level\" >= \"logical\" on the "
                              "primary", "s")
    assert not level.retriable and level.fix and "wal_level = logical" in level.fix
    conflict = replication_error('ERROR:  can no longer get changes from replication slot "s"\nDETAIL:  This '
                                 "replication slot has been invalidated due to conflict with recovery.", "s")
    assert isinstance(conflict, SlotMissingError) and not conflict.retriable
    assert "conflict with recovery" in conflict.message and conflict.fix and "hot_standby_feedback" in conflict.fix
    lost = guards.explain(Exception('can no longer get changes from replication slot "s": wal_removed'), "s")
    assert lost is not None and "max_slot_wal_keep_size" in lost.message


# ---- the checks, against a fake catalog connection ---------------------------------------------------

class FakeConnection:
    """Answers the queries of failover.check from canned values."""

    def __init__(self, *, settings: dict[str, str] | None = None, slot: dict[str, Any] | None = None,
                 physical: list[tuple[str, bool]] | None = None) -> None:
        self.settings = settings or {}
        self.slot = slot
        self.physical = physical or []

    def execute(self, query: str, params: Any = ()) -> Any:
        import json

        if query.startswith("SHOW "):
            return _Rows([(self.settings.get(query.split()[1], ""),)])
        if "to_jsonb" in query:
            return _Rows([(json.dumps(self.slot),)] if self.slot is not None else [])
        if "slot_type = 'physical'" in query:
            return _Rows(self.physical)
        raise AssertionError(query)


class _Rows:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


def _check(conn: FakeConnection, version: int, *, standby: bool = False, wants_failover: bool = False) -> None:
    failover.check(conn, ServerInfo(version, IDENTITY, standby=standby), "s",  # type: ignore[arg-type]
                   failover=wants_failover)


def test_a_failover_slot_needs_postgres_17() -> None:
    with pytest.raises(SourceError, match="needs PostgreSQL 17 or later") as error:
        _check(FakeConnection(), 160004, wants_failover=True)
    assert error.value.fix and "slot.failover=false" in error.value.fix
    _check(FakeConnection(), 160004)  # without the option: nothing to check


def test_a_failover_slot_no_standby_synchronises_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        _check(FakeConnection(settings={"synchronized_standby_slots": ""}), 170005, wants_failover=True)
    assert "lists no standby in synchronized_standby_slots" in caplog.text and "sync_replication_slots" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        _check(FakeConnection(settings={"synchronized_standby_slots": "gone, idle, fine"},
                              physical=[("idle", False), ("fine", True)]), 170005, wants_failover=True)
    assert "gone (no such physical slot), idle (no standby streams from it): the stream waits" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        _check(FakeConnection(settings={"synchronized_standby_slots": "fine"}, physical=[("fine", True)]), 170005,
               wants_failover=True)
    assert caplog.text == ""


def test_a_standby_needs_postgres_16() -> None:
    with pytest.raises(SourceError, match="logical decoding on a standby needs PostgreSQL 16") as error:
        _check(FakeConnection(), 150008, standby=True)
    assert error.value.fix and "point database.hostname at the primary" in error.value.fix


def test_a_standby_refuses_a_failover_slot_and_waits_for_its_promotion_to_read_a_synced_one() -> None:
    settings = {"hot_standby_feedback": "on", "primary_slot_name": "phys"}
    with pytest.raises(SourceError, match="failover slots are created on the primary"):
        _check(FakeConnection(settings=settings), 170005, standby=True, wants_failover=True)
    with pytest.raises(RetriableSourceError, match="copy it keeps of the primary's failover slot") as error:
        _check(FakeConnection(settings=settings, slot={"failover": True, "synced": True}), 170005, standby=True,
               wants_failover=True)
    assert error.value.fix and "promote the standby" in error.value.fix


def test_a_standby_without_feedback_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        _check(FakeConnection(settings={"hot_standby_feedback": "off", "primary_slot_name": ""}), 160004, standby=True)
    assert "hot_standby_feedback=off" in caplog.text and "invalidates the slot" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        _check(FakeConnection(settings={"hot_standby_feedback": "on", "primary_slot_name": "phys"}), 160004,
               standby=True)
    assert caplog.text == ""
