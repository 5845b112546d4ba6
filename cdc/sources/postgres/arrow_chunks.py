"""Snapshot chunks as Arrow columns, without a Python object per value.

ADBC's PostgreSQL driver (``adbc-driver-postgresql``, maintained by the Apache Arrow project) reads
``COPY ... TO STDOUT (FORMAT binary)`` straight into Arrow arrays in C++. We use it rather than
psycopg + pyarrow (COPY text would still be parsed per value in Python) or ConnectorX (which cannot
join an exported snapshot: it opens its own connections and transactions).

It is used for the columns whose Debezium value is what PostgreSQL stores (integers, floats,
booleans, text, dates, timestamps, bytea, numeric with a scale) or its text output (uuid, json,
inet, ...), at the default value modes. A table with any other column type is read the Python way, which
stays the reference; so are the rows holding a value ADBC would get wrong (infinite or BC dates,
numeric NaN): the server flags them in the same SELECT, and they are read again as text, by the
same range and that condition, in the same transaction.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from psycopg import sql

from cdc.core import initial_statements
from cdc.core.errors import SourceError
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres.connection import PINNED
from cdc.sources.postgres.parallel import Chunk, select_chunk

if TYPE_CHECKING:
    import pyarrow as pa

    from cdc.sources.postgres.types import TypeModes

log = logging.getLogger(__name__)

# format_type() names (without their modifiers) read as they are ...
_NATIVE = {"smallint", "integer", "bigint", "real", "double precision", "boolean", "text", "date", "bytea",
           "character varying", "character", "timestamp without time zone", "timestamp with time zone", "numeric"}
# ... and those whose Debezium value is the text output
AS_TEXT = {"uuid", "json", "jsonb", "inet", "cidr", "macaddr", "macaddr8", "xml"}
_MODIFIER = re.compile(r"\(\d+(,\d+)?\)")
_DECIMAL = "org.apache.kafka.connect.data.Decimal"


def base_type(type_name: str) -> str:
    """A format_type() name without its modifiers: numeric(12,3) -> numeric."""
    return _MODIFIER.sub("", type_name).strip()


# The hidden column of a chunk's SELECT when some column can hold a value ADBC reads wrong: whether the row
# holds one (NULL: it does not).
OUTSIDE = "__cdc_outside"

# Years 1 to 9999 are what ADBC reads right: outside them (BC dates, infinity, which it turns into
# wrapped-around numbers) and for numeric NaN, the Python converters give Debezium's values.
YEARS_1_TO_9999 = {
    "date": ("'0001-01-01'::date", "'9999-12-31'::date"),
    "timestamp without time zone": ("'0001-01-01 00:00:00'::timestamp", "'9999-12-31 23:59:59.999999'::timestamp"),
    "timestamp with time zone": ("'0001-01-01 00:00:00+00'::timestamptz",
                                 "'9999-12-31 23:59:59.999999+00'::timestamptz"),
}
OUTSIDE_CONDITIONS = {
    **{base: f"{{c}} < {low} OR {{c}} > {high}" for base, (low, high) in YEARS_1_TO_9999.items()},
    "numeric": "{c} = 'NaN'::numeric",
}


@dataclass(frozen=True)
class ColumnarSelect:
    """How a table's chunks are read as Arrow: ``columns``, the SELECT list of the row struct's fields
    (``names``); ``outside``, true for a row holding a value only the Python converters read (None: no
    column can hold one)."""

    names: list[str]
    columns: list[sql.Composable]
    outside: sql.Composable | None


def columnar_select(table: cat.CatalogTable, fields: Sequence[dict[str, Any]], modes: TypeModes
                    ) -> ColumnarSelect | None:
    """How to read the row struct ``fields`` (the table's Connect row fields) as Arrow columns of the same
    values, or None when some column needs the Python converters."""
    if (modes.decimal_handling_mode, modes.binary_handling_mode) != ("precise", "bytes") or \
            modes.time_precision_mode not in ("adaptive", "adaptive_time_microseconds"):
        return None
    types = {c.name: c for c in table.columns}
    out: list[sql.Composable] = []
    outside: list[sql.Composable] = []
    for field in fields:
        column = types.get(field["field"])
        if column is None or column.dims:
            return None
        base = base_type(column.type_name)
        if base == "numeric" and field.get("name") != _DECIMAL:
            return None  # numeric without a scale: VariableScaleDecimal
        if base in _NATIVE:
            out.append(sql.Identifier(column.name))
        elif base in AS_TEXT:
            out.append(_as_text(column.name))
        else:
            return None
        if base in OUTSIDE_CONDITIONS:
            outside.append(sql.SQL("(" + OUTSIDE_CONDITIONS[base] + ")").format(c=sql.Identifier(column.name)))
    flag = sql.SQL(" OR ").join(outside) if outside else None
    return ColumnarSelect([f["field"] for f in fields], out, flag)


def text_output(name: str) -> sql.Composable:
    """A column as its type's output function writes it, as COPY's text does (a cast to text can differ:
    inet '::1' is '::1/128' as text)."""
    return sql.SQL("CASE WHEN {c} IS NULL THEN NULL ELSE format('%s', {c}) END").format(c=sql.Identifier(name))


def _as_text(name: str) -> sql.Composable:
    return sql.SQL("{} AS {}").format(text_output(name), sql.Identifier(name))


def read_chunk(conninfo: str, table: cat.CatalogTable, chunk: Chunk, select: ColumnarSelect, snapshot: str | None,
               render: Any, initial: Sequence[str] = (), fetch_size: int = 10_000
               ) -> Iterator[pa.Table | list[list[Any]]]:
    """The chunk's rows, read in the exported ``snapshot`` when it still exists: Arrow tables of the row
    fields, a server batch at a time (a chunk is never whole in memory), then the rows holding a value
    only the Python converters read, as lists of the table's columns' text values (COPY's text form):
    the same range read again in the same transaction, with the same condition, so the same rows.
    ``render`` turns a psycopg query into SQL text (it needs a psycopg connection for quoting);
    ``initial``: database.initial.statements; ``fetch_size``: rows read again per list (snapshot.fetch.size,
    as the Python path's). ImportError: no ADBC driver."""
    import adbc_driver_postgresql.dbapi as adbc

    columns = list(select.columns)
    reread = None
    if select.outside is not None:
        columns.append(sql.SQL("{} AS {}").format(select.outside, sql.Identifier(OUTSIDE)))
        reread = render(sql.SQL("{} AND ({})").format(
            select_chunk(table, chunk, [_as_text(c.name) for c in table.columns]), select.outside))
    return _rows(adbc, conninfo, table, select, render(select_chunk(table, chunk, columns)), reread, snapshot,
                 initial, fetch_size)


def _rows(adbc: Any, conninfo: str, table: cat.CatalogTable, select: ColumnarSelect, query: str, reread: str | None,
          snapshot: str | None, initial: Sequence[str], fetch_size: int) -> Iterator[pa.Table | list[list[Any]]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    with adbc.connect(conninfo) as conn, conn.cursor() as cur:
        if initial:  # their own transaction: the snapshot's must start with SET TRANSACTION
            initial_statements.run(initial, cur.execute, table.qualified, lambda exc: SourceError(str(exc)),
                                   (adbc.Error,))
            for name in PINNED:  # back to conninfo's: rows read again as text are parsed by them
                cur.execute(f"RESET {name}")
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
        outside = False
        for batch in cur.fetch_record_batch():
            if reread is not None:
                flags = batch.column(OUTSIDE)
                if flags.true_count:
                    outside = True
                    batch = batch.filter(pc.invert(pc.fill_null(flags, False)))
                batch = batch.select(select.names)
            if batch.num_rows:
                yield pa.Table.from_batches([batch])
        if outside and reread is not None:
            cur.execute(reread)
            for batch in cur.fetch_record_batch():
                columns = [column.to_pylist() for column in batch.columns]
                for start in range(0, batch.num_rows, fetch_size):
                    yield [list(row) for row in zip(*(c[start:start + fetch_size] for c in columns), strict=True)]
        conn.rollback()
