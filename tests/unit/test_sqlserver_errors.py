"""Each bad input gets an error (or warning) that says what failed and what to do."""
from __future__ import annotations

import builtins
import logging
from typing import Any

import pytest

from cdc.config import Config
from cdc.core.errors import ConfigError, RetriableSourceError, SourceError
from cdc.sources.sqlserver import connection
from cdc.sources.sqlserver.catalog import AgentNotRunningError, CdcNotEnabledError, LsnPurgedError
from cdc.sources.sqlserver.connection import ConnectionSettings, choose_driver, datetimeoffset_text, translate
from cdc.sources.sqlserver.source import SqlServerSource
from tests.fixtures.sqlserver.testdb import customers_and_orders
from tests.unit.test_sqlserver_stream import BEFORE_A, make_source, run, summary


def test_no_odbc_driver_names_the_packages() -> None:
    with pytest.raises(SourceError) as info:
        choose_driver(["PostgreSQL Unicode"], None)
    text = str(info.value)
    assert "no ODBC driver for SQL Server is installed (installed drivers: PostgreSQL Unicode)" in text
    assert "Microsoft ODBC Driver 18" in text and "msodbcsql18" in text and "tdsodbc" in text


def test_named_driver_missing() -> None:
    with pytest.raises(SourceError, match="'ODBC Driver 18 for SQL Server' .* is not installed; installed: FreeTDS"):
        choose_driver(["FreeTDS"], "ODBC Driver 18 for SQL Server")
    assert choose_driver(["FreeTDS", "ODBC Driver 17 for SQL Server"], None) == "ODBC Driver 17 for SQL Server"


def test_driver_manager_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pyodbc":
            raise ImportError("libodbc.so.2: cannot open shared object file: No such file or directory")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(SourceError) as info:
        connection._import_pyodbc()
    assert "pyodbc cannot load the ODBC driver manager" in str(info.value)
    assert "apt-get install unixodbc" in str(info.value) and "tdsodbc" in str(info.value)


def test_default_connection_on_this_machine_explains_what_is_missing() -> None:
    source = SqlServerSource(Config({"topic.prefix": "s", "database.names": "testDB", "database.port": "1",
                                     "errors.max.retries": "0"}))  # an unreachable server: no retries
    with pytest.raises(SourceError) as info:
        next(source.stream(None))
    text = str(info.value)
    # no pyodbc, no driver manager, no driver, or (all installed) no server on port 1
    assert "pyodbc" in text or "ODBC" in text or "the server cannot be reached" in text


@pytest.mark.parametrize("args, kind, what, fix", [
    (("28000", "[Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Login failed for user 'sa'. (18456)"),
     SourceError, "login failed", "database.password"),
    (("01000", "[unixODBC][Driver Manager]Can't open lib 'ODBC Driver 18 for SQL Server' : file not found"),
     SourceError, "the ODBC driver cannot be loaded", "tdsodbc"),
    (("08001", "[Microsoft][ODBC Driver 18 for SQL Server]TCP Provider: Error code 0x2749 (10057)"),
     RetriableSourceError, "the server cannot be reached", "database.port"),
    (("08001", "[Microsoft][ODBC Driver 18 for SQL Server]SSL Provider: certificate verify failed:self-signed"),
     SourceError, "the TLS handshake failed", "database.trustServerCertificate=true"),
    (("42S02", "[SQL Server]Invalid object name 'cdc.change_tables'. (208)"), SourceError,
     "the cdc schema or a change table is missing", "EXEC sys.sp_cdc_enable_db"),
])
def test_driver_errors_are_translated(args: tuple[str, str], kind: type, what: str, fix: str) -> None:
    error = translate(Exception(*args), "connecting")
    assert type(error) is kind
    assert what in error.message and fix in (error.fix or "")


def test_connection_string_braces_and_hides_the_password() -> None:
    settings = ConnectionSettings("db.local", 1433, None, "sa", "p;w}d", True, True, None, 1, 0.1)
    text = settings.connection_string("testDB", "ODBC Driver 18 for SQL Server")
    assert "DRIVER={ODBC Driver 18 for SQL Server}" in text and "SERVER=db.local,1433" in text
    assert "PWD={p;w}}d}" in text and "TrustServerCertificate=yes" in text
    assert "p;w" not in repr(settings)


