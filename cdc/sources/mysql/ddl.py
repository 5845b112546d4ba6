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
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from cdc.core.encodings import JDBC
from cdc.core.errors import SchemaHistoryError
from cdc.core.schema import Column, Table, TableId, parse_table_id, table_change, table_drop

log = logging.getLogger(__name__)

__all__ = ["UnparseableDdlError", "MySqlSchema", "DdlEvent", "history_record", "enum_options", "JDBC"]


class UnparseableDdlError(SchemaHistoryError):
    """A DDL statement that could not be parsed or applied; the message quotes it."""


# Debezium 3.5's MariaDB/MySQL grammar: type keywords -> JDBC type (TINYINT is SMALLINT there).
_TYPES: dict[str, int] = {
    "CHAR": JDBC.CHAR, "CHARACTER": JDBC.CHAR, "CHAR VARYING": JDBC.VARCHAR,
    "CHARACTER VARYING": JDBC.VARCHAR, "VARCHAR": JDBC.VARCHAR, "TINYTEXT": JDBC.VARCHAR,
    "TEXT": JDBC.VARCHAR, "MEDIUMTEXT": JDBC.VARCHAR, "LONGTEXT": JDBC.VARCHAR, "LONG": JDBC.VARCHAR,
    "LONG VARCHAR": JDBC.VARCHAR, "LONG CHAR VARYING": JDBC.VARCHAR,
    "NCHAR": JDBC.NCHAR, "NATIONAL CHAR": JDBC.NCHAR, "NATIONAL CHARACTER": JDBC.NCHAR,
    "NCHAR VARYING": JDBC.NVARCHAR, "NVARCHAR": JDBC.NVARCHAR, "NCHAR VARCHAR": JDBC.NVARCHAR,
    "NATIONAL VARCHAR": JDBC.NVARCHAR, "NATIONAL CHAR VARYING": JDBC.NVARCHAR,
    "NATIONAL CHARACTER VARYING": JDBC.NVARCHAR,
    "TINYINT": JDBC.SMALLINT, "INT1": JDBC.SMALLINT, "SMALLINT": JDBC.SMALLINT, "INT2": JDBC.SMALLINT,
    "MEDIUMINT": JDBC.INTEGER, "INT3": JDBC.INTEGER, "MIDDLEINT": JDBC.INTEGER, "INT": JDBC.INTEGER,
    "INTEGER": JDBC.INTEGER, "INT4": JDBC.INTEGER, "BIGINT": JDBC.BIGINT, "INT8": JDBC.BIGINT,
    "REAL": JDBC.REAL, "DOUBLE": JDBC.DOUBLE, "FLOAT8": JDBC.DOUBLE, "FLOAT": JDBC.FLOAT,
    "FLOAT4": JDBC.FLOAT, "DECIMAL": JDBC.DECIMAL, "DEC": JDBC.DECIMAL, "FIXED": JDBC.DECIMAL,
    "NUMERIC": JDBC.NUMERIC, "BIT": JDBC.BIT, "VECTOR": JDBC.OTHER,
    "TIME": JDBC.TIME, "TIMESTAMP": JDBC.TIMESTAMP_WITH_TIMEZONE, "DATETIME": JDBC.TIMESTAMP,
    "DATE": JDBC.DATE, "YEAR": JDBC.INTEGER,
    "BINARY": JDBC.BINARY, "VARBINARY": JDBC.VARBINARY, "BLOB": JDBC.BLOB, "TINYBLOB": JDBC.BLOB,
    "MEDIUMBLOB": JDBC.BLOB, "LONGBLOB": JDBC.BLOB, "LONG VARBINARY": JDBC.BLOB,
    "BOOL": JDBC.BOOLEAN, "BOOLEAN": JDBC.BOOLEAN, "SERIAL": JDBC.BIGINT,
    "ENUM": JDBC.CHAR, "SET": JDBC.CHAR,
    "GEOMETRY": JDBC.OTHER, "POINT": JDBC.OTHER, "LINESTRING": JDBC.OTHER, "POLYGON": JDBC.OTHER,
    "MULTIPOINT": JDBC.OTHER, "MULTILINESTRING": JDBC.OTHER, "MULTIPOLYGON": JDBC.OTHER,
    "GEOMETRYCOLLECTION": JDBC.OTHER, "GEOMCOLLECTION": JDBC.OTHER, "JSON": JDBC.OTHER,
    "UUID": JDBC.OTHER, "INET4": JDBC.OTHER, "INET6": JDBC.OTHER,
}
_DEFAULT_DIMENSIONS: dict[str, tuple[int, int | None]] = {
    "DECIMAL": (10, 0), "DEC": (10, 0), "FIXED": (10, 0), "NUMERIC": (10, 0), "BIT": (1, None),
    "VECTOR": (2048, None),
}
_NUMERIC = {JDBC.SMALLINT, JDBC.INTEGER, JDBC.BIGINT, JDBC.REAL, JDBC.DOUBLE, JDBC.FLOAT, JDBC.DECIMAL, JDBC.NUMERIC}
# Column.typeUsesCharset() in Debezium: these columns take the table's charset when they have none.
_CHARSET_TYPES = {JDBC.CHAR, JDBC.VARCHAR, JDBC.NCHAR, JDBC.NVARCHAR}
_EPOCH_DEFAULT = "1970-01-01 00:00:00"  # what Debezium records for DEFAULT CURRENT_TIMESTAMP / NOW()
_CURRENT_TIME_WORDS = {"CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP"}

# ---- tokens -----------------------------------------------------------------------------------

_LITERALS = {
    TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.IDENTIFIER, TokenType.NUMBER,
    TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.INTRODUCER,
}


