"""database.initial.statements: split as Debezium's JdbcConnection.parseSqlStatementString does."""
from __future__ import annotations

import pytest

from cdc.core.errors import RetriableSourceError, SourceError
from cdc.core.initial_statements import run, split


@pytest.mark.parametrize(("text", "statements"), [
    (None, ()),
    ("", ()),
    ("SET a = 1", ("SET a = 1",)),
    (" SET a = 1 ; SET b = 2; ", ("SET a = 1", "SET b = 2")),
    ("SET a = 'x;;y';SET b = 2", ("SET a = 'x;y'", "SET b = 2")),
    ("SET a = 1;;", ("SET a = 1;",)),  # a doubled semicolon at the end is a semicolon
    ("SET a = 1;;;", ("SET a = 1;",)),  # then the last one ends the statement
    (";;;", (";",)),
    ("; ;SET a = 1", ("SET a = 1",)),  # empty statements dropped
])
def test_split(text: str | None, statements: tuple[str, ...]) -> None:
    assert split(text) == statements


class DriverError(Exception):
    pass


def test_a_refused_statement_names_itself_and_the_fix() -> None:
    def execute(statement: str) -> None:
        if statement.startswith("SELEC "):
            raise DriverError(1064, "You have an error in your SQL syntax")

    with pytest.raises(SourceError) as caught:
        run(("SET a = 1", "SELEC 1"), execute, "root@db:3306", lambda exc: SourceError(str(exc)), (DriverError,))
    assert caught.value.message == ("database.initial.statements: statement 2 ('SELEC 1') failed on root@db:3306: "
                                    "You have an error in your SQL syntax")
    assert "';;'" in (caught.value.fix or "")


def test_a_lost_connection_stays_retriable() -> None:
    def execute(statement: str) -> None:
        raise DriverError("server closed the connection")

    lost = RetriableSourceError("cannot reach the server")
    with pytest.raises(RetriableSourceError) as caught:
        run(("SET a = 1",), execute, "db", lambda exc: lost, (DriverError,))
    assert caught.value is lost
