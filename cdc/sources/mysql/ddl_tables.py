"""Tables for the MySQL/MariaDB DDL parser (``ddl.py``): the model a statement changes, the table
it builds (``Draft``), and CREATE TABLE / CREATE INDEX with what ALTER TABLE shares with them
(body elements, keys, table options)."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot.tokens import TokenType

from cdc.core.schema import Column, Table, TableId, table_change
from cdc.sources.mysql.ddl_columns import key_columns, parse_column
from cdc.sources.mysql.ddl_tokens import Cursor, UnparseableDdlError
from cdc.sources.mysql.ddl_types import ColumnSpec, charset_of_collation

# The parser's one logger, whichever of its modules speaks: the name users and tests filter on.
log = logging.getLogger("cdc.sources.mysql.ddl")

Constraints = list[tuple[str, list[str] | None]]  # ("PRIMARY" | "UNIQUE", column names or None)


@dataclass(slots=True)
class State:
    tables: dict[TableId, Table] = field(default_factory=dict)
    databases: dict[str, str | None] = field(default_factory=dict)  # name -> default charset
    server_charset: str | None = None

    def copy(self) -> State:
        return State(dict(self.tables), dict(self.databases), self.server_charset)


def norm(name: str, lower_case_table_names: int) -> str:
    return name.lower() if lower_case_table_names else name


def qualified_id(database: str | None, name: str, lower_case_table_names: int) -> TableId:
    if not database:
        raise UnparseableDdlError(f"no database selected for table {name!r}")
    return TableId(norm(database, lower_case_table_names), None, norm(name, lower_case_table_names))


@dataclass(slots=True)
class Context:
    """What the parsers of one statement work with: the model, the default database (which
    ``USE`` changes), and the schema's options."""

    state: State
    database: str | None
    include_comments: bool
    lower_case_table_names: int

    def norm(self, name: str) -> str:
        return norm(name, self.lower_case_table_names)

    def table_id(self, database: str | None, name: str) -> TableId:
        """``[database.]name``: in the default database when none is named."""
        return qualified_id(database or self.database, name, self.lower_case_table_names)


# ---- the mutable table being built by one statement ------------------------------------------

@dataclass(slots=True)
class Draft:
    id: TableId
    columns: list[Column]
    primary_key: list[str]
    charset: str | None
    comment: str | None
    attributes: tuple[tuple[str, Any], ...] = ()
    previous_id: TableId | None = None

    @classmethod
    def of(cls, table: Table) -> Draft:
        return cls(table.id, list(table.columns), list(table.primary_key), table.default_charset,
                   table.comment, table.attributes)

    def index(self, name: str) -> int | None:
        lowered = name.lower()
        for i, column in enumerate(self.columns):
            if column.name.lower() == lowered:
                return i
        return None

    def require(self, name: str) -> int:
        i = self.index(name)
        if i is None:
            raise UnparseableDdlError(f"table {self.id} has no column {name!r} (the schema history is behind)")
        return i

    def place(self, column: Column, position: tuple[str, str | None] | None, at: int | None = None) -> None:
        """Put ``column`` at ``at`` (its old place), or where FIRST/AFTER says, or last."""
        if position is None:
            if at is None:
                self.columns.append(column)
            else:
                self.columns.insert(at, column)
            return
        if position[0] == "FIRST":
            self.columns.insert(0, column)
            return
        after = position[1] or ""
        self.columns.insert(self.require(after) + 1, column)

    def set_primary_key(self, names: list[str]) -> None:
        resolved = [self.columns[self.require(n)].name for n in names]
        self.primary_key = resolved
        self.enforce_key_not_null()

    def enforce_key_not_null(self) -> None:
        """Key columns are NOT NULL (the server makes them so); an implicit NULL default goes."""
        for name in self.primary_key:
            i = self.index(name)
            if i is None:
                continue
            column = self.columns[i]
            if column.optional or (column.has_default and column.default_expression is None):
                has_default = column.has_default and column.default_expression is not None
                self.columns[i] = replace(column, optional=False, has_default=has_default)

    def maybe_unique_key(self, names: list[str] | None) -> None:
        """A key-less table takes a UNIQUE key over NOT NULL columns as its key (Debezium)."""
        if self.primary_key or not names:
            return
        indexes = [self.index(n) for n in names]
        if any(i is None or self.columns[i].optional for i in indexes):
            return
        self.primary_key = [self.columns[i].name for i in indexes if i is not None]

    def build(self) -> Table:
        columns = tuple(replace(c, position=i) if c.position != i else c for i, c in enumerate(self.columns, 1))
        return Table(self.id, columns, tuple(self.primary_key), self.charset, self.comment, self.attributes)


