"""The publication pgoutput decodes through, and the tables it makes captured.

A table is captured when table.include.list / table.exclude.list let it through and the publication
publishes it; the signal table (signal.data.collection) is published too, for its rows to be read as
signals, but never captured. The set is read at the start and read again when a signal names tables
created since.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg

from cdc.core.errors import SourceError
from cdc.core.filters import NameFilter, warn_if_nothing_captured
from cdc.core.quoting import pg_identifier, pg_table
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import chunks

log = logging.getLogger(__name__)


class Publication:
    def __init__(self, name: str, catalog: Callable[[], psycopg.Connection], *, table_filter: NameFilter,
                 autocreate_mode: str, takeover: bool, signal_table: str | None, signal_source: bool,
                 via_root: bool = False) -> None:
        """``signal_source``: signals come through the signal table, which must then be published;
        ``via_root``: publish.via.partition.root."""
        self.name = name
        self._catalog = catalog
        self._filter = table_filter
        self._autocreate_mode = autocreate_mode
        self._takeover = takeover
        self._signal_table = signal_table
        self._signal_source = signal_source
        self._via_root = via_root
        self._captured: dict[str, cat.CatalogTable] = {}

    def included(self, tables: list[cat.CatalogTable]) -> list[cat.CatalogTable]:
        """The tables the filters let through (never the signal table), published or not."""
        return [t for t in tables if self._filter(t.qualified) and t.qualified != self._signal_table]

    def prepare(self, everything: list[cat.CatalogTable], *, ours: bool, standby: bool = False
                ) -> list[cat.CatalogTable]:
        """The captured tables, the publication made to hold them (and the signal table) first.
        ``ours``: this pipeline has a stored offset, so the publication of its name is its own; ``standby``: the
        server is a standby, where it must exist already (made on the primary), holding them."""
        conn = self._catalog()
        tables = self.included(everything)
        if not self._filter.is_open:
            warn_if_nothing_captured([t.qualified for t in tables], sorted(t.qualified for t in everything),
                                     "schema.include.list / schema.exclude.list / table.include.list / "
                                     "table.exclude.list")
        to_publish = tables
        if self._signal_source:
            assert self._signal_table is not None
            chunks.check_signal_table(conn, self._signal_table)
            to_publish = tables + [t for t in everything if t.qualified == self._signal_table]
        if standby:
            self._require_on_standby(conn, to_publish)
        cat.ensure_publication(conn, self.name, self._autocreate_mode, to_publish,
                               may_alter=(ours or self._takeover) and not standby, via_root=self._via_root)
        published = cat.publication_tables(conn, self.name) or set()
        if self._signal_source and self._signal_table not in published:
            schema, _, name = (self._signal_table or "").partition(".")
            raise SourceError(f"signal table {self._signal_table} is not in publication {self.name}, so "
                              f"signals and watermarks written to it would never be read",
                              fix=f"ALTER PUBLICATION {pg_identifier(self.name)} ADD TABLE "
                                  f"{pg_table(schema, name)};")
        tables = [t for t in tables if t.qualified in published]
        self._captured = {t.qualified: t for t in tables}
        return tables

    def _require_on_standby(self, conn: psycopg.Connection, tables: list[cat.CatalogTable]) -> None:
        """A standby is read-only: a publication missing there, or (filtered) lacking captured tables, can only be
        made on the primary, whose changes the standby replays."""
        published = cat.publication_tables(conn, self.name)
        name = pg_identifier(self.name)
        listed = ", ".join(pg_table(t.schema, t.name) for t in tables) or "..."
        if published is None:
            statement = (f"CREATE PUBLICATION {name} FOR ALL TABLES;" if self._autocreate_mode == "all_tables"
                         else f"CREATE PUBLICATION {name} FOR TABLE {listed};")
            raise SourceError(f"publication {self.name!r} does not exist on this standby, and cdc cannot create it "
                              "here (a standby is read-only)",
                              fix=f"on the primary: {statement} (the standby replays it); or point database.hostname "
                                  "at the primary")
        missing = [t for t in tables if t.qualified not in published]
        if self._autocreate_mode == "filtered" and missing:
            raise SourceError(f"publication {self.name!r} lacks {[t.qualified for t in missing]}, and cdc cannot "
                              "change it on this standby (a standby is read-only)",
                              fix=f"on the primary: ALTER PUBLICATION {name} ADD TABLE "
                                  f"{', '.join(pg_table(t.schema, t.name) for t in missing)};")

    def refresh(self, everything: list[cat.CatalogTable]) -> list[cat.CatalogTable]:
        """The captured tables as the catalog read again describes them (their keys may have changed)."""
        self._captured = {t.qualified: t for t in everything if t.qualified in self._captured}
        return list(self._captured.values())

    def captured_table(self, qualified: str) -> cat.CatalogTable | None:
        return self._captured.get(qualified)

    def captured_keys(self) -> dict[str, bool]:
        """Every captured table as it is now (tables created since the start too): whether it has a key."""
        conn = self._catalog()
        published = cat.publication_tables(conn, self.name) or set()
        self._captured = {t.qualified: t for t in self.included(cat.read_tables(conn)) if t.qualified in published}
        return {name: bool(table.primary_key) for name, table in self._captured.items()}


def warn_about_keys(tables: list[cat.CatalogTable]) -> None:
    """Captured tables whose updates and deletes PostgreSQL would refuse (the source says it once they are
    final: replica.identity.autoset.values may change them)."""
    for table in tables:
        if not table.primary_key and table.replica_identity in ("d", "n"):
            log.warning(
                "table %s has no primary key and REPLICA IDENTITY %s: its events get a null key, and "
                "UPDATE/DELETE on it fail once it is published; fix: ALTER TABLE %s REPLICA IDENTITY FULL; "
                "(or add a primary key)", table.qualified,
                "DEFAULT" if table.replica_identity == "d" else "NOTHING", pg_table(table.schema, table.name),
            )
