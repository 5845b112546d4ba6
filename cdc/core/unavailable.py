"""Rows that lack values the source did not send.

PostgreSQL leaves an unchanged TOASTed value out of an update's new tuple (REPLICA IDENTITY
DEFAULT); the event then carries Debezium's placeholder (``unavailable.value.placeholder``), or a
null for some types. A placeholder cannot be told from real data downstream, and a null not at
all, so the source marks the row: a :class:`PartialRow` is a dict (everything else, orjson
included, sees a plain one) that names the fields whose values are missing. ``format("cdc")``
hands the names to Spark (``_unavailable``), where ``apply_changes`` keeps the target's values
for them; the reselect post processor, which reads such values again, unmarks what it read.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT_PLACEHOLDER = "__debezium_unavailable_value"


class PartialRow(dict[str, Any]):
    """A row whose fields ``unavailable`` hold a placeholder, not the value."""

    __slots__ = ("unavailable",)

    def __init__(self, values: Mapping[str, Any], unavailable: Iterable[str]) -> None:
        super().__init__(values)
        self.unavailable: tuple[str, ...] = tuple(unavailable)


def unavailable_fields(row: Any) -> tuple[str, ...]:
    """The fields of a row that hold no value (empty for a complete row, or no row)."""
    return getattr(row, "unavailable", ())


def reshaped(row: Mapping[str, Any], values: dict[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """``values`` (``row`` under the column options: fields renamed or left out) marked as ``row`` is."""
    missing = unavailable_fields(row)
    if not missing:
        return values
    return PartialRow(values, [renames.get(f, f) for f in missing if renames.get(f, f) in values])


def mark_available(row: Any, fields: Iterable[str]) -> None:
    """The values of ``fields`` were read again (the reselect post processor): they are real now."""
    missing = unavailable_fields(row)
    if missing:
        done = set(fields)
        row.unavailable = tuple(f for f in missing if f not in done)
