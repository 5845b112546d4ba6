"""What is captured and snapshotted, the core's rules (checked against Debezium 3.6.1 / 3.5.0 by the
conformance workloads pg_schema_lists, pg_schema_exclude, pg_snapshot_selection, mariadb_snapshot_selection):
schema.include/exclude.list beside the table lists (cdc.core.filters.TableFilter), snapshot.include.collection.list
and snapshot.select.statement.overrides (cdc.core.snapshot_selection), and the start-up waits snapshot.delay.ms /
streaming.delay.ms (cdc.core.delays)."""
from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.core import delays
from cdc.core.errors import ConfigError, SourceError
from cdc.core.filters import TableFilter
from cdc.core.option_surface import MARIADB, MYSQL, POSTGRES, SQLSERVER, Surface
from cdc.core.records import Batch
from cdc.core.snapshot_selection import SnapshotSelection, match_columns, override_keys, parse_table
from cdc.core.source import SourceSettings
from cdc.sources.mysql.config import MYSQL_OPTIONS
from cdc.sources.postgres.config import POSTGRES_OPTIONS
from cdc.sources.sqlserver import catalog
from cdc.sources.sqlserver.config import SQLSERVER_OPTIONS

# ---- schema.include.list / schema.exclude.list -----------------------------------------------------


def test_a_table_is_captured_when_the_schema_list_and_the_table_list_both_let_it_through() -> None:
    tables = TableFilter(exclude=[r"inv\.stock"], schema_include=["inv", "h.*"])
    assert [name for name in ("inv.items", "inv.stock", "hr.people", "other.things", "public.plain")
            if tables(name)] == ["inv.items", "hr.people"]
    assert TableFilter(["inv.items", "other.things"], schema_include=["inv"])("other.things") is False


def test_a_schema_exclude_list_leaves_its_schemas_out_and_patterns_match_whole_names_without_case() -> None:
    tables = TableFilter(schema_exclude=["public", "sec.*"])
    assert [tables(n) for n in ("sales.orders", "secret.keys", "PUBLIC.plain", "publicity.x")] == \
        [True, False, False, True]
    assert not tables.is_open and TableFilter().is_open


def test_schema_include_and_exclude_together_are_refused_as_debezium_refuses_them() -> None:
    with pytest.raises(ConfigError, match="schema.include.list and schema.exclude.list are both set"):
        TableFilter(schema_include=["a"], schema_exclude=["b"])


def test_sql_server_matches_the_schema_of_database_schema_table_names() -> None:
    tables = TableFilter([r"testDB\.dbo\.customers"], schema_include=["dbo"])
    assert catalog.included(tables, "testDB", "dbo", "customers")
    assert not catalog.included(tables, "testDB", "sales", "customers")
    assert not catalog.included(TableFilter(schema_exclude=["dbo"]), "testDB", "dbo", "orders")


def settings(options: tuple[Any, ...], **props: str) -> SourceSettings:
    return SourceSettings.from_config(Config({"topic.prefix": "p", **props}).declare(CORE_OPTIONS).declare(options))


@pytest.mark.parametrize("options", [POSTGRES_OPTIONS, SQLSERVER_OPTIONS])
def test_postgres_and_sql_server_declare_the_schema_lists(options: tuple[Any, ...]) -> None:
    tables = settings(options, **{"schema.include.list": "inv"}).table_filter
    assert tables("inv.items") and not tables("public.items")


@pytest.mark.parametrize("connector", [MYSQL, MARIADB])
def test_mysql_and_mariadb_refuse_the_schema_lists_with_debeziums_reason(connector: str) -> None:
    config = Config({"topic.prefix": "p", "schema.include.list": "lab"}).declare(CORE_OPTIONS).declare(MYSQL_OPTIONS)
    with pytest.raises(ConfigError) as caught:
        config.validate(surface=Surface((connector,)))
    assert "schema.include.list='lab': MySQL and MariaDB tables have no schema" in caught.value.message
    assert "database.include.list" in caught.value.message
    assert settings(MYSQL_OPTIONS).table_filter.schemas.is_open


@pytest.mark.parametrize("connector, options", [(POSTGRES, POSTGRES_OPTIONS), (SQLSERVER, SQLSERVER_OPTIONS),
                                                (MARIADB, MYSQL_OPTIONS)])
def test_the_options_are_honoured_per_connector(connector: str, options: tuple[Any, ...],
                                                caplog: pytest.LogCaptureFixture) -> None:
    props = {"topic.prefix": "p", "snapshot.include.collection.list": r"a\.b",
             "snapshot.select.statement.overrides": "a.b",
             "snapshot.select.statement.overrides.a.b": "SELECT * FROM a.b WHERE x = 1",
             "snapshot.delay.ms": "10", "streaming.delay.ms": "20"}
    if connector != MARIADB:
        props["schema.exclude.list"] = "c"
    if connector == SQLSERVER:
        props["database.names"] = "testDB"
    Config(props).declare(CORE_OPTIONS).declare(options).validate(surface=Surface((connector,)))
    assert "unknown property" not in caplog.text  # the per-table SELECT is one of a declared family


# ---- snapshot.include.collection.list and snapshot.select.statement.overrides ---------------------

def test_table_names_parse_as_debeziums_table_ids() -> None:
    assert parse_table("orders") == (None, None, "orders")
    assert parse_table("lab.orders") == ("lab", None, "orders")
    assert parse_table("testDB.dbo.orders") == ("testDB", "dbo", "orders")
    assert parse_table('"my.schema"."odd ""name"""') == ("my.schema", None, 'odd "name"')
    assert parse_table("a.b.c.d") is None and parse_table("a..b") is None


