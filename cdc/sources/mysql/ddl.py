"""MySQL/MariaDB DDL -> an in-memory schema -> Debezium ``tableChanges``.

The binlog does not describe its rows' columns well enough to decode them the way Debezium
does (type names, lengths, enum values, character sets, keys), so the source keeps a model of
every table by applying each DDL statement it reads, exactly as Debezium's ANTLR parser does,
and records the resulting ``tableChanges`` in the schema history.

Statements are read with sqlglot's MySQL tokenizer (quoting, escapes, comments, literals) and
a small grammar over its tokens. sqlglot's own parser is not used for table definitions: it
normalises type names (``INT8`` becomes ``TINYINT``, ``LONG`` ``BIGINT``, ``REAL`` ``FLOAT``,
``TIMESTAMP`` ``TIMESTAMPTZ``, ``INTEGER`` ``INT``) where Debezium keeps the spelling in
``typeName`` and chooses the JDBC type from it, fails on ``NATIONAL CHAR``, ``LONG VARCHAR``,
``INT3``/``MIDDLEINT``, spatial types, ``INET6``, and returns an opaque ``exp.Command`` for
``RENAME TABLE`` and for ``ALTER TABLE`` with ``CHANGE``, ``ADD COLUMN (...)``, ``RENAME AS``
or several clauses.

What Debezium does is followed where it decides what users see (type names, JDBC types,
lengths, charsets, defaults, which statements produce which changes). Departures, all towards
what the server really does: ``CREATE OR REPLACE TABLE`` replaces; ``MODIFY``/``CHANGE`` build
the column afresh (Debezium keeps stale enum values); a primary-key column stays NOT NULL when
modified; ``ALTER TABLE ... [DEFAULT] CHARSET`` changes the table's default charset; a table
``COLLATE`` alone sets the charset; a UNIQUE key becomes the key of a key-less table only when
its columns are NOT NULL; ``ALTER TABLE ... RENAME`` carries ``previousId`` like RENAME TABLE;
temporary tables are ignored (their rows are not in a row-based binlog).

The grammar is written as tables, the way sqlglot's parsers are (``STATEMENT_PARSERS``,
``ALTER_PARSERS``...): ``STATEMENT_PARSERS`` here, keyed by a statement's leading keywords;
``ALTER_PARSERS`` (``ddl_alter.py``), keyed by an ALTER TABLE clause's keyword; the column
attributes (``ddl_columns.py``) and the column types (``ddl_types.py``), keyed by their first
word. ``ddl_tables.py`` holds the model and the table a statement builds, ``ddl_tokens.py`` the
tokenizer and the cursor. A statement, clause, attribute or type is learnt by adding an entry.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from sqlglot.tokens import TokenType

from cdc.core.encodings import JDBC
from cdc.core.schema import Table, TableId, parse_table_id, table_change, table_drop
from cdc.sources.mysql.ddl_alter import alter_table
from cdc.sources.mysql.ddl_tables import Context, State, create_index, create_table, norm, qualified_id
from cdc.sources.mysql.ddl_tokens import Cursor, UnparseableDdlError, read_statements
from cdc.sources.mysql.ddl_types import charset_of_collation, enum_options

log = logging.getLogger(__name__)

__all__ = ["UnparseableDdlError", "MySqlSchema", "DdlEvent", "history_record", "enum_options", "JDBC"]

_FIRST_WORD = re.compile(r"(?:\s+|/\*(?!M?!).*?\*/|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$))*(?:/\*M?!\d*\s*)?([A-Za-z]+)",
                         re.S)
_DDL_WORDS = {"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "USE", "SET"}


@dataclass(frozen=True, slots=True)
class DdlEvent:
    """One event of Debezium's DDL parser for a statement; each becomes one schema change event.

    ``database`` is where it belongs: a table's own database (``CREATE TABLE other.t`` under
    ``USE db`` belongs to ``other``), the database a CREATE/DROP DATABASE names. ``ddl`` is the
    text Debezium quotes: the statement without the comments around it, one ``DROP TABLE
    `db`.`t``` per dropped table, one ``RENAME TABLE a TO b`` per renamed pair.
    """

    database: str | None
    table: TableId | None
    ddl: str
    change: dict[str, Any] | None = None  # the tableChanges entry
    applied: bool = True  # False: DROP TABLE IF EXISTS of a table the model did not have


def _table_events(changes: list[dict[str, Any]], text: str) -> list[DdlEvent]:
    events = []
    for change in changes:
        table_id = _table_id_of(change["id"])
        events.append(DdlEvent(table_id.catalog, table_id, text, change))
    return events

# ---- the statements -----------------------------------------------------------------------------
# Each parser starts after the statement's leading keywords and returns the statement's events.

def _use(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    ctx.database = cur.name()
    return [DdlEvent(ctx.database, None, cur.debezium_text())]


def _set(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    """``SET [GLOBAL] character_set_server = x``: new tables without a charset take it."""
    for part in cur.split_top_level():
        part.accept_any("GLOBAL", "SESSION", "LOCAL", "PERSIST")
        if part.accept_type(TokenType.SESSION_PARAMETER) and part.is_type(TokenType.DOT, 1):
            part.i += 2  # @@global.
        if part.word() == "CHARACTER_SET_SERVER" and part.is_type(TokenType.EQ, 1):
            part.i += 2
            value = part.next().text.lower()
            if value != "default":
                ctx.state.server_charset = value
    return []


def _database_options(cur: Cursor) -> str | None:
    charset: str | None = None
    collation_charset: str | None = None
    while not cur.at_end():
        cur.accept("DEFAULT")
        if cur.accept("CHARACTER", "SET") or cur.accept("CHARSET") or cur.accept("CHAR", "SET"):
            cur.accept_type(TokenType.EQ)
            charset = cur.name().lower()
        elif cur.accept("COLLATE"):
            cur.accept_type(TokenType.EQ)
            collation_charset = charset_of_collation(cur.name())
        else:
            cur.next()
    return charset or collation_charset


def _create_database(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    cur.accept("IF", "NOT", "EXISTS")
    name = ctx.norm(cur.name())
    charset = _database_options(cur)
    if charset == "default":
        charset = ctx.state.server_charset
    if name not in ctx.state.databases or charset is not None:
        ctx.state.databases[name] = charset
    return [DdlEvent(name, None, cur.debezium_text())]


def _alter_database(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    name = ctx.database
    if not cur.at_end() and cur.word() not in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "CHAR"):
        name = cur.name()
    charset = _database_options(cur)
    if name and charset:
        ctx.state.databases[ctx.norm(name)] = charset
    return []  # no parser event in Debezium: the statement is quoted whole


def _drop_database(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    cur.accept("IF", "EXISTS")
    name = ctx.norm(cur.name())
    ctx.state.databases.pop(name, None)
    for dropped in [t for t in ctx.state.tables if t.catalog == name]:
        del ctx.state.tables[dropped]
    if ctx.database == name:
        ctx.database = None
    return [DdlEvent(name, None, cur.debezium_text())]


def _create_table(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    if "TEMPORARY" in modifiers:  # rows of temporary tables are not in a row-based binlog
        return []
    return _table_events(create_table(ctx, cur, "OR REPLACE" in modifiers), cur.debezium_text())


def _create_index(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    return _table_events(create_index(ctx, cur, "UNIQUE" in modifiers), cur.debezium_text())


def _alter_table(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    return _table_events(alter_table(ctx, cur), cur.debezium_text())


def _drop_tables(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    """One event per table, as Debezium: ``<the statement up to its tables>`db`.`t```, also
    for a table the model does not have (DROP TABLE IF EXISTS of a missing one)."""
    cur.accept("IF", "EXISTS")
    first = cur.peek()
    prefix = cur.original[cur.tokens[0].start:first.start] if first is not None else ""
    parts = cur.split_top_level()
    suffix = ""
    if parts and parts[-1].tokens and parts[-1].word(len(parts[-1].tokens) - 1) in ("RESTRICT", "CASCADE"):
        suffix = " " + parts[-1].tokens[-1].text
    events = []
    for part in parts:
        db, name = part.qualified_name()
        dropped = ctx.table_id(db, name)
        known = ctx.state.tables.pop(dropped, None) is not None
        text = f"{prefix}{_quote(dropped.catalog or '')}.{_quote(dropped.table)}{suffix}"
        events.append(DdlEvent(dropped.catalog, dropped, text, table_drop(dropped), applied=known))
    return events


def _rename_tables(ctx: Context, cur: Cursor, modifiers: frozenset[str]) -> list[DdlEvent]:
    """One event per renamed pair, as Debezium: ``RENAME TABLE a TO b`` (the statement's
    words before its first pair, then the pair)."""
    cur.accept("IF", "EXISTS")
    parts = cur.split_top_level()
    prefix = cur.original[cur.tokens[0].start:parts[0].tokens[0].start] if parts else ""
    events = []
    for part in parts:
        text = prefix + part.debezium_text()
        db, name = part.qualified_name()
        if part.accept_any("WAIT"):
            part.next()
        part.accept("NOWAIT")
        part.expect("TO")
        new_db, new_name = part.qualified_name()
        old_id, new_id = ctx.table_id(db, name), ctx.table_id(new_db, new_name)
        table = ctx.state.tables.pop(old_id, None)
        if table is None:
            log.debug("RENAME TABLE of %s, which the schema does not have: no table change", old_id)
            events.append(DdlEvent(new_id.catalog, new_id, text))
            continue
        table = replace(table, id=new_id)
        ctx.state.tables[new_id] = table
        ctx.state.databases.setdefault(new_id.catalog or "", None)
        events.append(DdlEvent(new_id.catalog, new_id, text, table_change("ALTER", table, previous_id=old_id)))
    return events


StatementParser = Callable[[Context, Cursor, frozenset[str]], list[DdlEvent]]


@dataclass(frozen=True, slots=True)
class _Entry:
    """A statement of ``STATEMENT_PARSERS``: its parser, the words it allows between its leading
    keywords (``CREATE [OR REPLACE] [TEMPORARY] TABLE``), whether replay applies it."""

    parser: StatementParser
    # the optional words between the leading keywords, in order: each group one of its alternatives
    modifiers: tuple[tuple[tuple[str, ...], ...], ...]
    on_replay: bool  # a database-level statement: applied also where a history record's tableChanges say the rest


def _entry(parser: StatementParser, *modifiers: str, on_replay: bool = False) -> _Entry:
    """``_entry(p, "OR REPLACE", "UNIQUE|FULLTEXT|SPATIAL")``: each argument an optional group."""
    groups = tuple(tuple(tuple(words.split()) for words in group.split("|")) for group in modifiers)
    return _Entry(parser, groups, on_replay)


# leading keywords -> the statement's parser. Every other statement (TRUNCATE, views, routines,
# triggers, users, sequences...) changes no table definition. The entries of one first keyword
# are tried in this order.
STATEMENT_PARSERS: dict[tuple[str, ...], _Entry] = {
    ("USE",): _entry(_use, on_replay=True),
    ("SET",): _entry(_set, on_replay=True),
    ("CREATE", "DATABASE"): _entry(_create_database, "OR REPLACE", on_replay=True),
    ("CREATE", "SCHEMA"): _entry(_create_database, "OR REPLACE", on_replay=True),
    ("CREATE", "TABLE"): _entry(_create_table, "OR REPLACE", "TEMPORARY"),
    ("CREATE", "INDEX"): _entry(_create_index, "OR REPLACE", "TEMPORARY", "UNIQUE|FULLTEXT|SPATIAL"),
    ("ALTER", "DATABASE"): _entry(_alter_database, on_replay=True),
    ("ALTER", "SCHEMA"): _entry(_alter_database, on_replay=True),
    ("ALTER", "TABLE"): _entry(_alter_table, "ONLINE|OFFLINE", "IGNORE"),
    ("DROP", "DATABASE"): _entry(_drop_database, on_replay=True),
    ("DROP", "SCHEMA"): _entry(_drop_database, on_replay=True),
    ("DROP", "TABLE"): _entry(_drop_tables),
    ("RENAME", "TABLE"): _entry(_rename_tables),
    ("RENAME", "TABLES"): _entry(_rename_tables),
}


def _by_first_keyword() -> dict[str, tuple[tuple[tuple[str, ...], _Entry], ...]]:
    found: dict[str, list[tuple[tuple[str, ...], _Entry]]] = {}
    for (first, *rest), entry in STATEMENT_PARSERS.items():
        found.setdefault(first, []).append((tuple(rest), entry))
    return {first: tuple(entries) for first, entries in found.items()}


_BY_FIRST_KEYWORD = _by_first_keyword()


def _modifiers(cur: Cursor, groups: tuple[tuple[tuple[str, ...], ...], ...]) -> frozenset[str]:
    found: set[str] = set()
    for group in groups:
        for words in group:
            if cur.accept(*words):
                found.add(" ".join(words))
                break
    return frozenset(found)


def _find_statement(cur: Cursor, tables: bool) -> tuple[_Entry, frozenset[str]] | None:
    """The entry of ``STATEMENT_PARSERS`` the statement starts with, its keywords and modifiers
    read; None for a statement that changes no table (or, ``tables=False``, no database)."""
    entries = _BY_FIRST_KEYWORD.get(cur.word() or "")
    if entries is None:
        return None
    start = cur.i + 1
    for rest, entry in entries:
        if not (tables or entry.on_replay):
            continue
        cur.i = start
        modifiers = _modifiers(cur, entry.modifiers)
        if cur.accept(*rest):
            return entry, modifiers
    return None


class MySqlSchema:
    """Databases and their tables, kept up to date by applying DDL statements.

    ``apply(ddl, default_db)`` returns the statement's ``tableChanges`` in Debezium's JSON form.
    Table names are case-sensitive unless ``lower_case_table_names`` is 1 or 2 (the server's
    setting); column names never are. ``server_charset`` is ``character_set_server``: a table
    with no charset of its own, in a database with none, takes it. Comments are kept only with
    ``include_comments`` (Debezium's ``include.schema.comments``, off by default).
    """

    def __init__(
        self,
        *,
        server_charset: str | None = None,
        skip_unparseable: bool = False,
        include_comments: bool = False,
        lower_case_table_names: int = 0,
    ) -> None:
        self._state = State(server_charset=server_charset)
        self.skip_unparseable = skip_unparseable
        self.include_comments = include_comments
        self.lower_case_table_names = lower_case_table_names

    # -- reading the model --

    @property
    def server_charset(self) -> str | None:
        return self._state.server_charset

    @server_charset.setter
    def server_charset(self, charset: str | None) -> None:
        self._state.server_charset = charset

    def databases(self) -> dict[str, str | None]:
        """Known databases and their default charsets."""
        names = dict(self._state.databases)
        for table_id in self._state.tables:
            names.setdefault(table_id.catalog or "", None)
        return names

    def set_database_charset(self, database: str, charset: str | None) -> None:
        self._state.databases[self._norm(database)] = charset

    def tables(self, database: str | None = None) -> list[Table]:
        return [t for tid, t in sorted(self._state.tables.items())
                if database is None or tid.catalog == self._norm(database)]

    def table(self, database: str, name: str) -> Table | None:
        return self._state.tables.get(self._id(database, name))

    def table_ids(self) -> list[TableId]:
        return sorted(self._state.tables)

    # -- applying DDL --

    def apply(self, ddl: str, default_db: str | None = None) -> list[dict[str, Any]]:
        """Apply a DDL text (one or more statements) and return its ``tableChanges`` entries.

        An unparseable statement raises ``UnparseableDdlError`` (nothing of the text is applied),
        or with ``skip_unparseable`` is logged and skipped.
        """
        return [e.change for e in self.apply_events(ddl, default_db) if e.change is not None and e.applied]

    def apply_events(self, ddl: str, default_db: str | None = None) -> list[DdlEvent]:
        """Apply a DDL text as :meth:`apply` does and return the events Debezium's parser signals
        for it, in order (none for statements that change no table or database: views, routines,
        indexes, ALTER DATABASE...)."""
        if not self._may_change_schema(ddl):
            return []
        try:
            statements = read_statements(ddl)
        except UnparseableDdlError as exc:
            self._unparseable(ddl, exc)
            return []
        state = self._state.copy()
        events: list[DdlEvent] = []
        database = default_db
        for statement in statements:
            try:
                work = state.copy() if self.skip_unparseable else state
                database, found = self._statement(work, statement, database, tables=True)
                state = work
                events.extend(found)
            except UnparseableDdlError as exc:
                self._unparseable(statement.text(), exc)  # raises unless skip_unparseable
            except (IndexError, ValueError) as exc:
                self._unparseable(statement.text(), UnparseableDdlError(str(exc)))
        self._state = state
        return events

    def _unparseable(self, statement: str, exc: UnparseableDdlError) -> None:
        if self.skip_unparseable:
            log.warning("Ignoring unparseable DDL statement %r: %s", statement, exc.message)
            return
        raise UnparseableDdlError(
            f"cannot parse DDL statement {statement!r}: {exc.message}",
            fix="report the statement; to go on without it set schema.history.internal.skip.unparseable.ddl=true"
                " (events of the tables it changed may then be decoded with a wrong schema)",
        ) from None

    @staticmethod
    def _may_change_schema(ddl: str) -> bool:
        """A cheap look at the first word: BEGIN, COMMIT, DML and the like need no parsing."""
        match = _FIRST_WORD.match(ddl)
        return match is not None and match.group(1).upper() in _DDL_WORDS

    def _norm(self, name: str) -> str:
        return norm(name, self.lower_case_table_names)

    def _id(self, database: str | None, name: str) -> TableId:
        return qualified_id(database, name, self.lower_case_table_names)

    def _statement(self, state: State, cur: Cursor, database: str | None,
                   tables: bool) -> tuple[str | None, list[DdlEvent]]:
        """Apply one statement and return the default database after it and its events;
        ``tables=False`` applies only database-level effects (replay)."""
        found = _find_statement(cur, tables)
        if found is None:
            return database, []
        entry, modifiers = found
        ctx = Context(state, database, self.include_comments, self.lower_case_table_names)
        events = entry.parser(ctx, cur, modifiers)
        return ctx.database, events

    # -- history --

    def to_snapshot(self) -> list[dict[str, Any]]:
        """The whole model as schema history items (``databaseName``, ``ddl``, ``tableChanges``).

        Written with ``history_record`` at one position, they rebuild this model through
        ``from_history``: the server charset, each database with its charset, then one CREATE
        change per table (the ``ddl`` of a table item is a comment; the change is what counts).
        """
        items: list[dict[str, Any]] = []
        if self.server_charset:
            items.append({"databaseName": "", "ddl": f"SET character_set_server={self.server_charset}",
                          "tableChanges": []})
        for name, charset in sorted(self.databases().items()):
            ddl = f"CREATE DATABASE IF NOT EXISTS {_quote(name)}"
            if charset:
                ddl += f" CHARACTER SET {charset}"
            items.append({"databaseName": name, "ddl": ddl, "tableChanges": []})
        for table in self.tables():
            items.append({
                "databaseName": table.id.catalog,
                "ddl": f"/* schema snapshot of {_quote(table.id.catalog or '')}.{_quote(table.id.table)} */",
                "tableChanges": [table_change("CREATE", table)],
            })
        return items

    @classmethod
    def from_history(
        cls,
        entries: Iterable[dict[str, Any]],
        until_position_predicate: Callable[[dict[str, Any]], bool] | None = None,
        **options: Any,
    ) -> MySqlSchema:
        """Rebuild the schema from history records whose position the predicate accepts.

        As Debezium recovers: a record's ``tableChanges``, when it has some, are applied as they
        are; otherwise its DDL is parsed again (CREATE/DROP DATABASE, charsets). Records the
        predicate rejects (after the stored offset) are skipped.
        """
        schema = cls(**options)
        for entry in entries:
            position = entry.get("position") or {}
            if until_position_predicate is not None and not until_position_predicate(position):
                continue
            schema.replay(entry)
        return schema

    def replay(self, entry: dict[str, Any]) -> None:
        """Apply one history record to the model (see ``from_history``)."""
        changes = entry.get("tableChanges") or []
        ddl = entry.get("ddl")
        database = entry.get("databaseName") or None
        if changes:
            if ddl:
                self._replay_ddl(ddl, database, tables=False)
            for change in changes:
                self._apply_change(change)
        elif ddl:
            self._replay_ddl(ddl, database, tables=True)

    def _replay_ddl(self, ddl: str, database: str | None, tables: bool) -> None:
        if not self._may_change_schema(ddl):
            return
        try:
            statements = read_statements(ddl)
        except UnparseableDdlError as exc:
            log.warning("Schema history: skipping unparseable DDL %r: %s", ddl, exc.message)
            return
        for statement in statements:
            try:
                database, _ = self._statement(self._state, statement, database, tables=tables)
            except (UnparseableDdlError, IndexError, ValueError) as exc:
                log.warning("Schema history: skipping unparseable DDL %r: %s", statement.text(), exc)

    def _apply_change(self, change: dict[str, Any]) -> None:
        table_id = _table_id_of(change["id"])
        if change.get("previousId"):
            self._state.tables.pop(_table_id_of(change["previousId"]), None)
        if change["type"] == "DROP":
            self._state.tables.pop(table_id, None)
            return
        table = Table.from_json(table_id, change["table"], change.get("comment"))
        self._state.tables[table_id] = table
        self._state.databases.setdefault(table_id.catalog or "", None)


def _table_id_of(quoted: str) -> TableId:
    parts = parse_table_id(quoted)
    if len(parts) == 1:
        return TableId(None, None, parts[0])
    return TableId(parts[0], None, parts[-1])


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# Debezium's default ``schema.history.internal.ddl.filter`` (3.5): statements it neither records
# nor emits, whole-text matches, case-insensitive, ``.`` across lines.
_SET_STATEMENT = r"(?:SET STATEMENT\s+.*?FOR\s+)?"
_IGNORED_DDL = re.compile("|".join(f"(?:{p})" for p in (
    r"DROP TEMPORARY TABLE IF EXISTS .+ /\* generated by server \*/",
    r"(SET STATEMENT .*)?INSERT INTO (mysql\.)?rds_heartbeat2\(.*\) values \(.*\) ON DUPLICATE KEY UPDATE value = .*",
    r"(SET STATEMENT .*)?DELETE FROM (mysql\.)?rds_sysinfo.*",
    r"(SET STATEMENT .*)?INSERT INTO (mysql\.)?rds_sysinfo\(.*\) values \(.*\)",
    r"(SET STATEMENT .*)?INSERT INTO (mysql\.)?rds_monitor\(.*\) values \(.*\) ON DUPLICATE KEY UPDATE value = .*",
    r"(SET STATEMENT .*)?INSERT INTO (mysql\.)?rds_monitor\(.*\) values \(.*\)",
    r"(SET STATEMENT .*)?DELETE FROM (mysql\.)?rds_monitor.*",
    r"FLUSH RELAY LOGS.*", r"SAVEPOINT .*", r"^\s*#\s*Dummy event.*",
    r"(SET STATEMENT .*)?TRUNCATE TABLE .*", r"(SET STATEMENT .*)?REPLACE INTO .*",
    rf"^{_SET_STATEMENT}(?:GRANT|REVOKE)\s+.*",
    rf"^{_SET_STATEMENT}(?:ANALYZE|OPTIMIZE|REPAIR)\s+(?:NO_WRITE_TO_BINLOG\s+|LOCAL\s+)?TABLE\s+.*",
    rf"^{_SET_STATEMENT}(CREATE|ALTER|DROP)\s+(?:OR\s+REPLACE\s+)?(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(USER|ROLE)\b.*",
    rf"^{_SET_STATEMENT}(CREATE|ALTER|DROP)\s+(?:OR\s+REPLACE\s+)?(?:ALGORITHM\s*=\s*[^\s]+\s+)?"
    r"(?:DEFINER\s*=\s*[^\s]+\s+)?(?:SQL\s+SECURITY\s+[^\s]+\s+)?(VIEW|FUNCTION|PROCEDURE|TRIGGER)\s+.*",
)), re.IGNORECASE | re.DOTALL)


def ignored_by_debezium(ddl: str) -> bool:
    """A statement Debezium's default DDL filter drops: no schema change event (views, routines,
    triggers, users, grants, table maintenance, server-generated temporary-table drops...)."""
    return _IGNORED_DDL.fullmatch(ddl) is not None


def history_record(
    source: dict[str, Any],
    position: dict[str, Any],
    database: str | None,
    ddl: str | None,
    table_changes: list[dict[str, Any]],
    *,
    ts_ms: int | None = None,
) -> dict[str, Any]:
    """One schema history record in Debezium's shape (``io.debezium.relational.history.HistoryRecord``)."""
    record: dict[str, Any] = {"source": source, "position": position}
    if ts_ms is not None:
        record["ts_ms"] = ts_ms
    if database is not None:
        record["databaseName"] = database
    if ddl is not None:
        record["ddl"] = ddl
    record["tableChanges"] = table_changes
    return record


def iter_statements(ddl: str) -> Iterator[str]:
    """The statements of a DDL text as strings (for logs and per-statement history records)."""
    for statement in read_statements(ddl):
        yield statement.text()
