"""Column definitions for the MySQL/MariaDB DDL parser (``ddl.py``): after the type
(``ddl_types.py``), a table of column attributes keyed by their first keyword (NULL, DEFAULT,
AUTO_INCREMENT, keys, COMMENT, charset, generated columns, references...), each read by a small
function, and the DEFAULT values by kind of literal."""
from __future__ import annotations

from collections.abc import Callable

from sqlglot.tokens import Token, TokenType

from cdc.sources.mysql.ddl_tokens import Cursor, UnparseableDdlError, is_word
from cdc.sources.mysql.ddl_types import ColumnSpec, charset_of_collation, parse_type

_EPOCH_DEFAULT = "1970-01-01 00:00:00"  # what Debezium records for DEFAULT CURRENT_TIMESTAMP / NOW()
_CURRENT_TIME_WORDS = {"CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP"}

# ---- DEFAULT values -----------------------------------------------------------------------------

DefaultValue = tuple[bool, str | None]  # (given, Debezium's defaultValueExpression)


def _string(cur: Cursor, token: Token, sign: str) -> DefaultValue:
    return True, sign + token.text


def _number(cur: Cursor, token: Token, sign: str) -> DefaultValue:
    return True, sign + cur.sql[token.start:token.end + 1]


def _bits(cur: Cursor, token: Token, sign: str) -> DefaultValue:
    return True, token.text


def _hex(cur: Cursor, token: Token, sign: str) -> DefaultValue:
    return True, None


_DEFAULT_LITERALS: dict[TokenType, Callable[[Cursor, Token, str], DefaultValue]] = {
    TokenType.STRING: _string, TokenType.NATIONAL_STRING: _string, TokenType.NUMBER: _number,
    TokenType.BIT_STRING: _bits, TokenType.HEX_STRING: _hex,
}


def _default_word(cur: Cursor, token: Token) -> DefaultValue:
    """NULL is no default; TRUE/FALSE as written; a current-time function is recorded as the
    epoch (Debezium); any other function or keyword is computed by the server: no value here."""
    word = token.text.upper()
    if word == "NULL":
        return False, None
    if word in ("TRUE", "FALSE"):
        return True, token.text
    if cur.is_type(TokenType.L_PAREN):
        cur.skip_parens()
    return True, _EPOCH_DEFAULT if word in _CURRENT_TIME_WORDS else None


def default_value(cur: Cursor) -> DefaultValue:
    """Read a DEFAULT value: (given, Debezium's defaultValueExpression). NULL is "not given"."""
    sign = ""
    token = cur.peek()
    if token is not None and token.token_type in (TokenType.DASH, TokenType.PLUS):
        sign = "-" if token.token_type == TokenType.DASH else ""
        cur.i += 1
    if cur.is_type(TokenType.L_PAREN):  # an expression default: its value is not known here
        cur.skip_parens()
        return True, None
    token = cur.next()
    if token.token_type == TokenType.INTRODUCER:
        token = cur.next()
    literal = _DEFAULT_LITERALS.get(token.token_type)
    if literal is not None:
        return literal(cur, token, sign)
    if is_word(token):
        return _default_word(cur, token)
    raise cur.error("unexpected DEFAULT value", back=1)


# ---- column attributes --------------------------------------------------------------------------
# Each reader starts at the attribute's first keyword. One whose first keyword is followed by
# words it does not know raises, as an unknown keyword does.

def _unexpected(cur: Cursor, spec: ColumnSpec) -> UnparseableDdlError:
    return cur.error(f"unexpected token in the definition of column {spec.name!r}")


def _not(cur: Cursor, spec: ColumnSpec) -> None:
    if cur.accept("NOT", "NULL"):
        spec.optional = False
    elif not cur.accept("NOT", "SECONDARY"):  # MySQL HeatWave: the column stays out of the secondary engine
        raise _unexpected(cur, spec)


