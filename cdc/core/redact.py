"""Credentials taken out of SQL text before it is stored, emitted or logged.

A binlog carries ``CREATE USER ... IDENTIFIED BY 'secret'`` as it was typed; a schema history, a schema
change event or a log line must not. The literal that holds a password (or its hash, or an
authentication plugin's secret) is replaced by ``'***'`` and the rest of the statement is kept:

    IDENTIFIED BY 'x'  /  IDENTIFIED BY PASSWORD 'hash'  /  IDENTIFIED WITH plugin BY 'x' | AS 'hash'
    IDENTIFIED VIA plugin USING 'x' | USING PASSWORD('x')  (MariaDB, also after OR)
    SET PASSWORD [FOR u] = PASSWORD('x') | OLD_PASSWORD('x') | 'hash'
    CREATE/ALTER SERVER ... OPTIONS (PASSWORD 'x')  /  CHANGE MASTER TO MASTER_PASSWORD = 'x'
    CREATE/ALTER ROLE|USER ... [ENCRYPTED] PASSWORD 'x'  (PostgreSQL)

Only statements that can hold a credential are looked at, and only the literal right after one of
these words, so no other text changes.
"""
from __future__ import annotations

import re

MASK = "'***'"

_MAY_HOLD_SECRET = re.compile(r"\b(IDENTIFIED|PASSWORD|MASTER_PASSWORD|SERVER|ROLE|USER)\b", re.I)
_LITERAL = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"", re.S)
# What comes right before a credential literal (the text up to it, spaces stripped, upper-cased).
_BEFORE_SECRET = re.compile(
    r"(IDENTIFIED\s+BY(\s+PASSWORD)?|IDENTIFIED\s+WITH\s+\S+\s+(BY|AS)|\bUSING(\s+PASSWORD\s*\()?|"
    r"\b(OLD_)?PASSWORD\s*\(|\bPASSWORD(\s+FOR\s+\S+)?\s*=|\bMASTER_PASSWORD\s*=|\bPASSWORD)$",
    re.I,
)


def redact_secrets(sql: str | None) -> str | None:
    """``sql`` with every credential literal replaced by ``'***'``."""
    if not sql or not _MAY_HOLD_SECRET.search(sql):
        return sql
    out: list[str] = []
    last = 0
    for match in _LITERAL.finditer(sql):
        before = sql[last:match.start()]
        out.append(before)
        preceding = "".join(out).rstrip()
        out.append(MASK if _BEFORE_SECRET.search(preceding[-200:]) else match.group(0))
        last = match.end()
    out.append(sql[last:])
    return "".join(out)
