"""The conformance workloads on the newer servers Debezium's users run: PostgreSQL 17 and 18 and
MariaDB 11.4 LTS (at its defaults), started by scripts/postgres.sh and scripts/mariadb.sh from Maven
Central's binaries (CDC_PG_VERSION, CDC_MARIADB_VERSION), or given by CDC_TEST_PG17_DSN,
CDC_TEST_PG18_DSN, CDC_TEST_MARIADB11_DEFAULTS_DSN.

Debezium's PostgreSQL 15 fixtures hold on 17 and 18: its output there was recorded again and compared
(python -m tests.conformance.record --versus-fixture) and only pg_schema_evolution differs, at a place the
comparison ignores already (after RENAME COLUMN, Debezium on 17+ keeps the key, as cdc does on every
version). MariaDB 11.4 has fixtures of its own (fixtures/mariadb11.4/, recorded with --server): it writes
end_log_pos 0 in the events a transaction sends through the binlog cache, so Debezium's (and cdc's)
source.pos of a rows event there is its transaction's start, where 10.11 gives the event's own.

The test command runs a representative subset of workloads on each server; scripts/test-matrix.sh
runs every workload on every server (CDC_MATRIX_ALL=1).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conformance import workloads as wl
from tests.conformance.connect_reader import ConnectReader
from tests.conformance.test_conformance import assert_same_as_debezium
from tests.servers import start_by_script

ROOT = Path(__file__).resolve().parents[2]

# name -> (script, its environment, the DSN variable that overrides it)
SERVERS = {
    "pg17": ("postgres.sh", {"CDC_PG_VERSION": "17"}, "CDC_TEST_PG17_DSN"),
    "pg18": ("postgres.sh", {"CDC_PG_VERSION": "18"}, "CDC_TEST_PG18_DSN"),
    "mariadb11.4": ("mariadb.sh", {"CDC_MARIADB_VERSION": "11.4", "CDC_MARIADB_DEFAULTS": "1"},
                    "CDC_TEST_MARIADB11_DEFAULTS_DSN"),
}
SUBSET = {
    "postgres": ["pg_types", "pg_keys", "pg_transactions", "pg_toast", "pg_defaults", "pg_types_more",
                 "pg_schema_evolution"],
    "mariadb": ["mariadb_types", "mariadb_keys", "mariadb_transactions", "mariadb_schema_evolution",
                "mariadb_temporal"],
}


def _workloads(db: str) -> list[str]:
    return wl.names(db) if os.environ.get("CDC_MATRIX_ALL") == "1" else SUBSET[db]


CASES = [pytest.param(server, name, id=f"{server}-{name}") for server in SERVERS
         for name in _workloads("postgres" if server.startswith("pg") else "mariadb")]
_dsns: dict[str, str] = {}


def server_dsn(server: str) -> str:
    if server not in _dsns:
        script, env, variable = SERVERS[server]
        given = os.environ.get(variable)
        if given:
            _dsns[server] = given
        else:
            dsn, why = start_by_script(script, env, timeout=1200)
            if dsn is None:
                pytest.skip(f"{server} did not start ({script}): {why[-500:]}")
            _dsns[server] = dsn
    return _dsns[server]


@pytest.mark.conformance
@pytest.mark.parametrize(("server", "name"), CASES)
def test_same_events_as_debezium_on_newer_servers(server: str, name: str, tmp_path: Path,
                                                  connect_reader: ConnectReader) -> None:
    variant = "NO_LOG" if name.startswith("mariadb_") else "default"  # MariaDB 11.4 at its own defaults
    assert_same_as_debezium(name, variant, server_dsn(server), tmp_path, connect_reader, server)
