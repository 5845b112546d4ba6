"""The SQL Server source against a real server: only when ``CDC_TEST_SQLSERVER_DSN`` is set.

    CDC_TEST_SQLSERVER_DSN='sqlserver://sa:Cdc-Passw0rd@127.0.0.1:1433/testDB?encrypt=false'

(``compose/docker-compose.yml`` brings one up with the Agent and CDC on testDB.) Optional query
parameters: ``encrypt``, ``trustServerCertificate``, ``driver``. Each test works on its own
table, so the tests can run against a shared server and in any order.
"""
from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from urllib.parse import parse_qs, unquote, urlparse

import pytest

from cdc.config import Config
from cdc.core.records import Batch, ChangeEvent
from cdc.sources.sqlserver import catalog
from cdc.sources.sqlserver.connection import ConnectionSettings, OdbcConnection
from cdc.sources.sqlserver.queries import AGENT_STATUS
from cdc.sources.sqlserver.source import SqlServerSource

DSN = os.environ.get("CDC_TEST_SQLSERVER_DSN")
pytestmark = pytest.mark.skipif(
    not DSN, reason="set CDC_TEST_SQLSERVER_DSN=sqlserver://user:password@host:port/database to run against a real "
                    "SQL Server (compose/docker-compose.yml starts one)")
LSN_TEXT = re.compile(r"^[0-9a-f]{8}:[0-9a-f]{8}:[0-9a-f]{4}$")


def dsn_properties(dsn: str) -> dict[str, str]:
    url = urlparse(dsn)
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    props = {
        "database.hostname": url.hostname or "127.0.0.1",
        "database.port": str(url.port or 1433),
        "database.user": unquote(url.username or "sa"),
        "database.password": unquote(url.password or ""),
        "database.names": url.path.lstrip("/") or "testDB",
        "database.encrypt": query.get("encrypt", "false"),
        "database.trustServerCertificate": query.get("trustServerCertificate", "true"),
    }
    if "driver" in query:
        props["database.odbc.driver"] = query["driver"]
    return props


@pytest.fixture(scope="module")
def props() -> dict[str, str]:
    assert DSN is not None
    return dsn_properties(DSN)


@pytest.fixture()
def admin(props: dict[str, str]) -> Iterator[OdbcConnection]:
    config = Config(dict(props)).declare(SqlServerSource.options)
    conn = OdbcConnection(ConnectionSettings.from_config(config), props["database.names"])
    yield conn
    conn.close()


@pytest.fixture()
def table(admin: OdbcConnection) -> Iterator[str]:
    """A fresh table name; CDC is disabled and the table dropped afterwards."""
    name = f"cdc_live_{uuid.uuid4().hex[:8]}"
    yield name
    admin.execute(f"IF OBJECT_ID(N'dbo.{name}') IS NOT NULL EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', "
                  f"@source_name = N'{name}', @capture_instance = N'all'")
    admin.execute(f"DROP TABLE IF EXISTS dbo.{name}")


def enable(admin: OdbcConnection, name: str, instance: str | None = None) -> None:
    extra = f", @capture_instance = N'{instance}'" if instance else ""
    admin.execute(f"EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'{name}', "
                  f"@role_name = NULL, @supports_net_changes = 0{extra}")


def make_source(props: dict[str, str], name: str, **extra: str) -> SqlServerSource:
    return SqlServerSource(Config({**props, "topic.prefix": "live", "table.include.list": f"dbo.{name}",
                                   "poll.interval.ms": "200", **extra}))


def collect(stream: Iterator[Batch], until: Callable[[list[ChangeEvent]], bool], timeout: float = 60,
            batches: list[Batch] | None = None) -> list[ChangeEvent]:
    """Events until ``until`` holds (the capture job writes the change tables every second or so)."""
    events: list[ChangeEvent] = []
    deadline = time.monotonic() + timeout
    for batch in stream:
        events.extend(batch.events)
        if batches is not None:
            batches.append(batch)
        if until(events):
            return events
        if time.monotonic() > deadline:
            break
    raise AssertionError(f"timed out with {len(events)} events: {[e.value for e in events[-5:]]}")


def data(events: list[ChangeEvent]) -> list[ChangeEvent]:
    return [e for e in events if e.value is not None and "op" in e.value]