class _Tokenizer(MySQL.Tokenizer):
    COMMANDS: ClassVar[set[TokenType]] = set()  # sqlglot swallows RENAME ... into one string token


_EXECUTABLE_COMMENT = re.compile(r"/\*M?!\d*")
_FIRST_WORD = re.compile(r"(?:\s+|/\*(?!M?!).*?\*/|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$))*(?:/\*M?!\d*\s*)?([A-Za-z]+)",
                         re.S)
_DDL_WORDS = {"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "USE", "SET"}


def _expose_executable_comments(sql: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """``/*!50100 PARTITION BY ... */`` is code to MySQL: blank the markers, keep the content.

    The text keeps its length (markers become spaces), so token offsets are offsets in the
    statement as logged; also returned: where each executable comment lies (``[start, end)``),
    which Debezium's parser skips and leaves out of the text of its events."""
    if "/*" not in sql or not _EXECUTABLE_COMMENT.search(sql):
        return sql, ()
    out: list[str] = []
    hidden: list[tuple[int, int]] = []
    opened: list[int] = []
    i, depth_marks = 0, 0
    quote: str | None = None
    while i < len(sql):
        c = sql[i]
        if quote:
            out.append(c)
            if c == "\\" and quote != "`" and i + 1 < len(sql):
                out.append(sql[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
            continue
        if c in "'\"`":
            quote = c
        elif sql.startswith("/*", i):
            match = _EXECUTABLE_COMMENT.match(sql, i)
            if match:
                depth_marks += 1
                opened.append(i)
                out.append(" " * (match.end() - i))
                i = match.end()
                continue
            end = sql.find("*/", i + 2)
            end = len(sql) if end < 0 else end + 2
            out.append(sql[i:end])
            i = end
            continue
        elif depth_marks and sql.startswith("*/", i):
            depth_marks -= 1
            hidden.append((opened.pop(), i + 2))
            out.append("  ")
            i += 2
            continue
        out.append(c)
        i += 1
    hidden.extend((start, len(sql)) for start in opened)  # an unterminated one runs to the end
    return "".join(out), tuple(hidden)


def _is_word(token: Token) -> bool:
    text = token.text
    return token.token_type not in _LITERALS and bool(text) and (text[0].isalpha() or text[0] in "_$")


class _Cursor:
    """A position in one statement's tokens, with the few reading moves the grammar needs."""

    def __init__(self, tokens: list[Token], sql: str, original: str | None = None,
                 hidden: tuple[tuple[int, int], ...] = ()) -> None:
        self.tokens = tokens
        self.sql = sql  # executable comments exposed, same offsets as ``original``
        self.original = sql if original is None else original
        self.hidden = hidden  # where the executable comments are
        self.i = 0

    def _part(self, tokens: list[Token]) -> _Cursor:
        return _Cursor(tokens, self.sql, self.original, self.hidden)

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def next(self) -> Token:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end of statement")
        self.i += 1
        return token

    def word(self, k: int = 0) -> str | None:
        """The upper-cased keyword at ``k``, or None for a literal, quoted name or punctuation."""
        token = self.peek(k)
        return token.text.upper() if token is not None and _is_word(token) else None

    def is_(self, *words: str) -> bool:
        return all(self.word(k) == w for k, w in enumerate(words))

    def accept(self, *words: str) -> bool:
        if self.is_(*words):
            self.i += len(words)
            return True
        return False

    def accept_any(self, *words: str) -> str | None:
        w = self.word()
        if w is not None and w in words:
            self.i += 1
            return w
        return None

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)}")

    def is_type(self, token_type: TokenType, k: int = 0) -> bool:
        token = self.peek(k)
        return token is not None and token.token_type == token_type

    def accept_type(self, token_type: TokenType) -> bool:
        if self.is_type(token_type):
            self.i += 1
            return True
        return False

    def name(self) -> str:
        token = self.next()
        if token.token_type in (TokenType.IDENTIFIER, TokenType.STRING) or _is_word(token):
            return token.text
        # MySQL names may start with a digit (``1c``); sqlglot reads the number and the rest apart.
        rest = self.peek()
        if (token.token_type == TokenType.NUMBER and rest is not None and rest.start == token.end + 1
                and _is_word(rest)):
            self.i += 1
            return token.text + rest.text
        raise self.error(f"expected a name, found {token.text!r}", back=1)

    def qualified_name(self) -> tuple[str | None, str]:
        first = self.name()
        if self.accept_type(TokenType.DOT):
            return first, self.name()
        return None, first

    def skip_parens(self) -> None:
        """Skip a balanced ``( ... )`` group starting here."""
        depth = 0
        while not self.at_end():
            token = self.next()
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
                if depth <= 0:
                    return
        raise self.error("unbalanced parentheses")

    def skip_value(self) -> None:
        """Skip one value: a literal, a word (with a call's arguments), or a parenthesised group."""
        if self.is_type(TokenType.L_PAREN):
            self.skip_parens()
            return
        ahead = self.peek()
        if ahead is not None and ahead.token_type in (TokenType.DASH, TokenType.PLUS):
            self.i += 1
        token = self.next()
        if token.token_type == TokenType.INTRODUCER:
            self.next()
        elif _is_word(token) and self.is_type(TokenType.L_PAREN):
            self.skip_parens()

    def paren_groups(self) -> list[_Cursor]:
        """The comma-separated items of the ``( ... )`` group starting here, as cursors."""
        if not self.accept_type(TokenType.L_PAREN):
            raise self.error("expected (")
        items: list[list[Token]] = [[]]
        depth = 0
        while True:
            token = self.next()
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                if depth == 0:
                    break
                depth -= 1
            elif token.token_type == TokenType.COMMA and depth == 0:
                items.append([])
                continue
            items[-1].append(token)
        return [self._part(item) for item in items if item]

    def split_top_level(self) -> list[_Cursor]:
        """The rest of the statement split at commas outside parentheses."""
        parts: list[list[Token]] = [[]]
        depth = 0
        while not self.at_end():
            token = self.next()
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
            elif token.token_type == TokenType.COMMA and depth == 0:
                parts.append([])
                continue
            parts[-1].append(token)
        return [self._part(part) for part in parts if part]

    def text(self) -> str:
        if not self.tokens:
            return ""
        return self.sql[self.tokens[0].start:self.tokens[-1].end + 1]

    def debezium_text(self, start: int = 0, end: int | None = None) -> str:
        """The statement as logged from its first token to its last (``tokens[start:end]``), as
        Debezium's parser quotes a statement in its events: comments before and after it, and
        executable comments (which it does not parse) at its ends, are left out."""
        tokens = self.tokens[start:end]
        visible = [t for t in tokens if not any(a <= t.start < b for a, b in self.hidden)] or tokens
        if not visible:
            return ""
        return self.original[visible[0].start:visible[-1].end + 1]

    def error(self, message: str, back: int = 0) -> UnparseableDdlError:
        token = self.peek(-back) if back else self.peek()
        where = f" at {token.text!r}" if token is not None else ""
        return UnparseableDdlError(f"{message}{where}")


def _statements(ddl: str) -> list[_Cursor]:
    """The statements of a DDL text (split at top-level semicolons)."""
    sql, hidden = _expose_executable_comments(ddl)
    try:
        tokens = _Tokenizer().tokenize(sql)
    except TokenError as exc:
        raise UnparseableDdlError(f"cannot tokenize: {exc}") from None
    tokens = list(_split_compound_keywords(tokens, sql))
    if _creates_routine(tokens):
        return []  # a body's statements are not run by CREATE, so not split off and applied either
    statements: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            statements.append([])
        else:
            statements[-1].append(token)
    return [_Cursor(s, sql, ddl, hidden) for s in statements if s]


_WORD_RE = re.compile(r"\S+")
_ROUTINES = {"PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"}


def _creates_routine(tokens: list[Token]) -> bool:
    """CREATE [OR REPLACE] [DEFINER = ...] PROCEDURE|FUNCTION|TRIGGER|EVENT ... (with a body)."""
    if not tokens or tokens[0].text.upper() != "CREATE":
        return False
    for token in tokens[1:]:
        if token.token_type in (TokenType.L_PAREN, TokenType.SEMICOLON):
            return False
        if _is_word(token) and token.text.upper() in _ROUTINES:
            return True
    return False


def _split_compound_keywords(tokens: list[Token], sql: str) -> Iterator[Token]:
    """sqlglot reads ``PRIMARY KEY``, ``DOUBLE PRECISION``, ``CHAR VARYING``... as one token:
    the grammar here works word by word."""
    for token in tokens:
        if token.token_type in _LITERALS or not any(c.isspace() for c in token.text):
            yield token
            continue
        for match in _WORD_RE.finditer(sql, token.start, token.end + 1):
            yield Token(TokenType.VAR, match.group(), token.line, token.col, match.start(), match.end() - 1)


def _charset_of_collation(collation: str) -> str:
    """MySQL collations are named ``<charset>_<rules>`` (``binary`` is its own charset)."""
    collation = collation.lower()
    return collation if collation == "binary" else collation.split("_", 1)[0]


# ---- column definitions -----------------------------------------------------------------------

@dataclass(slots=True)
class _ColumnSpec:
    """A parsed column definition, before the table's default charset is known."""

    name: str
    type_name: str
    jdbc_type: int
    length: int | None = None
    scale: int | None = None
    enum_values: tuple[str, ...] | None = None
    charset: str | None = None  # explicit, from CHARACTER SET or COLLATE
    national: bool = False
    optional: bool | None = None
    auto_incremented: bool = False
    comment: str | None = None
    default_given: bool = False  # a DEFAULT clause other than DEFAULT NULL
    default_expression: str | None = None
    primary: bool = False
    unique: bool = False
    position: tuple[str, str | None] | None = None  # ("FIRST", None) / ("AFTER", column)

    def column(self, table_charset: str | None, keep_comment: bool) -> Column:
        # The server makes key and AUTO_INCREMENT columns NOT NULL whatever the definition says.
        optional = self.optional is not False and not self.primary and not self.auto_incremented
        charset = self.charset
        if self.national:
            charset = "utf8"  # NCHAR/NVARCHAR are always utf8
        elif charset is None and self.jdbc_type in _CHARSET_TYPES:
            charset = table_charset
        # Debezium: an optional column has an implicit NULL default.
        has_default = self.default_given or optional
        return Column(
            name=self.name,
            jdbc_type=self.jdbc_type,
            type_name=self.type_name,
            type_expression=self.type_name,
            charset=charset,
            length=self.length,
            scale=self.scale,
            optional=optional,
            auto_incremented=self.auto_incremented,
            generated=self.auto_incremented,  # Debezium's "generated" is "value made by the server"
            comment=self.comment if keep_comment else None,
            has_default=has_default,
            default_expression=self.default_expression if self.default_given else None,
            enum_values=self.enum_values,
        )


def _parse_type(cur: _Cursor, spec: _ColumnSpec) -> None:
    first = cur.word()
    if first is None:
        raise cur.error("expected a data type")
    cur.i += 1
    words = [first]
    if first == "NATIONAL":
        second = cur.accept_any("CHAR", "CHARACTER", "VARCHAR")
        if second is None:
            raise cur.error("expected CHAR or VARCHAR after NATIONAL")
        words.append(second)
        if second != "VARCHAR" and cur.accept("VARYING"):
            words.append("VARYING")
    elif first in ("CHAR", "CHARACTER", "NCHAR"):
        if cur.accept("VARYING"):
            words.append("VARYING")
        elif first == "NCHAR" and cur.accept("VARCHAR"):
            words.append("VARCHAR")
    elif first == "LONG":
        nxt = cur.accept_any("VARCHAR", "VARBINARY")
        if nxt:
            words.append(nxt)
        elif cur.accept("CHAR", "VARYING"):
            words += ["CHAR", "VARYING"]
    base = " ".join(words)
    jdbc = _TYPES.get(base)
    if jdbc is None:
        raise cur.error(f"unknown data type {base}", back=1)
    spec.jdbc_type = jdbc
    precision = first == "DOUBLE" and cur.accept("PRECISION")
    if cur.is_type(TokenType.L_PAREN):
        args = cur.paren_groups()
        if base in ("ENUM", "SET"):
            spec.enum_values = tuple(_enum_value(arg) for arg in args)
        else:
            numbers = [arg.next().text for arg in args]
            try:
                spec.length = int(float(numbers[0]))
                if len(numbers) > 1:
                    spec.scale = int(numbers[1])
            except (ValueError, IndexError):
                raise cur.error(f"bad dimensions for {base}") from None
    if base in ("ENUM", "SET"):
        spec.enum_values = spec.enum_values or ()
        # Debezium: an ENUM is one character long, a SET as long as its options with commas.
        spec.length = 1 if base == "ENUM" else max(0, 2 * len(spec.enum_values) - 1)
    suffixes: list[str] = []
    while True:
        w = cur.word()
        if w in ("SIGNED", "UNSIGNED", "ZEROFILL", "BINARY", "ASCII", "UNICODE", "BYTE"):
            cur.i += 1
            suffixes.append(w)
        elif w in ("CHARACTER", "CHAR") and cur.word(1) == "SET" or w == "CHARSET":
            cur.i += 1 if w == "CHARSET" else 2
            spec.charset = cur.name().lower()
        elif w == "COLLATE":
            cur.i += 1
            collation = cur.name()
            spec.charset = spec.charset or _charset_of_collation(collation)
        else:
            break
    if "ASCII" in suffixes and spec.charset is None:
        spec.charset = "latin1"
    if "UNICODE" in suffixes and spec.charset is None:
        spec.charset = "ucs2"
    name = base + (" PRECISION" if precision else "")
    for suffix in ("SIGNED", "UNSIGNED", "ZEROFILL") if jdbc in _NUMERIC and base != "YEAR" else ():
        if suffix in suffixes:
            name += " " + suffix
    if "BINARY" in suffixes and jdbc in _CHARSET_TYPES and base not in ("ENUM", "SET"):
        name += " BINARY"
    if base == "SERIAL":  # SERIAL is BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE
        name = "BIGINT UNSIGNED"
        spec.auto_incremented = True
        spec.optional = False
        spec.unique = True
    spec.type_name = name
    spec.national = jdbc in (JDBC.NCHAR, JDBC.NVARCHAR)
    if spec.length is None:
        if base in _DEFAULT_DIMENSIONS:
            spec.length, default_scale = _DEFAULT_DIMENSIONS[base]
            if spec.scale is None:
                spec.scale = default_scale
        elif jdbc == JDBC.NCHAR:
            spec.length = 1
    elif spec.scale is None and base in _DEFAULT_DIMENSIONS:
        spec.scale = _DEFAULT_DIMENSIONS[base][1]


def _enum_value(arg: _Cursor) -> str:
    """An ENUM/SET option as written, quotes included: Debezium records ``'a'``, not ``a``."""
    token = arg.next()
    if token.token_type == TokenType.INTRODUCER:
        token = arg.next()
    if token.token_type not in (TokenType.STRING, TokenType.NATIONAL_STRING):
        raise arg.error("expected a quoted ENUM/SET value", back=1)
    raw = arg.sql[token.start:token.end + 1]
    return raw[1:] if raw[:1] in "nN" and raw[1:2] == "'" else raw


def enum_options(values: Iterable[str] | None) -> list[str]:
    """ENUM/SET options without their quotes, unescaped as Debezium does (``\\'`` and ``''``)."""
    out = []
    for value in values or ():
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out.append(value.replace("\\'", "'").replace("''", "'"))
    return out


def _default_value(cur: _Cursor) -> tuple[bool, str | None]:
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
    kind = token.token_type
    if kind == TokenType.INTRODUCER:
        token = cur.next()
        kind = token.token_type
    if kind in (TokenType.STRING, TokenType.NATIONAL_STRING):
        return True, sign + token.text
    if kind == TokenType.NUMBER:
        return True, sign + cur.sql[token.start:token.end + 1]
    if kind == TokenType.BIT_STRING:
        return True, token.text
    if kind == TokenType.HEX_STRING:
        return True, None
    word = token.text.upper() if _is_word(token) else None
    if word == "NULL":
        return False, None
    if word in ("TRUE", "FALSE"):
        return True, token.text
    if word in _CURRENT_TIME_WORDS:
        if cur.is_type(TokenType.L_PAREN):
            cur.skip_parens()
        return True, _EPOCH_DEFAULT
    if word is not None:  # another function or keyword: computed by the server
        if cur.is_type(TokenType.L_PAREN):
            cur.skip_parens()
        return True, None
    raise cur.error("unexpected DEFAULT value", back=1)


_REFERENCE_ACTIONS = ("RESTRICT", "CASCADE", "SET NULL", "NO ACTION", "SET DEFAULT")


def _parse_column(cur: _Cursor, name: str, allow_position: bool = False) -> _ColumnSpec:
    spec = _ColumnSpec(name=name, type_name="", jdbc_type=0)
    _parse_type(cur, spec)
    while not cur.at_end():
        w = cur.word()
        if cur.accept("NOT", "NULL"):
            spec.optional = False
        elif cur.accept("NOT", "SECONDARY"):  # MySQL HeatWave: the column stays out of the secondary engine
            pass
        elif cur.accept("NULL"):
            spec.optional = True
        elif cur.accept("DEFAULT"):
            spec.default_given, spec.default_expression = _default_value(cur)
        elif cur.accept("AUTO_INCREMENT"):
            spec.auto_incremented = True
        elif cur.accept("UNIQUE"):
            cur.accept("KEY")
            spec.unique = True
        elif cur.accept("PRIMARY") or w == "KEY":
            cur.accept("KEY")
            spec.primary = True
        elif cur.accept("COMMENT"):
            spec.comment = cur.next().text
        elif cur.accept("COLLATE"):
            collation = cur.name()
            spec.charset = spec.charset or _charset_of_collation(collation)
        elif cur.accept("CHARACTER", "SET") or cur.accept("CHARSET"):
            spec.charset = cur.name().lower()
        elif cur.accept("GENERATED", "ALWAYS") or w == "AS":
            if cur.accept("AS", "ROW"):  # MariaDB system-versioning columns: AS ROW START/END
                cur.accept_any("START", "END")
            else:
                cur.expect("AS")
                cur.skip_value()
            cur.accept_any("VIRTUAL", "STORED", "PERSISTENT")
        elif cur.accept("ON", "UPDATE"):
            cur.skip_value()
        elif cur.accept("CONSTRAINT"):
            if cur.word() != "CHECK":
                cur.name()
        elif cur.accept("CHECK"):
            cur.skip_parens()
            cur.accept("NOT")
            cur.accept("ENFORCED")
        elif cur.accept("REFERENCES"):
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
        elif cur.accept_any("VISIBLE", "INVISIBLE"):
            pass
        elif cur.accept_any("COLUMN_FORMAT", "STORAGE"):
            cur.next()
        elif cur.accept_any("ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE", "REF_SYSTEM_ID", "SRID"):
            cur.accept_type(TokenType.EQ)
            cur.next()
        elif cur.accept("SERIAL", "DEFAULT", "VALUE"):
            spec.auto_incremented, spec.unique = True, True
            spec.optional = False if spec.optional is None else spec.optional
        elif cur.accept("WITH", "SYSTEM", "VERSIONING") or cur.accept("WITHOUT", "SYSTEM", "VERSIONING"):
            pass
        elif cur.accept("COMPRESSED"):
            if cur.accept_type(TokenType.EQ):
                cur.next()
        elif allow_position and cur.accept("FIRST"):
            spec.position = ("FIRST", None)
        elif allow_position and cur.accept("AFTER"):
            spec.position = ("AFTER", cur.name())
        else:
            raise cur.error(f"unexpected token in the definition of column {name!r}")
    return spec


def _key_columns(cur: _Cursor) -> list[str] | None:
    """Column names of a key's parts; None when a part is an expression (functional key)."""
    names: list[str] = []
    for part in cur.paren_groups():
        if part.is_type(TokenType.L_PAREN):
            return None
        names.append(part.name())
    return names


# ---- the mutable table being built by one statement ------------------------------------------

@dataclass(slots=True)
class _Draft:
    id: TableId
    columns: list[Column]
    primary_key: list[str]
    charset: str | None
    comment: str | None
    attributes: tuple[tuple[str, Any], ...] = ()
    previous_id: TableId | None = None

    @classmethod
    def of(cls, table: Table) -> _Draft:
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


# ---- the schema -------------------------------------------------------------------------------

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


@dataclass(slots=True)
class _State:
    tables: dict[TableId, Table] = field(default_factory=dict)
    databases: dict[str, str | None] = field(default_factory=dict)  # name -> default charset
    server_charset: str | None = None

    def copy(self) -> _State:
        return _State(dict(self.tables), dict(self.databases), self.server_charset)


_KEY_WORDS = {"CONSTRAINT", "PRIMARY", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK"}


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
        self._state = _State(server_charset=server_charset)
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
            statements = _statements(ddl)
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
        return name.lower() if self.lower_case_table_names else name

    def _id(self, database: str | None, name: str) -> TableId:
        if not database:
            raise UnparseableDdlError(f"no database selected for table {name!r}")
        return TableId(self._norm(database), None, self._norm(name))

    def _statement(self, state: _State, cur: _Cursor, database: str | None,
                   tables: bool) -> tuple[str | None, list[DdlEvent]]:
        """Apply one statement and return its events; ``tables=False`` applies only database-level
        effects (replay)."""
        w = cur.word()
        text = cur.debezium_text()
        if w == "USE":
            cur.i += 1
            name = cur.name()
            return name, [DdlEvent(name, None, text)]
        if w == "SET":
            self._set(state, cur)
            return database, []
        if w == "CREATE":
            cur.i += 1
            replace_existing = cur.accept("OR", "REPLACE")
            if cur.accept_any("DATABASE", "SCHEMA"):
                name = self._create_database(state, cur)
                return database, [DdlEvent(name, None, text)]
            if not tables:
                return database, []
            temporary = cur.accept("TEMPORARY")
            if cur.accept("TABLE"):
                if temporary:  # rows of temporary tables are not in a row-based binlog
                    return database, []
                return database, _table_events(self._create_table(state, cur, database, replace_existing), text)
            unique = cur.accept_any("UNIQUE", "FULLTEXT", "SPATIAL")
            if cur.accept("INDEX"):
                # Debezium signals an index only when a UNIQUE one becomes a key-less table's key
                return database, _table_events(self._create_index(state, cur, database, unique == "UNIQUE"), text)
            return database, []  # views, routines, triggers, users, sequences...
        if w == "ALTER":
            cur.i += 1
            if cur.accept_any("DATABASE", "SCHEMA"):
                self._alter_database(state, cur, database)
                return database, []  # no parser event in Debezium: the statement is quoted whole
            cur.accept_any("ONLINE", "OFFLINE")
            cur.accept("IGNORE")
            if tables and cur.accept("TABLE"):
                return database, _table_events(self._alter_table(state, cur, database), text)
            return database, []
        if w == "DROP":
            cur.i += 1
            if cur.accept_any("DATABASE", "SCHEMA"):
                cur.accept("IF", "EXISTS")
                name = self._norm(cur.name())
                state.databases.pop(name, None)
                for table_id in [t for t in state.tables if t.catalog == name]:
                    del state.tables[table_id]
                return (None if database == name else database), [DdlEvent(name, None, text)]
            if tables and not cur.accept("TEMPORARY") and cur.accept("TABLE"):
                return database, self._drop_tables(state, cur, database)
            return database, []
        if w == "RENAME" and tables:
            cur.i += 1
            if cur.accept_any("TABLE", "TABLES"):
                return database, self._rename_tables(state, cur, database)
        return database, []  # TRUNCATE and everything else changes no table definition

    # -- databases --

    def _database_options(self, cur: _Cursor) -> str | None:
        charset: str | None = None
        collation_charset: str | None = None
        while not cur.at_end():
            cur.accept("DEFAULT")
            if cur.accept("CHARACTER", "SET") or cur.accept("CHARSET") or cur.accept("CHAR", "SET"):
                cur.accept_type(TokenType.EQ)
                charset = cur.name().lower()
            elif cur.accept("COLLATE"):
                cur.accept_type(TokenType.EQ)
                collation_charset = _charset_of_collation(cur.name())
            else:
                cur.next()
        return charset or collation_charset

    def _create_database(self, state: _State, cur: _Cursor) -> str:
        cur.accept("IF", "NOT", "EXISTS")
        name = self._norm(cur.name())
        charset = self._database_options(cur)
        if charset == "default":
            charset = state.server_charset
        if name not in state.databases or charset is not None:
            state.databases[name] = charset
        return name

    def _alter_database(self, state: _State, cur: _Cursor, database: str | None) -> None:
        name = database
        if not cur.at_end() and cur.word() not in ("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "CHAR"):
            name = cur.name()
        charset = self._database_options(cur)
        if name and charset:
            state.databases[self._norm(name)] = charset

    def _set(self, state: _State, cur: _Cursor) -> None:
        """``SET [GLOBAL] character_set_server = x``: new tables without a charset take it."""
        cur.i += 1
        for part in cur.split_top_level():
            part.accept_any("GLOBAL", "SESSION", "LOCAL", "PERSIST")
            if part.accept_type(TokenType.SESSION_PARAMETER) and part.is_type(TokenType.DOT, 1):
                part.i += 2  # @@global.
            if part.word() == "CHARACTER_SET_SERVER" and part.is_type(TokenType.EQ, 1):
                part.i += 2
                value = part.next().text.lower()
                if value != "default":
                    state.server_charset = value

    def _database_charset(self, state: _State, database: str) -> str | None:
        return state.databases.get(database) or state.server_charset

    # -- tables --

    def _create_table(self, state: _State, cur: _Cursor, database: str | None,
                      replace_existing: bool) -> list[dict[str, Any]]:
        if_not_exists = cur.accept("IF", "NOT", "EXISTS")
        db, name = cur.qualified_name()
        table_id = self._id(db or database, name)
        state.databases.setdefault(table_id.catalog or "", None)
        exists = table_id in state.tables
        if exists and if_not_exists:
            return []
        like = cur.accept("LIKE")
        if not like and cur.is_type(TokenType.L_PAREN) and cur.word(1) == "LIKE":
            cur.i += 2
            like = True
        if like:
            src_db, src_name = cur.qualified_name()
            source = state.tables.get(self._id(src_db or database, src_name))
            if source is None:
                log.warning("CREATE TABLE %s LIKE %s: the original table is unknown; %s is not tracked",
                            table_id, src_name, table_id)
                return []
            table = Table(table_id, source.columns, source.primary_key, source.default_charset, None,
                          source.attributes)
            state.tables[table_id] = table
            return [table_change("CREATE", table)]
        if not cur.is_type(TokenType.L_PAREN):
            raise cur.error("CREATE TABLE without column definitions (... AS SELECT) gives columns"
                            " whose types only the server knows")
        specs: list[_ColumnSpec] = []
        constraints: list[tuple[str, list[str] | None]] = []
        for element in cur.paren_groups():
            self._table_element(element, specs, constraints)
        charset, comment = self._table_options(cur, allow_select=False)
        if charset is None:
            charset = self._database_charset(state, table_id.catalog or "")
        draft = _Draft(table_id, [], [], charset, comment if self.include_comments else None)
        for spec in specs:
            draft.columns.append(spec.column(charset, self.include_comments))
        self._apply_keys(draft, specs, constraints)
        table = draft.build()
        state.tables[table_id] = table
        if exists and not replace_existing:
            log.warning("CREATE TABLE of %s, which the schema already had: replaced", table_id)
        return [table_change("CREATE", table)]

    @staticmethod
    def _apply_keys(draft: _Draft, specs: list[_ColumnSpec],
                    constraints: list[tuple[str, list[str] | None]]) -> None:
        """Primary key: an explicit one wins; else the first UNIQUE over NOT NULL columns."""
        explicit = [s.name for s in specs if s.primary]
        for kind, names in constraints:
            if kind == "PRIMARY" and names:
                explicit = names
        if explicit:
            draft.set_primary_key(explicit)
            return
        for spec in specs:
            if spec.unique:
                draft.maybe_unique_key([spec.name])
        for kind, names in constraints:
            if kind == "UNIQUE":
                draft.maybe_unique_key(names)

    def _table_element(self, cur: _Cursor, specs: list[_ColumnSpec],
                       constraints: list[tuple[str, list[str] | None]]) -> None:
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
            constraints.append(("PRIMARY", self._index_columns(cur)))
        elif w == "UNIQUE":
            cur.i += 1
            cur.accept_any("INDEX", "KEY")
            constraints.append(("UNIQUE", self._index_columns(cur)))
        elif w in ("INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK") or (
                w == "PERIOD" and cur.word(1) == "FOR"):
            return  # no effect on columns or the key
        else:
            specs.append(_parse_column(cur, self._column_name(cur)))

    @staticmethod
    def _column_name(cur: _Cursor) -> str:
        """A CREATE TABLE column may be written ``[[db.]table.]name`` or ``.name`` (the server
        checks the qualifiers against the table being created and keeps the name)."""
        cur.accept_type(TokenType.DOT)
        name = cur.name()
        for _ in range(2):
            if not cur.accept_type(TokenType.DOT):
                break
            name = cur.name()
        return name

    @staticmethod
    def _index_columns(cur: _Cursor) -> list[str] | None:
        """Skip an index's name and type, then read its column list."""
        while not cur.at_end() and not cur.is_type(TokenType.L_PAREN):
            if cur.accept("USING"):
                cur.next()
            else:
                cur.next()
        if cur.at_end():
            raise cur.error("expected the key's columns")
        return _key_columns(cur)

    def _table_options(self, cur: _Cursor, allow_select: bool) -> tuple[str | None, str | None]:
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
                collation_charset = _charset_of_collation(cur.name())
            elif cur.accept("COMMENT"):
                cur.accept_type(TokenType.EQ)
                comment = cur.next().text
            elif cur.is_type(TokenType.L_PAREN):
                cur.skip_parens()
            else:
                cur.next()
        return charset or collation_charset, comment

    def _create_index(self, state: _State, cur: _Cursor, database: str | None,
                      unique: bool) -> list[dict[str, Any]]:
        cur.accept("IF", "NOT", "EXISTS")
        cur.name()
        if cur.accept("USING"):
            cur.next()
        cur.expect("ON")
        db, name = cur.qualified_name()
        table_id = self._id(db or database, name)
        table = state.tables.get(table_id)
        if not unique or table is None or table.primary_key:
            return []
        draft = _Draft.of(table)
        draft.maybe_unique_key(_key_columns(cur))
        if not draft.primary_key:
            return []
        table = draft.build()
        state.tables[table_id] = table
        return [table_change("ALTER", table)]

    def _drop_tables(self, state: _State, cur: _Cursor, database: str | None) -> list[DdlEvent]:
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
            table_id = self._id(db or database, name)
            known = state.tables.pop(table_id, None) is not None
            text = f"{prefix}{_quote(table_id.catalog or '')}.{_quote(table_id.table)}{suffix}"
            events.append(DdlEvent(table_id.catalog, table_id, text, table_drop(table_id), applied=known))
        return events

    def _rename_tables(self, state: _State, cur: _Cursor, database: str | None) -> list[DdlEvent]:
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
            old_id, new_id = self._id(db or database, name), self._id(new_db or database, new_name)
            table = state.tables.pop(old_id, None)
            if table is None:
                log.debug("RENAME TABLE of %s, which the schema does not have: no table change", old_id)
                events.append(DdlEvent(new_id.catalog, new_id, text))
                continue
            table = replace(table, id=new_id)
            state.tables[new_id] = table
            state.databases.setdefault(new_id.catalog or "", None)
            events.append(DdlEvent(new_id.catalog, new_id, text, table_change("ALTER", table, previous_id=old_id)))
        return events

    def _alter_table(self, state: _State, cur: _Cursor, database: str | None) -> list[dict[str, Any]]:
        cur.accept("IF", "EXISTS")
        db, name = cur.qualified_name()
        table_id = self._id(db or database, name)
        table = state.tables.get(table_id)
        if table is None:
            log.debug("ALTER TABLE of %s, which the schema does not have: ignored", table_id)
            return []
        if cur.accept("WAIT"):
            cur.next()
        cur.accept("NOWAIT")
        draft = _Draft.of(table)
        for clause in cur.split_top_level():
            self._alter_clause(state, draft, clause, database)
        draft.enforce_key_not_null()
        new_table = draft.build()
        del state.tables[table_id]
        state.tables[new_table.id] = new_table
        if new_table.id != table_id:
            state.databases.setdefault(new_table.id.catalog or "", None)
            return [table_change("ALTER", new_table, previous_id=table_id)]
        return [table_change("ALTER", new_table)]

    def _alter_clause(self, state: _State, draft: _Draft, cur: _Cursor, database: str | None) -> None:
        w = cur.word()
        if w == "ADD":
            cur.i += 1
            self._alter_add(draft, cur)
        elif w == "DROP":
            cur.i += 1
            if cur.accept("PRIMARY", "KEY"):
                draft.primary_key = []
            elif cur.word() in ("INDEX", "KEY", "FOREIGN", "CHECK", "CONSTRAINT", "PARTITION", "SYSTEM",
                                "PERIOD"):
                return
            else:
                cur.accept("COLUMN")
                cur.accept("IF", "EXISTS")
                i = draft.index(cur.name())
                if i is not None:
                    removed = draft.columns.pop(i)
                    draft.primary_key = [k for k in draft.primary_key if k.lower() != removed.name.lower()]
        elif w == "MODIFY":
            cur.i += 1
            cur.accept("COLUMN")
            if_exists = cur.accept("IF", "EXISTS")
            name = cur.name()
            if if_exists and draft.index(name) is None:
                return
            self._replace_column(draft, name, _parse_column(cur, name, allow_position=True))
        elif w == "CHANGE":
            cur.i += 1
            cur.accept("COLUMN")
            if_exists = cur.accept("IF", "EXISTS")
            old = cur.name()
            if if_exists and draft.index(old) is None:
                return
            new = cur.name()
            self._replace_column(draft, old, _parse_column(cur, new, allow_position=True))
        elif w == "RENAME":
            cur.i += 1
            if cur.accept("COLUMN"):
                if_exists = cur.accept("IF", "EXISTS")  # MariaDB
                old = cur.name()
                cur.expect("TO")
                new = cur.name()
                if if_exists and draft.index(old) is None:
                    return
                i = draft.require(old)
                draft.columns[i] = replace(draft.columns[i], name=new)
                draft.primary_key = [new if k.lower() == old.lower() else k for k in draft.primary_key]
            elif cur.accept_any("INDEX", "KEY"):
                return
            else:
                cur.accept_any("TO", "AS")
                db, name = cur.qualified_name()
                new_id = self._id(db or database, name)
                if new_id != draft.id:
                    draft.previous_id = draft.previous_id or draft.id
                    draft.id = new_id
        elif w == "ALTER":
            cur.i += 1
            if cur.word() in ("INDEX", "KEY", "CHECK", "CONSTRAINT"):
                return
            cur.accept("COLUMN")
            cur.accept("IF", "EXISTS")
            name = cur.name()
            i = draft.require(name)
            column = draft.columns[i]
            if cur.accept("SET", "DEFAULT"):
                given, expression = _default_value(cur)
                draft.columns[i] = replace(column, has_default=given or column.optional,
                                           default_expression=expression if given else None)
            elif cur.accept("DROP", "DEFAULT"):
                draft.columns[i] = replace(column, has_default=False, default_expression=None)
        elif w == "CONVERT":
            cur.i += 1
            cur.expect("TO")
            charset, _ = self._table_options(cur, allow_select=True)
            if charset and charset != "default":
                draft.charset = charset
                draft.columns = [replace(c, charset=charset) if c.charset is not None else c for c in draft.columns]
        else:
            charset, comment = self._table_options(cur, allow_select=True)
            if charset and charset != "default":
                draft.charset = charset
            if comment is not None and self.include_comments:
                draft.comment = comment

    def _alter_add(self, draft: _Draft, cur: _Cursor) -> None:
        if cur.word() in ("PARTITION", "SYSTEM", "PERIOD"):
            return
        column_keyword = cur.accept("COLUMN")
        if_not_exists = cur.accept("IF", "NOT", "EXISTS")
        specs: list[_ColumnSpec] = []
        constraints: list[tuple[str, list[str] | None]] = []
        if cur.is_type(TokenType.L_PAREN):  # ADD [COLUMN] (definition, ...)
            for element in cur.paren_groups():
                self._table_element(element, specs, constraints)
            specs = [s for s in specs if not (if_not_exists and draft.index(s.name) is not None)]
            for spec in specs:
                self._add_column(draft, spec)
        elif not column_keyword and not cur.is_type(TokenType.IDENTIFIER) and cur.word() in _KEY_WORDS:
            self._table_element(cur, specs, constraints)
        else:
            name = cur.name()
            if if_not_exists and draft.index(name) is not None:
                return
            specs.append(_parse_column(cur, name, allow_position=True))
            self._add_column(draft, specs[0])
        self._add_keys(draft, specs, constraints)

    def _add_column(self, draft: _Draft, spec: _ColumnSpec) -> None:
        if draft.index(spec.name) is not None:
            raise UnparseableDdlError(f"table {draft.id} already has a column {spec.name!r}")
        draft.place(spec.column(draft.charset, self.include_comments), spec.position)

    @staticmethod
    def _add_keys(draft: _Draft, specs: list[_ColumnSpec], constraints: list[tuple[str, list[str] | None]]) -> None:
        for spec in specs:
            if spec.primary:
                draft.set_primary_key([spec.name])
        for kind, names in constraints:
            if kind == "PRIMARY" and names:
                draft.set_primary_key(names)
        for spec in specs:
            if spec.unique:
                draft.maybe_unique_key([spec.name])
        for kind, names in constraints:
            if kind == "UNIQUE":
                draft.maybe_unique_key(names)

    def _replace_column(self, draft: _Draft, old: str, spec: _ColumnSpec) -> None:
        """MODIFY/CHANGE: the new definition replaces the column, in place unless FIRST/AFTER."""
        i = draft.require(old)
        old_name = draft.columns.pop(i).name
        if spec.name.lower() != old_name.lower() and draft.index(spec.name) is not None:
            raise UnparseableDdlError(f"table {draft.id} already has a column {spec.name!r}")
        draft.place(spec.column(draft.charset, self.include_comments), spec.position, at=i)
        draft.primary_key = [spec.name if k.lower() == old_name.lower() else k for k in draft.primary_key]
        if spec.primary:
            draft.set_primary_key([spec.name])
        elif spec.unique:
            draft.maybe_unique_key([spec.name])

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
            statements = _statements(ddl)
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
    for statement in _statements(ddl):
        yield statement.text()
