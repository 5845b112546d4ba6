"""Reading columns of one row again by key, for Debezium's reselect post processor (cdc.core.post_processors).

The row is read as the snapshot reads rows (``SELECT *``, the table's converters and column options), so a
value read again is the value the event would have had.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pymysql

from cdc.core.errors import SourceError
from cdc.core.post_processors import TableLookup
from cdc.sources.mysql import snapshot as snap
from cdc.sources.mysql.tables import TableState


def table_lookup(state: TableState, connection: Callable[[], pymysql.connections.Connection]) -> TableLookup | None:
    """The reselector's view of a table (None: it has no key to read a row by)."""
    key = list(state.envelope.key_fields)
    if not key:
        return None
    fields = state.envelope.field_names

    def read(key_values: Mapping[str, Any], wanted: Sequence[str]) -> Mapping[str, Any] | None:
        conn = connection()
        condition = " AND ".join(f"{snap.quote(k)} <=> {conn.escape(key_values[k])}" for k in key)
        try:
            rows = [row for batch in snap.select_rows(conn, state.database, state.name, 2, condition) for row in batch]
        except pymysql.MySQLError as exc:
            raise SourceError(str(exc.args[-1]), fix="check the table and its key") from None
        if not rows:
            return None
        shaped = state.envelope.shaped(state.row(rows[0]))
        return {c: shaped[fields[c]] for c in wanted}

    return TableLookup(fields=fields, unavailable={}, key_columns=key, read=read)
