"""database.initial.statements: SQL run on each new connection a source opens for queries (the catalog,
snapshots, signals, heartbeats...), never on the replication or binlog connection, as Debezium's
JdbcConnection runs them on each new JDBC connection.

The statements are separated by ``;``; ``;;`` is a semicolon inside one (Debezium's
``parseSqlStatementString``). A statement the server refuses stops the connection with a SourceError
that names it and says what to do.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from cdc.core.config import Option
from cdc.core.errors import CdcError, SourceError

NAME = "database.initial.statements"
INITIAL_STATEMENTS_OPTION = Option(
    NAME, str, None, "SQL statements run on each new connection the source opens for queries (the catalog, "
    "snapshots, signals), not on the replication / binlog connection: session settings, typically. Separated by "
    "';'; write ';;' for a semicolon inside a statement. A statement the server refuses stops the start.")
FIX = (f"correct or remove the statement in {NAME} (statements are separated by ';'; write ';;' for a semicolon "
       "inside one)")


def split(text: str | None) -> tuple[str, ...]:
    """The statements of the option's value, trimmed, empty ones dropped."""
    statements: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text or ""):
        char = (text or "")[i]
        if char == ";" and (text or "")[i + 1:i + 2] == ";":  # an escaped semicolon
            current.append(";")
            i += 2
            continue
        if char == ";":
            statements.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        i += 1
    statements.append("".join(current).strip())
    return tuple(s for s in statements if s)


def run(statements: Sequence[str], execute: Callable[[str], object], where: str,
        translate: Callable[[Exception], CdcError], driver_errors: tuple[type[Exception], ...]) -> None:
    """Run each statement with ``execute``; the first one the server refuses raises a SourceError naming it
    (a connection lost on the way stays the retriable error ``translate`` makes of it)."""
    for number, statement in enumerate(statements, 1):
        try:
            execute(statement)
        except driver_errors as exc:
            error = translate(exc)
            if error.retriable:
                raise error from None
            raise SourceError(f"{NAME}: statement {number} ({statement!r}) failed on {where}: {_text(exc)}",
                              fix=FIX) from None


def _text(exc: Exception) -> str:
    """The server's message: pymysql's errors are (code, message) pairs."""
    args = exc.args
    return str(args[1] if len(args) > 1 and isinstance(args[0], int) else exc).strip()
