"""Options of the SQL Server source, with Debezium's property names.

The shared ones (``snapshot.mode``, ``decimal.handling.mode``, ``time.precision.mode``, ...) are
in ``cdc.config.CORE_OPTIONS``; the source narrows ``snapshot.mode`` to what it supports.
"""
from __future__ import annotations

from cdc.config import Option, non_negative
from cdc.core.options import RETRY_OPTIONS, SCHEMA_FILTER_OPTIONS, connection_options, snapshot_options
from cdc.core.signals import SIGNAL_OPTIONS

# Debezium's SQL Server connector's modes (cdc.core.snapshot_mode decides), schema_only its old name of
# no_data; not its configuration_based and custom (Java snapshotter SPI), nor never (no SQL Server mode).
SNAPSHOT_MODES = ("initial", "initial_only", "no_data", "schema_only", "when_needed", "always", "recovery")
ISOLATION_MODES = ("read_uncommitted", "read_committed", "repeatable_read", "snapshot", "exclusive")


SQLSERVER_OPTIONS: tuple[Option, ...] = (
    *connection_options(server="SQL Server instance", port=1433, user="sa",
                        user_doc="Login; needs SELECT on the cdc schema (db_owner, or the capture role)."),
    Option("database.instance", str, None, "Named instance (host\\instance) instead of a port."),
    Option("database.names", list, None, "Databases to capture, comma-separated.", required=True),
    *SCHEMA_FILTER_OPTIONS,
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
           validator=non_negative),
    *snapshot_options(SNAPSHOT_MODES, fetch_size=2000),
    Option("poll.interval.ms", int, 500, "Pause between polls of the change tables when nothing is new.",
           validator=non_negative),
    Option("data.query.mode", str, "direct",
           "Read change tables directly (direct) or through cdc.fn_cdc_get_all_changes_* (function).",
           choices=("direct", "function")),
    Option("transaction.end.idle.ms", int, 5000,
           "Emit a transaction's END after this long without a next transaction; 0: only when the next begins."),
    *RETRY_OPTIONS,
) + SIGNAL_OPTIONS
