"""Options of the SQL Server source, with Debezium's property names.

The shared ones (``snapshot.mode``, ``decimal.handling.mode``, ``time.precision.mode``, ...) are
in ``cdc.config.CORE_OPTIONS``; the source narrows ``snapshot.mode`` to what it supports.
"""
from __future__ import annotations

from cdc.config import Option
from cdc.core.signals import SIGNAL_OPTIONS

SNAPSHOT_MODES = ("initial", "initial_only", "no_data", "when_needed")
ISOLATION_MODES = ("read_uncommitted", "read_committed", "repeatable_read", "snapshot", "exclusive")


def _port(value: int) -> str | None:
    return None if 0 < value < 65536 else "must be a TCP port (1-65535)"


def _non_negative(value: int) -> str | None:
    return None if value >= 0 else "must be 0 or more"


SQLSERVER_OPTIONS: tuple[Option, ...] = (
    Option("database.hostname", str, "127.0.0.1", "Host of the SQL Server instance."),
    Option("database.port", int, 1433, "TCP port of the SQL Server instance.", validator=_port),
    Option("database.instance", str, None, "Named instance (host\\instance) instead of a port."),
    Option("database.user", str, "sa", "Login; needs SELECT on the cdc schema (db_owner, or the capture role)."),
    Option("database.password", str, None, "Password of database.user.", secret=True),
    Option("database.names", list, None, "Databases to capture, comma-separated.", required=True),
    Option("database.encrypt", bool, True, "Encrypt the connection (ODBC Driver 18 defaults to yes)."),
    Option("database.trustServerCertificate", bool, False, "Accept the server's certificate without validating it."),
    Option("database.odbc.driver", str, None,
           "ODBC driver name; by default the newest installed of 'ODBC Driver 18/17 for SQL Server', then FreeTDS."),
    # No default value here: Debezium's query holds a '%' that help texts cannot show as is.
    Option("database.sqlserver.agent.status.query", str, None,
           "Query returning 1 when the SQL Server Agent runs ([#db] stands for the database name); "
           "unset: Debezium's query on sys.dm_server_services (needs VIEW SERVER STATE)."),
    Option("snapshot.isolation.mode", str, "repeatable_read", "Isolation and locking of the initial snapshot.",
           choices=ISOLATION_MODES),
    Option("snapshot.lock.timeout.ms", int, 10000, "Longest wait for the snapshot's table locks.",
           validator=_non_negative),
    Option("snapshot.fetch.size", int, 2000, "Rows per snapshot batch handed to the sink."),
    Option("poll.interval.ms", int, 500, "Pause between polls of the change tables when nothing is new.",
           validator=_non_negative),
    Option("data.query.mode", str, "direct",
           "Read change tables directly (direct) or through cdc.fn_cdc_get_all_changes_* (function).",
           choices=("direct", "function")),
    Option("transaction.end.idle.ms", int, 5000,
           "Emit a transaction's END after this long without a next transaction; 0: only when the next begins."),
    Option("errors.max.retries", int, 5, "Attempts to reconnect after a transient failure before giving up."),
    Option("retriable.restart.connector.wait.ms", int, 500, "First pause before reconnecting; doubles each attempt."),
) + SIGNAL_OPTIONS
