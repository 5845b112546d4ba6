"""replica.identity.autoset.values: the REPLICA IDENTITY of captured tables, set at each start.

Debezium's syntax (ReplicaIdentityMapper): comma-separated entries ``<table regex>:<identity>``, the
identity ``DEFAULT``, ``FULL``, ``NOTHING`` or ``INDEX <index name>``; each regular expression is
matched against the whole ``schema.table``, ignoring case. Only captured tables are changed, and
only when their identity differs. Where Debezium logs an error and goes on (two entries matching
one table, an index the table does not have, an ALTER the server refuses), cdc refuses to start,
saying which entry and what to do.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdc.core.errors import ConfigError, SourceError
from cdc.core.filters import REGEX_FIX, compile_pattern

if TYPE_CHECKING:  # the option's validator runs for --help, which loads no driver
    import psycopg

    from cdc.sources.postgres.catalog import CatalogTable

log = logging.getLogger(__name__)

OPTION = "replica.identity.autoset.values"
# Debezium's REPLICA_AUTO_SET_PATTERN, in Python's spelling.
_ENTRY = re.compile(r"^\s*(?P<table>[^\s:]+):(?P<identity>DEFAULT|(?:INDEX) (?P<index>.\w*)|FULL|NOTHING)\s*$",
                    re.IGNORECASE)
_CODES = {"d": "DEFAULT", "n": "NOTHING", "f": "FULL", "i": "INDEX"}  # pg_class.relreplident
SYNTAX = "entries are <schema.table regex>:<DEFAULT|FULL|NOTHING|INDEX index_name>, separated by commas"


@dataclass(frozen=True)
class Entry:
    text: str  # as configured, for messages
    table: re.Pattern[str]
    identity: str  # DEFAULT, FULL, NOTHING, INDEX
    index: str | None = None

    def describe(self) -> str:
        return f"USING INDEX {self.index}" if self.index else self.identity


def parse(value: str | None) -> list[Entry]:
    """The entries of the option's value; ConfigError naming each one that is wrong."""
    entries, problems = _parse(value)
    if problems:
        raise ConfigError(f"{OPTION}: " + "; ".join(problems), fix=f"{SYNTAX}; {REGEX_FIX}")
    return entries


def problem(value: str) -> str | None:
    """The option's validator."""
    problems = _parse(value)[1]
    return "; ".join(problems) + f" ({SYNTAX}; {REGEX_FIX})" if problems else None


def _parse(value: str | None) -> tuple[list[Entry], list[str]]:
    entries, problems = [], []
    for text in (value or "").split(","):
        match = _ENTRY.match(text)
        if match is None:
            problems.append(f"{text.strip()!r} has an invalid format")
            continue
        try:
            table = compile_pattern(match["table"])
        except ValueError as exc:
            problems.append(f"{text.strip()!r}: {exc}")
            continue
        identity = match["identity"].split()[0].upper()
        entries.append(Entry(text.strip(), table, identity, match["index"]))
    return entries, problems


class ReplicaIdentities:
    def __init__(self, value: str | None) -> None:
        self.entries = parse(value) if value else []

    def apply(self, conn: psycopg.Connection, tables: list[CatalogTable]) -> bool:
        """Set the identity the entries give each of ``tables`` (the captured ones) where it differs;
        whether any table changed."""
        changed = False
        for table in sorted(tables, key=lambda t: t.qualified):
            entry = self._entry_for(table)
            if entry is not None:
                changed |= _set(conn, table, entry)
        return changed

    def _entry_for(self, table: CatalogTable) -> Entry | None:
        matching = [e for e in self.entries if e.table.fullmatch(table.qualified)]
        if len(matching) > 1:
            raise ConfigError(f"{OPTION}: more than one entry matches table {table.qualified}: "
                              + ", ".join(repr(e.text) for e in matching),
                              fix="narrow the entries' regular expressions so that one matches each table")
        return matching[0] if matching else None


def _current(conn: psycopg.Connection, table: CatalogTable) -> tuple[str, str | None]:
    """(identity, its index's name) of a table as the server has it now."""
    row = conn.execute("SELECT c.relreplident, (SELECT ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = "
                       "i.indexrelid WHERE i.indrelid = c.oid AND i.indisreplident) FROM pg_class c WHERE c.oid = %s",
                       (table.oid,)).fetchone()
    if row is None:
        raise SourceError(f"table {table.qualified} was dropped while the pipeline started", fix="start it again")
    code = row[0] if isinstance(row[0], str) else bytes(row[0]).decode()
    return _CODES.get(code, code), row[1]


def _index_of(conn: psycopg.Connection, table: CatalogTable, name: str) -> str:
    """The table's index of that name (as written, else folded to lower case as an unquoted identifier)."""
    found = {r[0] for r in conn.execute("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                                        "WHERE i.indrelid = %s", (table.oid,))}
    for candidate in (name, name.lower()):
        if candidate in found:
            return candidate
    raise SourceError(f"{OPTION}: table {table.qualified} has no index {name!r} to be its REPLICA IDENTITY "
                      f"(its indexes: {', '.join(sorted(found)) or 'none'})",
                      fix="correct the index name in the entry, or create the index: unique, not partial, not "
                          "deferrable, on NOT NULL columns")


def _set(conn: psycopg.Connection, table: CatalogTable, entry: Entry) -> bool:
    import psycopg
    from psycopg import sql

    identity, index = _current(conn, table)
    wanted_index = _index_of(conn, table, entry.index) if entry.index else None
    if identity == entry.identity and index == wanted_index:
        log.info("replica identity of %s is already %s", table.qualified, entry.describe())
        return False
    target = sql.SQL("USING INDEX {}").format(sql.Identifier(wanted_index)) if wanted_index \
        else sql.SQL(entry.identity)
    statement = sql.SQL("ALTER TABLE {} REPLICA IDENTITY {}").format(sql.Identifier(table.schema, table.name), target)
    try:
        conn.execute(statement)
    except psycopg.Error as exc:
        raise SourceError(f"{OPTION}: cannot set the REPLICA IDENTITY of {table.qualified} to {entry.describe()} "
                          f"(entry {entry.text!r}): {str(exc).strip()}",
                          fix=f"run {statement.as_string(conn)}; as the table's owner (or fix what the server "
                              "says), or remove the entry") from None
    log.info("replica identity of %s set to %s (was %s)", table.qualified, entry.describe(),
             f"USING INDEX {index}" if index else identity)
    return True