# ---- CREATE TABLE and what ALTER TABLE shares with it -------------------------------------------

KEY_WORDS = {"CONSTRAINT", "PRIMARY", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK"}


def create_table(ctx: Context, cur: Cursor, replace_existing: bool) -> list[dict[str, Any]]:
    state = ctx.state
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    db, name = cur.qualified_name()
    table_id = ctx.table_id(db, name)
    state.databases.setdefault(table_id.catalog or "", None)
    exists = table_id in state.tables
    if exists and if_not_exists:
        return []
    like = cur.accept("LIKE")
    if not like and cur.is_type(TokenType.L_PAREN) and cur.word(1) == "LIKE":
        cur.i += 2
        like = True
    if like:
        return _create_like(ctx, cur, table_id)
    if not cur.is_type(TokenType.L_PAREN):
        raise cur.error("CREATE TABLE without column definitions (... AS SELECT) gives columns"
                        " whose types only the server knows")
    specs: list[ColumnSpec] = []
    constraints: Constraints = []
    for element in cur.paren_groups():
        table_element(element, specs, constraints)
    charset, comment = table_options(cur, allow_select=False)
    if charset is None:
        charset = state.databases.get(table_id.catalog or "") or state.server_charset
    draft = Draft(table_id, [], [], charset, comment if ctx.include_comments else None)
    for spec in specs:
        draft.columns.append(spec.column(charset, ctx.include_comments))
    _apply_keys(draft, specs, constraints)
    table = draft.build()
    state.tables[table_id] = table
    if exists and not replace_existing:
        log.warning("CREATE TABLE of %s, which the schema already had: replaced", table_id)
    return [table_change("CREATE", table)]


def _create_like(ctx: Context, cur: Cursor, table_id: TableId) -> list[dict[str, Any]]:
    """``CREATE TABLE t LIKE other``: other's columns, key and charset, not its comment."""
    src_db, src_name = cur.qualified_name()
    source = ctx.state.tables.get(ctx.table_id(src_db, src_name))
    if source is None:
        log.warning("CREATE TABLE %s LIKE %s: the original table is unknown; %s is not tracked",
                    table_id, src_name, table_id)
        return []
    table = Table(table_id, source.columns, source.primary_key, source.default_charset, None, source.attributes)
    ctx.state.tables[table_id] = table
    return [table_change("CREATE", table)]


def _apply_keys(draft: Draft, specs: list[ColumnSpec], constraints: Constraints) -> None:
    """Primary key: an explicit one wins; else the first UNIQUE over NOT NULL columns."""
    explicit = [s.name for s in specs if s.primary]
    for kind, names in constraints:
        if kind == "PRIMARY" and names:
            explicit = names
    if explicit:
        draft.set_primary_key(explicit)
        return
    unique_keys(draft, specs, constraints)


def unique_keys(draft: Draft, specs: list[ColumnSpec], constraints: Constraints) -> None:
    """Offer the table's UNIQUE keys (columns' own, then constraints) as its key where it has none."""
    for spec in specs:
        if spec.unique:
            draft.maybe_unique_key([spec.name])
    for kind, names in constraints:
        if kind == "UNIQUE":
            draft.maybe_unique_key(names)


def table_element(cur: Cursor, specs: list[ColumnSpec], constraints: Constraints) -> None:
    """One item of a CREATE TABLE body: a column, or a key/constraint definition."""
    token = cur.peek()
    quoted = token is not None and token.token_type == TokenType.IDENTIFIER
    w = None if quoted else cur.word()
    if w == "CONSTRAINT":
        cur.i += 1
        if cur.word() not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
            cur.name()
        w = cur.word()
    if w == "PRIMARY":
        cur.expect("PRIMARY", "KEY")
        constraints.append(("PRIMARY", _index_columns(cur)))
    elif w == "UNIQUE":
        cur.i += 1
        cur.accept_any("INDEX", "KEY")
        constraints.append(("UNIQUE", _index_columns(cur)))
    elif w in ("INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK") or (
            w == "PERIOD" and cur.word(1) == "FOR"):
        return  # no effect on columns or the key
    else:
        specs.append(parse_column(cur, _column_name(cur)))


def _column_name(cur: Cursor) -> str:
    """A CREATE TABLE column may be written ``[[db.]table.]name`` or ``.name`` (the server
    checks the qualifiers against the table being created and keeps the name)."""
    cur.accept_type(TokenType.DOT)
    name = cur.name()
    for _ in range(2):
        if not cur.accept_type(TokenType.DOT):
            break
        name = cur.name()
    return name


def _index_columns(cur: Cursor) -> list[str] | None:
    """Skip an index's name and type, then read its column list."""
    while not cur.at_end() and not cur.is_type(TokenType.L_PAREN):
        if cur.accept("USING"):
            cur.next()
        else:
            cur.next()
    if cur.at_end():
        raise cur.error("expected the key's columns")
    return key_columns(cur)


def table_options(cur: Cursor, allow_select: bool) -> tuple[str | None, str | None]:
    """Table options: the default charset and the comment; everything else is skipped."""
    charset: str | None = None
    collation_charset: str | None = None
    comment: str | None = None
    while not cur.at_end():
        w = cur.word()
        if not allow_select and (
                w in ("SELECT", "AS") or (w == "WITH" and cur.word(1) != "SYSTEM")
                or (w in ("IGNORE", "REPLACE") and cur.word(1) in ("SELECT", "AS"))
                or (cur.is_type(TokenType.L_PAREN) and cur.word(1) in ("SELECT", "WITH"))):
            raise cur.error("CREATE TABLE ... SELECT gives columns whose types only the server knows")
        if cur.accept("DEFAULT"):
            continue
        if cur.accept("CHARACTER", "SET") or cur.accept("CHARSET") or cur.accept("CHAR", "SET"):
            cur.accept_type(TokenType.EQ)
            charset = cur.name().lower()
        elif cur.accept("COLLATE"):
            cur.accept_type(TokenType.EQ)
            collation_charset = charset_of_collation(cur.name())
        elif cur.accept("COMMENT"):
            cur.accept_type(TokenType.EQ)
            comment = cur.next().text
        elif cur.is_type(TokenType.L_PAREN):
            cur.skip_parens()
        else:
            cur.next()
    return charset or collation_charset, comment


# ---- CREATE INDEX -------------------------------------------------------------------------------

def create_index(ctx: Context, cur: Cursor, unique: bool) -> list[dict[str, Any]]:
    """Debezium signals an index only when a UNIQUE one becomes a key-less table's key."""
    cur.accept("IF", "NOT", "EXISTS")
    cur.name()
    if cur.accept("USING"):
        cur.next()
    cur.expect("ON")
    db, name = cur.qualified_name()
    table_id = ctx.table_id(db, name)
    table = ctx.state.tables.get(table_id)
    if not unique or table is None or table.primary_key:
        return []
    draft = Draft.of(table)
    draft.maybe_unique_key(key_columns(cur))
    if not draft.primary_key:
        return []
    table = draft.build()
    ctx.state.tables[table_id] = table
    return [table_change("ALTER", table)]
