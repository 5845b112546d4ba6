"""Switching from Debezium to cdc and back on Debezium's own offsets file, losing and repeating nothing.

Debezium's PostgreSQL connector (3.6.1.Final) in a Kafka Connect standalone worker snapshots
``items`` (rows 1..5), streams rows 6..10 into ``<prefix>.public.items`` (one transaction a row, but
9 and 10 together) and is stopped. Rows 11..15 and an update of row 3 are made while nothing runs;
then cdc starts from the command line with a configuration written as Debezium's
(``offset.storage=org.apache.kafka.connect.storage.FileOffsetBackingStore`` on the worker's
``offset.storage.file.filename``, ``tasks.max``...) and its Kafka sink writing to the same topic; it
streams 16..18 live and is stopped with SIGINT. Rows 19..20 are made while nothing runs; Debezium
starts again on the same offsets file. At each switch the topic must gain exactly the changes made
since the last one (no snapshot again, nothing repeated, nothing missing), and at the end the topic
applied in order by key must equal the table.

What is seen (PostgreSQL 15, pgoutput):

* Debezium's offset after row 10 is ``{"lsn": L10, "lsn_proc": L10, "lsn_commit": C8, "txId",
  "ts_usec", "messageType": "INSERT"}``: ``lsn``/``lsn_proc`` the last change processed (row 10's LSN),
  ``lsn_commit`` the LSN of the last COMMIT message seen, row 8's (the end of its commit record, where
  the 9+10 transaction starts; also what Debezium confirmed to the slot). Debezium itself resumes from
  it with its WalPositionLocator, which skips changes up to ``lsn_proc`` (not exercised here).
* cdc reads an offset with ``messageType`` as Debezium's (cdc never writes that key): streaming restarts
  at ``lsn_commit``, and the first transaction after it is the one Debezium delivered up to
  ``lsn_proc`` (cdc/sources/postgres/position.py). So cdc emits exactly 11..15, the update of 3 and
  16..18: nothing repeated, nothing lost, nothing snapshotted, Debezium's slot used as it is (an
  earlier cdc read those keys with its own meaning and emitted rows 9 and 10 again, which
  :class:`ResentDebeziumsLastTransaction` reports).
* cdc's offset at SIGINT is ``{"lsn": E18, "txId", "ts_usec"}``, E18 the end of row 18's commit record,
  also confirmed to the slot. Debezium logs "last commit LSN 'null' and last change LSN E18", starts
  the stream at E18 and emits exactly 19..20 (row 19's change LSN is E18: without ``lsn_commit`` its
  locator skips nothing), with no ERROR line, no offset WARN line and no snapshot.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdc.core.connect_offsets import offset_key, read_connect_offsets
from tests.conftest import ROOT
from tests.integration.connect_fixtures import (
    ConnectWorker,
    connect_plugins,
    env_timeout,
    postgres_source,
    write_properties,
)
from tests.integration.kafka_fixtures import read_topic

pytestmark = [pytest.mark.postgres, pytest.mark.kafka]

NAME = "shop"  # the connector's name: the first half of Connect's offset key
Change = tuple[int, str, str | None]  # (id, op, after.v)


class ResentDebeziumsLastTransaction(AssertionError):
    """cdc, resuming from Debezium's offset, emitted again the changes Debezium had written last."""


