"""PostgreSQL source (logical replication with pgoutput)."""
from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:  # import the source (and psycopg) only when asked for
    if name == "PostgresSource":
        from cdc.sources.postgres.source import PostgresSource

        return PostgresSource
    raise AttributeError(name)
