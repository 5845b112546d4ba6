"""Reading columns of one row again by key, for Debezium's reselect post processor (cdc.core.post_processors).

The columns are read as text, as pgoutput sends them, and converted by the table's own converters and column
options (``TableState.row``, the envelope's shaping), so a value read again is the value the event would
have had. The key's values come from the event; each is compared as text cast to its column's type, so the
table's key index finds the row.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql

from cdc.core.errors import SourceError
from cdc.core.post_processors import TableLookup
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres.tables import TableState


def table_lookup(table: cat.CatalogTable, state: TableState,
                 connection: Callable[[], psycopg.Connection]) -> TableLookup | None:
    """The reselector's view of a table (None: it has no key to read a row by)."""
    key = list(state.key_names)
    if not key:
        return None
    fields = state.envelope.field_names
    unavailable = {name: state.envelope.shaped_value(name, value) for _, name, _, _, value in state.spec}
    types = {c.name: c.type_name for c in table.columns}
    columns = [c.name for c in table.columns]

    def read(key_values: Mapping[str, Any], wanted: Sequence[str]) -> Mapping[str, Any] | None:
        query = sql.SQL("SELECT {} FROM {}.{} WHERE {}").format(
            sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in columns),
            sql.Identifier(table.schema), sql.Identifier(table.name),
            sql.SQL(" AND ").join(sql.SQL("{} = %s::text::{}").format(sql.Identifier(k), sql.SQL(types[k]))
                                  for k in key))
        try:
            row = connection().execute(query, [None if key_values[k] is None else str(key_values[k])
                                               for k in key]).fetchone()
        except psycopg.Error as exc:
            raise SourceError(f"{exc}".strip(), fix="check the table and the key columns' types") from None
        if row is None:
            return None
        shaped = state.envelope.shaped(state.row(row))
        return {c: shaped[fields[c]] for c in wanted}

    return TableLookup(fields=fields, unavailable=unavailable, key_columns=key, read=read)
