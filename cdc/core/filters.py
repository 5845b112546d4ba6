"""Table and column filters (``table.include.list`` and friends), Debezium's semantics.

Each entry is a regular expression matched against the whole fully-qualified name
(``schema.table`` or ``db.table``; ``schema.table.column`` for columns), case-insensitively
as Debezium does for identifiers. An include list, when set, wins over an exclude list.
"""
from __future__ import annotations

import re
from typing import Iterable


def _compile(patterns: Iterable[str] | None) -> list[re.Pattern[str]]:
    return [re.compile(p.strip(), re.IGNORECASE) for p in (patterns or []) if p.strip()]


class NameFilter:
    def __init__(self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None) -> None:
        self.include = _compile(include)
        self.exclude = _compile(exclude)

    def __call__(self, name: str) -> bool:
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)

    @property
    def is_open(self) -> bool:
        return not self.include and not self.exclude


def parse_key_columns(spec: str | None) -> dict[str, list[str]]:
    """``message.key.columns``: ``"inventory.customers:id,name;inventory.orders:pk"`` ->
    ``{regex-of-table: [columns]}``; the table part is a regular expression."""
    out: dict[str, list[str]] = {}
    if not spec:
        return out
    for part in spec.split(";"):
        if not part.strip():
            continue
        table, _, columns = part.rpartition(":")
        if not table:
            raise ValueError(f"message.key.columns entry {part!r} must look like 'schema.table:col1,col2'")
        out[table.strip()] = [c.strip() for c in columns.split(",") if c.strip()]
    return out


def key_columns_for(spec: dict[str, list[str]], table_name: str) -> list[str] | None:
    for pattern, columns in spec.items():
        if re.fullmatch(pattern, table_name, re.IGNORECASE):
            return columns
    return None
