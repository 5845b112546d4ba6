"""database.initial.statements on PostgreSQL: run on each new query connection, not on the replication one."""
from __future__ import annotations

from pathlib import Path

import psycopg

from cdc.core.errors import SourceError
from tests.integration.harness import Pipeline
from tests.integration.test_pg_failures import run_until_error
from tests.integration.test_pg_stream import sql

STATEMENTS = ("SET cdc.greeting = 'hello;;world'; SET application_name = 'cdc-initial';"
              "SET TIME ZONE 'Asia/Kolkata'; SET DateStyle = 'SQL, DMY';")


def test_session_settings_reach_the_snapshot_not_the_replication_connection(pg_db: dict[str, str],
                                                                             tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY, v text, d date, ts timestamptz)",
        "INSERT INTO t VALUES (1, 'x', '2024-02-29', '2024-02-29 12:00:00+00')")
    props = {**pg_db, "snapshot.mode": "initial", "database.initial.statements": STATEMENTS,
             # the snapshot reads current_setting() of the session the statements ran in
             "snapshot.select.statement.overrides": "public.t",
             "snapshot.select.statement.overrides.public.t":
                 "SELECT id, current_setting('cdc.greeting') AS v, d, ts FROM public.t"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
        [read] = p.wait_count(1)
        sql(pg_db, "INSERT INTO t VALUES (2, 'y', '2024-03-01', '2024-03-01 00:30:00+00')")
        created = p.wait_count(2)[1]
        with psycopg.connect(pg_db["dsn"]) as conn:
            names = dict(conn.execute("SELECT backend_type, application_name FROM pg_stat_activity "
                                      "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                                      "AND application_name LIKE 'cdc%%'").fetchall())
    # ';;' is a semicolon inside a statement; a time zone and a DateStyle do not change values
    assert read["value"]["payload"]["after"] == {"id": 1, "v": "hello;world", "d": 19782,
                                                 "ts": "2024-02-29T12:00:00.000000Z"}
    assert created["value"]["payload"]["after"] == {"id": 2, "v": "y", "d": 19783, "ts": "2024-03-01T00:30:00.000000Z"}
    assert names == {"client backend": "cdc-initial", "walsender": "cdc"}


def test_a_statement_the_server_refuses_is_a_clear_error(pg_db: dict[str, str], tmp_path: Path) -> None:
    error = run_until_error({**pg_db, "database.initial.statements": "SET search_path = public; SELEC 1"},
                            tmp_path)
    assert isinstance(error, SourceError) and not error.retriable
    text = str(error)
    assert "database.initial.statements: statement 2 ('SELEC 1') failed" in text and "syntax error" in text
    assert "write ';;' for a semicolon" in text
