"""Every T-SQL statement the SQL Server source sends, in one place.

Parameters are ODBC ``?`` markers; identifiers that cannot be parameters (change tables,
snapshot tables) are bracket-quoted by :func:`quote`. ``tests/unit/test_sqlserver_queries.py``
parses each statement with sqlglot's T-SQL dialect.

The snapshot's isolation level is not a statement here: it is set through the ODBC connection
attribute (``SQL_ATTR_TXN_ISOLATION``), as Debezium sets it through JDBC, because that is the
only way that covers SNAPSHOT as well.
"""
from __future__ import annotations

import re


def quote(name: str) -> str:
    """``[name]`` with ``]`` doubled: T-SQL's delimited identifier."""
    return "[" + name.replace("]", "]]") + "]"


# ---- server and database checks -------------------------------------------------------------

PRODUCT_VERSION = "SELECT CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)) AS product_version"

# NULL when the database does not exist (or the login may not see it).
DATABASE_CDC_ENABLED = "SELECT d.is_cdc_enabled FROM sys.databases AS d WHERE d.name = ?"

# Debezium's default agent check; ``#db`` is replaced by the bracket-quoted database name, as
# ``database.sqlserver.agent.status.query`` allows with ``[#db]``. Needs VIEW SERVER STATE.
AGENT_STATUS = (
    "SELECT CASE WHEN dss.[status]=4 THEN 1 ELSE 0 END AS isRunning "
    "FROM [#db].sys.dm_server_services dss WHERE dss.[servicename] LIKE N'SQL Server Agent (%'"
)


def agent_status(template: str, database: str) -> str:
    """The agent query for one database: ``[#db]`` (or ``#db``) becomes ``[database]``."""
    return template.replace("[#db]", quote(database)).replace("#db", quote(database))


# ---- capture instances ----------------------------------------------------------------------

# One row per capture instance; a table with two instances (schema evolution) has two rows.
CAPTURE_INSTANCES = (
    "SELECT s.name AS source_schema, t.name AS source_table, ct.capture_instance, ct.start_lsn, "
    "ct.object_id AS change_object_id, ct.source_object_id, ct.create_date "
    "FROM cdc.change_tables AS ct "
    "JOIN sys.tables AS t ON t.object_id = ct.source_object_id "
    "JOIN sys.schemas AS s ON s.schema_id = t.schema_id "
    "ORDER BY s.name, t.name, ct.start_lsn"
)

# User tables CDC does not track: named in the error when no included table is captured.
UNTRACKED_TABLES = (
    "SELECT s.name AS table_schema, t.name AS table_name FROM sys.tables AS t "
    "JOIN sys.schemas AS s ON s.schema_id = t.schema_id "
    "WHERE t.is_tracked_by_cdc = 0 AND t.is_ms_shipped = 0 ORDER BY s.name, t.name"
)

CAPTURED_COLUMNS = (
    "SELECT ct.capture_instance, cc.column_name, cc.column_ordinal, cc.column_type "
    "FROM cdc.captured_columns AS cc JOIN cdc.change_tables AS ct ON ct.object_id = cc.object_id "
    "ORDER BY ct.capture_instance, cc.column_ordinal"
)

# The columns of the index that identifies rows for the instance (the primary key unless
# sys.sp_cdc_enable_table got @index_name): Debezium's event key.
INDEX_COLUMNS = (
    "SELECT ct.capture_instance, ic.column_name, ic.index_ordinal "
    "FROM cdc.index_columns AS ic JOIN cdc.change_tables AS ct ON ct.object_id = ic.object_id "
    "ORDER BY ct.capture_instance, ic.index_ordinal"
)

# Column types of an object: the change table (types of the captured columns as they were when
# the instance was created) or the source table (nullability, identity, defaults today).
OBJECT_COLUMNS = (
    "SELECT c.name, c.column_id, ty.name AS type_name, c.max_length, c.precision, c.scale, "
    "c.is_nullable, c.is_identity, c.is_computed, dc.definition AS default_definition "
    "FROM sys.columns AS c "
    "JOIN sys.types AS ty ON ty.user_type_id = c.system_type_id "
    "LEFT JOIN sys.default_constraints AS dc ON dc.object_id = c.default_object_id "
    "WHERE c.object_id = ? ORDER BY c.column_id"
)

# ---- LSNs -----------------------------------------------------------------------------------

MAX_LSN = "SELECT sys.fn_cdc_get_max_lsn() AS max_lsn"
MIN_LSN = "SELECT sys.fn_cdc_get_min_lsn(?) AS min_lsn"

