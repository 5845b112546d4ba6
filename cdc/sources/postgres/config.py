"""Options of the PostgreSQL source, with Debezium's property names."""
from __future__ import annotations

import re

from cdc.config import Config, Option, non_negative
from cdc.core.errors import ConfigError
from cdc.core.filters import NameFilter, patterns_problem
from cdc.core.initial_statements import INITIAL_STATEMENTS_OPTION
from cdc.core.native_row import NATIVE_ROWS_OPTION
from cdc.core.options import (
    HEARTBEAT_QUERY_OPTION,
    RETRY_OPTIONS,
    SCHEMA_FILTER_OPTIONS,
    connection_options,
    snapshot_options,
)
from cdc.core.signals import SIGNAL_OPTIONS
from cdc.sources.postgres import replica_identity
from cdc.sources.postgres.guards import GUARD_OPTIONS


def message_prefix_filter(config: Config) -> NameFilter:
    """Which logical decoding messages are emitted, by prefix (Debezium's LogicalDecodingMessageFilter:
    regular expressions matched whole, ignoring case; one of the two lists at most)."""
    include, exclude = config.get("message.prefix.include.list"), config.get("message.prefix.exclude.list")
    if include and exclude:  # Debezium's validation refuses the pair too
        raise ConfigError("message.prefix.include.list and message.prefix.exclude.list are both set",
                          fix="keep one of them")
    return NameFilter(include, exclude)


def _slot_name(value: str) -> str | None:
    """PostgreSQL's rule for replication slot names."""
    if not re.fullmatch(r"[a-z0-9_]{1,63}", value):
        return "a slot name has 1 to 63 lower case letters, digits and underscores"
    return None


