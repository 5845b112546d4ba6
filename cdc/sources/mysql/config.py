"""Options of the MySQL / MariaDB source, with Debezium's property names."""
from __future__ import annotations

from cdc.config import Option, positive, regular_expressions
from cdc.core.initial_statements import INITIAL_STATEMENTS_OPTION
from cdc.core.native_row import NATIVE_ROWS_OPTION
from cdc.core.options import HEARTBEAT_QUERY_OPTION, RETRY_OPTIONS, connection_options, snapshot_options
from cdc.core.signals import SIGNAL_OPTIONS

# Which GTID sources are captured, and whether a resume goes by GTID (cdc/sources/mysql/resume.py).
GTID_OPTIONS: tuple[Option, ...] = (
    Option("gtid.source.includes", list, None, "Regular expressions of the GTID sources whose transactions are "
           "captured, each matched whole, ignoring case: MySQL's source server uuid, MariaDB's domain-server "
           "(0-1 for GTIDs 0-1-n). A resume by GTID then requires only their transactions on the server (another "
           "source's may be missing there, as on a replica that does not replicate it). Not with "
           "gtid.source.excludes.", validator=regular_expressions),
    Option("gtid.source.excludes", list, None, "Regular expressions of the GTID sources whose transactions are "
           "not captured (as gtid.source.includes matches them).", validator=regular_expressions),
    Option("gtid.source.filter.dml.events", bool, True, "Leave out the row changes of transactions whose GTID "
           "source gtid.source.includes / excludes leave out (DDL is applied whatever its source); false: the "
           "lists only narrow what a resume by GTID requires."),
    Option("gtid.ignore.on.recovery", bool, False, "Resume by binlog file and position even where the server "
           "has GTIDs (then only on the server that wrote the offset: no failover); GTIDs are still recorded."),
)

MYSQL_OPTIONS: tuple[Option, ...] = (
    *connection_options(server="MySQL / MariaDB server", port=3306, user="root",
                        user_doc="User with SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE and REPLICATION CLIENT."),
    NATIVE_ROWS_OPTION,
    INITIAL_STATEMENTS_OPTION,
    Option("database.server.id", int, None, "Server id this client registers with when it reads the binlog; "
           "unique among the server's replicas (default: drawn at random from 5400-6400 at each start, as "
           "Debezium does, so that two pipelines do not push each other off the server).",
           validator=lambda value: None if 1 <= value <= 4294967295 else "must be from 1 to 4294967295"),
    Option("database.include.list", list, None, "Regular expressions of database names to capture.",
           validator=regular_expressions),
    Option("database.exclude.list", list, None, "Regular expressions of database names not to capture.",
           validator=regular_expressions),
    Option("database.ssl.mode", str, "preferred", "TLS to the server, with Debezium's values: disabled, preferred "
           "(TLS when the server offers it), required (TLS, the server's certificate not checked), verify_ca (its "
           "chain checked against database.ssl.truststore), verify_identity (and its host name); the MariaDB "
           "connector's disable, trust, verify-ca and verify-full are the same. Default: preferred, as Debezium's "
           "MySQL connector; disable with connector.class=io.debezium.connector.mariadb.MariaDbConnector, as its "
           "MariaDB connector.",
           choices=("disabled", "preferred", "required", "verify_ca", "verify_identity",
                    "disable", "trust", "verify-ca", "verify-full")),
    Option("database.ssl.truststore", str, None, "CA certificates the server's certificate is checked against under "
           "verify_ca and verify_identity: a PKCS12 truststore (Java's default type) or a PEM file (default: the "
           "system's CAs). A JKS store is refused with the keytool command that converts it."),
    Option("database.ssl.truststore.password", str, None, "Password of database.ssl.truststore.", secret=True),
    Option("database.ssl.keystore", str, None, "The client's key and certificate, for a server that asks for one "
           "(an account REQUIRE X509): a PKCS12 keystore or a PEM file holding both."),
    Option("database.ssl.keystore.password", str, None, "Password of database.ssl.keystore.", secret=True),
    Option("connect.timeout.ms", int, 30000, "Timeout of a connection attempt.", validator=positive),
    *snapshot_options(("initial", "initial_only", "no_data", "schema_only", "never", "when_needed", "recovery",
                       "schema_only_recovery", "always")),
    Option("snapshot.locking.mode", str, "minimal", "minimal: a global read lock while the schema is read (table "
           "locks when FLUSH TABLES WITH READ LOCK is refused); none: no lock (MariaDB's consistent snapshot "
           "still gives an exact binlog position, but DDL must not run during the snapshot).",
           choices=("minimal", "extended", "none")),
    Option("time.precision.mode", str, "adaptive_time_microseconds", "How temporal values are represented.",
           choices=("adaptive_time_microseconds", "adaptive", "connect")),
    Option("enable.time.adjuster", bool, True, "Read DATE and DATETIME years 0-99 as two-digit years, as MySQL "
           "does for two-digit input: 00-69 are 2000-2069, 70-99 are 1970-1999 (Debezium's default); false keeps "
           "them as they are stored."),
    Option("bigint.unsigned.handling.mode", str, "long",
           "BIGINT UNSIGNED as int64 (long, wraps past 2^63) or Decimal (precise).",
           choices=("long", "precise")),
    Option("include.query", bool, False, "Put the SQL statement of each row change in source.query "
           "(needs binlog_annotate_row_events on MariaDB, binlog_rows_query_log_events on MySQL)."),
    Option("include.schema.comments", bool, False, "Keep table and column comments in the schema and in events "
           "(tableChanges' comment, the fields' doc). On MariaDB they are kept whenever include.schema.changes is on, "
           "as Debezium 3.5's MariaDB connector does."),
    Option("schema.history.internal", str, "file", "Where the schema history is kept: file, kafka, or a plugin name "
           "(Debezium's class names are accepted)."),
    Option("schema.history.internal.file.filename", str, None,
           "Schema history file (default: next to the offsets, schema-history.jsonl)."),
    Option("schema.history.internal.skip.unparseable.ddl", bool, False,
           "Skip a DDL statement that cannot be parsed, with a warning, instead of stopping."),
    Option("schema.history.internal.store.only.captured.tables.ddl", bool, False,
           "Record only the DDL of captured tables (and of databases) in the schema history."),
    Option("schema.history.internal.store.only.captured.databases.ddl", bool, False,
           "Record only the DDL of captured databases in the schema history."),
    Option("read.only", bool, False, "Incremental snapshots without writing to the database: each chunk's "
           "watermarks are the binlog positions before and after it is read, not rows in the signal table "
           "(send signals through the file or Kafka channel)."),
    HEARTBEAT_QUERY_OPTION,
    *RETRY_OPTIONS,
    Option("binlog.heartbeat.interval.ms", int, 500, "How often the server sends a heartbeat on an idle binlog, "
           "so the pipeline flushes and stops promptly."),
    *GTID_OPTIONS,
) + SIGNAL_OPTIONS