# The commit time of every change row, in the server's offset (Debezium's query does the same),
# so ``source.ts_ms`` is the real instant whatever the server's time zone.
_COMMIT_TIME = (
    "TODATETIMEOFFSET(sys.fn_cdc_map_lsn_to_time(ct.[__$start_lsn]), DATEPART(TZOFFSET, SYSDATETIMEOFFSET()))"
)
COMMIT_TIME_COLUMN = "__$commit_time"

_INSTANCE_RE = re.compile(r"^[A-Za-z0-9_#@$]+$")


def _instance_name(instance: str) -> str:
    # Capture instance names are sysname built from schema/table names; refuse anything that
    # could not be one rather than splice it into a statement.
    if not _INSTANCE_RE.match(instance):
        raise ValueError(f"unexpected capture instance name {instance!r}")
    return instance


def changes_direct(instance: str) -> str:
    """Rows of one change table with ``from <= __$start_lsn <= to`` (parameters: from, to), in
    the order the merge needs. The lower bound is inclusive so that a restart can resume inside
    a commit; rows already delivered are skipped by the stream."""
    table = quote(f"{_instance_name(instance)}_CT")
    return (
        f"SELECT ct.*, {_COMMIT_TIME} AS [{COMMIT_TIME_COLUMN}] FROM cdc.{table} AS ct "
        "WHERE ct.[__$start_lsn] >= ? AND ct.[__$start_lsn] <= ? "
        "ORDER BY ct.[__$start_lsn], ct.[__$seqval], ct.[__$operation]"
    )


def changes_function(instance: str) -> str:
    """The same window through ``cdc.fn_cdc_get_all_changes_<instance>`` (``data.query.mode=function``).
    The function refuses a lower bound below the instance's minimum LSN, unlike the direct read."""
    function = quote(f"fn_cdc_get_all_changes_{_instance_name(instance)}")
    return (
        f"SELECT ct.*, {_COMMIT_TIME} AS [{COMMIT_TIME_COLUMN}] "
        f"FROM cdc.{function}(?, ?, N'all update old') AS ct "
        "ORDER BY ct.[__$start_lsn], ct.[__$seqval], ct.[__$operation]"
    )


# ---- snapshot -------------------------------------------------------------------------------

LOCK_TIMEOUT = "SET LOCK_TIMEOUT {ms}"


def lock_timeout(ms: int) -> str:
    return LOCK_TIMEOUT.format(ms=int(ms))


def lock_table(schema: str, table: str, exclusive: bool) -> str:
    """Takes a table lock held to the end of the transaction: exclusive (``snapshot.isolation.mode``
    exclusive) keeps writers out for the whole snapshot; shared (repeatable_read) only while the
    structure is read."""
    hint = "TABLOCKX" if exclusive else "TABLOCK, HOLDLOCK"
    return f"SELECT TOP (0) * FROM {quote(schema)}.{quote(table)} WITH ({hint})"


def select_rows(schema: str, table: str, columns: list[str]) -> str:
    names = ", ".join(quote(c) for c in columns)
    return f"SELECT {names} FROM {quote(schema)}.{quote(table)}"


BEGIN = "BEGIN TRANSACTION"

# The rows of each captured table as the server counts them (heap or clustered index: index_id 0 or 1),
# no table scanned: the size the snapshot's progress shows beside the rows read.
TABLE_ROW_COUNTS = (
    "SELECT p.object_id, SUM(p.rows) AS row_count FROM sys.partitions AS p "
    "WHERE p.index_id IN (0, 1) AND p.object_id IN (SELECT ct.source_object_id FROM cdc.change_tables AS ct) "
    "GROUP BY p.object_id"
)

# ---- signals and incremental snapshots ------------------------------------------------------

# The columns of the signal table (``signal.data.collection``), parameter: '[schema].[table]'.
TABLE_COLUMN_NAMES = "SELECT c.name FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(?) ORDER BY c.column_id"


def insert_signal(schema: str, table: str) -> str:
    """A signal, or a watermark of an incremental snapshot (parameters: id, type, data). The
    signal table is CDC-enabled, so the row comes back through its change table in commit order."""
    return f"INSERT INTO {quote(schema)}.{quote(table)} ([id], [type], [data]) VALUES (?, ?, ?)"


def _key_after(key: list[str], op: str) -> str:
    """``(k1, k2) > (?, ?)`` spelled out (T-SQL has no row-value comparison): ``k1 > ? OR (k1 = ? AND
    k2 > ?)``; ``op`` ``<=`` adds the equal case. Parameters: see :func:`key_params`."""
    strict = op.rstrip("=")
    terms = []
    for i, column in enumerate(key):
        equal = [f"{quote(c)} = ?" for c in key[:i]]
        last_op = op if (i == len(key) - 1) else strict
        terms.append(" AND ".join(equal + [f"{quote(column)} {last_op} ?"]))
    if len(terms) == 1:
        return f"({terms[0]})"
    return "(" + " OR ".join(f"({t})" for t in terms) + ")"