def test_snapshot_then_every_operation(admin: OdbcConnection, props: dict[str, str], table: str) -> None:
    admin.execute(f"CREATE TABLE dbo.{table} (id INT NOT NULL PRIMARY KEY, name VARCHAR(50) NOT NULL)")
    admin.execute(f"INSERT INTO dbo.{table} VALUES (1, 'one')")
    enable(admin, table)
    source = make_source(props, table, **{"snapshot.isolation.mode": "snapshot"})
    stream = source.stream(None)
    try:
        first = collect(stream, lambda ev: any(e.value and e.value.get("op") == "r" for e in ev))
        schema = [e for e in first if e.value and "tableChanges" in e.value]
        assert schema[0].value["tableChanges"][0]["type"] == "CREATE"
        assert schema[0].value["ddl"] is None
        read = data(first)[0]
        assert read.value["after"] == {"id": 1, "name": "one"}
        admin.execute(f"INSERT INTO dbo.{table} VALUES (2, 'two')")
        admin.execute(f"UPDATE dbo.{table} SET name = 'deux' WHERE id = 2")
        admin.execute(f"DELETE FROM dbo.{table} WHERE id = 1")
        admin.execute(f"UPDATE dbo.{table} SET id = 3 WHERE id = 2")
        events = collect(stream, lambda ev: len([e for e in data(ev) if e.value["after"] and
                                                 e.value["after"]["id"] == 3]) == 1)
    finally:
        stream.close()
        source.close()
    changes = data(events)
    assert [(e.value["op"], e.key) for e in changes] == [
        ("c", {"id": 2}), ("u", {"id": 2}), ("d", {"id": 1}), ("d", {"id": 2}), ("c", {"id": 3})]
    update = changes[1].value
    assert (update["before"]["name"], update["after"]["name"]) == ("two", "deux")
    assert update["source"]["event_serial_no"] == 2
    for event in changes:
        source_block = event.value["source"]
        assert LSN_TEXT.match(source_block["commit_lsn"]) and LSN_TEXT.match(source_block["change_lsn"])
        assert abs(source_block["ts_ms"] - time.time() * 1000) < 120_000
    assert [h[0] for h in changes[3].headers] == ["__debezium.newkey"]
    assert [h[0] for h in changes[4].headers] == ["__debezium.oldkey"]


def test_types(admin: OdbcConnection, props: dict[str, str], table: str) -> None:
    admin.execute(
        f"CREATE TABLE dbo.{table} (id INT NOT NULL PRIMARY KEY, b BIT, ti TINYINT, r REAL, f FLOAT, "
        "dec DECIMAL(10,2), m MONEY, nvc NVARCHAR(20), x XML, d DATE, tm3 TIME(3), tm7 TIME(7), dt DATETIME, "
        "sdt SMALLDATETIME, dt2 DATETIME2(6), dto DATETIMEOFFSET(7), u UNIQUEIDENTIFIER, vb VARBINARY(4))")
    enable(admin, table)
    source = make_source(props, table, **{"snapshot.mode": "no_data"})
    stream = source.stream(None)
    try:
        collect(stream, lambda ev: any(e.value and "tableChanges" in e.value for e in ev))
        admin.execute(
            f"INSERT INTO dbo.{table} VALUES (1, 1, 255, 1.1, 3.5, -12.34, 12.34, N'żółw', '<a>1</a>', '2018-06-20', "
            "'15:13:16.945', '15:13:16.9451041', '2018-06-20 15:13:16.947', '2018-06-20 15:13', "
            "'2018-06-20 15:13:16.945104', '2019-01-01 12:34:56.1234567 +02:00', "
            "'6F9619FF-8B86-D011-B42D-00C04FC964FF', 0x0102)")
        events = collect(stream, lambda ev: bool(data(ev)))
    finally:
        stream.close()
        source.close()
    after = data(events)[0].value["after"]
    assert after == {
        "id": 1, "b": True, "ti": 255, "r": 1.1, "f": 3.5, "dec": "+y4=", "m": "AeII", "nvc": "żółw", "x": "<a>1</a>",
        "d": 17702, "tm3": 54796945, "tm7": 54796945104000,  # pyodbc's time keeps microseconds
        "dt": 1529507596947, "sdt": 1529507580000,
        "dt2": 1529507596945104, "dto": "2019-01-01T10:34:56.1234567Z",
        "u": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "vb": "AQI=",
    }


