"""What the initial snapshot reads of the captured tables: Debezium's options for it, one rule for every
source (Debezium keeps it in its core too: RelationalSnapshotChangeEventSource).

    snapshot.include.collection.list     regular expressions of the captured tables whose rows the initial
                                         snapshot reads; the others are captured from the log alone
    snapshot.select.statement.overrides  the tables (names, comma-separated) the snapshot reads with a SELECT
                                         of the user's, each given by the property
                                         snapshot.select.statement.overrides.<table>

A table is named as Debezium names it (its TableId): ``schema.table`` on PostgreSQL, ``database.table`` on
MySQL / MariaDB, ``database.schema.table`` on SQL Server. The collection list's patterns match that name
whole, case-insensitively, or its double-quoted form (``"public"."orders"``). An override's table is
looked up by that name and then by the name without the database (``schema.table``; MySQL: the table
alone), as Debezium looks it up.

Neither applies to incremental or blocking snapshots (Debezium's neither).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc.core.errors import ConfigError, SourceError
from cdc.core.filters import NameFilter

log = logging.getLogger(__name__)

OVERRIDES = "snapshot.select.statement.overrides"
OVERRIDE_PATTERN = re.escape(OVERRIDES) + r"\..+"  # its per-table properties

# Spark's format("cdc") reads an initial snapshot in key-range chunks on its executors: not by a SELECT of the user's.
PARALLEL_SNAPSHOT = "Spark's parallel snapshot (format(\"cdc\") reads each table in key-range chunks)"
OVERRIDES_FIX = (f"leave {OVERRIDES} out of the Spark query's options (its tables are then read whole), or take "
                 "the snapshot with the cdc command")

# A table as Debezium's TableId: (catalog, schema, table), None where the database has no such part.
TableName = tuple[str | None, str | None, str]

_PART = re.compile(r'"((?:[^"]|"")*)"|([^."]+)')


def parse_table(text: str) -> TableName | None:
    """Debezium's TableId.parse: dot-separated parts, each possibly double-quoted (a dot inside quotes is
    part of the name); one part is a table, two a catalog (database) and table, three all of them. None
    when it is no table name."""
    parts: list[str] = []
    position, text = 0, text.strip()
    while position < len(text):
        match = _PART.match(text, position)
        if match is None:
            return None
        parts.append(match.group(1).replace('""', '"') if match.group(1) is not None else match.group(2).strip())
        position = match.end()
        if position < len(text):
            if text[position] != ".":
                return None
            position += 1
    if not 1 <= len(parts) <= 3:
        return None
    if len(parts) == 1:
        return None, None, parts[0]
    if len(parts) == 2:
        return parts[0], None, parts[1]
    return parts[0], parts[1], parts[2]


def identifier(name: TableName) -> str:
    """Debezium's TableId.identifier(): the parts there are, joined by dots."""
    return ".".join(part for part in name if part)


def quoted(name: TableName) -> str:
    """Debezium's TableId.toDoubleQuotedString()."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in name if part)


def match_columns(result: Sequence[str], columns: Sequence[str], option: str) -> list[int | None]:
    """How Debezium reads an override's result: for each of the table's ``columns``, the position of the
    result column of that name (matched without regard to case, an exact match first), None when the
    result has none (the value is null). A result column the table does not have, or a name the result
    has twice, is an error naming ``option``."""
    exact = {name: i for i, name in enumerate(result)}
    folded = {name.lower(): i for i, name in enumerate(result)}
    known = {c.lower() for c in columns}
    unknown = [name for name in result if name.lower() not in known]
    if unknown or len(folded) != len(result):
        raise SourceError(f"{option} returns the column(s) {', '.join(result)}: "
                          + (f"the table has no column {', '.join(unknown)}" if unknown else "a name twice"),
                          fix=f"select the table's columns by their names ({', '.join(columns)})")
    return [exact.get(c, folded.get(c.lower())) for c in columns]


def override_keys(properties: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """``({table identifier: SELECT}, warnings)`` from snapshot.select.statement.overrides and its per-table
    properties: a listed table without its SELECT is read as usual (Debezium warns too), a SELECT whose
    table is not listed is not read (nor by Debezium: the list says which properties count)."""
    listed = [t.strip() for t in str(properties.get(OVERRIDES) or "").split(",") if t.strip()]
    overrides: dict[str, str] = {}
    warnings: list[str] = []
    for table in listed:
        statement = properties.get(f"{OVERRIDES}.{table}")
        name = parse_table(table)
        if name is None:
            warnings.append(f"{OVERRIDES} lists {table!r}, which is no table name: ignored")
        elif statement is None or not str(statement).strip():
            warnings.append(f"{OVERRIDES} lists {table} but {OVERRIDES}.{table} is not set: the snapshot reads "
                            f"the table whole")
        else:
            overrides[identifier(name)] = _statement(str(statement))
    prefix = OVERRIDES + "."
    for key in properties:
        if key.startswith(prefix) and key[len(prefix):] not in listed:
            warnings.append(f"{key} is ignored: {key[len(prefix):]} is not listed in {OVERRIDES} (Debezium reads "
                            f"the SELECT of the tables listed there only)")
    return overrides, warnings


def _statement(text: str) -> str:
    """The SELECT as given, without a trailing semicolon (sources wrap it: COPY (...) TO STDOUT)."""
    return text.strip().rstrip(";").rstrip()


@dataclass(frozen=True)
class SnapshotSelection:
    """The two options, parsed once (cdc.core.source.SourceSettings)."""

    collections: NameFilter = field(default_factory=NameFilter)
    overrides: dict[str, str] = field(default_factory=dict)  # table identifier -> SELECT

    @classmethod
    def from_config(cls, config: Any) -> SnapshotSelection:
        overrides, warnings = override_keys(config.properties)
        for warning in warnings:
            log.warning("%s", warning)
        return cls(NameFilter(_list(config.get("snapshot.include.collection.list"))), overrides)

    def snapshots(self, name: TableName) -> bool:
        """Whether the initial snapshot reads the rows of this captured table."""
        if self.collections.is_open:
            return True
        return self.collections(identifier(name)) or self.collections(quoted(name))

    def select_for(self, name: TableName) -> str | None:
        """The SELECT the snapshot reads this table with (None: the source's own, every row)."""
        if not self.overrides:
            return None
        found = self.overrides.get(identifier(name))
        if found is None and name[0]:  # Debezium looks again without the catalog (the database)
            found = self.overrides.get(identifier((None, name[1], name[2])))
        return found

    def refuse_overrides(self, where: str, fix: str) -> None:
        """A snapshot that cannot read a table by a SELECT of the user's refuses to run with one."""
        if self.overrides:
            raise ConfigError(f"{OVERRIDES} ({', '.join(sorted(self.overrides))}) is not applied by {where}", fix=fix)


def _list(value: Any) -> Iterable[str]:
    """A list option's value (a plugin that does not declare it hands the raw text over)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)
