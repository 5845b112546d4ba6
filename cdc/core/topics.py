"""Topic and schema names: Debezium's topic naming strategies (``topic.naming.strategy``), the one
place that names every topic cdc writes (tables', schema changes', transactions', heartbeats').

Debezium's six strategies (``io.debezium.schema.*``, read from its 3.6.1 jars) differ in three ways:

- which parts of a table's id follow ``topic.prefix``: ``Default*`` the database (catalog) and the
  table, ``Schema*`` the schema and the table (SQL Server, whose connector runs them in
  "multi-partition mode": database, schema and table). Blank parts are left out, so PostgreSQL's
  ``Default*`` topics are ``<prefix>.<table>`` (its table ids have no catalog) and MySQL's
  ``Schema*`` ones too (its table ids have no schema);
- how characters Kafka rejects are replaced: with ``_`` (plain and regex strategies), or as
  ``_uXXXX`` (``*Unicode*``, where ``_`` itself is escaped too, as ``_u005f``); Java replaces each
  UTF-16 unit, so a character past U+FFFF becomes two replacements. The joined name is sanitized
  whole, ``topic.delimiter`` included;
- the ``*Regex*`` strategies then rename a topic that ``topic.regex`` matches whole
  (``topic.replacement``, Java's ``$1``) and add a field to every key of the table
  (``topic.key.field.name``, the original topic, or ``topic.key.field.regex``'s rewrite of it),
  so that tables sharing a topic keep distinct keys; a keyless table gets a key of that field alone.

A table's key, value and envelope schemas are named after its topic (Debezium's
``recordSchemaPrefix``). The schema change topic is ``topic.prefix``; the transaction topic
``<prefix><delimiter><topic.transaction>`` and the heartbeat topic
``<topic.heartbeat.prefix><delimiter><prefix>`` or ``topic.heartbeat.name``, none of them sanitized
(their parts are checked when the configuration is read).

Two options of cdc's own stay, each losing to Debezium's newer spelling where that is more specific:
``transaction.topic`` (the whole name) wins over ``topic.transaction`` (the name's end after the
prefix); ``topic.heartbeat.prefix`` wins over ``heartbeat.topics.prefix``, which cdc still honours on
its own (Debezium 3 ignores it: its heartbeats go to ``__debezium-heartbeat.<prefix>`` then).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from cdc.core.errors import ConfigError
from cdc.core.java_regex import java_regex, java_replace_first

log = logging.getLogger(__name__)

_TOPIC_INVALID = re.compile(r"[^A-Za-z0-9._\-]")
_AVRO_INVALID = re.compile(r"[^A-Za-z0-9_]")

# Kafka refuses longer topic names (its log folders are named <topic>-<partition>).
TOPIC_MAX_LENGTH = 249

_PACKAGE = "io.debezium.schema."
DEFAULT_STRATEGY = _PACKAGE + "DefaultTopicNamingStrategy"
SCHEMA_STRATEGY = _PACKAGE + "SchemaTopicNamingStrategy"
# class -> (named by schema, characters as _uXXXX, renamed by topic.regex)
STRATEGIES: dict[str, tuple[bool, bool, bool]] = {
    DEFAULT_STRATEGY: (False, False, False),
    SCHEMA_STRATEGY: (True, False, False),
    _PACKAGE + "DefaultUnicodeTopicNamingStrategy": (False, True, False),
    _PACKAGE + "SchemaUnicodeTopicNamingStrategy": (True, True, False),
    _PACKAGE + "DefaultRegexTopicNamingStrategy": (False, False, True),
    _PACKAGE + "SchemaRegexTopicNamingStrategy": (True, False, True),
}
HEARTBEAT_PREFIX = "__debezium-heartbeat"
KEY_FIELD_NAME = "__dbz__physicalTableIdentifier"
_NAME_CHARACTERS = re.compile(r"[A-Za-z0-9_.\-]+")  # Debezium's CommonConnectorConfig.validateTopicName


def topic_name_problem(name: str, what: str = "a Kafka topic name") -> str | None:
    """Why Kafka would refuse ``name`` as (part of) a topic name, or None.

    A prefix (``topic.prefix``) is checked as a topic name of its own: every topic starts with it,
    so a character Kafka refuses there would be in every topic name."""
    if name == "":
        return f"is empty; {what} needs at least one character"
    if name in (".", ".."):
        return f"Kafka refuses {name!r} as {what}"
    if len(name) > TOPIC_MAX_LENGTH:
        return f"is {len(name)} characters long; {what} may have at most {TOPIC_MAX_LENGTH}"
    return topic_characters_problem(name, what)


def topic_characters_problem(name: str, what: str = "a Kafka topic name") -> str | None:
    """Why ``name`` cannot be part of a topic name (a character Kafka refuses), or None."""
    invalid = sorted(set(_TOPIC_INVALID.findall(name)))
    if invalid:
        shown = ", ".join(repr(c) for c in invalid)
        return f"contains {shown}; {what} may hold only letters, digits, '.', '_' and '-'"
    return None


def strategy_problem(name: str) -> str | None:
    if name in STRATEGIES:
        return None
    return ("is not one of Debezium's topic naming strategies; a custom TopicNamingStrategy is a Java class, which "
            "cdc cannot load (route topics with transforms= instead): use one of " + ", ".join(STRATEGIES))


def sanitize_topic(name: str) -> str:
    return _TOPIC_INVALID.sub("_", name)


def sanitize_schema_name(name: str) -> str:
    parts = []
    for part in name.split("."):
        part = _AVRO_INVALID.sub("_", part)
        if part[:1].isdigit():
            part = "_" + part
        parts.append(part)
    return ".".join(parts)


def _utf16_units(text: str) -> Iterator[int]:
    """The text as Java's chars: a character past U+FFFF is two (a surrogate pair)."""
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            yield 0xD800 + (code >> 10)
            yield 0xDC00 + (code & 0x3FF)
        else:
            yield code


