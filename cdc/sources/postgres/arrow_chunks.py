"""Snapshot chunks as Arrow columns, without a Python object per value.

ADBC's PostgreSQL driver (``adbc-driver-postgresql``, maintained by the Apache Arrow project) reads
``COPY ... TO STDOUT (FORMAT binary)`` straight into Arrow arrays in C++. We use it rather than
psycopg + pyarrow (COPY text would still be parsed per value in Python) or ConnectorX (which cannot
join an exported snapshot: it opens its own connections and transactions).

It is used for the columns whose Debezium value is what PostgreSQL stores (integers, floats,
booleans, text, dates, timestamps, bytea, numeric with a scale) or its text output (uuid, json,
inet, ...), at the default value modes. A table with any other column type, or a chunk holding a
value the fast path would get wrong (infinite dates, numeric NaN), is read the Python way, which
stays the reference.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from psycopg import sql

from cdc.core import initial_statements
from cdc.core.errors import SourceError
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres.parallel import Chunk, select_chunk

if TYPE_CHECKING:
    import pyarrow as pa

    from cdc.sources.postgres.types import TypeModes

log = logging.getLogger(__name__)

# format_type() names (without their modifiers) read as they are ...
_NATIVE = {"smallint", "integer", "bigint", "real", "double precision", "boolean", "text", "date", "bytea",
           "character varying", "character", "timestamp without time zone", "timestamp with time zone", "numeric"}
# ... and those whose Debezium value is the text output
_AS_TEXT = {"uuid", "json", "jsonb", "inet", "cidr", "macaddr", "macaddr8", "xml"}
_MODIFIER = re.compile(r"\(\d+(,\d+)?\)")
_DECIMAL = "org.apache.kafka.connect.data.Decimal"


def _base(type_name: str) -> str:
    return _MODIFIER.sub("", type_name).strip()


def columnar_select(table: cat.CatalogTable, fields: Sequence[dict[str, Any]], modes: TypeModes
                    ) -> list[sql.Composable] | None:
    """The SELECT list that reads the row struct ``fields`` (the table's Connect row fields) as Arrow
    columns of the same values, or None when some column needs the Python converters."""
    if (modes.decimal_handling_mode, modes.binary_handling_mode) != ("precise", "bytes") or \
            modes.time_precision_mode not in ("adaptive", "adaptive_time_microseconds"):
        return None
    types = {c.name: c for c in table.columns}
    out: list[sql.Composable] = []
    for field in fields:
        column = types.get(field["field"])
        if column is None or column.dims:
            return None
        base = _base(column.type_name)
        if base == "numeric" and field.get("name") != _DECIMAL:
            return None  # numeric without a scale: VariableScaleDecimal
        if base in _NATIVE:
            out.append(sql.Identifier(column.name))
        elif base in _AS_TEXT:
            # the type's output function (a cast to text can differ: inet '::1' is '::1/128' as text)
            out.append(sql.SQL("CASE WHEN {c} IS NULL THEN NULL ELSE format('%s', {c}) END AS {c}").format(
                c=sql.Identifier(column.name)))
        else:
            return None
    return out


def read_chunk(conninfo: str, table: cat.CatalogTable, chunk: Chunk, columns: list[sql.Composable],
               snapshot: str | None, render: Any, initial: Sequence[str] = ()) -> pa.Table | None:
    """The chunk's rows as an Arrow table (a column per row field), read in the exported ``snapshot``
    when it still exists; None when a value needs the Python converters. ``render`` turns a psycopg
    query into SQL text (it needs a psycopg connection for quoting); ``initial``: database.initial.statements."""
    import adbc_driver_postgresql.dbapi as adbc

    query = render(select_chunk(table, chunk, columns))
    with adbc.connect(conninfo) as conn, conn.cursor() as cur:
        if initial:  # their own transaction: the snapshot's must start with SET TRANSACTION
            initial_statements.run(initial, cur.execute, table.qualified, lambda exc: SourceError(str(exc)),
                                   (adbc.Error,))
            conn.commit()
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        if snapshot:
            try:
                cur.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
            except Exception as exc:  # noqa: BLE001 - gone after a restart: read the table as it is now
                log.info("snapshot %s is gone (%s): reading the chunk as the table is now", snapshot, exc)
                conn.rollback()
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        cur.execute(query)
        result = cur.fetch_arrow_table()
        conn.rollback()
    return result if _plain_values(result) else None


# Years 1 to 9999, in days and microseconds since 1970: outside them (BC dates, infinity, which ADBC
# turns into wrapped-around numbers) the Python converters give Debezium's values.
_DAYS = (-719_162, 2_932_896)
_MICROS = (-62_135_596_800_000_000, 253_402_300_799_999_999)


def _plain_values(result: pa.Table) -> bool:
    """False when a column holds what only the Python converters handle: dates or timestamps
    outside years 1-9999 (BC, infinity), numeric NaN."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for column in result.columns:
        kind = column.type
        if isinstance(kind, pa.ExtensionType):
            storage = pa.chunked_array([chunk.storage for chunk in column.chunks], type=kind.storage_type)
            if pc.any(pc.equal(storage, "NaN")).as_py():
                return False
        elif pa.types.is_date32(kind) or pa.types.is_timestamp(kind):
            low, high = _DAYS if pa.types.is_date32(kind) else _MICROS
            extremes = pc.min_max(column.cast(pa.int32() if pa.types.is_date32(kind) else pa.int64()))
            smallest, largest = extremes["min"].as_py(), extremes["max"].as_py()
            if smallest is not None and (smallest < low or largest > high):
                return False
    return True
