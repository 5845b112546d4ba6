"""The tables pgoutput's Relation messages name, described for decoding.

The first Relation of each table after a start is answered from the catalog read at the start (one
query for every table, where a round trip per table cost seconds with thousands); a later one (a DDL)
reads the catalog again, as does a first one whose columns differ from that read.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import psycopg

from cdc.core.filters import NameFilter
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import pgoutput as po
from cdc.sources.postgres.native_rows import encoder_for
from cdc.sources.postgres.tables import RowFormat, TableState, TableStates


class Relations:
    def __init__(self, states: TableStates, table_filter: NameFilter, catalog: Callable[[], psycopg.Connection],
                 rows: RowFormat) -> None:
        self._states = states
        self._filter = table_filter
        self._catalog = catalog
        self._rows = rows
        self._at_start: dict[int, cat.CatalogTable] = {}  # every table as read at the start, by oid

    def remember(self, tables: list[cat.CatalogTable]) -> None:
        """The catalog as read at the start."""
        self._at_start = {t.oid: t for t in tables}

    def describe(self, message: po.Relation) -> TableState | None:
        """A captured table as the catalog describes it now, with the columns the relation message lists;
        None for a table the filters leave out."""
        qualified = f"{message.namespace}.{message.name}"
        if not self._filter(qualified):
            return None
        cached = self._at_start.pop(message.relid, None)
        same = cached is not None and [(c.name, c.type_oid) for c in cached.columns] == \
            [(c.name, c.type_oid) for c in message.columns]
        found = [cached] if same and cached is not None else cat.read_tables(self._catalog(), message.relid)
        if found:
            # The message names the table as it was when the rows were written (a backlog read after
            # RENAME TABLE): their topic is that name's, as Debezium's; the rest comes from the catalog.
            table = dataclasses.replace(found[0], schema=message.namespace, name=message.name)
        else:  # dropped since: describe it from the message alone
            table = cat.CatalogTable(message.relid, message.namespace, message.name, message.replica_identity, (), ())
        state = self._states(table, message.columns)
        if self._rows.native:
            state.native = encoder_for(state, len(message.columns))
        return state