def _valid_unit(unit: int, unicode: bool) -> bool:
    ch = chr(unit)
    return ch.isascii() and (ch.isalnum() or ch in ".-" or (ch == "_" and not unicode))


def _replacement(unit: int, unicode: bool) -> str:
    if not unicode:
        return "_"
    digits = format(unit, "x")
    return "_u" + ("00" + digits if len(digits) <= 2 else digits)  # Debezium's UnicodeReplacementFunction


def sanitized_topic_name(name: str, unicode: bool = False) -> str:
    """Debezium's ``AbstractTopicNamingStrategy.sanitizedTopicName``: each invalid char replaced,
    the result cut to Kafka's 249 characters, and '.' / '..' (names Kafka refuses) replaced whole."""
    out = "".join(chr(u) if _valid_unit(u, unicode) else _replacement(u, unicode) for u in _utf16_units(name))
    if len(out) > TOPIC_MAX_LENGTH:
        return out[:TOPIC_MAX_LENGTH]
    if out in (".", ".."):
        return _replacement(ord("."), unicode) * len(out)
    return out


class Settings(Protocol):
    """What the naming reads its options from (cdc.core.config.Config)."""

    properties: dict[str, Any]

    def get(self, name: str) -> Any: ...


@dataclass(frozen=True)
class TableTopic:
    """The names one table's events carry."""

    topic: str
    schema_prefix: str  # of the key, value and envelope schemas (<prefix>.Key, .Value, .Envelope)
    key_field: tuple[str, str] | None = None  # (name, value) every key of the table gains (regex strategies)


@dataclass(frozen=True)
class KeyField:
    """The regex strategies' physical table identifier in keys (topic.key.*)."""

    name: str
    regex: re.Pattern[str] | None
    replacement: str

    def value(self, original_topic: str) -> str:
        if self.regex is None:
            return original_topic
        return java_replace_first(self.regex, self.replacement, original_topic) or original_topic


@dataclass(frozen=True)
class Route:
    """The regex strategies' renaming of table topics (topic.regex, topic.replacement)."""

    regex: re.Pattern[str]
    replacement: str
    key_field: KeyField | None  # None: topic.key.enforce.uniqueness=false

    def topic(self, sanitized: str) -> str:
        # an empty result keeps the original (Debezium warns "Routing regex returned an empty topic name")
        return java_replace_first(self.regex, self.replacement, sanitized) or sanitized


@dataclass(frozen=True)
class ConnectorLayout:
    """How a connector's table ids meet the strategies: its default strategy, and whether the
    ``Schema*`` ones name the database too (SQL Server's multi-partition mode)."""

    default_strategy: str
    multi_partition: bool = False


POSTGRES_LAYOUT = ConnectorLayout(SCHEMA_STRATEGY)
BINLOG_LAYOUT = ConnectorLayout(DEFAULT_STRATEGY)  # MySQL and MariaDB (BinlogConnectorConfig's default)
SQLSERVER_LAYOUT = ConnectorLayout(SCHEMA_STRATEGY, multi_partition=True)


