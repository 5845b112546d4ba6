"""The files and server objects a pipeline keeps its place in, damaged or not its own, under a writer:
a torn offsets file and a torn schema history (the last line cut in half after a SIGTERM), another
pipeline's schema history, a replication slot someone else created. Each is refused with an error that
names it and the way on, is left as it was, and the documented way on resumes without a loss; and a
kill -9 right after the pipeline created its slot leaves a slot it still takes for its own."""
from __future__ import annotations

import json
import random
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.faults.conftest import FULL, sources
from tests.faults.harness import (
    Cdc,
    FileEvents,
    MariaDbSource,
    PostgresSource,
    Source,
    Writer,
    converge,
    finish,
    seed,
    verify,
)

pytestmark = pytest.mark.faults


def tear(path: Path) -> bytes:
    """Cut the file's last line in half (and its newline off), as a crash mid-write would: the bytes before."""
    data = path.read_bytes()
    body = data.rstrip(b"\n")
    last = body[body.rfind(b"\n") + 1:]
    path.write_bytes(body[:len(body) - (len(last) + 1) // 2])
    return data


def _table(source: Source, tmp_path: Path, rng: random.Random) -> tuple[Cdc, Writer]:
    source.create_table(1000)
    return Cdc(source, tmp_path), Writer(source, range(1, 1001), rng)


def _stream(cdc: Cdc, writer: Writer) -> None:
    cdc.start()
    assert cdc.wait_log(cdc.source.streaming_marker), cdc.tail()
    writer.start()
    writer.wait_ops(200)


def _resume(cdc: Cdc, writer: Writer, **props: str) -> None:
    """The documented way on taken: the run streams; the writer stops; it all arrives; a clean stop."""
    cdc.start(**props)
    assert cdc.wait_log(cdc.source.streaming_marker), cdc.tail()
    finish(cdc, writer)


@pytest.mark.parametrize("source", sources(), indirect=True)
def test_torn_offsets_file(source: Source, tmp_path: Path) -> None:
    """The offsets file is written whole or not at all (a rename), so a torn one is damage from outside:
    an error naming the file and the way on (restore it, or move it away), the file left as it is; restored
    from the copy, the pipeline resumes."""
    cdc, writer = _table(source, tmp_path, random.Random(seed()))
    try:
        _stream(cdc, writer)
        cdc.stop(signal.SIGTERM)
        backup = tear(cdc.offsets)
        torn = cdc.offsets.read_bytes()
        cdc.start()
        error = cdc.wait_failed()
        assert f"offset file {cdc.offsets} is corrupt" in error and "restore it from a backup" in error, error
        assert cdc.offsets.read_bytes() == torn, "the torn offsets file was changed"
        cdc.offsets.write_bytes(backup)
        _resume(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verify(cdc, writer)


@pytest.mark.parametrize("source", sources(default=("mariadb",))[1:], indirect=True)
def test_torn_schema_history(source: Source, tmp_path: Path) -> None:
    """MariaDB: the history's last record (an ALTER TABLE made while streaming) cut in half after a SIGTERM.
    The stored offset is past it, so its DDL cannot be read again: an error naming the history and the ways
    on, nothing changed. No DDL ran since, so the documented way on is to move it away and start once with
    snapshot.mode=recovery: the pipeline resumes without a loss, the ALTER's column in the events."""
    cdc, writer = _table(source, tmp_path, random.Random(seed()))
    history = cdc.out / "schema-history.jsonl"
    try:
        _stream(cdc, writer)
        source.sql("ALTER TABLE t ADD COLUMN note varchar(10) NOT NULL DEFAULT 'n'")
        writer.wait_ops(len(writer.ops) + 200)
        assert isinstance(cdc.events, FileEvents)
        path = cdc.events.path  # changes after the ALTER delivered (their rows have its column): offset past it
        cdc.wait_until("a change with the ALTER's column", lambda: b'"note":' in path.read_bytes()[-50_000:])
        cdc.stop(signal.SIGTERM)
        assert b"ADD COLUMN note" in history.read_bytes().splitlines()[-1]
        tear(history)
        torn, offsets = history.read_bytes(), cdc.offsets.read_bytes()
        cdc.start()
        error = cdc.wait_failed()
        assert f"the last record of the schema history {history} is cut off" in error, error
        assert "not after the stored offset" in error and "snapshot.mode=recovery" in error, error
        assert history.read_bytes() == torn and cdc.offsets.read_bytes() == offsets, "a refused start changed files"
        history.rename(history.with_suffix(".torn"))
        _resume(cdc, writer, **{"snapshot.mode": "recovery"})
    finally:
        writer.stop()
        cdc.close()
    verify(cdc, writer)
    assert isinstance(cdc.events, FileEvents)
    last = [json.loads(line)["value"] for line in cdc.events.path.read_text().splitlines()[-20:]]
    assert {value["after"].get("note") for value in last if value and value.get("after")} == {"n"}, last


@pytest.mark.parametrize("source", sources()[1:], indirect=True)
def test_foreign_schema_history(source: Source, tmp_path: Path, mysql_server: dict[str, Any]) -> None:
    """MariaDB: another pipeline's history (another topic.prefix, another database, the same server) put in
    the place of ours is refused, naming both pipelines; nothing is changed; ours put back, it resumes."""
    assert isinstance(source, MariaDbSource)
    rng = random.Random(seed())
    other_name = f"{source.name}_b"
    source.sql(f"CREATE DATABASE `{other_name}`", f"CREATE TABLE `{other_name}`.t (id int PRIMARY KEY, v bigint)")
    try:
        other = MariaDbSource(mysql_server, {**source.db, "db": other_name, "database.include.list": other_name,
                                             "database.server.id": str(int(source.db["database.server.id"]) + 1)})
        other.prefix = "other"
        theirs = Cdc(other, tmp_path / "other")
        (tmp_path / "other").mkdir()
        theirs.start()
        assert theirs.wait_log(other.streaming_marker), theirs.tail()
        theirs.stop()
        cdc, writer = _table(source, tmp_path, rng)
        history = cdc.out / "schema-history.jsonl"
        try:
            _stream(cdc, writer)
            cdc.stop(signal.SIGTERM)
            ours, offsets = history.read_bytes(), cdc.offsets.read_bytes()
            shutil.copy(theirs.out / "schema-history.jsonl", history)
            cdc.start()
            error = cdc.wait_failed()
            assert f"the schema history {history} was written for server 'other'" in error, error
            assert "this pipeline is 'fx'" in error, error
            assert cdc.offsets.read_bytes() == offsets, "a refused start changed the offsets"
            history.write_bytes(ours)
            _resume(cdc, writer)
        finally:
            writer.stop()
            cdc.close()
        verify(cdc, writer)
    finally:
        source.sql(f"DROP DATABASE IF EXISTS `{other_name}`")


@pytest.mark.parametrize("source", sources(default=("postgres",))[:1], indirect=True)
def test_foreign_replication_slot(source: Source, tmp_path: Path) -> None:
    """PostgreSQL: a slot of the pipeline's name that someone else created (a Debezium connector's, say),
    and no offset of ours, while a writer keeps the database busy: refused with the slot's state and the
    two ways on; the slot is neither dropped nor advanced nor held. With a slot name of its own the
    pipeline captures everything."""
    assert isinstance(source, PostgresSource)
    rng = random.Random(seed())
    source.create_table(1000)
    theirs = "theirs_" + source.slot
    source.sql(f"SELECT pg_create_logical_replication_slot('{theirs}', 'pgoutput')")
    before = source.slot_state(theirs)
    writer = Writer(source, range(1, 1001), rng).start()
    ours = source.slot  # the publication keeps this name throughout
    cdc = Cdc(source, tmp_path)
    try:
        writer.wait_ops(100)
        source.slot = theirs
        cdc.start()
        error = cdc.wait_failed()
        assert f"replication slot '{theirs}' exists (plugin pgoutput" in error, error
        assert "this pipeline has no stored offset" in error, error
        assert f"SELECT pg_drop_replication_slot('{theirs}');" in error and "slot.takeover=true" in error, error
        assert source.slot_state(theirs) == before, "the foreign slot was changed"
        assert not cdc.offsets.exists() and cdc.events.read() == 0, "the refused run stored or emitted something"
        source.slot = ours
        _resume(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verify(cdc, writer)
    assert source.slot_state(theirs) == before, "the foreign slot was changed"
    assert not source.query("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (theirs,))[0][0]


# initial stores its snapshot attempt's marker, no_data and resumable a slot_pending marker
# (cdc.core.snapshot_restart), before the slot is created.
SLOT_MODES = [pytest.param(mode, marks=FULL) for mode in ("initial", "no_data", "resumable")]


@pytest.mark.postgres
@pytest.mark.parametrize("mode", SLOT_MODES)
@pytest.mark.parametrize("source", ["postgres"], indirect=True)
def test_kill_right_after_the_slot_is_created(source: Source, mode: str, tmp_path: Path) -> None:
    """A kill -9 as soon as the log says the slot was created, three times over (a fresh pipeline each
    time): the next run takes the slot for its own and captures the table."""
    assert isinstance(source, PostgresSource)
    rows = 0 if mode == "no_data" else 20_000
    source.create_table(rows)
    props = {"snapshot.resumable": "true"} if mode == "resumable" else {"snapshot.mode": mode}
    writer = Writer(source, range(1, rows + 1), random.Random(seed()))
    for attempt in range(3):
        source.slot = f"fx_{attempt}_{source.publication[-8:]}"
        cdc = Cdc(source, tmp_path / str(attempt), props=props)
        cdc.tmp.mkdir()
        try:
            cdc.start()
            while b"created replication slot" not in cdc.run.log.read_bytes():
                assert cdc.alive() and time.monotonic() - cdc.run.started < 60, cdc.tail()
            cdc.kill()
            cdc.start()
            assert cdc.wait_log(source.streaming_marker), cdc.tail()
            writer.one()
            converge(cdc, writer)
            cdc.stop()
        finally:
            cdc.close()
        verify(cdc, writer)
        writer.ops.clear()  # the next pipeline starts from a snapshot of the table as it is
        if mode == "no_data":
            source.sql("DELETE FROM t")  # ... or, taking none, from an empty table
        source.sql(f"SELECT pg_drop_replication_slot('{source.slot}')")
