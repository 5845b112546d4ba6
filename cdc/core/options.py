"""The options every pipeline declares (CORE_OPTIONS, with Debezium's topic naming: TOPIC_OPTIONS), and
the option blocks every source declares the same way: connection, retries, snapshot.

A source takes the blocks with its own defaults and wording (the port, the privileges its user needs,
the snapshot modes it supports), so that each option still has one declaration, here.
"""
from __future__ import annotations

import re

from cdc.core.columns import COLUMN_PATTERNS
from cdc.core.config import Option, non_negative, positive, regular_expressions, tcp_port
from cdc.core.filters import parse_key_columns
from cdc.core.java_regex import java_regex
from cdc.core.snapshot_selection import OVERRIDE_PATTERN, OVERRIDES
from cdc.core.topics import (
    HEARTBEAT_PREFIX,
    KEY_FIELD_NAME,
    strategy_problem,
    topic_characters_problem,
    topic_name_problem,
)

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


# ---- options every pipeline declares ---------------------------------------------------------

def _regular_expression(value: str) -> str | None:
    try:
        re.compile(value)
    except re.error as exc:
        return f"is not a valid regular expression ({exc.msg} at position {exc.pos})"
    return None


def _key_columns(value: str) -> str | None:
    try:
        parse_key_columns(value)
    except ValueError as exc:
        return str(exc)
    return None


# A table's topic is <prefix>.<schema>.<table>, at most 249 characters for Kafka: a prefix past this leaves
# too little room for the names after it.
TOPIC_PREFIX_MAX_LENGTH = 200


def _topic_prefix(value: str) -> str | None:
    if len(value) > TOPIC_PREFIX_MAX_LENGTH:
        return (f"is {len(value)} characters long; a topic prefix may have at most {TOPIC_PREFIX_MAX_LENGTH}, so "
                "that <prefix>.<schema>.<table> stays within Kafka's 249 characters (and a file name's 255 bytes)")
    return topic_name_problem(value, "a topic prefix (it starts every topic name)")


def _topic(value: str) -> str | None:
    return topic_name_problem(value)


def _heartbeat_prefix(value: str) -> str | None:
    return topic_name_problem(value, "the start of the heartbeat topic name")


def _topic_part(value: str) -> str | None:
    """A part of topic names (topic.delimiter, topic.transaction): Debezium's validateTopicName."""
    return topic_characters_problem(value, "a part of topic names")


def _java_regular_expression(value: str) -> str | None:
    try:
        java_regex(value)
    except re.error as exc:
        return f"is not a valid regular expression ({exc.msg} at position {exc.pos})"
    return None


def _notification_channels(value: list[str]) -> str | None:
    unknown = [c for c in value if c not in ("sink", "log")]
    if unknown:
        jmx = " (jmx: Debezium's JMX beans, which cdc does not have)" if "jmx" in unknown else ""
        return f"unknown channel(s) {', '.join(unknown)}{jmx}; cdc has sink and log"
    return None


_OPERATIONS = ("c", "u", "d", "t", "none")


def _operations(value: list[str]) -> str | None:
    unknown = [op for op in value if op.lower() not in _OPERATIONS]
    return f"unknown operation(s) {', '.join(map(repr, unknown))}; use c, u, d, t or none" if unknown else None


# Debezium's topic naming (cdc.core.topics.TopicNaming reads them).
TOPIC_OPTIONS: tuple[Option, ...] = (
    Option("topic.naming.strategy", str, None, "How topics are named, as Debezium's class of that name: "
           "io.debezium.schema.DefaultTopicNamingStrategy (<prefix>.<database>.<table>), SchemaTopicNamingStrategy "
           "(<prefix>.<schema>.<table>; SQL Server: <prefix>.<database>.<schema>.<table>), their Unicode variants "
           "(DefaultUnicodeTopicNamingStrategy, SchemaUnicodeTopicNamingStrategy: characters Kafka refuses, and _, "
           "as _uXXXX instead of _) and Regex variants (DefaultRegexTopicNamingStrategy, "
           "SchemaRegexTopicNamingStrategy: topic.regex renames topics, topic.key.* adds a field to keys). Key, value "
           "and envelope schemas are named after the topic. Default: SchemaTopicNamingStrategy (PostgreSQL, SQL "
           "Server), DefaultTopicNamingStrategy (MySQL, MariaDB).", validator=strategy_problem),
    Option("topic.delimiter", str, ".", "What joins the parts of topic names (the prefix, database, schema, table; "
           "the transaction and heartbeat topics' parts).", validator=_topic_part),
    Option("topic.transaction", str, "transaction", "The transaction topic's name after <topic.prefix>"
           "<topic.delimiter> (provide.transaction.metadata).", validator=_topic_part),
    Option("topic.heartbeat.prefix", str, HEARTBEAT_PREFIX, "The heartbeat topic is <topic.heartbeat.prefix>"
           "<topic.delimiter><topic.prefix>.", validator=_heartbeat_prefix),
    Option("topic.heartbeat.name", str, None, "The heartbeat topic's whole name (wins over topic.heartbeat.prefix), "
           "so that several pipelines can share one.", validator=_topic),
    Option("topic.regex", str, None, "Regex strategies: a Java regular expression; a table topic it matches whole "
           "is renamed to topic.replacement.", validator=_java_regular_expression),
    Option("topic.replacement", str, None, "Regex strategies: the new topic name ($1... the regex's groups)."),
    Option("topic.key.enforce.uniqueness", bool, True, "Regex strategies: add a field naming the original topic to "
           "every key (keyless tables get a key of that field), so that tables sharing a topic keep distinct keys."),
    Option("topic.key.field.name", str, KEY_FIELD_NAME, "Regex strategies: the name of that key field."),
    Option("topic.key.field.regex", str, None, "Regex strategies: a Java regular expression; where it matches the "
           "original topic whole, the key field holds topic.key.field.replacement instead of the topic.",
           validator=_java_regular_expression),
    Option("topic.key.field.replacement", str, None, "Regex strategies: the key field's value where "
           "topic.key.field.regex matches ($1... its groups)."),
)

