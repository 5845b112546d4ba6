"""ALTER TABLE for the MySQL/MariaDB DDL parser (``ddl.py``): a table of clause parsers keyed by
the clause's keyword (ADD, DROP, MODIFY, CHANGE, RENAME, ALTER, CONVERT), each applying its
clause to the table being built; a clause with none of these keywords is table options."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlglot.tokens import TokenType

from cdc.core.schema import table_change
from cdc.sources.mysql.ddl_columns import default_value, parse_column
from cdc.sources.mysql.ddl_tables import (
    KEY_WORDS,
    Constraints,
    Context,
    Draft,
    log,
    table_element,
    table_options,
    unique_keys,
)
from cdc.sources.mysql.ddl_tokens import Cursor, UnparseableDdlError
from cdc.sources.mysql.ddl_types import ColumnSpec


def alter_table(ctx: Context, cur: Cursor) -> list[dict[str, Any]]:
    state = ctx.state
    cur.accept("IF", "EXISTS")
    db, name = cur.qualified_name()
    table_id = ctx.table_id(db, name)
    table = state.tables.get(table_id)
    if table is None:
        log.debug("ALTER TABLE of %s, which the schema does not have: ignored", table_id)
        return []
    if cur.accept("WAIT"):
        cur.next()
    cur.accept("NOWAIT")
    draft = Draft.of(table)
    for clause in cur.split_top_level():
        _alter_clause(ctx, draft, clause)
    draft.enforce_key_not_null()
    new_table = draft.build()
    del state.tables[table_id]
    state.tables[new_table.id] = new_table
    if new_table.id != table_id:
        state.databases.setdefault(new_table.id.catalog or "", None)
        return [table_change("ALTER", new_table, previous_id=table_id)]
    return [table_change("ALTER", new_table)]


def _alter_clause(ctx: Context, draft: Draft, cur: Cursor) -> None:
    parser = ALTER_PARSERS.get(cur.word() or "")
    if parser is None:
        _options(ctx, draft, cur)
        return
    cur.i += 1
    parser(ctx, draft, cur)


# ---- the clauses (each starts after its keyword) ------------------------------------------------

def _add(ctx: Context, draft: Draft, cur: Cursor) -> None:
    """``ADD [COLUMN] [IF NOT EXISTS] c ...``, ``ADD [COLUMN] (c ..., ...)``, or ``ADD`` a key."""
    if cur.word() in ("PARTITION", "SYSTEM", "PERIOD"):
        return
    column_keyword = cur.accept("COLUMN")
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    specs: list[ColumnSpec] = []
    constraints: Constraints = []
    if cur.is_type(TokenType.L_PAREN):  # ADD [COLUMN] (definition, ...)
        for element in cur.paren_groups():
            table_element(element, specs, constraints)
        specs = [s for s in specs if not (if_not_exists and draft.index(s.name) is not None)]
        for spec in specs:
            _add_column(ctx, draft, spec)
    elif not column_keyword and not cur.is_type(TokenType.IDENTIFIER) and cur.word() in KEY_WORDS:
        table_element(cur, specs, constraints)
    else:
        name = cur.name()
        if if_not_exists and draft.index(name) is not None:
            return
        specs.append(parse_column(cur, name, allow_position=True))
        _add_column(ctx, draft, specs[0])
    _add_keys(draft, specs, constraints)


def _add_column(ctx: Context, draft: Draft, spec: ColumnSpec) -> None:
    if draft.index(spec.name) is not None:
        raise UnparseableDdlError(f"table {draft.id} already has a column {spec.name!r}")
    draft.place(spec.column(draft.charset, ctx.include_comments), spec.position)


def _add_keys(draft: Draft, specs: list[ColumnSpec], constraints: Constraints) -> None:
    for spec in specs:
        if spec.primary:
            draft.set_primary_key([spec.name])
    for kind, names in constraints:
        if kind == "PRIMARY" and names:
            draft.set_primary_key(names)
    unique_keys(draft, specs, constraints)


def _drop(ctx: Context, draft: Draft, cur: Cursor) -> None:
    """``DROP PRIMARY KEY``, ``DROP [COLUMN] [IF EXISTS] c``; other DROPs leave columns and key alone."""
    if cur.accept("PRIMARY", "KEY"):
        draft.primary_key = []
    elif cur.word() in ("INDEX", "KEY", "FOREIGN", "CHECK", "CONSTRAINT", "PARTITION", "SYSTEM", "PERIOD"):
        return
    else:
        cur.accept("COLUMN")
        cur.accept("IF", "EXISTS")
        i = draft.index(cur.name())
        if i is not None:
            removed = draft.columns.pop(i)
            draft.primary_key = [k for k in draft.primary_key if k.lower() != removed.name.lower()]


def _modify(ctx: Context, draft: Draft, cur: Cursor) -> None:
    """``MODIFY [COLUMN] [IF EXISTS] c definition``."""
    cur.accept("COLUMN")
    if_exists = cur.accept("IF", "EXISTS")
    name = cur.name()
    if if_exists and draft.index(name) is None:
        return
    _replace_column(ctx, draft, name, parse_column(cur, name, allow_position=True))


def _change(ctx: Context, draft: Draft, cur: Cursor) -> None:
    """``CHANGE [COLUMN] [IF EXISTS] old new definition``."""
    cur.accept("COLUMN")
    if_exists = cur.accept("IF", "EXISTS")
    old = cur.name()
    if if_exists and draft.index(old) is None:
        return
    new = cur.name()
    _replace_column(ctx, draft, old, parse_column(cur, new, allow_position=True))


def _replace_column(ctx: Context, draft: Draft, old: str, spec: ColumnSpec) -> None:
    """MODIFY/CHANGE: the new definition replaces the column, in place unless FIRST/AFTER."""
    i = draft.require(old)
    old_name = draft.columns.pop(i).name
    if spec.name.lower() != old_name.lower() and draft.index(spec.name) is not None:
        raise UnparseableDdlError(f"table {draft.id} already has a column {spec.name!r}")
    draft.place(spec.column(draft.charset, ctx.include_comments), spec.position, at=i)
    draft.primary_key = [spec.name if k.lower() == old_name.lower() else k for k in draft.primary_key]
    if spec.primary:
        draft.set_primary_key([spec.name])
    elif spec.unique:
        draft.maybe_unique_key([spec.name])


def _rename(ctx: Context, draft: Draft, cur: Cursor) -> None:
    """``RENAME COLUMN a TO b``, ``RENAME INDEX|KEY ...`` (no effect), ``RENAME [TO|AS] [db.]t``."""
    if cur.accept("COLUMN"):
        _rename_column(draft, cur)
    elif cur.accept_any("INDEX", "KEY"):
        return
    else:
        cur.accept_any("TO", "AS")
        db, name = cur.qualified_name()
        new_id = ctx.table_id(db, name)
        if new_id != draft.id:
            draft.previous_id = draft.previous_id or draft.id
            draft.id = new_id


def _rename_column(draft: Draft, cur: Cursor) -> None:
    if_exists = cur.accept("IF", "EXISTS")  # MariaDB
    old = cur.name()
    cur.expect("TO")
    new = cur.name()
    if if_exists and draft.index(old) is None:
        return
    i = draft.require(old)
    draft.columns[i] = replace(draft.columns[i], name=new)
    draft.primary_key = [new if k.lower() == old.lower() else k for k in draft.primary_key]


def _alter_column(ctx: Context, draft: Draft, cur: Cursor) -> None:
    """``ALTER [COLUMN] c SET DEFAULT v | DROP DEFAULT``; ALTER of an index or a check changes nothing."""
    if cur.word() in ("INDEX", "KEY", "CHECK", "CONSTRAINT"):
        return
    cur.accept("COLUMN")
    cur.accept("IF", "EXISTS")
    name = cur.name()
    i = draft.require(name)
    column = draft.columns[i]
    if cur.accept("SET", "DEFAULT"):
        given, expression = default_value(cur)
        draft.columns[i] = replace(column, has_default=given or column.optional,
                                   default_expression=expression if given else None)
    elif cur.accept("DROP", "DEFAULT"):
        draft.columns[i] = replace(column, has_default=False, default_expression=None)


def _convert(ctx: Context, draft: Draft, cur: Cursor) -> None:
    """``CONVERT TO CHARACTER SET x``: the table's charset and every column that has one."""
    cur.expect("TO")
    charset, _ = table_options(cur, allow_select=True)
    if charset and charset != "default":
        draft.charset = charset
        draft.columns = [replace(c, charset=charset) if c.charset is not None else c for c in draft.columns]


def _options(ctx: Context, draft: Draft, cur: Cursor) -> None:
    """Table options (``[DEFAULT] CHARSET x``, ``COMMENT 'c'``); the others, ALGORITHM, LOCK,
    partitioning..., change no column."""
    charset, comment = table_options(cur, allow_select=True)
    if charset and charset != "default":
        draft.charset = charset
    if comment is not None and ctx.include_comments:
        draft.comment = comment


AlterParser = Callable[[Context, Draft, Cursor], None]

# clause keyword -> its parser; any other clause is table options (_options)
ALTER_PARSERS: dict[str, AlterParser] = {
    "ADD": _add, "DROP": _drop, "MODIFY": _modify, "CHANGE": _change, "RENAME": _rename, "ALTER": _alter_column,
    "CONVERT": _convert,
}