def test_freetds_connection_string() -> None:
    settings = ConnectionSettings("db.local", 1433, None, "sa", "pw", False, True, None, 1, 0.1)
    text = settings.connection_string("testDB", "FreeTDS")
    assert "TDS_Version=7.4" in text and "Encryption=off" in text and "TrustServerCertificate" not in text


def _installed_drivers() -> list[str]:
    try:
        import pyodbc
    except ImportError:
        return []
    return list(pyodbc.drivers())


@pytest.mark.skipif(not _installed_drivers(),
                    reason="needs pyodbc with an ODBC driver (unixodbc + tdsodbc/msodbcsql18)")
def test_real_driver_reports_an_unreachable_server() -> None:
    settings = ConnectionSettings("127.0.0.1", 1, None, "sa", "pw", False, True, None, 1, 0.1)
    with pytest.raises(RetriableSourceError) as info:
        connection.OdbcConnection(settings, "testDB")
    assert "the server cannot be reached" in str(info.value) and "database.port" in str(info.value)


def test_datetimeoffset_struct_is_printed_with_seven_digits() -> None:
    import struct
    raw = struct.pack("<6hI2h", 2019, 1, 1, 12, 34, 56, 123456700, 2, 0)
    assert datetimeoffset_text(raw) == "2019-01-01 12:34:56.1234567 +02:00"
    raw = struct.pack("<6hI2h", 2019, 1, 1, 0, 30, 0, 0, -1, -30)
    assert datetimeoffset_text(raw) == "2019-01-01 00:30:00.0000000 -01:30"


def test_cdc_not_enabled_on_the_database() -> None:
    db = customers_and_orders()
    db.cdc_enabled = False
    with pytest.raises(CdcNotEnabledError) as info:
        run(make_source(db)[0], None)
    assert "CDC is not enabled on database 'testDB'" in str(info.value)
    assert "USE [testDB]; EXEC sys.sp_cdc_enable_db;" in str(info.value)


def test_database_missing() -> None:
    db = customers_and_orders()
    db.cdc_enabled = None
    with pytest.raises(SourceError, match="database 'testDB' does not exist"):
        run(make_source(db)[0], None)


def test_cdc_not_enabled_on_the_tables() -> None:
    db = customers_and_orders()
    db.instances = []
    db.untracked = [("dbo", "customers")]
    with pytest.raises(CdcNotEnabledError) as info:
        run(make_source(db)[0], None)
    text = str(info.value)
    assert "CDC is not enabled on any included table of database 'testDB' (not captured: dbo.customers)" in text
    assert ("EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'customers', @role_name = NULL"
            in text)


def test_included_table_without_cdc_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    db = customers_and_orders()
    db.untracked = [("dbo", "audit")]
    with caplog.at_level(logging.WARNING):
        run(make_source(db, **{"table.include.list": "dbo.customers,dbo.audit"})[0], BEFORE_A)
    assert "table testDB.dbo.audit is included but CDC is not enabled on it" in caplog.text


def test_agent_not_running() -> None:
    db = customers_and_orders()
    db.max_lsn = None
    db.agent_running = False
    with pytest.raises(AgentNotRunningError) as info:
        run(make_source(db)[0], BEFORE_A)
    assert "No maximum LSN in the database 'testDB'; SQL Server Agent is not running" in str(info.value)
    assert "MSSQL_AGENT_ENABLED=true" in str(info.value)


def test_no_max_lsn_with_agent_running_waits(caplog: pytest.LogCaptureFixture) -> None:
    db = customers_and_orders()
    db.max_lsn = None
    with caplog.at_level(logging.INFO):
        events, batches = run(make_source(db)[0], BEFORE_A, polls=2)
    assert events == [] and batches[-1].caught_up
    assert "no maximum LSN in database testDB yet" in caplog.text


def test_agent_query_without_permission_warns(caplog: pytest.LogCaptureFixture) -> None:
    db = customers_and_orders()
    db.max_lsn = None
    db.agent_running = None
    with caplog.at_level(logging.WARNING):
        run(make_source(db)[0], BEFORE_A)
    assert "cannot check the SQL Server Agent" in caplog.text and "VIEW SERVER STATE" in caplog.text