def key_params(values: list) -> list:
    """The parameters of :func:`_key_after` for one key: v1; v1, v2; v1, v2, v3; ..."""
    out: list = []
    for i in range(len(values)):
        out.extend(values[:i + 1])
    return out


def chunk_rows(database: str, schema: str, table: str, columns: list[str], key: list[str], condition: str | None,
               after: bool, up_to: bool) -> str:
    """One chunk of an incremental snapshot, in key order (parameters: the row count, then
    :func:`key_params` of the last key read when ``after``, then of the upper bound when ``up_to``)."""
    where = [f"({condition})"] if condition else []
    if after:
        where.append(_key_after(key, ">"))
    if up_to:
        where.append(_key_after(key, "<="))
    names = ", ".join(quote(c) for c in columns)
    return (f"SELECT TOP (?) {names} FROM {quote(database)}.{quote(schema)}.{quote(table)}"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + f" ORDER BY {', '.join(quote(k) for k in key)}")


def chunk_bounds(database: str, schema: str, table: str, key: list[str], condition: str | None) -> str:
    """The largest key (under the additional condition): where an incremental snapshot stops."""
    where = f" WHERE ({condition})" if condition else ""
    return (f"SELECT TOP (1) {', '.join(quote(k) for k in key)} FROM {quote(database)}.{quote(schema)}."
            f"{quote(table)}{where} ORDER BY {', '.join(quote(k) + ' DESC' for k in key)}")


def key_every(database: str, schema: str, table: str, key: list[str]) -> str:
    """The key of every n-th row in key order (parameter: n): where the chunks of a snapshot read in
    parallel end."""
    names = ", ".join(quote(k) for k in key)
    return (f"SELECT {names} FROM (SELECT {names}, ROW_NUMBER() OVER (ORDER BY {names}) AS cdc_rn "
            f"FROM {quote(database)}.{quote(schema)}.{quote(table)}) AS numbered WHERE cdc_rn % ? = 0 "
            f"ORDER BY {names}")


def select_where(schema: str, table: str, columns: list[str], condition: str | None) -> str:
    """A whole table (blocking snapshot), under the signal's additional condition."""
    return select_rows(schema, table, columns) + (f" WHERE ({condition})" if condition else "")


COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"

# ---- the T-SQL that fixes a missing setup (in error messages, never run) -------------------


def enable_db_sql(database: str) -> str:
    return f"USE {quote(database)}; EXEC sys.sp_cdc_enable_db;"


def enable_table_sql(database: str, schema: str, table: str) -> str:
    return (f"USE {quote(database)}; EXEC sys.sp_cdc_enable_table @source_schema = N'{schema}', "
            f"@source_name = N'{table}', @role_name = NULL, @supports_net_changes = 0;")


def all_statements() -> list[str]:
    """Every statement (with sample names), for the parse test."""
    return [
        PRODUCT_VERSION, DATABASE_CDC_ENABLED, agent_status(AGENT_STATUS, "testDB"), CAPTURE_INSTANCES,
        UNTRACKED_TABLES, CAPTURED_COLUMNS, INDEX_COLUMNS, OBJECT_COLUMNS, MAX_LSN, MIN_LSN,
        changes_direct("dbo_customers"), changes_function("dbo_customers"), lock_timeout(10000),
        lock_table("dbo", "customers", True), lock_table("dbo", "customers", False),
        select_rows("dbo", "customers", ["id", "first_name"]), BEGIN, COMMIT, ROLLBACK, TABLE_ROW_COUNTS,
        TABLE_COLUMN_NAMES, insert_signal("dbo", "debezium_signal"),
        chunk_rows("testDB", "dbo", "customers", ["id", "first_name"], ["id"], None, False, True),
        chunk_rows("testDB", "dbo", "customers", ["id", "first_name"], ["id"], "[first_name] = 'x'", True, True),
        chunk_rows("testDB", "dbo", "order_lines", ["order_id", "line", "qty"], ["order_id", "line"], None, True, True),
        chunk_bounds("testDB", "dbo", "customers", ["id"], None),
        chunk_bounds("testDB", "dbo", "order_lines", ["order_id", "line"], "[qty] > 1"),
        select_where("dbo", "customers", ["id"], "[id] > 1000"),
        key_every("testDB", "dbo", "order_lines", ["order_id", "line"]),
        "EXEC sys.sp_cdc_enable_db",
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'customers', "
        "@role_name = NULL, @supports_net_changes = 0",
    ]
