"""Topic and schema names, sanitised as Debezium does.

Topic names keep ``[A-Za-z0-9._-]`` and replace anything else with ``_``; schema (Avro) names
keep ``[A-Za-z0-9_]`` in each dot-separated part and may not start a part with a digit.
"""
from __future__ import annotations

import re

_TOPIC_INVALID = re.compile(r"[^A-Za-z0-9._\-]")
_AVRO_INVALID = re.compile(r"[^A-Za-z0-9_]")

# Kafka refuses longer topic names (its log folders are named <topic>-<partition>).
TOPIC_MAX_LENGTH = 249


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
    invalid = sorted(set(_TOPIC_INVALID.findall(name)))
    if invalid:
        shown = ", ".join(repr(c) for c in invalid)
        return f"contains {shown}; {what} may hold only letters, digits, '.', '_' and '-'"
    return None


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


def table_topic(prefix: str, *parts: str | None) -> str:
    """``<prefix>.<schema>.<table>`` (or with the database for MySQL / SQL Server)."""
    return sanitize_topic(".".join([prefix, *(p for p in parts if p)]))


def transaction_topic(prefix: str, override: str | None = None) -> str:
    return override or sanitize_topic(f"{prefix}.transaction")


def heartbeat_topic(prefix: str, heartbeat_prefix: str = "__debezium-heartbeat") -> str:
    return sanitize_topic(f"{heartbeat_prefix}.{prefix}")