def _null(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    spec.optional = True


def _default(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    spec.default_given, spec.default_expression = default_value(cur)


def _auto_increment(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    spec.auto_incremented = True


def _unique(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    cur.accept("KEY")
    spec.unique = True


def _primary(cur: Cursor, spec: ColumnSpec) -> None:
    """``PRIMARY [KEY]`` or ``KEY``."""
    cur.accept("PRIMARY")
    cur.accept("KEY")
    spec.primary = True


def _comment(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    spec.comment = cur.next().text


def _collate(cur: Cursor, spec: ColumnSpec) -> None:
    """A collation names its charset, which an explicit CHARACTER SET overrides."""
    cur.i += 1
    collation = cur.name()
    spec.charset = spec.charset or charset_of_collation(collation)


def _character_set(cur: Cursor, spec: ColumnSpec) -> None:
    if not cur.accept("CHARACTER", "SET"):
        raise _unexpected(cur, spec)
    spec.charset = cur.name().lower()


def _charset(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    spec.charset = cur.name().lower()


def _generated(cur: Cursor, spec: ColumnSpec) -> None:
    if not cur.accept("GENERATED", "ALWAYS"):
        raise _unexpected(cur, spec)
    _generated_as(cur, spec)


def _generated_as(cur: Cursor, spec: ColumnSpec) -> None:
    """``AS (expression) [VIRTUAL|STORED|PERSISTENT]``: a value the rows carry like any other."""
    if cur.accept("AS", "ROW"):  # MariaDB system-versioning columns: AS ROW START/END
        cur.accept_any("START", "END")
    else:
        cur.expect("AS")
        cur.skip_value()
    cur.accept_any("VIRTUAL", "STORED", "PERSISTENT")


def _on_update(cur: Cursor, spec: ColumnSpec) -> None:
    if not cur.accept("ON", "UPDATE"):
        raise _unexpected(cur, spec)
    cur.skip_value()


def _constraint(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    if cur.word() != "CHECK":
        cur.name()


def _check(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    cur.skip_parens()
    cur.accept("NOT")
    cur.accept("ENFORCED")


_REFERENCE_ACTIONS = ("RESTRICT", "CASCADE", "SET NULL", "NO ACTION", "SET DEFAULT")


def _references(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    cur.qualified_name()
    if cur.is_type(TokenType.L_PAREN):
        cur.skip_parens()
    while True:
        if cur.accept("MATCH"):
            cur.next()
        elif cur.accept("ON") and cur.accept_any("DELETE", "UPDATE"):
            if not any(cur.accept(*a.split()) for a in _REFERENCE_ACTIONS):
                raise cur.error("expected a referential action")
        else:
            break


def _keyword(cur: Cursor, spec: ColumnSpec) -> None:
    """A keyword with no bearing on the column's schema (VISIBLE, INVISIBLE)."""
    cur.i += 1


def _keyword_and_value(cur: Cursor, spec: ColumnSpec) -> None:
    """``COLUMN_FORMAT x``, ``STORAGE x``."""
    cur.i += 1
    cur.next()


def _option(cur: Cursor, spec: ColumnSpec) -> None:
    """``ENGINE_ATTRIBUTE [=] x`` and the like."""
    cur.i += 1
    cur.accept_type(TokenType.EQ)
    cur.next()


def _serial_default_value(cur: Cursor, spec: ColumnSpec) -> None:
    """``SERIAL DEFAULT VALUE``: NOT NULL AUTO_INCREMENT UNIQUE, unless NULL was said before."""
    if not cur.accept("SERIAL", "DEFAULT", "VALUE"):
        raise _unexpected(cur, spec)
    spec.auto_incremented, spec.unique = True, True
    spec.optional = False if spec.optional is None else spec.optional


def _system_versioning(cur: Cursor, spec: ColumnSpec) -> None:
    """MariaDB: ``WITH SYSTEM VERSIONING`` / ``WITHOUT SYSTEM VERSIONING``."""
    if not (cur.accept("WITH", "SYSTEM", "VERSIONING") or cur.accept("WITHOUT", "SYSTEM", "VERSIONING")):
        raise _unexpected(cur, spec)


def _compressed(cur: Cursor, spec: ColumnSpec) -> None:
    """MariaDB: ``COMPRESSED [= zlib]``."""
    cur.i += 1
    if cur.accept_type(TokenType.EQ):
        cur.next()


def _first(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    spec.position = ("FIRST", None)


def _after(cur: Cursor, spec: ColumnSpec) -> None:
    cur.i += 1
    spec.position = ("AFTER", cur.name())


ColumnAttribute = Callable[[Cursor, ColumnSpec], None]

# first keyword -> the reader of the attribute it starts
COLUMN_ATTRIBUTES: dict[str, ColumnAttribute] = {
    "NOT": _not, "NULL": _null, "DEFAULT": _default, "AUTO_INCREMENT": _auto_increment, "UNIQUE": _unique,
    "PRIMARY": _primary, "KEY": _primary, "COMMENT": _comment, "COLLATE": _collate,
    "CHARACTER": _character_set, "CHARSET": _charset, "GENERATED": _generated, "AS": _generated_as,
    "ON": _on_update, "CONSTRAINT": _constraint, "CHECK": _check, "REFERENCES": _references,
    "VISIBLE": _keyword, "INVISIBLE": _keyword, "COLUMN_FORMAT": _keyword_and_value, "STORAGE": _keyword_and_value,
    "ENGINE_ATTRIBUTE": _option, "SECONDARY_ENGINE_ATTRIBUTE": _option, "REF_SYSTEM_ID": _option, "SRID": _option,
    "SERIAL": _serial_default_value, "WITH": _system_versioning, "WITHOUT": _system_versioning,
    "COMPRESSED": _compressed,
}
# ALTER TABLE's ADD, MODIFY and CHANGE also say where the column goes
POSITIONED_COLUMN_ATTRIBUTES: dict[str, ColumnAttribute] = {**COLUMN_ATTRIBUTES, "FIRST": _first, "AFTER": _after}


def parse_column(cur: Cursor, name: str, allow_position: bool = False) -> ColumnSpec:
    spec = ColumnSpec(name=name, type_name="", jdbc_type=0)
    parse_type(cur, spec)
    attributes = POSITIONED_COLUMN_ATTRIBUTES if allow_position else COLUMN_ATTRIBUTES
    while not cur.at_end():
        attribute = attributes.get(cur.word() or "")
        if attribute is None:
            raise _unexpected(cur, spec)
        attribute(cur, spec)
    return spec


def key_columns(cur: Cursor) -> list[str] | None:
    """Column names of a key's parts; None when a part is an expression (functional key)."""
    names: list[str] = []
    for part in cur.paren_groups():
        if part.is_type(TokenType.L_PAREN):
            return None
        names.append(part.name())
    return names
