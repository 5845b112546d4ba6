"""One config model for every source and sink, using Debezium's property names.

Each option is declared once (:class:`Option`: name, type, default, doc, choices, secret);
the CLI's help, the docs' option table and validation all come from those declarations.
A config is a flat mapping of property names (``database.hostname``, ``topic.prefix``, ...) to
values, read from TOML, a ``.properties`` file or the command line. Validation reports every
problem at once; unknown names are a warning with the closest known name, as Kafka Connect
users are used to typos being tolerated but want to hear about them.
"""
from __future__ import annotations

import difflib
import logging
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc.core.columns import COLUMN_PATTERNS
from cdc.core.errors import ConfigError
from cdc.core.filters import parse_key_columns, patterns_problem
from cdc.core.java_regex import java_regex
from cdc.core.option_surface import Surface, refusals
from cdc.core.topics import (
    HEARTBEAT_PREFIX,
    KEY_FIELD_NAME,
    strategy_problem,
    topic_characters_problem,
    topic_name_problem,
)

log = logging.getLogger(__name__)

SECRET_MASK = "********"
FIX = "correct the properties named above (in the config file, or on the command line with --set NAME=VALUE)"


@dataclass(frozen=True)
class Option:
    name: str
    type: type = str
    default: Any = None
    doc: str = ""
    choices: tuple[str, ...] | None = None
    secret: bool = False
    required: bool = False
    validator: Callable[[Any], str | None] | None = None  # returns a problem or None
    # A family of properties (Debezium's column.mask.with.(d+).chars): ``name`` is Debezium's spelling of
    # it, ``pattern`` what the properties' names match; each of them is checked as this option's value.
    pattern: str | None = None

    def names(self, name: str) -> bool:
        """Whether property ``name`` is this option (or one of its family)."""
        return name == self.name or (self.pattern is not None and re.fullmatch(self.pattern, name) is not None)

    def parse(self, raw: Any) -> Any:
        if raw is None:
            return None
        if self.type is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise ValueError(f"expected true or false, got {raw!r}")
        if self.type is int:
            if isinstance(raw, (bool, float)):
                raise ValueError(f"expected a whole number, got {raw!r}")
            try:
                return int(str(raw).strip())
            except ValueError:
                raise ValueError(f"expected a whole number, got {raw!r}") from None
        if self.type is float:
            try:
                return float(str(raw).strip())
            except ValueError:
                raise ValueError(f"expected a number, got {raw!r}") from None
        if self.type is list:
            if isinstance(raw, (list, tuple)):
                return [str(v).strip() for v in raw if str(v).strip()]
            return [part.strip() for part in str(raw).split(",") if part.strip()]
        value = str(raw).strip() if not isinstance(raw, str) else raw
        if self.choices is not None:
            value = value.strip().lower()
        return value

    def problem(self, raw: Any, name: str | None = None) -> str | None:
        """What is wrong with ``raw`` as this option's value (and what to put instead), or None; ``name``: the
        property's, for an option of a family."""
        name = name or self.name
        if raw is None or raw == "":
            return f"{name} is required but not set: {self.doc}" if self.required else None
        try:
            value = self.parse(raw)
        except ValueError as exc:
            return f"{name}={raw!r}: {exc}"
        if self.choices is not None and value not in self.choices:
            close = difflib.get_close_matches(str(value), self.choices, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return f"{name}={raw!r} is not one of {', '.join(self.choices)}{hint}"
        if self.validator is not None and (problem := self.validator(value)):
            return f"{name}={raw!r}: {problem}"
        return None


@dataclass
class Config:
    """Raw properties plus the options declared by the parts in use."""

    properties: dict[str, Any]
    options: dict[str, Option] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from cdc.config_providers import resolve

        self.properties = resolve(self.properties)  # ${file:...}, ${env:...}, database.password.file

    def declare(self, options: Iterable[Option]) -> Config:
        for option in options:
            self.options[option.name] = option
        return self

    def get(self, name: str) -> Any:
        option = self.options.get(name)
        raw = self.properties.get(name)
        if option is None:
            return raw
        if raw is None or raw == "":
            return option.default
        try:
            return option.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"invalid value for {name}: {exc}", fix=FIX) from None

    def pattern_options(self) -> list[Option]:
        return [o for o in self.options.values() if o.pattern is not None]

    def matching(self, option: Option) -> list[tuple[str, Any]]:
        """The properties of a pattern option's family, with their raw values, in the configuration's order."""
        return [(name, value) for name, value in self.properties.items() if option.names(name)]

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def with_prefix(self, prefix: str) -> dict[str, Any]:
        """Pass-through properties such as ``producer.*``, with the prefix removed."""
        return {k[len(prefix):]: v for k, v in self.properties.items() if k.startswith(prefix)}

    def validate(self, passthrough_prefixes: tuple[str, ...] = (), surface: Surface | None = None) -> None:
        """Raise one ConfigError listing every problem; warn about unknown property names. Kafka
        Connect's own worker and connector settings, which a Debezium ``.properties`` file carries
        (``tasks.max``, ``errors.tolerance``...), are no mistake: listed once, at INFO.

        ``surface``: the Debezium connectors the source stands in for. An option of theirs that cdc does
        not implement is refused here, before anything starts (cdc.core.option_surface), never ignored."""
        problems: list[str] = []
        for name, option in self.options.items():
            problem = option.problem(self.properties.get(name))
            if problem:
                problems.append(problem)
        for option in self.pattern_options():
            problems += [p for name, value in self.matching(option) if (p := option.problem(value, name))]
        if problems:
            raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(problems), fix=FIX)
        mapped: list[str] = []
        declared = [*self.options, *(n for n in self.properties if any(o.names(n) for o in self.pattern_options()))]
        if surface is not None:
            refused, mapped = refusals(surface, self.properties, declared)
            if refused:
                raise ConfigError(
                    f"options of Debezium's {surface.title} connector that cdc does not implement:\n  - "
                    + "\n  - ".join(refused),
                    fix="remove them (or set them to Debezium's default) to run without what they ask for; "
                        "docs/options.md lists what cdc does with each Debezium option")
            if mapped:
                log.info("Debezium options that tune Kafka Connect's JVM, accepted (docs/options.md says what cdc "
                         "does instead): %s", ", ".join(sorted(mapped)))
        known = list(self.options)
        connect_only = []
        for name in self.properties:
            if name in declared or name in mapped or name.startswith(passthrough_prefixes):
                continue
            if surface is not None and surface.lookup(name) is not None:
                continue  # a Debezium option at its default: accepted above
            if name in CONNECT_SETTINGS or name.startswith(CONNECT_PREFIXES):
                connect_only.append(name)
                continue
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            log.warning("unknown property %r is ignored%s", name, hint)
        if connect_only:
            log.info("Kafka Connect settings that have no effect in cdc: %s", ", ".join(sorted(connect_only)))

    def masked(self) -> dict[str, Any]:
        """The properties with every secret replaced, safe to print or log."""
        out = {}
        custom = self._sanitize_pattern()
        for name, value in sorted(self.properties.items()):
            option = self.options.get(name)
            secret = (option is not None and option.secret) or _looks_secret(name) \
                or (custom is not None and custom.fullmatch(name) is not None)
            out[name] = SECRET_MASK if secret and value not in (None, "") else value
        return out

    def _sanitize_pattern(self) -> re.Pattern[str] | None:
        """custom.sanitize.pattern: more property names whose values are never shown (beside cdc's own rule)."""
        raw = self.properties.get("custom.sanitize.pattern")
        try:
            return re.compile(str(raw), re.IGNORECASE) if raw else None
        except re.error:
            return re.compile(".*")  # an invalid pattern is reported by validate(); until then hide everything

    def __repr__(self) -> str:  # never print a password by accident
        return f"Config({self.masked()!r})"


