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
        select_rows("dbo", "customers", ["id", "first_name"]), BEGIN, COMMIT, ROLLBACK,
        "EXEC sys.sp_cdc_enable_db", "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'customers', "
        "@role_name = NULL, @supports_net_changes = 0",
    ]
