"""SQL Server source: CDC change tables polled by LSN (pyodbc is imported only to connect)."""
from cdc.sources.sqlserver.source import SqlServerSource

__all__ = ["SqlServerSource"]
