"""Server checks that need a misconfigured server, against a stand-in connection."""
from __future__ import annotations

import pytest

from cdc.core.errors import SourceError
from cdc.sources.postgres.catalog import server_checks
from cdc.sources.postgres.connection import translate


class FakeConnection:
    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers

    def execute(self, query: str, params: object = None) -> FakeConnection:
        self.last = next(v for k, v in self.answers.items() if k in query)
        return self

    def fetchone(self) -> object:
        return self.last


def test_wal_level_not_logical_names_the_fix() -> None:
    conn = FakeConnection({"wal_level": ("replica",)})
    with pytest.raises(SourceError) as info:
        server_checks(conn, "cdc")  # type: ignore[arg-type]
    assert "wal_level is 'replica'" in str(info.value)
    assert "ALTER SYSTEM SET wal_level = logical" in str(info.value) and "restart" in str(info.value)


def test_missing_replication_attribute_names_the_fix() -> None:
    conn = FakeConnection({"wal_level": ("logical",), "rolreplication": (False,)})
    with pytest.raises(SourceError, match='ALTER ROLE "cdc" WITH REPLICATION'):
        server_checks(conn, "cdc")  # type: ignore[arg-type]


@pytest.mark.parametrize("message, retriable, fix", [
    ('connection to server at "127.0.0.1", port 1 failed: Connection refused', True, "database.port"),
    ("FATAL:  password authentication failed for user \"x\"", False, "database.password"),
    ('FATAL:  database "nope" does not exist', False, "database.dbname"),
    ("terminating connection due to administrator command", True, "database.hostname"),
])
def test_libpq_errors_are_translated(message: str, retriable: bool, fix: str) -> None:
    error = translate(Exception(message))
    assert error.retriable is retriable
    assert fix in str(error)


def test_a_connection_lost_in_a_snapshot_is_retriable_and_a_refusal_is_not() -> None:
    """Any statement of a snapshot's transaction (its COMMIT too, where a kill landed in the fault suite and
    printed psycopg's traceback) that meets a lost connection raises a RetriableSourceError saying when; a
    server's refusal stays psycopg's error."""
    import psycopg
    import pytest

    from cdc.core.errors import RetriableSourceError
    from cdc.sources.postgres.connection import lost_connection_retriable

    lost = psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly")
    with pytest.raises(RetriableSourceError) as caught, lost_connection_retriable("during the snapshot"):
        raise lost
    assert str(caught.value).startswith("the connection was lost during the snapshot: consuming input failed")
    assert "retry policy" in (caught.value.fix or "")
    refused = psycopg.OperationalError("permission denied for table t")
    with pytest.raises(psycopg.OperationalError) as kept, lost_connection_retriable("during the snapshot"):
        raise refused
    assert kept.value is refused
