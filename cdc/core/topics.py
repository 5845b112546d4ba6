"""Topic and schema names, sanitised as Debezium does.

Topic names keep ``[A-Za-z0-9._-]`` and replace anything else with ``_``; schema (Avro) names
keep ``[A-Za-z0-9_]`` in each dot-separated part and may not start a part with a digit.
"""
from __future__ import annotations

import re

_TOPIC_INVALID = re.compile(r"[^A-Za-z0-9._\-]")
_AVRO_INVALID = re.compile(r"[^A-Za-z0-9_]")


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