def test_custom_agent_query_is_used() -> None:
    db = customers_and_orders()
    db.max_lsn = None
    source, server = make_source(db, **{"database.sqlserver.agent.status.query": "SELECT [#db].dbo.agent_ok()"})
    with pytest.raises(AssertionError, match=r"SELECT \[testDB\].dbo.agent_ok\(\)"):
        run(source, BEFORE_A)  # the fake does not know the custom query: it was sent as configured


def test_stored_lsn_purged_by_the_cleanup_job() -> None:
    db = customers_and_orders()
    db.min_lsns["dbo_customers"] = "00000027:00000900:0001"  # the cleanup job moved past A
    with pytest.raises(LsnPurgedError) as info:
        run(make_source(db)[0], BEFORE_A)
    text = str(info.value)
    assert ("the stored position 00000027:00000700:0001 of database 'testDB' is older than the minimum LSN "
            "00000027:00000900:0001 of capture instance dbo_customers: the CDC cleanup job purged changes") in text
    assert "snapshot.mode=when_needed" in text


def test_when_needed_takes_a_new_snapshot_after_a_purge(caplog: pytest.LogCaptureFixture) -> None:
    db = customers_and_orders()
    db.min_lsns["dbo_customers"] = "00000027:00000900:0001"
    with caplog.at_level(logging.WARNING):
        events, _ = run(make_source(db, **{"snapshot.mode": "when_needed"})[0], BEFORE_A)
    assert [summary(e)[1] for e in events] == ["CREATE", "CREATE", "r", "r", "r"]
    assert "taking a new snapshot" in caplog.text


def test_capture_instance_dropped_while_running(caplog: pytest.LogCaptureFixture) -> None:
    db = customers_and_orders()
    source, _ = make_source(db)
    stream = source.stream(BEFORE_A)
    for batch in stream:
        if batch.caught_up:
            break
    db.instances.pop(1)  # EXEC sys.sp_cdc_disable_table ... @capture_instance = N'dbo_orders'
    db.max_lsn = "00000027:00000f10:0001"
    with caplog.at_level(logging.WARNING):
        for batch in stream:
            if batch.caught_up:
                break
    stream.close()
    assert ("capture instance dbo_orders of table testDB.dbo.orders was dropped while running "
            "(sys.sp_cdc_disable_table): its changes are no longer captured") in caplog.text
    assert "@source_name = N'orders'" in caplog.text


def test_capture_instance_dropped_between_listing_and_reading(caplog: pytest.LogCaptureFixture) -> None:
    db = customers_and_orders()
    source, server = make_source(db)
    original = server.connect

    def connect(database: str) -> Any:
        conn = original(database)
        batches = conn.batches

        def failing(sql: str, params: Any = (), size: int = 1000) -> Any:
            if "dbo_orders_CT" in sql:
                db.instances = [i for i in db.instances if i.name != "dbo_orders"]
                raise SourceError("running: Invalid object name 'cdc.dbo_orders_CT'. (208)")
            return batches(sql, params, size)

        conn.batches = failing  # type: ignore[method-assign]
        return conn

    source._connect = connect
    with caplog.at_level(logging.WARNING):
        events, _ = run(source, BEFORE_A)
    assert {e.topic for e in events} == {"server1.testDB.dbo.customers"}
    assert "capture instance dbo_orders of table testDB.dbo.orders was dropped while running" in caplog.text