CORE_OPTIONS: tuple[Option, ...] = (
    Option("name", str, "cdc", "Logical name of this pipeline; the key of its stored offsets."),
    Option("custom.sanitize.pattern", str, None, "A regular expression of property names whose values are never "
           "printed or logged, beside those cdc always hides (passwords, secrets, keys, tokens, credentials, JAAS "
           "configs: Debezium's default pattern and more).", validator=_regular_expression),
    Option("offset.takeover", bool, False, "Resume from a stored offset that cdc did not write (a Debezium "
           "connector's, in its offsets file or topic under the same name): from then on that connector's position "
           "moves with cdc's. Set it only to switch from Debezium, with that connector stopped for good."),
    Option("topic.prefix", str, None, "Prefix of every topic name (Debezium's logical server name).", required=True,
           validator=_topic_prefix),
    Option("table.include.list", list, None, "Regular expressions of fully-qualified table names to capture.",
           validator=regular_expressions),
    Option("table.exclude.list", list, None, "Regular expressions of fully-qualified table names not to capture.",
           validator=regular_expressions),
    Option("column.include.list", list, None,
           "Regular expressions of fully-qualified column names (schema.table.column; database.table.column on "
           "MySQL) events hold, and no others; key columns stay in keys. Not with column.exclude.list.",
           validator=regular_expressions),
    Option("column.exclude.list", list, None,
           "Regular expressions of fully-qualified column names to leave out of events; key columns stay in keys.",
           validator=regular_expressions),
    Option("column.mask.with.(d+).chars", list, None,
           "column.mask.with.N.chars: regular expressions of character columns whose every value (NULL included) "
           "becomes N asterisks; the field schema gets the parameter masked=true.",
           validator=regular_expressions, pattern=COLUMN_PATTERNS["mask"]),
    Option("column.mask.hash.([^.]+).with.salt.(.+)", list, None,
           "column.mask.hash.ALGORITHM.with.salt.SALT (and column.mask.hash.v2.ALGORITHM.with.salt.SALT): regular "
           "expressions of character columns whose values become the hex digest of SALT and the value (v1: of "
           "the value as Java serializes it, v2: of its UTF-8 bytes), cut to the column's length; ALGORITHM is a "
           "Java MessageDigest name (SHA-256, SHA-512, MD5, SHA3-256...).",
           validator=regular_expressions, pattern=COLUMN_PATTERNS["hash"]),
    Option("column.truncate.to.(d+).chars", list, None,
           "column.truncate.to.N.chars: regular expressions of columns whose text (or binary) values are cut to N "
           "characters (bytes) where the column may be longer; the field schema gets truncateLength=N.",
           validator=regular_expressions, pattern=COLUMN_PATTERNS["truncate"]),
    Option("column.propagate.source.type", list, None,
           "Regular expressions of fully-qualified column names whose field schemas carry the column's source type "
           "(__debezium.source.column.type, .length, .scale, .name).", validator=regular_expressions),
    Option("datatype.propagate.source.type", list, None,
           "The same by type: regular expressions of table.TYPENAME (e.g. .+\\.VARCHAR, matched without regard to "
           "case).", validator=regular_expressions),
    Option("field.name.adjustment.mode", str, "none", "Field names Avro rejects: kept (none), their invalid "
           "characters as _ (avro), or as _uXXXX (avro_unicode).", choices=("none", "avro", "avro_unicode")),
    Option("schema.name.adjustment.mode", str, "none", "Schema names Avro rejects (a table named order-items): "
           "kept (none), their invalid characters as _ (avro), or as _uXXXX (avro_unicode).",
           choices=("none", "avro", "avro_unicode")),
    Option("message.key.columns", str, None, "Key columns per table: 'schema.table:col1,col2;schema.table2:col'.",
           validator=_key_columns),
    Option("snapshot.mode", str, "initial", "When to snapshot the captured tables.",
           choices=("initial", "never", "initial_only", "when_needed", "no_data", "always")),
    Option("tombstones.on.delete", bool, True, "Follow each delete event with a tombstone (null value)."),
    Option("skipped.operations", list, ["t"], "Operations not to emit: c, u, d, t (truncate), or none. As in "
           "Debezium, truncates are skipped unless this says otherwise.", validator=_operations),
    Option("event.converting.failure.handling.mode", str, "warn", "A column value that cannot be converted: null "
           "and a warning (warn), null (skip), or stop (fail).", choices=("fail", "warn", "skip")),
    Option("skip.messages.without.change", bool, False, "Leave out an update whose before and after images hold "
           "the same values in the columns events carry (column.include.list / column.exclude.list); needs "
           "before images (PostgreSQL: REPLICA IDENTITY FULL)."),
    Option("notification.enabled.channels", list, None, "Where Debezium's notifications about the connector's "
           "progress (the initial snapshot: started, each table, completed, or skipped) go: sink (records on "
           "notification.sink.topic.name), log.", validator=_notification_channels),
    Option("notification.sink.topic.name", str, None, "The topic of the sink channel's notification records.",
           validator=_topic),
    Option("converters", list, None, "Custom converters, by name, each with its <name>.type (an entry point of "
           "cdc.custom_converters, such as Debezium's io.debezium.connector.binlog.converters."
           "TinyIntOneToBooleanConverter, or package.module:Class) and its own <name>.* properties: they choose the "
           "schema and values of the columns they claim (docs/plugins.md)."),
    Option("post.processors", list, None, "Debezium's post processors, by name, each with its <name>.type: "
           "io.debezium.processors.reselect.ReselectColumnsPostProcessor reads columns again by key where the event "
           "has the unavailable-value placeholder or null (<name>.reselect.columns.include.list, ...)."),
    Option("provide.transaction.metadata", bool, False,
           "Emit BEGIN/END events and a transaction block in every event."),
    Option("transaction.topic", str, None, "The whole name of the transaction events' topic (cdc's own option; "
           "wins over topic.transaction). Default: <topic.prefix><topic.delimiter><topic.transaction>.",
           validator=_topic),
    Option("include.schema.changes", bool, True, "Emit schema change events on the <topic.prefix> topic."),
    Option("decimal.handling.mode", str, "precise", "How DECIMAL/NUMERIC values are represented.",
           choices=("precise", "double", "string")),
    Option("time.precision.mode", str, "adaptive", "How temporal values are represented.",
           choices=("adaptive", "adaptive_time_microseconds", "connect")),
    Option("binary.handling.mode", str, "bytes", "How binary values are represented.",
           choices=("bytes", "base64", "base64-url-safe", "hex")),
    Option("interval.handling.mode", str, "numeric", "How INTERVAL values are represented.",
           choices=("numeric", "string")),
    Option("heartbeat.interval.ms", int, 0,
           "Emit a heartbeat (and confirm the position) this often when idle; 0 disables.",
           validator=non_negative),
    Option("heartbeat.topics.prefix", str, HEARTBEAT_PREFIX, "Prefix of the heartbeat topic, Debezium 1.x's name "
           "for topic.heartbeat.prefix, which wins when both are set (Debezium 3 ignores this one; cdc honours it "
           "alone).", validator=_heartbeat_prefix),
    *TOPIC_OPTIONS,
    Option("extended.headers.enabled", bool, True, "Put Debezium's __debezium.context.* headers (connector name, "
           "logical name, task id, run id) on every record."),
    Option("key.converter.schemas.enable", bool, True, "Include the schema in every key (JSON converter)."),
    Option("value.converter.schemas.enable", bool, True, "Include the schema in every value (JSON converter)."),
    Option("offset.storage", str, "file", "Where source offsets are stored: file (cdc's JSON), kafka, a plugin name, "
           "or Kafka Connect's class: org.apache.kafka.connect.storage.FileOffsetBackingStore (Debezium's offsets "
           "file, read and written in its own format) or ...KafkaOffsetBackingStore (kafka)."),
    Option("offset.storage.file.filename", str, None,
           "Offset file (default: <output>/offsets.json or ./cdc-offsets.json)."),
    Option("offset.flush.interval.ms", int, 1000, "How often acknowledged offsets are stored.", validator=positive),
    Option("max.batch.size", int, 2048, "Most events handed to the sink at once.", validator=positive),
    Option("sink", str, "files", "Sink plugin name (files, stdout, kafka, ...)."),
)
