"""Reading a DDL text for the parser of ``ddl.py``: sqlglot's MySQL tokenizer (quoting, escapes,
comments, literals), MySQL's executable comments, the split into statements, and the cursor the
grammar reads a statement's tokens with."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar

from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from cdc.core.errors import SchemaHistoryError


class UnparseableDdlError(SchemaHistoryError):
    """A DDL statement that could not be parsed or applied; the message quotes it."""


LITERALS = {
    TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.IDENTIFIER, TokenType.NUMBER,
    TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.INTRODUCER,
}


class _Tokenizer(MySQL.Tokenizer):
    COMMANDS: ClassVar[set[TokenType]] = set()  # sqlglot swallows RENAME ... into one string token


_EXECUTABLE_COMMENT = re.compile(r"/\*M?!\d*")


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


def is_word(token: Token) -> bool:
    text = token.text
    return token.token_type not in LITERALS and bool(text) and (text[0].isalpha() or text[0] in "_$")


class Cursor:
    """A position in one statement's tokens, with the few reading moves the grammar needs."""

    def __init__(self, tokens: list[Token], sql: str, original: str | None = None,
                 hidden: tuple[tuple[int, int], ...] = ()) -> None:
        self.tokens = tokens
        self.sql = sql  # executable comments exposed, same offsets as ``original``
        self.original = sql if original is None else original
        self.hidden = hidden  # where the executable comments are
        self.i = 0

    def _part(self, tokens: list[Token]) -> Cursor:
        return Cursor(tokens, self.sql, self.original, self.hidden)

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
        return token.text.upper() if token is not None and is_word(token) else None

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
        if token.token_type in (TokenType.IDENTIFIER, TokenType.STRING) or is_word(token):
            return token.text
        # MySQL names may start with a digit (``1c``); sqlglot reads the number and the rest apart.
        rest = self.peek()
        if (token.token_type == TokenType.NUMBER and rest is not None and rest.start == token.end + 1
                and is_word(rest)):
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
        elif is_word(token) and self.is_type(TokenType.L_PAREN):
            self.skip_parens()

    def paren_groups(self) -> list[Cursor]:
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

    def split_top_level(self) -> list[Cursor]:
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


def read_statements(ddl: str) -> list[Cursor]:
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
    return [Cursor(s, sql, ddl, hidden) for s in statements if s]


_WORD_RE = re.compile(r"\S+")
_ROUTINES = {"PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"}


def _creates_routine(tokens: list[Token]) -> bool:
    """CREATE [OR REPLACE] [DEFINER = ...] PROCEDURE|FUNCTION|TRIGGER|EVENT ... (with a body)."""
    if not tokens or tokens[0].text.upper() != "CREATE":
        return False
    for token in tokens[1:]:
        if token.token_type in (TokenType.L_PAREN, TokenType.SEMICOLON):
            return False
        if is_word(token) and token.text.upper() in _ROUTINES:
            return True
    return False


def _split_compound_keywords(tokens: list[Token], sql: str) -> Iterator[Token]:
    """sqlglot reads ``PRIMARY KEY``, ``DOUBLE PRECISION``, ``CHAR VARYING``... as one token:
    the grammar here works word by word."""
    for token in tokens:
        if token.token_type in LITERALS or not any(c.isspace() for c in token.text):
            yield token
            continue
        for match in _WORD_RE.finditer(sql, token.start, token.end + 1):
            yield Token(TokenType.VAR, match.group(), token.line, token.col, match.start(), match.end() - 1)

