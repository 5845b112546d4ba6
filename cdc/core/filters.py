"""Table and column filters (``table.include.list`` and friends), Debezium's semantics.

Each entry is a regular expression matched against the whole fully-qualified name
(``schema.table`` or ``db.table``; ``schema.table.column`` for columns), case-insensitively
as Debezium does for identifiers. An include list, when set, wins over an exclude list.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Container, Iterable, Sequence

from cdc.core.errors import ConfigError

REGEX_FIX = ("entries are regular expressions matched against the whole name: escape a character meant "
             "literally with a backslash (shop\\.orders, price\\(eur\\)), and close every ( and [")

log = logging.getLogger(__name__)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """One entry of an include/exclude list; ValueError naming it when it is no regular expression."""
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regular expression ({exc.msg} at position {exc.pos})") from None


def patterns_problem(patterns: Iterable[str] | None) -> str | None:
    """Why a list of regular expressions cannot be used, or None (an option validator)."""
    problems = []
    for pattern in patterns or ():
        try:
            compile_pattern(pattern.strip())
        except ValueError as exc:
            problems.append(str(exc))
    return "; ".join(problems) + "; " + REGEX_FIX if problems else None


def _compile(patterns: Iterable[str] | None) -> list[re.Pattern[str]]:
    try:
        return [compile_pattern(p.strip()) for p in (patterns or []) if p.strip()]
    except ValueError as exc:
        raise ConfigError(f"include/exclude list entry {exc}", fix=REGEX_FIX) from None


class NameFilter:
    """``include`` / ``exclude``: regular expressions; a ConfigError names one that does not compile."""

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

    def order_key(self, name: str) -> tuple[int, str]:
        """Debezium's snapshot order: by the first include pattern that matches, then by name
        (checked against Debezium 3.6.1: tests/conformance/workloads/pg_snapshot_order*.sql)."""
        rank = next((i for i, p in enumerate(self.include) if p.fullmatch(name)), len(self.include))
        return rank, name


class TableFilter(NameFilter):
    """The captured tables: ``table.include.list`` / ``table.exclude.list`` on the qualified name, and, where
    the source has schemas (PostgreSQL, SQL Server), ``schema.include.list`` / ``schema.exclude.list`` on
    the schema's: a table is captured when both let it through, as Debezium's Selectors combine them. Each
    list is Debezium's regular expressions (matched whole, case-insensitively)."""

    def __init__(self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None, *,
                 schema_include: Iterable[str] | None = None, schema_exclude: Iterable[str] | None = None) -> None:
        super().__init__(include, exclude)
        schema_include, schema_exclude = list(schema_include or ()), list(schema_exclude or ())
        if schema_include and schema_exclude:  # Debezium's validation: '"schema.include.list" is already specified'
            raise ConfigError("schema.include.list and schema.exclude.list are both set; Debezium refuses that",
                              fix="keep one of them")
        self.schemas = NameFilter(schema_include, schema_exclude)

    def __call__(self, name: str, schema: str | None = None) -> bool:
        """``name``: the qualified name the table lists match (schema.table); ``schema``: its schema when
        the name does not start with it (SQL Server's database.schema.table)."""
        if not self.schemas.is_open and not self.schemas(schema if schema is not None else name.partition(".")[0]):
            return False
        return super().__call__(name)

    @property
    def is_open(self) -> bool:
        return super().is_open and self.schemas.is_open


def parse_key_columns(spec: str | None) -> dict[str, list[str]]:
    """``message.key.columns``: ``"inventory.customers:id,name;inventory.orders:pk"`` ->
    ``{regex-of-table: [columns]}``; the table part is a regular expression."""
    out: dict[str, list[str]] = {}
    if not spec:
        return out
    for part in spec.split(";"):
        if not part.strip():
            continue
        shape = (f"message.key.columns entry {part.strip()!r} must look like 'schema.table:col1,col2' "
                 "(entries separated by ';')")
        if ":" not in part:
            raise ValueError(f"{shape}: it has no ':' between the table and its columns")
        table, _, columns = part.rpartition(":")
        table = table.strip()
        if not table:
            raise ValueError(f"{shape}: it names no table before ':'")
        names = [c.strip() for c in columns.split(",") if c.strip()]
        if not names:
            raise ValueError(f"{shape}: it names no column after ':'")
        try:
            compile_pattern(table)
        except ValueError as exc:
            raise ValueError(f"the table of message.key.columns entry {part.strip()!r}: {exc}; "
                             f"{REGEX_FIX}") from None
        out[table] = names
    return out


def key_columns_for(spec: dict[str, list[str]], table_name: str) -> list[str] | None:
    for pattern, columns in spec.items():
        if re.fullmatch(pattern, table_name, re.IGNORECASE):
            return columns
    return None


def resolve_key_columns(spec: dict[str, list[str]], names: Sequence[str], default_key: Sequence[str],
                        all_columns: Sequence[str], captured: Container[str]) -> list[str]:
    """A table's key: ``message.key.columns``' entry for one of its ``names``, else ``default_key``
    (its primary key). A configured column the table does not have is a configuration error; a
    key column that ``column.exclude.list`` leaves out gives the events no key (with a warning)."""
    configured = next((c for c in (key_columns_for(spec, n) for n in names) if c), None)
    table = names[0]
    if configured:
        unknown = [c for c in configured if c not in all_columns]
        if unknown:
            raise ConfigError(f"message.key.columns names {', '.join(unknown)} as key of {table}, which has no "
                              f"such column", fix=f"the columns of {table} are {', '.join(all_columns)}")
    key = list(configured or default_key)
    missing = [k for k in key if k not in captured]
    if missing:
        log.warning("key columns %s of %s are not captured (column.exclude.list); its events get no key",
                    missing, table)
        return []
    return key


def warn_if_nothing_captured(captured: list[str], available: list[str], options: str) -> None:
    """An include list that matches no table captures nothing, silently: say so, with the names it could
    have matched (a regular expression is matched against the whole ``schema.table``)."""
    if captured:
        return
    shown = ", ".join(available[:10]) + (f" (and {len(available) - 10} more)" if len(available) > 10 else "")
    log.warning("no table matches %s: nothing will be captured; the tables are: %s (each pattern must match the "
                "whole qualified name, e.g. public\\.orders or shop\\..*)", options, shown or "none")
