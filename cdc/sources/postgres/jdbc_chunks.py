"""Snapshot chunks read by a JDBC reader in the JVM (Spark's ``spark.read.jdbc``: cdc.spark.jdbc_snapshot).

The plan is the one Spark's executors read through the source (parallel.py: the slot's exported
snapshot, key-range chunks); here each chunk becomes a WHERE predicate of one SELECT, and pgjdbc
joins the exported snapshot in the session's first statement. pgjdbc is what Debezium reads
PostgreSQL with, so the connection takes Debezium's own TLS options as they are.

The SELECT gives Debezium's values for the columns the columnar path reads (arrow_chunks: what
PostgreSQL stores, or its text output), in forms whose reading does not depend on the JVM's time
zone or calendar: a date as days since 1970, a timestamptz as microseconds since 1970, a timestamp
as ISO text. Values Spark cannot hold (infinite or BC dates, numeric NaN) are NULL, as the Python
path makes them in Spark (cdc.spark.schema). A table with any other column, or an option that
changes values, is not read so (None): the source reads it.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import sql

from cdc.config import Config
from cdc.core.source import JdbcChunks
from cdc.sources.postgres import arrow_chunks
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres.connection import PINNED
from cdc.sources.postgres.parallel import Chunk, key_range
from cdc.sources.postgres.tls import CERT, KEY, PASSWORD, ROOT_CERT
from cdc.sources.postgres.types import TypeModes

_MAX_PRECISION = 38  # Spark's DecimalType: a wider numeric is read by the source
_PRECISION = re.compile(r"numeric\((\d+)")

# How a column of a type (format_type()'s name without modifiers) is selected, and how its value reaches
# Spark's type (JdbcChunks.columns' kinds). {inside}: the years Spark holds (NULL outside them, and for NULL).
# Written as BETWEEN and NULLIF: the same reads with "IS NULL OR ... OR ..." cost 0.2 s more per 1,000,000 rows
# (probed: the server shares the cores with Spark).
_DAYS = "CASE WHEN {c} BETWEEN {inside} THEN {c} - DATE '1970-01-01' END"
_LOCAL_TEXT = "CASE WHEN {c} BETWEEN {inside} THEN to_char({c}, 'YYYY-MM-DD\"T\"HH24:MI:SS.US') END"
_UTC_TEXT = ("CASE WHEN {c} BETWEEN {inside} "
             "THEN to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') END")
# extract() gives numeric, exact, from PostgreSQL 14 (double before): as fast to read as the plain column, where
# the text form cost 0.3-0.4 s more per 1,000,000 rows (a timestamp without time zone keeps the text: Spark has
# no exact way from a number to a local time)
_MICROS = "CASE WHEN {c} BETWEEN {inside} THEN (extract(epoch FROM {c}) * 1000000)::bigint END"
_EXACT_EXTRACT = 140000
_TEMPORAL = {
    "date": (_DAYS, "epoch_days"),
    "timestamp without time zone": (_LOCAL_TEXT, "local_text"),
    "timestamp with time zone": (_UTC_TEXT, "utc_text"),
}
_NOT_NAN = "NULLIF({c}, 'NaN'::numeric)"


def chunks(table: cat.CatalogTable, fields: Sequence[dict[str, Any]], modes: TypeModes, plan: dict[str, Any],
           own: Sequence[Chunk], connection: tuple[str, dict[str, str]], initial: Sequence[str],
           render: Any, server_version: int) -> JdbcChunks | None:
    """The ``own`` chunks of ``table`` (its row struct ``fields``) as a JDBC reader reads them in the plan's
    snapshot; None when some column is not read so. ``connection``: (url, properties) of
    :func:`connection`; ``initial``: database.initial.statements; ``render``: psycopg query -> SQL text;
    ``server_version``: as server_version_num."""
    temporal = dict(_TEMPORAL)
    if server_version >= _EXACT_EXTRACT:
        temporal["timestamp with time zone"] = (_MICROS, "epoch_micros")
    columnar = arrow_chunks.columnar_select(table, fields, modes)
    if columnar is None:
        return None
    types = {c.name: arrow_chunks.base_type(c.type_name) for c in table.columns}
    full = {c.name: c.type_name for c in table.columns}
    selected: list[sql.Composable] = [sql.Identifier(k) for k in table.primary_key]  # for the predicates
    columns: list[tuple[str, str, str]] = []
    for index, name in enumerate(columnar.names):
        output = f"__cdc_{index}"
        base = types[name]
        if base == "numeric" and (m := _PRECISION.match(full[name])) and int(m.group(1)) > _MAX_PRECISION:
            return None
        column = sql.Identifier(name)
        expression: sql.Composable
        if base in temporal:
            form, kind = temporal[base]
            low, high = arrow_chunks.YEARS_1_TO_9999[base]
            expression = sql.SQL(form).format(c=column, inside=sql.SQL(f"{low} AND {high}"))
        elif base == "numeric":
            expression, kind = sql.SQL(_NOT_NAN).format(c=column), "value"
        else:
            expression, kind = (arrow_chunks.text_output(name) if base in arrow_chunks.AS_TEXT else column), "value"
        selected.append(sql.SQL("{} AS {}").format(expression, sql.Identifier(output)))
        columns.append((name, output, kind))
    query = render(sql.SQL("(SELECT {} FROM {}) AS cdc_snapshot").format(
        sql.SQL(", ").join(selected), sql.Identifier(table.schema, table.name)))
    url, properties = connection
    # after database.initial.statements, the settings pgjdbc reads values' text by are set back to its own
    reset = [f"RESET {name}" for name in PINNED] if initial else []
    begin = ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"]
    if plan.get("snapshot"):
        begin.append(f"SET TRANSACTION SNAPSHOT '{plan['snapshot']}'")
    return JdbcChunks(url=url, properties=properties, query=query,
                      predicates=[render(key_range(table, chunk)) for chunk in own],
                      session_init="; ".join([*initial, *reset, *begin]), columns=columns)


def connection(config: Config) -> tuple[str, dict[str, str]]:
    """pgjdbc's URL and properties for the source's database, with Debezium's TLS options as pgjdbc reads
    them (Debezium passes them to pgjdbc unchanged)."""
    url = f"jdbc:postgresql://{config.get('database.hostname')}:{config.get('database.port')}/" \
          f"{config.get('database.dbname')}"
    properties = {"driver": "org.postgresql.Driver", "user": config.get("database.user"),
                  "sslmode": config.get("database.sslmode"), "ApplicationName": "cdc",
                  "tcpKeepAlive": "true" if config.get("database.tcpKeepAlive") else "false"}
    optional: Mapping[str, str | None] = {
        "password": config.get("database.password"), "sslrootcert": config.get(ROOT_CERT),
        "sslcert": config.get(CERT), "sslkey": config.get(KEY), "sslpassword": config.get(PASSWORD)}
    properties.update({k: str(v) for k, v in optional.items() if v})
    return url, properties