@dataclass(frozen=True)
class TopicNaming:
    """Every topic name of one pipeline, decided from its configuration."""

    prefix: str
    delimiter: str = "."
    by_schema: bool = True  # Schema* strategies
    multi_partition: bool = False
    unicode: bool = False
    route: Route | None = None
    transaction: str = "transaction"  # topic.transaction: the transaction topic's name after the prefix
    transaction_name: str | None = None  # cdc's transaction.topic: the whole name
    heartbeat_prefix: str = HEARTBEAT_PREFIX
    heartbeat_name: str | None = None  # topic.heartbeat.name

    @classmethod
    def from_config(cls, config: Settings, layout: ConnectorLayout = POSTGRES_LAYOUT) -> TopicNaming:
        strategy = config.get("topic.naming.strategy") or layout.default_strategy
        if strategy not in STRATEGIES:
            raise ConfigError(f"topic.naming.strategy={strategy!r} {strategy_problem(strategy)}")
        by_schema, unicode, regex = STRATEGIES[strategy]
        return cls(
            prefix=config.get("topic.prefix"),
            delimiter=_text(config, "topic.delimiter") or ".",
            by_schema=by_schema,
            multi_partition=layout.multi_partition,
            unicode=unicode,
            route=_route(config, strategy) if regex else None,
            transaction=_text(config, "topic.transaction") or "transaction",
            transaction_name=_text(config, "transaction.topic"),
            heartbeat_prefix=_heartbeat_prefix(config),
            heartbeat_name=_text(config, "topic.heartbeat.name"),
        )

    def table(self, database: str | None, schema: str | None, table: str) -> TableTopic:
        """A table's names; ``database``/``schema``: Debezium's TableId catalog and schema (None where the
        connector's ids have none: PostgreSQL's catalog, MySQL's schema)."""
        if not self.by_schema:
            parts = [database, table]
        elif self.multi_partition:
            parts = [database, schema, table]
        else:
            parts = [schema, table]
        original = self.delimiter.join(p for p in [self.prefix, *parts] if p is not None and p.strip())
        topic = sanitized_topic_name(original, self.unicode)
        if self.route is None:
            return TableTopic(topic, topic)
        topic = self.route.topic(topic)
        key = self.route.key_field
        return TableTopic(topic, topic, None if key is None else (key.name, key.value(original)))

    @property
    def augments_keys(self) -> bool:
        """Whether keys gain a field (a regex strategy with topic.key.enforce.uniqueness)."""
        return self.route is not None and self.route.key_field is not None

    def schema_change_topic(self) -> str:
        return self.prefix

    def transaction_topic(self) -> str:
        return self.transaction_name or f"{self.prefix}{self.delimiter}{self.transaction}"

    def heartbeat_topic(self) -> str:
        return self.heartbeat_name or f"{self.heartbeat_prefix}{self.delimiter}{self.prefix}"


def _text(config: Settings, name: str) -> str | None:
    value = config.get(name)
    return None if value is None or str(value) == "" else str(value)


def _given(config: Settings, name: str) -> bool:
    return config.properties.get(name) not in (None, "")


def _heartbeat_prefix(config: Settings) -> str:
    if _given(config, "topic.heartbeat.prefix"):
        return str(config.get("topic.heartbeat.prefix"))
    if _given(config, "heartbeat.topics.prefix"):
        return str(config.get("heartbeat.topics.prefix"))
    return HEARTBEAT_PREFIX


def _route(config: Settings, strategy: str) -> Route:
    """topic.regex and the key options, checked as AbstractRegexTopicNamingStrategy checks them."""
    name = strategy.rsplit(".", 1)[-1]
    regex_text = _text(config, "topic.regex")
    replacement = _text(config, "topic.replacement")
    if regex_text is None or not (replacement or "").strip():
        raise ConfigError(f"topic.naming.strategy={name} needs topic.regex and a non-empty topic.replacement",
                          fix="set topic.regex (a Java regular expression matching whole topic names) and "
                              "topic.replacement (the new name; $1 is the regex's first group)")
    key_field = None
    if _enabled(config.get("topic.key.enforce.uniqueness")):
        key_regex = _text(config, "topic.key.field.regex")
        key_replacement = _text(config, "topic.key.field.replacement") or ""
        if key_regex is not None and key_regex.strip() and not key_replacement.strip():
            raise ConfigError("topic.key.field.replacement must be non-empty if topic.key.field.regex is set.",
                              fix="set topic.key.field.replacement, or remove topic.key.field.regex")
        key_field = KeyField(_text(config, "topic.key.field.name") or KEY_FIELD_NAME,
                             java_regex(key_regex) if key_regex is not None and key_regex.strip() else None,
                             key_replacement)
    return Route(java_regex(regex_text), replacement or "", key_field)


def _enabled(value: Any) -> bool:
    """A boolean option that may come unparsed (a config without cdc's options declared): true by default."""
    return value is None or value is True or str(value).strip().lower() not in ("false", "0", "no", "off")
