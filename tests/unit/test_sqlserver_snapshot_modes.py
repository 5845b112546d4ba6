"""snapshot.mode of the SQL Server source, decided by core (cdc.core.snapshot_mode.decide) per database, on
recorded change-table rows: every mode Debezium's SQL Server connector has (but its Java-only
configuration_based and custom), from no offset, from an offset the change tables still hold, and from one
the cleanup job purged.

The recorded database: two tables (customers 1001, 1002; orders 10001) and changes after the snapshot's
LSN; ``BEFORE_A`` is an offset before the first change, the first event streamed from it is customer
1005's create.
"""
from __future__ import annotations

from typing import Any

import pytest

from cdc.config import Config
from cdc.core.errors import ConfigError
from cdc.sources.sqlserver.catalog import LsnPurgedError
from cdc.sources.sqlserver.config import SNAPSHOT_MODES
from cdc.sources.sqlserver.source import SqlServerSource
from tests.fixtures.sqlserver.testdb import RecordedDatabase, customers_and_orders
from tests.unit.test_sqlserver_stream import BEFORE_A, CUST, make_source, run, summary

SNAPSHOT = ["CREATE", "CREATE", "r", "r", "r"]  # the structure, then every row
STRUCTURE = ["CREATE", "CREATE"]
STREAMED = ["c", "c", "c", "u", "u", "d", None, "d", None, "c", "d", None]  # everything after BEFORE_A


def database(purged: bool = False) -> RecordedDatabase:
    db = customers_and_orders()
    if purged:  # the cleanup job moved past BEFORE_A
        db.min_lsns["dbo_customers"] = "00000027:00000900:0001"
    return db


def ops(mode: str, offset: dict[str, Any] | None, db: RecordedDatabase | None = None) -> tuple[list[Any], Any]:
    """The ops (schema changes by their type) of one start until the first caught-up batch or the end, and
    the last offset."""
    events, batches = run(make_source(db or database(), **{"snapshot.mode": mode})[0], offset)
    return [summary(e)[1] for e in events], batches[-1].offset if batches else None


def test_the_modes_are_debeziums_sql_server_modes() -> None:
    assert set(SNAPSHOT_MODES) == {"initial", "initial_only", "no_data", "schema_only", "when_needed", "always",
                                   "recovery"}
    for refused in ("never", "configuration_based", "custom", "schema_only_recovery"):
        with pytest.raises(ConfigError, match=f"snapshot.mode='{refused}' is not supported by the SQL Server"):
            SqlServerSource(Config({"topic.prefix": "s", "database.names": "testDB", "snapshot.mode": refused}))


@pytest.mark.parametrize("mode, expected", [
    ("initial", SNAPSHOT),
    ("when_needed", SNAPSHOT),
    ("always", SNAPSHOT),
    ("no_data", STRUCTURE),
    ("schema_only", STRUCTURE),  # no_data's old name
    ("recovery", STRUCTURE),  # no history to rebuild: the structure is read from the capture instances
])
def test_from_no_offset_a_snapshot_then_the_stream(mode: str, expected: list[str]) -> None:
    db = database()
    db.max_lsn = "00000027:00000f00:0001"  # the snapshot's LSN: every recorded change is in the snapshot
    got, offset = ops(mode, None, db)
    assert got == expected
    assert offset["databases"]["testDB"]["commit_lsn"] == "00000027:00000f00:0001"
    assert "snapshot_only" not in offset["databases"]["testDB"]


def test_initial_only_takes_the_snapshot_stops_and_next_time_does_nothing() -> None:
    source, _ = make_source(database(), **{"snapshot.mode": "initial_only"})
    batches = list(source.stream(None))  # the stream ends: no streaming
    assert [summary(e)[1] for b in batches for e in b.events] == SNAPSHOT
    done = batches[-1].offset
    assert done["databases"]["testDB"]["snapshot_only"] is True
    again, _ = ops("initial_only", done)
    assert again == []
    # initial after an initial_only run: only a snapshot was taken, no stream was kept up: take it again
    assert ops("initial", done)[0][:5] == SNAPSHOT


@pytest.mark.parametrize("mode", ["initial", "when_needed", "no_data", "schema_only", "recovery"])
def test_from_an_offset_the_change_tables_hold_the_stream_goes_on(mode: str) -> None:
    got, offset = ops(mode, BEFORE_A)
    assert got == STREAMED
    assert offset["databases"]["testDB"]["commit_lsn"] == "00000027:00000f00:0001"


def test_always_takes_a_snapshot_at_every_start_then_streams_from_its_lsn() -> None:
    db = database()
    db.max_lsn = "00000027:00000758:0005"  # A: the snapshot's LSN
    got, offset = ops("always", BEFORE_A, db)
    assert got == SNAPSHOT  # not the changes after BEFORE_A: streaming starts at the snapshot's LSN
    assert offset["databases"]["testDB"]["commit_lsn"] == "00000027:00000758:0005"


@pytest.mark.parametrize("mode", ["when_needed", "always"])
def test_from_a_purged_offset_when_needed_and_always_take_a_new_snapshot(mode: str,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    got, _ = ops(mode, BEFORE_A, database(purged=True))
    assert got == SNAPSHOT
    assert "the CDC cleanup job purged changes this pipeline has not read; taking a new snapshot" in caplog.text


@pytest.mark.parametrize("mode", ["initial", "no_data", "schema_only", "recovery"])
def test_from_a_purged_offset_the_others_stop_with_the_fix(mode: str) -> None:
    with pytest.raises(LsnPurgedError) as caught:
        ops(mode, BEFORE_A, database(purged=True))
    assert "older than the minimum LSN 00000027:00000900:0001" in caught.value.message
    assert "snapshot.mode=when_needed" in caught.value.fix


def test_each_database_decides_for_itself() -> None:
    """A database with an offset streams on while one without takes its snapshot (the databases start in
    turn, then the stream polls them all)."""
    first, second = database(), database()
    second.name = "salesDB"
    source, _ = make_source(first, second, **{"table.include.list": "dbo.customers"})
    events, batches = run(source, {"databases": {"testDB": BEFORE_A["databases"]["testDB"]}})
    sales = [e for e in events if e.topic.startswith("server1.salesDB") or e.topic == "server1"]
    assert [summary(e)[1] for e in sales] == ["CREATE", "r", "r"]
    assert [e.value["source"]["db"] for e in sales[1:]] == ["salesDB", "salesDB"]
    assert [summary(e)[1] for e in events if e.topic == CUST] == ["c", "c", "u", "d", None, "d", None, "c"]
    assert set(batches[-1].offset["databases"]) == {"testDB", "salesDB"}


def test_spark_plans_a_parallel_snapshot_for_the_modes_that_take_one_and_stream() -> None:
    for mode, planned in (("initial", True), ("when_needed", True), ("always", True), ("schema_only", False),
                          ("no_data", False), ("recovery", False), ("initial_only", False)):
        source, _ = make_source(database(), **{"snapshot.mode": mode})
        assert (source.plan_parallel_snapshot(1000) is not None) is planned, mode
