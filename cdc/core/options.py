"""Option blocks every source declares the same way: connection, retries, snapshot.

A source takes them with its own defaults and wording (the port, the privileges its user needs,
the snapshot modes it supports), so that each option still has one declaration, here.
"""
from __future__ import annotations

from cdc.config import Option, non_negative, positive, regular_expressions, tcp_port
from cdc.core.snapshot_selection import OVERRIDE_PATTERN, OVERRIDES

SNAPSHOT_MODE_DOCS = {
    "initial": "snapshot, then stream",
    "initial_only": "snapshot, then stop",
    "no_data": "structure only, then stream",
    "schema_only": "no_data's old name",
    "never": "stream from the oldest log, no snapshot",
    "when_needed": "as initial, and again when the stored position is no longer in the log",
    "always": "a snapshot at every start",
    "recovery": "rebuild a lost schema history from the current tables",
    "schema_only_recovery": "recovery's old name",
}


def connection_options(*, server: str, port: int, user: str, user_doc: str) -> tuple[Option, ...]:
    return (
        Option("database.hostname", str, "127.0.0.1", f"Host of the {server}."),
        Option("database.port", int, port, f"Port of the {server}.", validator=tcp_port),
        Option("database.user", str, user, user_doc),
        Option("database.password", str, None, "Password of database.user.", secret=True),
        Option("database.password.file", str, None, "A file holding the password of database.user, instead of "
               "database.password (Kafka Connect's ${file:...} and ${env:...} config providers work too)."),
    )


def _retries(value: int) -> str | None:
    return None if value >= -1 else "must be -1 (no limit), 0 (no retries) or more"


# Debezium's defaults: retriable failures (a lost connection, a server restarting) are retried without limit,
# the first time after 10 s; each attempt is logged with its cause.
RETRY_OPTIONS: tuple[Option, ...] = (
    Option("errors.max.retries", int, -1, "Attempts to (re)connect after a transient failure before giving up: "
           "-1 without limit (Debezium's default), 0 none.", validator=_retries),
    Option("retriable.restart.connector.wait.ms", int, 10000, "First pause before reconnecting; doubles each "
           "attempt, at most 30 s.", validator=non_negative),
)


def snapshot_options(modes: tuple[str, ...], *, fetch_size: int = 10240) -> tuple[Option, ...]:
    """``snapshot.mode`` narrowed to the ``modes`` a source supports (cdc.core.snapshot_mode decides)."""
    described = "; ".join(f"{m}: {SNAPSHOT_MODE_DOCS[m]}" for m in modes)
    return (
        Option("snapshot.mode", str, "initial", f"When to snapshot the captured tables ({described}).",
               choices=modes),
        Option("snapshot.fetch.size", int, fetch_size, "Rows per snapshot batch handed to the sink.",
               validator=positive),
        Option("snapshot.progress", str, "auto",
               "Show a progress bar during snapshots (auto: when stderr is a terminal).",
               choices=("auto", "bar", "log", "off")),
        *SNAPSHOT_SELECTION_OPTIONS,
    )


# What the initial snapshot reads, and when it and the stream start (cdc.core.snapshot_selection, cdc.core.delays).
SNAPSHOT_SELECTION_OPTIONS: tuple[Option, ...] = (
    Option("snapshot.include.collection.list", list, None, "Regular expressions of the captured tables whose rows "
           "the initial snapshot reads (schema.table; database.table on MySQL; database.schema.table on SQL "
           "Server); the others are streamed but not snapshotted. Default: every captured table.",
           validator=regular_expressions),
    Option(OVERRIDES, str, None, "Tables (comma-separated names, as snapshot.include.collection.list names "
           f"them) that the initial snapshot reads with the SELECT given in {OVERRIDES}.<table>, instead of "
           "every row."),
    Option(f"{OVERRIDES}.<table>", str, None, f"The SELECT the initial snapshot reads a table listed in {OVERRIDES} "
           "with (e.g. SELECT * FROM shop.orders WHERE deleted = 0); its columns are matched to the table's by "
           "name, one it leaves out is null.", pattern=OVERRIDE_PATTERN),
    Option("snapshot.delay.ms", int, 0, "Wait this long before an initial snapshot starts; a stop ends the wait.",
           validator=non_negative),
    Option("streaming.delay.ms", int, 0, "Wait this long before streaming after a snapshot of this run (its "
           "offset is stored meanwhile); a stop ends the wait.", validator=non_negative),
)

# Where tables live in schemas (PostgreSQL, SQL Server): the schemas whose tables are captured.
SCHEMA_FILTER_OPTIONS: tuple[Option, ...] = (
    Option("schema.include.list", list, None, "Regular expressions of schema names whose tables are captured (and "
           "table.include.list / table.exclude.list among them). Not with schema.exclude.list.",
           validator=regular_expressions),
    Option("schema.exclude.list", list, None, "Regular expressions of schema names whose tables are not captured.",
           validator=regular_expressions),
)


# Run where the source has a connection beside its log reader (PostgreSQL, MySQL/MariaDB).
HEARTBEAT_QUERY_OPTION = Option(
    "heartbeat.action.query", str, None,
    "SQL run on every heartbeat (heartbeat.interval.ms), e.g. an UPDATE of a heartbeat table so that the log "
    "moves on a quiet database and the stored position with it; a failure is logged and the stream goes on.")