def sql(db: dict[str, str], *statements: str) -> None:
    with psycopg.connect(db["dsn"], autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def insert(db: dict[str, str], ids: range) -> None:
    """One transaction a row."""
    sql(db, *(f"INSERT INTO items VALUES ({i}, 'v{i}')" for i in ids))


def creates(ids: range) -> list[Change]:
    return [(i, "c", f"v{i}") for i in ids]


def end_offset(bootstrap: str, topic: str) -> int:
    """The high watermark of the topic's one partition (0 before the topic exists)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    try:
        if topic not in consumer.list_topics(timeout=10).topics:
            return 0
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def changes(bootstrap: str, topic: str, start: int = 0) -> list[Change]:
    """(id, op, after.v) of each record of the topic from Kafka offset ``start`` on (a tombstone: op '-')."""
    out: list[Change] = []
    for message in read_topic(bootstrap, topic)[start:]:
        key = json.loads(message.key())["payload"]["id"]
        if message.value() is None:
            out.append((key, "-", None))
            continue
        payload = json.loads(message.value())["payload"]
        out.append((key, payload["op"], payload["after"]["v"] if payload["after"] else None))
    return out


def slot_lsns(db: dict[str, str], slot: str) -> tuple[int, int]:
    """(confirmed_flush_lsn, restart_lsn) of the slot, as numbers."""
    with psycopg.connect(db["dsn"], autocommit=True) as conn:
        row = conn.execute("SELECT confirmed_flush_lsn - '0/0', restart_lsn - '0/0' FROM pg_replication_slots "
                           "WHERE slot_name = %s", (slot,)).fetchone()
    assert row is not None, f"replication slot {slot} is gone"
    return int(row[0]), int(row[1])


def stored_offset(path: Path, prefix: str) -> dict[str, Any]:
    """The offset under Connect's key ``["shop",{"server":"<prefix>"}]`` in the worker's offsets file."""
    value = read_connect_offsets(path.read_bytes()).get(offset_key(NAME, prefix))
    assert value is not None, f"no offset of {NAME}/{prefix} in {path}"
    offset = json.loads(value)
    assert isinstance(offset, dict)
    return offset


def wait_until(condition: Callable[[], bool], what: str, timeout: float,
               failure: Callable[[], str | None] = lambda: None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        failed = failure()
        if failed:
            raise AssertionError(f"{failed} while waiting for {what}")
        if condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.3)


def applied(records: list[Change]) -> dict[int, str | None]:
    """The table the records give, applied in order by key."""
    state: dict[int, str | None] = {}
    for key, op, value in records:
        if op in ("r", "c", "u"):
            state[key] = value
        else:  # d, or a tombstone
            state.pop(key, None)
    return state


def test_switch_from_debezium_to_cdc_and_back(pg_db: dict[str, str], kafka_bootstrap: str,
                                              tmp_path: Path) -> None:
    plugins = connect_plugins()
    timeout = env_timeout(90)
    tag = uuid.uuid4().hex[:8]
    prefix, slot, publication = f"sw{tag}", f"sw_{tag}", f"sw_{tag}"
    topic = f"{prefix}.public.items"
    connector = postgres_source(NAME, pg_db, prefix, {
        "slot.name": slot, "publication.name": publication, "publication.autocreate.mode": "filtered",
        "table.include.list": "public.items", "snapshot.mode": "initial"})
    offsets = tmp_path / "worker.offsets"  # one file for both of Debezium's runs and cdc's

    def debezium(run: str) -> ConnectWorker:
        worker = ConnectWorker(tmp_path / run, kafka_bootstrap, [connector], plugins)
        worker.worker["offset.storage.file.filename"] = str(offsets)
        worker.worker["offset.flush.interval.ms"] = "200"
        return worker

    def topic_holds(count: int) -> Callable[[], bool]:
        return lambda: end_offset(kafka_bootstrap, topic) >= count

    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, v text)")  # REPLICA IDENTITY DEFAULT
    insert(pg_db, range(1, 6))
    try:
        # ---- 1. Debezium: the snapshot of 1..5, then 6..10 streamed; stopped (SIGTERM: offsets flushed)
        with debezium("debezium-1") as first:
            first.wait_for(topic_holds(5), "Debezium's snapshot of 1..5", timeout)
            insert(pg_db, range(6, 9))
            sql(pg_db, "INSERT INTO items VALUES (9, 'v9'), (10, 'v10')")  # Debezium's last transaction: 2 rows
            first.wait_for(topic_holds(10), "Debezium's stream of 6..10", timeout)
        by_debezium = changes(kafka_bootstrap, topic)
        assert by_debezium == [(i, "r", f"v{i}") for i in range(1, 6)] + creates(range(6, 11))
        assert not first.error_lines(), "\n".join(first.error_lines())
        debezium_offset = stored_offset(offsets, prefix)
        # the last record's (row 10's) offset: its change LSN as lsn and lsn_proc; as lsn_commit the last
        # COMMIT message seen, row 8's (whose commit record ends where row 9's change starts)
        assert debezium_offset["lsn"] == debezium_offset["lsn_proc"] > debezium_offset["lsn_commit"], debezium_offset
        assert "snapshot" not in debezium_offset, debezium_offset
        print(f"Debezium stopped at {debezium_offset}; slot (confirmed_flush, restart) = {slot_lsns(pg_db, slot)}")

        # ---- 2. nothing runs
        insert(pg_db, range(11, 16))
        sql(pg_db, "UPDATE items SET v = 'v3-new' WHERE id = 3")

        # ---- 3. cdc, from the command line, with a Debezium connector's configuration
        config = write_properties(tmp_path / "shop.properties", {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "name": NAME,
            "tasks.max": "1",
            "database.hostname": pg_db["database.hostname"],
            "database.port": pg_db["database.port"],
            "database.user": pg_db["database.user"],
            "database.password": pg_db.get("database.password", ""),
            "database.dbname": pg_db["database.dbname"],
            "topic.prefix": prefix,
            "plugin.name": "pgoutput",
            "slot.name": slot,
            "publication.name": publication,
            "publication.autocreate.mode": "filtered",
            "table.include.list": "public.items",
            "snapshot.mode": "initial",
            "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
            "offset.storage.file.filename": str(offsets),
            "sink": "kafka",
            "kafka.bootstrap.servers": kafka_bootstrap,
        })
        start = end_offset(kafka_bootstrap, topic)
        # Debezium's offset is not cdc's: refused, untouched, until the user says the switch is meant
        before = offsets.read_bytes()
        refused = subprocess.run([sys.executable, "-m", "cdc.cli", "run", str(config)], cwd=ROOT, timeout=120,
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True)
        assert refused.returncode == 1, refused.stderr
        assert "not written by cdc" in refused.stderr and "offset.takeover=true" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr
        assert offsets.read_bytes() == before and end_offset(kafka_bootstrap, topic) == start
        cdc = subprocess.Popen([sys.executable, "-m", "cdc.cli", "-v", "run", str(config),
                                "--set", "offset.takeover=true"], cwd=ROOT,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        def cdc_exited() -> str | None:
            return f"cdc exited with code {cdc.returncode}" if cdc.poll() is not None else None

        try:
            wait_until(topic_holds(start + 6), "cdc's first 6 records", timeout, cdc_exited)
            insert(pg_db, range(16, 19))
            wait_until(lambda: (18, "c", "v18") in changes(kafka_bootstrap, topic, start), "cdc's 16..18",
                       timeout, cdc_exited)
        finally:
            cdc.send_signal(signal.SIGINT)
            try:
                _, stderr = cdc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                cdc.kill()
                _, stderr = cdc.communicate()
        assert cdc.returncode == 0, stderr
        assert "Traceback" not in stderr and "unknown property" not in stderr, stderr
        assert "start: stream (resuming from the stored offset)" in stderr, stderr  # not a snapshot
        assert "written by another connector: continuing from it" in stderr, stderr
        assert "recreating" not in stderr, stderr  # Debezium's slot is used as it is
        by_cdc = changes(kafka_bootstrap, topic, start)
        expected_cdc = creates(range(11, 16)) + [(3, "u", "v3-new")] + creates(range(16, 19))
        resent = by_cdc[:len(by_cdc) - len(expected_cdc)]
        assert by_cdc[len(resent):] == expected_cdc, by_cdc  # nothing missing, no snapshot ('r'), in order
        # What precedes is what Debezium wrote last: its last transaction (rows 9, 10) or nothing (correct).
        assert resent in ([], by_debezium[-2:]), by_cdc
        cdc_offset = stored_offset(offsets, prefix)
        confirmed, _ = slot_lsns(pg_db, slot)
        print(f"cdc emitted {by_cdc}, stopped at {cdc_offset}; slot confirmed_flush {confirmed}")
        # between transactions, past Debezium's position, and the slot still keeps everything after it
        assert "lsn_proc" not in cdc_offset and cdc_offset["lsn"] > debezium_offset["lsn"], cdc_offset
        assert confirmed <= cdc_offset["lsn"], (confirmed, cdc_offset)

        # ---- 4. nothing runs, then Debezium again on the same offsets file
        insert(pg_db, range(19, 21))
        start = end_offset(kafka_bootstrap, topic)
        with debezium("debezium-2") as second:
            second.wait_for(lambda: (20, "c", "v20") in changes(kafka_bootstrap, topic, start),
                            "Debezium's 19..20 after cdc", timeout)
            time.sleep(1)  # anything Debezium would send after 20 (it sends in LSN order: nothing is expected)
        by_debezium_again = changes(kafka_bootstrap, topic, start)
        assert by_debezium_again == creates(range(19, 21))
        log = second.log.read_text(errors="replace")
        assert not second.error_lines(), "\n".join(second.error_lines())
        warnings = [line for line in log.splitlines() if "] WARN " in line and ("ffset" in line or "LSN" in line)]
        assert not warnings, "\n".join(warnings)
        assert f"Found previous partition offset PostgresPartition [sourcePartition={{server={prefix}}}]: " \
               f"{{lsn={cdc_offset['lsn']}," in log  # read cdc's entry of the file
        assert "A previous offset indicating a completed snapshot has been found" in log  # no snapshot again
        final_offset = stored_offset(offsets, prefix)
        print(f"Debezium emitted {by_debezium_again}, stopped at {final_offset}")

        # ---- 5. the whole topic against the table
        everything = changes(kafka_bootstrap, topic)
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            table: dict[int, str | None] = dict(conn.execute("SELECT id, v FROM items").fetchall())
        assert applied(everything) == table
        duplicates = {change: n - 1 for change, n in Counter(everything).items() if n > 1}
        assert duplicates == dict(Counter(resent)), duplicates  # only what cdc re-sent at the first switch
        assert len(everything) == 10 + len(resent) + 9 + 2
        if resent:
            raise ResentDebeziumsLastTransaction(
                f"cdc, resuming from Debezium's offset {debezium_offset}, emitted again {resent} "
                f"(Debezium wrote it last); the rest of the switch is exact: cdc then {expected_cdc}, "
                f"Debezium after cdc's {cdc_offset}: {by_debezium_again}")
    finally:
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                         "WHERE slot_name = %s AND active_pid IS NOT NULL", (slot,))
            time.sleep(0.2)
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                         (slot,))
            conn.execute(f'DROP PUBLICATION IF EXISTS "{publication}"')