POSTGRES_OPTIONS: tuple[Option, ...] = (
    *connection_options(server="PostgreSQL server", port=5432, user="postgres",
                        user_doc="User with the REPLICATION attribute (or superuser)."),
    Option("database.dbname", str, "postgres", "Database to capture."),
    INITIAL_STATEMENTS_OPTION,
    *SCHEMA_FILTER_OPTIONS,
    Option("database.sslmode", str, "prefer", "TLS to the server, as pgjdbc's sslmode: disable, allow, prefer "
           "(TLS when the server offers it), require (TLS, the server's certificate not checked), verify-ca (its "
           "chain checked against database.sslrootcert), verify-full (and its host name).",
           choices=("disable", "allow", "prefer", "require", "verify-ca", "verify-full")),
    Option("database.sslrootcert", str, None, "CA certificate(s) the server's certificate is checked against under "
           "verify-ca and verify-full (PEM or DER; default: ~/.postgresql/root.crt)."),
    Option("database.sslcert", str, None, "Client certificate, for a server that asks for one (PEM or DER)."),
    Option("database.sslkey", str, None, "Private key of database.sslcert: PEM, PKCS-8 DER (.pk8), or a PKCS12 "
           "store (.p12, .pfx) that holds the certificate too."),
    Option("database.sslpassword", str, None, "Password of database.sslkey.", secret=True),
    Option("database.tcpKeepAlive", bool, True, "TCP keep-alives on the connections (libpq's keepalives)."),
    Option("plugin.name", str, "pgoutput", "Logical decoding plugin; only pgoutput is supported.",
           choices=("pgoutput",)),
    Option("slot.name", str, "debezium", "Name of the logical replication slot.", validator=_slot_name),
    Option("slot.drop.on.stop", bool, False, "Drop the slot when the pipeline stops cleanly (tests, demos)."),
    Option("slot.failover", bool, False, "Create the slot as a failover slot (PostgreSQL 17+; this pipeline's "
           "existing slot is altered): standbys with sync_replication_slots=on keep a copy of it, and after a "
           "standby's promotion the pipeline streams on from that copy, without a new snapshot. Warned while the "
           "primary lists no standby in synchronized_standby_slots; refused on older servers and on a standby."),
    Option("slot.takeover", bool, False, "Use a slot that exists although this pipeline has no stored offset (another "
           "consumer's, such as a paused Debezium connector's, or one whose offsets were lost): dropped and "
           "created again for a snapshot, else streamed from its position. Its other consumer loses its place. "
           "Without it such a slot is refused."),
    NATIVE_ROWS_OPTION,
    Option("slot.max.retries", int, 6, "Attempts to acquire a slot that is still active for another process.",
           validator=non_negative),
    Option("slot.retry.delay.ms", int, 2000, "Pause between those attempts."),
    Option("publication.name", str, "dbz_publication", "Name of the publication."),
    Option("publication.autocreate.mode", str, "all_tables", "Create the publication when missing.",
           choices=("all_tables", "filtered", "disabled")),
    Option("publish.via.partition.root", bool, False, "Create the publication WITH (publish_via_partition_root): "
           "the changes of a partitioned table's partitions arrive as the partitioned table's, on its topic (set on "
           "this pipeline's own publication too when turned on later). The initial snapshot reads the partitioned "
           "table and each partition, as Debezium's does."),
    Option("replica.identity.autoset.values", str, None, "At each start, set the REPLICA IDENTITY of captured tables "
           "where it differs: comma-separated <schema.table regex>:<DEFAULT|FULL|NOTHING|INDEX index_name> (each "
           "regex matched whole, ignoring case; one entry per table). Tables the pipeline does not capture are never "
           "changed. An index the table lacks, two entries for one table, or an ALTER the server refuses (the user "
           "must own the table) stop the start with the fix.", validator=replica_identity.problem),
    Option("publication.takeover", bool, False, "With publication.autocreate.mode=filtered, change the table list "
           "of a publication that exists although this pipeline has no stored offset (another consumer's). Without "
           "it such a publication is used as it is when it holds every captured table, and refused otherwise."),
    Option("status.update.interval.ms", int, 10000, "Most time between standby status updates to the server.",
           validator=non_negative),
    Option("transaction.id.mode", str, "transaction", "Transaction ids of provide.transaction.metadata: one "
           "'txid:commitLSN' for a whole transaction (transaction), or 'txid:LSN' with each event's own LSN as "
           "Debezium 3.6 writes them, so that BEGIN, the events and END carry different ids (debezium).",
           choices=("transaction", "debezium")),
    Option("hstore.handling.mode", str, "json", "hstore values as a JSON object in a string (json) or a map.",
           choices=("json", "map")),
    Option("message.prefix.include.list", list, None, "Regular expressions of the prefixes of the logical decoding "
           "messages (pg_logical_emit_message) emitted as op 'm' events, each matched whole, ignoring case; other "
           "messages are skipped. Not with message.prefix.exclude.list.", validator=patterns_problem),
    Option("message.prefix.exclude.list", list, None, "Regular expressions of the prefixes of the logical decoding "
           "messages skipped (as message.prefix.include.list matches them); the others are emitted.",
           validator=patterns_problem),
    Option("money.fraction.digits", int, 2, "Scale of money values under decimal.handling.mode=precise (rounded "
           "half up); double and string give the value as the server prints it.", validator=non_negative),
    Option("include.unknown.datatypes", bool, False, "Columns of types without a Debezium mapping (multiranges): "
           "left out of events (false, as Debezium), or their text form (true)."),
    Option("unavailable.value.placeholder", str, "__debezium_unavailable_value",
           "Value given to unchanged TOASTed columns that the server did not send."),
    Option("read.only", bool, False, "Incremental snapshots without writing to the database: each chunk is "
           "read in a REPEATABLE READ transaction whose snapshot and WAL position bound its window, instead of "
           "watermark rows in the signal table (send signals through the file or Kafka channel). PostgreSQL 13+."),
    HEARTBEAT_QUERY_OPTION,
    *RETRY_OPTIONS,
    *snapshot_options(("initial", "initial_only", "no_data", "schema_only", "never", "when_needed", "always")),
) + SIGNAL_OPTIONS + GUARD_OPTIONS  # the slot guards: the source's own (cdc.core.source.Guarded)
