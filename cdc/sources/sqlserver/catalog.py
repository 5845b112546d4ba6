"""What the source asks SQL Server, over the query layer: checks, capture instances, LSNs.

Each check that can fail says why and gives the T-SQL or setting that fixes it.
"""
from __future__ import annotations

import logging

from cdc.core.errors import SourceError
from cdc.core.filters import TableFilter
from cdc.sources.sqlserver import queries as q
from cdc.sources.sqlserver.connection import QueryLayer
from cdc.sources.sqlserver.lsn import NULL, Lsn
from cdc.sources.sqlserver.tables import CaptureInstance, build_instances

log = logging.getLogger(__name__)


class CdcNotEnabledError(SourceError):
    """CDC is off for the database or for every included table."""


class AgentNotRunningError(SourceError):
    """No maximum LSN and the SQL Server Agent (which runs the capture job) is stopped."""


class LsnPurgedError(SourceError):
    """The stored position is older than what the change tables still hold."""


def included(filter_: TableFilter, database: str, schema: str, table: str) -> bool:
    """Debezium matches ``schema.table``; ``database.schema.table`` is accepted too (several databases); the
    schema lists match ``schema``."""
    return filter_(f"{schema}.{table}", schema) or (not filter_.is_open and
                                                    filter_(f"{database}.{schema}.{table}", schema))


def check_database(conn: QueryLayer) -> None:
    rows = conn.query(q.DATABASE_CDC_ENABLED, (conn.database,))
    if not rows:
        raise SourceError(f"database {conn.database!r} does not exist or the login cannot see it",
                          fix="check database.names")
    if not rows[0]["is_cdc_enabled"]:
        raise CdcNotEnabledError(f"CDC is not enabled on database {conn.database!r}",
                                 fix=f"run {q.enable_db_sql(conn.database)} (as sysadmin), then enable each table "
                                     f"with {q.enable_table_sql(conn.database, 'dbo', '<table>')}")


def read_instances(conn: QueryLayer, table_filter: TableFilter) -> list[CaptureInstance]:
    """The capture instances of the included tables (two for a table whose schema evolves)."""
    db = conn.database
    rows = [r for r in conn.query(q.CAPTURE_INSTANCES) if included(table_filter, db, r["source_schema"],
                                                                   r["source_table"])]
    if not rows:
        return []
    columns_cache: dict[int, list] = {}

    def object_columns(object_id: int) -> list:
        if object_id not in columns_cache:
            columns_cache[object_id] = conn.query(q.OBJECT_COLUMNS, (object_id,))
        return columns_cache[object_id]

    return build_instances(db, rows, conn.query(q.CAPTURED_COLUMNS), conn.query(q.INDEX_COLUMNS), object_columns)


def require_instances(conn: QueryLayer, instances: list[CaptureInstance], table_filter: TableFilter) -> None:
    """Fail when no included table is captured; warn about included tables that are not."""
    db = conn.database
    untracked = [(r["table_schema"], r["table_name"]) for r in conn.query(q.UNTRACKED_TABLES)
                 if included(table_filter, db, r["table_schema"], r["table_name"])]
    fixes = " ".join(q.enable_table_sql(db, s, t) for s, t in untracked[:5]) or \
        q.enable_table_sql(db, "dbo", "<table>")
    if not instances:
        raise CdcNotEnabledError(
            f"CDC is not enabled on any included table of database {db!r}"
            + (f" (not captured: {', '.join(f'{s}.{t}' for s, t in untracked)})" if untracked else ""),
            fix=f"run {fixes}")
    if untracked and not table_filter.is_open:
        for schema, table in untracked:
            log.warning("table %s.%s.%s is included but CDC is not enabled on it; fix: %s", db, schema, table,
                        q.enable_table_sql(db, schema, table))


def max_lsn(conn: QueryLayer) -> Lsn:
    rows = conn.query(q.MAX_LSN)
    return Lsn.of(rows[0]["max_lsn"]) if rows else NULL


def row_counts(conn: QueryLayer) -> dict[int, int]:
    """The rows of each captured table (by its object id) as the server counts them, for the snapshot's
    progress; {} when the server will not say (the progress then says the size is unknown)."""
    try:
        return {int(r["object_id"]): int(r["row_count"]) for r in conn.query(q.TABLE_ROW_COUNTS)
                if r["row_count"] is not None}
    except SourceError as exc:
        log.info("no row counts for the snapshot's progress in database %s: %s", conn.database, exc.message)
        return {}


def min_lsn(conn: QueryLayer, instance: str) -> Lsn:
    rows = conn.query(q.MIN_LSN, (instance,))
    return Lsn.of(rows[0]["min_lsn"]) if rows else NULL


def agent_running(conn: QueryLayer, template: str) -> bool | None:
    """The agent query's answer; None when it cannot be run (it needs VIEW SERVER STATE)."""
    try:
        rows = conn.query(q.agent_status(template, conn.database))
    except SourceError as exc:
        log.warning("cannot check the SQL Server Agent (%s); grant VIEW SERVER STATE or set "
                    "database.sqlserver.agent.status.query", exc.message)
        return None
    if not rows:
        return False
    return bool(next(iter(rows[0].values())))


def explain_no_max_lsn(conn: QueryLayer, template: str) -> None:
    """Raise when the reason for a NULL max LSN is a stopped Agent; otherwise just log."""
    running = agent_running(conn, template)
    if running is False:
        raise AgentNotRunningError(
            f"No maximum LSN in the database {conn.database!r}; SQL Server Agent is not running",
            fix="start the SQL Server Agent (it runs the CDC capture job): in a container set "
                "MSSQL_AGENT_ENABLED=true; elsewhere start the 'SQL Server Agent' service")
    log.info("no maximum LSN in database %s yet: no change recorded (or all cleaned up); waiting", conn.database)


def purged(conn: QueryLayer, instances: list[CaptureInstance], commit_lsn: Lsn) -> LsnPurgedError | None:
    """Whether the change tables no longer hold everything after ``commit_lsn`` (the cleanup job deletes
    rows older than its retention and moves each instance's minimum LSN forward): the error saying so."""
    if not commit_lsn.available:
        return None
    for instance in instances:
        if instance.start_lsn > commit_lsn:
            continue  # enabled after the stored position: nothing of it was missed
        low = min_lsn(conn, instance.name)
        if low.available and low > commit_lsn:
            return LsnPurgedError(
                f"the stored position {commit_lsn} of database {conn.database!r} is older than the minimum LSN "
                f"{low} of capture instance {instance.name}: the CDC cleanup job purged changes this pipeline "
                "has not read",
                fix="set snapshot.mode=when_needed to take a new snapshot (or delete the stored offset); raise the "
                    "cleanup job's @retention to avoid it")
    return None