@pytest.mark.parametrize("props, message", [
    ({"snapshot.mode": "never"}, "snapshot.mode='never' is not supported by the SQL Server source"),
    ({"snapshot.mode": "configuration_based"}, "snapshot.mode='configuration_based' is not supported"),
    ({"database.names": ""}, "database.names is required"),
    ({"message.key.columns": "nocolon"}, "must look like"),
])
def test_bad_configuration(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SqlServerSource(Config({"topic.prefix": "s", "database.names": "testDB", **props}))


def test_bad_stored_offset() -> None:
    with pytest.raises(SourceError, match="not a SQL Server offset"):
        run(make_source(customers_and_orders())[0], {"lsn": 123})


def test_debeziums_single_database_offset_is_accepted() -> None:
    events, _ = run(make_source(customers_and_orders())[0], BEFORE_A["databases"]["testDB"])
    assert summary(events[0])[1:3] == ("c", {"id": 1005})


def test_transient_failure_reconnects_and_repeats_nothing(caplog: pytest.LogCaptureFixture) -> None:
    db = customers_and_orders()
    source, server = make_source(db, **{"provide.transaction.metadata": "true", "max.batch.size": "3"})
    original = server.connect
    failures = {"left": 1}

    def connect(database: str) -> Any:
        conn = original(database)
        batches = conn.batches

        def flaky(sql: str, params: Any = (), size: int = 1000) -> Any:
            if "_CT]" in sql and failures["left"]:
                failures["left"] -= 1
                raise RetriableSourceError("reading: the server cannot be reached: 08S01 Communication link failure")
            return batches(sql, params, size)

        conn.batches = flaky  # type: ignore[method-assign]
        return conn

    source._connect = connect
    with caplog.at_level(logging.WARNING):
        events, _ = run(source, BEFORE_A)
    reference, _ = run(make_source(customers_and_orders(), **{"provide.transaction.metadata": "true"})[0], BEFORE_A)
    assert [summary(e) for e in events] == [summary(e) for e in reference]
    assert "Communication link failure); retrying in" in caplog.text
    assert server.connections[0].closed


def _failing_connect(server: Any, failures: list[Exception]) -> Any:
    """``server.connect`` raising the given errors first, one per attempt."""
    original = server.connect

    def connect(database: str) -> Any:
        if failures:
            raise failures.pop(0)
        return original(database)
    return connect


def test_connecting_at_start_is_retried_under_the_policy(caplog: pytest.LogCaptureFixture) -> None:
    source, server = make_source(customers_and_orders(), **{"errors.max.retries": "3"})
    unreachable = "connecting to SQL Server: the server cannot be reached: 08001 TCP Provider: timeout"
    source._connect = _failing_connect(server, [RetriableSourceError(unreachable), RetriableSourceError(unreachable)])
    with caplog.at_level(logging.WARNING):
        events, _ = run(source, BEFORE_A)
    assert summary(events[0])[1:3] == ("c", {"id": 1005})
    assert caplog.text.count("connecting to SQL Server database 'testDB' failed") == 2
    assert "(attempt 2 of 3)" in caplog.text


def test_a_refused_login_is_not_retried() -> None:
    source, server = make_source(customers_and_orders())
    failures: list[Exception] = [SourceError("connecting: login failed: 28000", fix="check database.user")]
    source._connect = _failing_connect(server, failures)
    with pytest.raises(SourceError, match="login failed"):
        run(source, BEFORE_A)
    assert server.connections == []


def test_connecting_gives_up_after_errors_max_retries() -> None:
    source, server = make_source(customers_and_orders(), **{"errors.max.retries": "2"})
    source._connect = _failing_connect(server, [RetriableSourceError("the server cannot be reached")] * 3)
    with pytest.raises(SourceError, match="gave up connecting to SQL Server database 'testDB' after 3 attempts"):
        run(source, BEFORE_A)


def test_a_reconnect_that_fails_too_is_retried_and_repeats_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """The stream's connection breaks mid-window, the first reconnect finds the server still down: the
    policy tries again, and the stream goes on after the last batch it handed out."""
    db = customers_and_orders()
    source, server = make_source(db, **{"provide.transaction.metadata": "true", "max.batch.size": "3"})
    original = server.connect
    state = {"broken": 1, "down": 0}

    def connect(database: str) -> Any:
        if state["down"]:
            state["down"] -= 1
            raise RetriableSourceError("connecting: the server cannot be reached: 08001")
        conn = original(database)
        batches = conn.batches

        def flaky(sql: str, params: Any = (), size: int = 1000) -> Any:
            if "dbo_orders_CT" in sql and state["broken"]:
                state["broken"], state["down"] = 0, 1  # the link drops, and the server is away a moment
                raise RetriableSourceError("reading: the server cannot be reached: 08S01 Communication link failure")
            return batches(sql, params, size)

        conn.batches = flaky  # type: ignore[method-assign]
        return conn

    source._connect = connect
    with caplog.at_level(logging.WARNING):
        events, _ = run(source, BEFORE_A)
    reference, _ = run(make_source(customers_and_orders(), **{"provide.transaction.metadata": "true"})[0], BEFORE_A)
    assert [summary(e) for e in events] == [summary(e) for e in reference]
    assert "polling the change tables of testDB failed" in caplog.text
    assert "connecting to SQL Server database 'testDB' failed" in caplog.text