# Kafka Connect's worker and connector settings (and Debezium's engine ones) that a Debezium
# configuration carries and that mean nothing to cdc: one process, one task, its own REST-free
# operation. Accepted without a warning so that such a file runs unchanged.
CONNECT_SETTINGS = frozenset((
    "tasks.max", "config.action.reload", "group.id", "plugin.path", "plugin.discovery", "rest.port", "listeners",
    "rest.advertised.host.name", "rest.advertised.port", "config.storage.topic", "config.storage.replication.factor",
    "status.storage.topic", "status.storage.replication.factor", "status.storage.partitions",
    "offset.storage.partitions", "offset.flush.timeout.ms", "offset.commit.policy", "internal.key.converter",
    "internal.value.converter", "key.converter", "value.converter", "header.converter", "errors.tolerance",
    "errors.log.enable", "errors.log.include.messages", "errors.retry.timeout", "errors.retry.delay.max.ms",
    "task.shutdown.graceful.timeout.ms", "scheduled.rebalance.max.delay.ms", "connector.client.config.override.policy",
    "exactly.once.source.support", "transaction.boundary", "transaction.boundary.interval.ms",
    "offsets.storage.topic", "topic.tracking.allow.reset", "topic.tracking.enable", "predicates",
    "connector.class",
))
CONNECT_PREFIXES = ("errors.deadletterqueue.", "admin.", "consumer.override.", "producer.override.",
                    "admin.override.", "internal.key.converter.", "internal.value.converter.")


