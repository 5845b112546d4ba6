"""Spark's parallel initial snapshot (cdc.core.source.SnapshotsInParallel) on PostgreSQL: the driver's
plan cut inside the exported snapshot, and one chunk read by an executor, as events or as an Arrow
table (parallel.py cuts and bounds the chunks, arrow_chunks.py reads them columnar)."""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from cdc.core.envelope import OP_READ, now_ts
from cdc.core.errors import SourceError
from cdc.core.records import ChangeEvent
from cdc.core.source import JdbcChunks
from cdc.sources.postgres import arrow_chunks, jdbc_chunks, parallel
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import pgoutput as po
from cdc.sources.postgres.connection import ConnectionSettings
from cdc.sources.postgres.snapshot import copy_select
from cdc.sources.postgres.source_info import source_block
from cdc.sources.postgres.tables import TableState
from cdc.sources.postgres.types import TypeModes

log = logging.getLogger(__name__)


class ParallelSnapshot:
    def __init__(self, settings: ConnectionSettings, catalog: Callable[[], psycopg.Connection],
                 table_state: Callable[[cat.CatalogTable], TableState], *, prefix: str, modes: TypeModes,
                 order_key: Callable[[str], Any], fetch_size: int) -> None:
        """``order_key(qualified name)``: the order the tables' chunks are planned in."""
        self._settings = settings
        self._catalog = catalog
        self._table_state = table_state
        self._prefix = prefix
        self._modes = modes
        self._order_key = order_key
        self._fetch_size = fetch_size

    def plan(self, tables: list[cat.CatalogTable], lsn: int, snapshot: str | None, chunk_rows: int) -> dict[str, Any]:
        """``tables`` cut into key chunks inside the exported ``snapshot``."""
        chunks: list[parallel.Chunk] = []
        conn = self._settings.connect()
        try:
            with parallel.in_snapshot(conn, snapshot):
                for table in sorted(tables, key=lambda t: self._order_key(t.qualified)):
                    chunks += parallel.table_chunks(table, parallel.chunk_bounds(conn, table, chunk_rows))
        finally:
            conn.close()
        log.info("snapshot of %d tables in %d chunks at %s", len(tables), len(chunks), po.format_lsn(lsn))
        return {"snapshot": snapshot, "lsn": lsn, "chunks": chunks, "ts_us": now_ts()[1],
                "stream_from": {"lsn": lsn, "txId": None, "ts_usec": None, "snapshot_completed": True}}

    def _table(self, chunk: parallel.Chunk) -> cat.CatalogTable:
        schema, _, name = chunk["table"].partition(".")
        for table in cat.read_tables(self._catalog()):
            if table.schema == schema and table.name == name:
                return table
        raise SourceError(f"table {chunk['table']} of the snapshot plan no longer exists",
                          fix="start the query again with a new checkpoint to take a new snapshot")

    def _plain_fields(self, table: cat.CatalogTable) -> list[dict[str, Any]] | None:
        """The table's row fields, or None when column options change its values (mask, hash, truncate, a
        custom converter): only the events apply them, so it is read through them."""
        state = self._table_state(table)
        if state.stage.changes_values:
            return None
        return list(state.envelope.row_schema["fields"])

    def _source(self, table: cat.CatalogTable, plan: dict[str, Any]) -> dict[str, Any]:
        return source_block(self._prefix, self._settings.dbname, table.schema, table.name, ts_us=plan["ts_us"],
                            snapshot="true", lsn=plan["lsn"])

    def _read_events(self, table: cat.CatalogTable, plan: dict[str, Any]
                     ) -> Callable[[list[list[Any]]], list[ChangeEvent]]:
        """The plan's read events of ``table``'s rows given as the text values of its columns (COPY's form)."""
        state = self._table_state(table)
        source = self._source(table, plan)
        ts = (plan["ts_us"] // 1000, plan["ts_us"], plan["ts_us"] * 1000)
        position = (plan["lsn"], 0, 0)

        def events(rows: list[list[Any]]) -> list[ChangeEvent]:
            return [state.envelope.event(OP_READ, None, state.row(values), source, position=position, ts=ts)
                    for values in rows]
        return events

    def events(self, plan: dict[str, Any], chunk: parallel.Chunk) -> Iterator[list[ChangeEvent]]:
        """One chunk's rows as read events (the reference path), in the plan's snapshot if it still exists."""
        table = self._table(chunk)
        events = self._read_events(table, plan)
        select = parallel.select_chunk(table, chunk, [psycopg.sql.Identifier(c.name) for c in table.columns])
        conn = self._settings.connect()
        try:
            with parallel.in_snapshot(conn, plan["snapshot"]):
                for rows in copy_select(conn, select, chunk["table"], self._fetch_size):
                    yield events(rows)
        finally:
            conn.close()

    def arrow(self, plan: dict[str, Any], chunk: parallel.Chunk
              ) -> tuple[Iterator[Any | list[ChangeEvent]], dict[str, Any]] | None:
        """One chunk's rows as Arrow tables of the row struct's columns -- and, for rows holding a value only
        the Python converters read, as read events -- with the source block they share; None when the
        table needs the Python converters (then use the events)."""
        table = self._table(chunk)
        fields = self._plain_fields(table)
        select = arrow_chunks.columnar_select(table, fields, self._modes) if fields is not None else None
        if select is None:
            return None
        try:
            parts = arrow_chunks.read_chunk(self._settings.conninfo(), table, chunk, select, plan["snapshot"],
                                            lambda query: query.as_string(self._catalog()),
                                            self._settings.initial_statements, self._fetch_size)
        except ImportError:
            log.warning("adbc-driver-postgresql is not installed: snapshot chunks are converted in Python "
                        "(pip install 'cdc-debezium[spark]')")
            return None
        events = self._read_events(table, plan)
        return ((part if not isinstance(part, list) else events(part) for part in parts), self._source(table, plan))

    def jdbc(self, plan: dict[str, Any], table_id: str, connection: tuple[str, dict[str, str]]) -> JdbcChunks | None:
        """``table_id``'s chunks of the plan as a JDBC reader reads them (jdbc_chunks.py; none when the plan
        leaves the table out), or None."""
        own = [chunk for chunk in plan["chunks"] if chunk["table"] == table_id]
        table = self._table({"table": table_id})
        fields = self._plain_fields(table)
        if fields is None:
            return None
        catalog = self._catalog()
        return jdbc_chunks.chunks(table, fields, self._modes, plan, own, connection, self._settings.initial_statements,
                                  lambda query: query.as_string(catalog), catalog.info.server_version)
