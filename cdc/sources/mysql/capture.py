"""Which databases and tables a MySQL / MariaDB pipeline captures, and whose schema it keeps.

    captured database   not one of the server's own, and database.include.list / exclude.list
    captured table      in a captured database, and table.include.list / exclude.list
    schema read         every database (as Debezium, so that a table renamed or moved into a captured
                        one is known), unless the history keeps only captured tables or databases

One value object, read from the config once and handed to the snapshot, the stream and the signals.
"""
from __future__ import annotations

from dataclasses import dataclass

import pymysql

from cdc.config import Config
from cdc.core.filters import NameFilter
from cdc.sources.mysql.snapshot import SYSTEM_DATABASES


@dataclass(frozen=True)
class CaptureFilter:
    databases: NameFilter
    tables: NameFilter
    signal_table: str | None  # database.table of signal.data.collection: read for signals, never captured
    only_captured_tables_ddl: bool  # schema.history.internal.store.only.captured.tables.ddl
    only_captured_databases_ddl: bool  # schema.history.internal.store.only.captured.databases.ddl

    @classmethod
    def from_config(cls, config: Config, tables: NameFilter) -> CaptureFilter:
        """``tables``: the table filter core's SourceSettings parsed already."""
        return cls(
            databases=NameFilter(config.get("database.include.list"), config.get("database.exclude.list")),
            tables=tables,
            signal_table=config.get("signal.data.collection"),
            only_captured_tables_ddl=config.get("schema.history.internal.store.only.captured.tables.ddl"),
            only_captured_databases_ddl=config.get("schema.history.internal.store.only.captured.databases.ddl"),
        )

    def captured_database(self, database: str) -> bool:
        return database not in SYSTEM_DATABASES and self.databases(database)

    def captured(self, database: str, table: str) -> bool:
        return self.captured_database(database) and self.tables(f"{database}.{table}")

    def schema_database(self, database: str) -> bool:
        """A database whose schema the snapshot reads."""
        if self.only_captured_tables_ddl or self.only_captured_databases_ddl:
            return self.captured_database(database)
        return database not in SYSTEM_DATABASES

    def is_signal_table(self, database: str, table: str) -> bool:
        return f"{database}.{table}" == self.signal_table

    def order_key(self, database: str, table: str) -> tuple[int, str]:
        """Debezium's snapshot order: by the first table.include.list pattern that matches, then by name."""
        return self.tables.order_key(f"{database}.{table}")

    def tables_now(self, conn: pymysql.connections.Connection) -> list[tuple[str, str]]:
        """The captured base tables as the server has them now (the signal table among them)."""
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                        "WHERE TABLE_TYPE = 'BASE TABLE'")
            names = [(str(d), str(t)) for d, t in cur.fetchall()]
        return [(d, t) for d, t in names if self.captured(d, t)]
