"""PostgreSQL source (logical replication with pgoutput)."""
from cdc.sources.postgres.source import PostgresSource

__all__ = ["PostgresSource"]