def test_transaction_end_when_the_next_begins(admin: OdbcConnection, props: dict[str, str], table: str) -> None:
    admin.execute(f"CREATE TABLE dbo.{table} (id INT NOT NULL PRIMARY KEY)")
    enable(admin, table)
    source = make_source(props, table, **{"snapshot.mode": "no_data", "provide.transaction.metadata": "true",
                                          "transaction.end.idle.ms": "0"})
    stream = source.stream(None)
    try:
        collect(stream, lambda ev: bool(ev))
        admin.execute(f"BEGIN TRANSACTION; INSERT INTO dbo.{table} VALUES (1); INSERT INTO dbo.{table} VALUES (2); "
                      "COMMIT")
        admin.execute(f"INSERT INTO dbo.{table} VALUES (3)")
        events = collect(stream, lambda ev: sum(1 for e in ev if e.value and e.value.get("status") == "END") == 1
                         and len(data(ev)) == 3)
    finally:
        stream.close()
        source.close()
    kinds = [e.value.get("status") or e.value["op"] for e in events
             if e.value and ("status" in e.value or "op" in e.value)]
    assert kinds == ["BEGIN", "c", "c", "END", "BEGIN", "c"]
    end = next(e.value for e in events if e.value and e.value.get("status") == "END")
    assert end["event_count"] == 2


def test_capture_instance_switch(admin: OdbcConnection, props: dict[str, str], table: str) -> None:
    admin.execute(f"CREATE TABLE dbo.{table} (id INT NOT NULL PRIMARY KEY, a INT)")
    enable(admin, table, f"dbo_{table}_v1")
    source = make_source(props, table, **{"snapshot.mode": "no_data"})
    stream = source.stream(None)
    try:
        collect(stream, lambda ev: bool(ev))
        admin.execute(f"INSERT INTO dbo.{table} VALUES (1, 1)")
        collect(stream, lambda ev: bool(data(ev)))
        admin.execute(f"ALTER TABLE dbo.{table} ADD b NVARCHAR(10) NULL")
        enable(admin, table, f"dbo_{table}_v2")
        admin.execute(f"INSERT INTO dbo.{table} VALUES (2, 2, N'x')")
        events = collect(stream, lambda ev: bool(data(ev)))
    finally:
        stream.close()
        source.close()
    alter = [e for e in events if e.value and "tableChanges" in e.value]
    assert alter and alter[0].value["tableChanges"][0]["type"] == "ALTER"
    assert [c["name"] for c in alter[0].value["tableChanges"][0]["table"]["columns"]] == ["id", "a", "b"]
    assert data(events)[0].value["after"] == {"id": 2, "a": 2, "b": "x"}


def test_resume_inside_a_commit(admin: OdbcConnection, props: dict[str, str], table: str) -> None:
    admin.execute(f"CREATE TABLE dbo.{table} (id INT NOT NULL PRIMARY KEY)")
    enable(admin, table)
    source = make_source(props, table, **{"snapshot.mode": "no_data", "max.batch.size": "1"})
    stream = source.stream(None)
    batches: list[Batch] = []
    try:
        collect(stream, lambda ev: bool(ev))
        admin.execute(f"BEGIN TRANSACTION; INSERT INTO dbo.{table} VALUES (1); INSERT INTO dbo.{table} VALUES (2); "
                      f"INSERT INTO dbo.{table} VALUES (3); COMMIT")
        collect(stream, lambda ev: len(data(ev)) >= 1, batches=batches)
    finally:
        stream.close()
        source.close()
    crashed_at = next(b.offset for b in batches if b.events and data(b.events))
    assert crashed_at["databases"][props["database.names"]]["change_lsn"] is not None
    again = make_source(props, table, **{"snapshot.mode": "no_data"})
    stream = again.stream(crashed_at)
    try:
        events = collect(stream, lambda ev: len(data(ev)) >= 2)
    finally:
        stream.close()
        again.close()
    assert [e.key for e in data(events)] == [{"id": 2}, {"id": 3}]


def test_agent_status_and_max_lsn(admin: OdbcConnection) -> None:
    assert catalog.agent_running(admin, AGENT_STATUS) in (True, None)  # None: no VIEW SERVER STATE
    catalog.check_database(admin)
    assert catalog.max_lsn(admin).available


def test_decimal_value_from_the_driver(admin: OdbcConnection) -> None:
    rows = admin.query("SELECT CAST(12.34 AS DECIMAL(10,2)) AS d, CAST(1 AS BIT) AS b")
    assert rows == [{"d": Decimal("12.34"), "b": True}]