# A property whose name says it holds a secret, declared or not (a misspelled database.pasword, a
# client's ssl.keystore.key): its value is never shown.
_SECRET_NAME = re.compile(r"pass|pasw|pwd|secret|token|credential|jaas|private|user\.info|api[._-]?key|"
                          r"connection\.?string|(^|[._])key$|keystore\.(key|certificate)", re.I)


def _looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


_NOT_CONFIG = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML"}


def load_file(path: str | Path) -> dict[str, Any]:
    """Read a TOML file (flat or dotted tables) or a Java ``.properties`` file (UTF-8)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _NOT_CONFIG:
        raise ConfigError(f"config file {path} is {_NOT_CONFIG[suffix]}, which cdc does not read",
                          fix="write it as TOML (name.toml) or as Java properties (name.properties, key=value lines)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}", fix=_read_fix(path, exc)) from None
    try:
        text = raw.decode("utf-8-sig")  # a byte order mark, as some editors write, is no error
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(
            f"config file {path} is not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} is no UTF-8 character",
            fix=f"save it as UTF-8 (e.g. iconv -f latin1 -t utf-8 {path} > utf8{path.suffix}), "
                "or replace that character",
        ) from None
    if suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                f"{path} is not valid TOML: {exc}",
                fix="correct that line: TOML strings need quotes (topic.prefix = \"shop\"); a file of plain "
                    "key=value lines is a .properties file, so name it that way",
            ) from None
        return _flatten(data)
    return parse_properties(text, str(path))


def _read_fix(path: Path, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"check the path (relative paths start at {Path.cwd()})"
    if isinstance(exc, IsADirectoryError):
        return "give the path of the config file itself, not of its folder"
    if isinstance(exc, PermissionError):
        return "make the file readable by the user running cdc"
    return "check that the file can be read"


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def parse_properties(text: str, origin: str = "properties") -> dict[str, str]:
    """Java properties: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuations.

    A line with no name before its ``=`` or ``:``, or an INI/TOML section header, is an error naming
    ``origin`` and the line: Java would read something, but not what the writer meant."""
    out: dict[str, str] = {}
    logical = ""
    first = 0
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        if not logical:
            first = number
        if stripped.endswith("\\") and not stripped.endswith("\\\\") and number < len(lines):
            logical += stripped[:-1]
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            stripped = stripped[:-1]  # a continuation on the last line continues with nothing
        logical += stripped
        if not logical:
            continue
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)", logical)
        if logical[0] in "=:":
            raise ConfigError(f"{origin} line {first}: {logical!r} has no property name before {logical[0]!r}",
                              fix="write it as name=value, or start the line with # to make it a comment")
        if logical.startswith("[") and logical.endswith("]"):
            raise ConfigError(f"{origin} line {first}: {logical!r} is a section header, which a .properties file "
                              f"does not have",
                              fix="write full names (database.hostname=...) without sections, or write the file as "
                                  "TOML and name it .toml")
        name, value = (match.group(1), match.group(2).replace("\\\\", "\\")) if match else (logical, "")
        if name in out and out[name] != value:
            log.warning("%s line %d sets %s again: the last value is used (as Java's Properties does)",
                        origin, first, name)
        out[name] = value
        logical = ""
    return out


# ---- options shared by every source ---------------------------------------------------------

# Validators shared by the option declarations of every part (each returns a problem or None).

def positive(value: int) -> str | None:
    return None if value > 0 else "must be greater than 0"


def non_negative(value: int) -> str | None:
    return None if value >= 0 else "must be 0 or more"


def tcp_port(value: int) -> str | None:  # for the sources' database.port
    return None if 0 < value < 65536 else "must be a TCP port (1-65535)"


def regular_expressions(value: list[str]) -> str | None:
    return patterns_problem(value)


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