def test_the_collection_list_matches_debeziums_name_of_the_table_or_its_quoted_form() -> None:
    selection = SnapshotSelection.from_config(Config({"snapshot.include.collection.list": r'public\.orders,"hr"\..*'}))
    assert selection.snapshots((None, "public", "orders")) and selection.snapshots((None, "PUBLIC", "ORDERS"))
    assert selection.snapshots((None, "hr", "people"))
    assert not selection.snapshots((None, "public", "audit"))
    sqlserver = SnapshotSelection.from_config(Config({"snapshot.include.collection.list": r"dbo\.orders"}))
    assert not sqlserver.snapshots(("testDB", "dbo", "orders"))  # Debezium's name there is testDB.dbo.orders
    assert SnapshotSelection().snapshots(("lab", None, "anything"))


def test_an_override_is_looked_up_by_the_name_then_without_the_database_as_debezium_does() -> None:
    props = {"snapshot.select.statement.overrides": "public.orders, dbo.items ,lab.t,solo",
             "snapshot.select.statement.overrides.public.orders": "SELECT * FROM public.orders WHERE id > 1;",
             "snapshot.select.statement.overrides.dbo.items": "SELECT 1",
             "snapshot.select.statement.overrides.lab.t": "SELECT 2",
             "snapshot.select.statement.overrides.solo": "SELECT 3"}
    selection = SnapshotSelection.from_config(Config(props))
    assert selection.select_for((None, "public", "orders")) == "SELECT * FROM public.orders WHERE id > 1"
    assert selection.select_for(("testDB", "dbo", "items")) == "SELECT 1"  # SQL Server: schema.table too
    assert selection.select_for(("lab", None, "t")) == "SELECT 2"
    assert selection.select_for(("other", None, "solo")) == "SELECT 3"  # MySQL: the table alone
    assert selection.select_for((None, "public", "audit")) is None


def test_an_override_without_its_select_or_a_select_not_listed_is_left_out_with_a_warning() -> None:
    overrides, warnings = override_keys({"snapshot.select.statement.overrides": "a.b",
                                         "snapshot.select.statement.overrides.c.d": "SELECT 1"})
    assert overrides == {}
    assert warnings == [
        "snapshot.select.statement.overrides lists a.b but snapshot.select.statement.overrides.a.b is not set: "
        "the snapshot reads the table whole",
        "snapshot.select.statement.overrides.c.d is ignored: c.d is not listed in snapshot.select.statement.overrides "
        "(Debezium reads the SELECT of the tables listed there only)"]


def test_an_overrides_columns_are_the_tables_by_name() -> None:
    columns = ["id", "name", "email"]
    assert match_columns(["id", "name", "email"], columns, "o") == [0, 1, 2]
    assert match_columns(["EMAIL", "id"], columns, "o") == [1, None, 0]
    with pytest.raises(SourceError, match="the table has no column total"):
        match_columns(["id", "total"], columns, "o")
    with pytest.raises(SourceError, match="a name twice"):
        match_columns(["id", "ID"], columns, "o")


def test_where_overrides_cannot_be_read_they_are_refused() -> None:
    SnapshotSelection().refuse_overrides("somewhere", "fix")  # none: nothing to refuse
    selection = SnapshotSelection(overrides={"a.b": "SELECT 1"})
    with pytest.raises(ConfigError, match=r"snapshot.select.statement.overrides \(a.b\) is not applied by there"):
        selection.refuse_overrides("there", "fix")


# ---- snapshot.delay.ms and streaming.delay.ms -------------------------------------------------------

class Clock:
    """Time that moves only when a wait pauses (installed as the waits' clock)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 100.0
        self.paused: list[float] = []
        monkeypatch.setattr(delays, "clock", lambda: self.now)
        monkeypatch.setattr(delays, "pause", self.pause)

    def pause(self, seconds: float) -> None:
        self.paused.append(seconds)
        self.now += seconds


def drain(wait: Generator[Batch, None, bool]) -> tuple[list[Batch], bool]:
    batches: list[Batch] = []
    while True:
        try:
            batches.append(next(wait))
        except StopIteration as done:
            return batches, done.value


def test_a_wait_lasts_its_delay_handing_the_engine_a_batch_every_tick(monkeypatch: pytest.MonkeyPatch,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock(monkeypatch)
    caplog.set_level(logging.INFO, logger="cdc.core.delays")
    batches, waited = drain(delays.wait(350, "snapshot.delay.ms", "the snapshot", lambda: False))
    assert waited and clock.now == pytest.approx(100.35)
    assert clock.paused == pytest.approx([0.1, 0.1, 0.1, 0.05])
    assert len(batches) == 4 and all(b.events == [] and b.offset is None and b.commit_now for b in batches)
    assert "waiting 0.3 s before the snapshot (snapshot.delay.ms)" in caplog.text


def test_a_stop_ends_a_wait_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    batches, waited = drain(delays.wait(60_000, "streaming.delay.ms", "streaming", lambda: clock.now >= 100.25))
    assert not waited and len(batches) == 3 and clock.now == pytest.approx(100.3)


def test_no_delay_no_wait() -> None:
    assert drain(delays.wait(0, "snapshot.delay.ms", "the snapshot", lambda: True)) == ([], True)
