"""What the PostgreSQL catalog says: tables, columns, keys, publications and slots.

pgoutput's Relation message names the columns and their types but not their nullability,
defaults or primary key; those come from here, queried when a relation is first seen or
changes (as Debezium refreshes its schema).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from cdc.core.errors import SourceError
from cdc.core.quoting import pg_identifier, pg_table
from cdc.sources.postgres.connection import one

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CatalogColumn:
    name: str
    position: int
    type_oid: int
    typmod: int
    not_null: bool
    default: str | None
    type_name: str
    dims: int = 0  # declared array dimensions (int[][]: 2); PostgreSQL does not enforce them


@dataclass(frozen=True, slots=True)
class CatalogTable:
    oid: int
    schema: str
    name: str
    replica_identity: str  # d n f i
    columns: tuple[CatalogColumn, ...]
    primary_key: tuple[str, ...]  # or, without one, the columns of the replica identity index

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


_TABLES_SQL = """
SELECT c.oid, n.nspname, c.relname, c.relreplident,
       a.attname, a.attnum, a.atttypid, a.atttypmod, a.attnotnull, a.attndims,
       pg_get_expr(d.adbin, d.adrelid), format_type(a.atttypid, a.atttypmod),
       COALESCE((SELECT array_agg(ka.attname ORDER BY array_position(i.indkey::int2[], ka.attnum))
                 FROM pg_index i JOIN pg_attribute ka ON ka.attrelid = i.indrelid AND ka.attnum = ANY(i.indkey)
                 WHERE i.indrelid = c.oid AND i.indisprimary),
                -- no primary key: the REPLICA IDENTITY USING INDEX columns are the key, as in Debezium
                (SELECT array_agg(ka.attname ORDER BY array_position(i.indkey::int2[], ka.attnum))
                 FROM pg_index i JOIN pg_attribute ka ON ka.attrelid = i.indrelid AND ka.attnum = ANY(i.indkey)
                 WHERE i.indrelid = c.oid AND i.indisreplident), '{{}}')
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%%' {where}
ORDER BY n.nspname, c.relname, a.attnum
"""


def read_tables(conn: psycopg.Connection, oid: int | None = None) -> list[CatalogTable]:
    where, params = ("AND c.oid = %s", (oid,)) if oid is not None else ("", ())
    rows = conn.execute(_TABLES_SQL.format(where=where), params).fetchall()
    tables: list[CatalogTable] = []
    current: list[tuple] = []
    for row in rows:
        if current and current[0][0] != row[0]:
            tables.append(_table(current))
            current = []
        current.append(row)
    if current:
        tables.append(_table(current))
    return tables


def _table(rows: list[tuple]) -> CatalogTable:
    first = rows[0]
    columns = tuple(
        CatalogColumn(name=r[4], position=r[5], type_oid=r[6], typmod=r[7], not_null=r[8], dims=r[9], default=r[10],
                      type_name=r[11])
        for r in rows
    )
    ident = first[3]
    return CatalogTable(
        oid=first[0], schema=first[1], name=first[2],
        replica_identity=ident if isinstance(ident, str) else bytes(ident).decode(),
        columns=columns, primary_key=tuple(first[12] or ()),
    )


def server_checks(conn: psycopg.Connection, user: str) -> int:
    """Fail early, with the fix, when the server cannot serve logical replication."""
    wal_level = one(conn, "SHOW wal_level")[0]
    if wal_level != "logical":
        raise SourceError(
            f"wal_level is {wal_level!r}, logical decoding needs 'logical'",
            fix="ALTER SYSTEM SET wal_level = logical; then restart PostgreSQL",
        )
    can = conn.execute("SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if not can or not can[0]:
        raise SourceError(
            f"user {user!r} lacks the REPLICATION attribute",
            fix=f"ALTER ROLE {pg_identifier(user)} WITH REPLICATION;",
        )
    return int(one(conn, "SHOW server_version_num")[0])


# The partitioned tables and partitions of the published tables: pg_publication_tables lists the leaves of a
# partitioned table (or, under publish_via_partition_root, the partitioned table alone), but their changes are
# published either way, and Debezium's snapshot reads the partitioned table and each partition. PostgreSQL 12+.
_PUBLISHED_RELATIVES_SQL = """
SELECT DISTINCT n.nspname, c.relname
FROM pg_publication_tables p
JOIN pg_namespace pn ON pn.nspname = p.schemaname
JOIN pg_class pc ON pc.relnamespace = pn.oid AND pc.relname = p.tablename
CROSS JOIN LATERAL (SELECT relid FROM pg_partition_ancestors(pc.oid)
                    UNION SELECT relid FROM pg_partition_tree(pc.oid)) relative
JOIN pg_class c ON c.oid = relative.relid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE p.pubname = %s
"""


def publication_tables(conn: psycopg.Connection, publication: str) -> set[str] | None:
    """``schema.table`` names of the tables the publication publishes changes of, with their partitioned
    tables and partitions, or None when it does not exist."""
    exists = conn.execute("SELECT puballtables FROM pg_publication WHERE pubname = %s", (publication,)).fetchone()
    if exists is None:
        return None
    rows = conn.execute("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s", (publication,))
    tables = {f"{s}.{t}" for s, t in rows}
    if conn.info.server_version >= 120000:
        tables |= {f"{s}.{t}" for s, t in conn.execute(_PUBLISHED_RELATIVES_SQL, (publication,))}
    return tables


def ensure_publication(conn: psycopg.Connection, publication: str, mode: str, tables: list[CatalogTable],
                       *, may_alter: bool, via_root: bool = False) -> None:
    """The publication exists and publishes the captured tables: created when missing (``via_root``: WITH
    publish_via_partition_root); with mode filtered, its table list set to them, if ``may_alter`` (it is
    this pipeline's) or else it already holds them."""
    existing = publication_tables(conn, publication)
    wanted = sorted(t.qualified for t in tables)
    with_clause = sql.SQL(" WITH (publish_via_partition_root = true)") if via_root else sql.SQL("")
    if existing is None:
        if mode == "disabled":
            listed = ", ".join(pg_table(t.schema, t.name) for t in tables) or "..."
            raise SourceError(
                f"publication {publication!r} does not exist and publication.autocreate.mode is disabled",
                fix=f"CREATE PUBLICATION {pg_identifier(publication)} FOR TABLE {listed}; or set "
                    "publication.autocreate.mode=filtered",
            )
        if mode == "all_tables":
            statement = sql.SQL("CREATE PUBLICATION {} FOR ALL TABLES{}").format(sql.Identifier(publication),
                                                                                with_clause)
        else:
            _require_tables(tables, publication)
            statement = sql.SQL("CREATE PUBLICATION {} FOR TABLE {}{}").format(
                sql.Identifier(publication), _table_list(tables), with_clause
            )
        log.info("creating publication %s (%s%s)", publication, mode, ", via partition roots" if via_root else "")
        try:
            conn.execute(statement)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise SourceError(
                f"cannot create publication {publication!r}: {exc}",
                fix="create it as a superuser (FOR ALL TABLES needs one), or use "
                    "publication.autocreate.mode=filtered as the tables' owner",
            ) from None
        return
    if via_root:
        _publish_via_root(conn, publication, may_alter=may_alter)
    if mode == "filtered" and set(wanted) != existing:
        _require_tables(tables, publication)
        missing = [t for t in tables if t.qualified not in existing]
        if not may_alter and not missing:
            log.info("publication %s was not created by this pipeline and publishes more tables than it captures: "
                     "used as it is (the other tables' changes are read and left out)", publication)
            return
        if not may_alter:
            raise SourceError(
                f"publication {publication!r} exists, but this pipeline has no stored offset, so it is not known to be "
                f"this pipeline's: it publishes {sorted(existing) or 'no table'} and lacks "
                f"{[t.qualified for t in missing]}; cdc does not change another consumer's publication",
                fix=f"give this pipeline its own publication.name; or add the tables yourself: ALTER PUBLICATION "
                    f"{pg_identifier(publication)} ADD TABLE {', '.join(pg_table(t.schema, t.name) for t in missing)}; "
                    "or set publication.takeover=true to let cdc set its table list")
        log.info("updating publication %s to the filtered tables %s", publication, wanted)
        conn.execute(sql.SQL("ALTER PUBLICATION {} SET TABLE {}").format(sql.Identifier(publication),
                                                                         _table_list(tables)))


def _publish_via_root(conn: psycopg.Connection, publication: str, *, may_alter: bool) -> None:
    """publish.via.partition.root on a publication that exists: set on this pipeline's own (a configuration
    that turned it on since), else the owner is told how."""
    (via_root,) = one(conn, "SELECT pubviaroot FROM pg_publication WHERE pubname = %s", (publication,))
    if via_root:
        return
    alter = sql.SQL("ALTER PUBLICATION {} SET (publish_via_partition_root = true)").format(sql.Identifier(publication))
    if may_alter:
        log.info("publication %s: setting publish_via_partition_root (publish.via.partition.root=true)", publication)
        conn.execute(alter)
        return
    log.warning("publication %s was not created by this pipeline and does not publish via partition roots, although "
                "publish.via.partition.root=true: changes of partitions arrive on the partitions' own topics; fix: "
                "%s; (or give this pipeline its own publication.name)", publication, alter.as_string(conn))


def _require_tables(tables: list[CatalogTable], publication: str) -> None:
    if not tables:
        raise SourceError(
            f"no table matches table.include.list, so the filtered publication {publication!r} would be empty",
            fix="check table.include.list / table.exclude.list (they are regular expressions of schema.table)",
        )


def _table_list(tables: list[CatalogTable]) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(t.schema, t.name) for t in tables)


@dataclass(frozen=True, slots=True)
class SlotInfo:
    exists: bool
    active_pid: int | None = None
    plugin: str | None = None
    confirmed_flush_lsn: int | None = None
    database: str | None = None
    restart_lsn: int | None = None

    def describe(self) -> str:
        """The slot's state, for an error message."""
        from cdc.sources.postgres.pgoutput import format_lsn

        def lsn(value: int | None) -> str:
            return format_lsn(value) if value is not None else "none"

        state = f"active for PID {self.active_pid}" if self.active_pid is not None else "inactive"
        return (f"plugin {self.plugin}, database {self.database}, {state}, confirmed_flush_lsn "
                f"{lsn(self.confirmed_flush_lsn)}, restart_lsn {lsn(self.restart_lsn)}")


def slot_info(conn: psycopg.Connection, slot: str) -> SlotInfo:
    row = conn.execute(
        "SELECT active_pid, plugin, confirmed_flush_lsn::text, database, restart_lsn::text FROM pg_replication_slots "
        "WHERE slot_name = %s", (slot,),
    ).fetchone()
    if row is None:
        return SlotInfo(False)
    from cdc.sources.postgres.pgoutput import parse_lsn

    return SlotInfo(True, row[0], row[1], parse_lsn(row[2]) if row[2] else None, row[3],
                    parse_lsn(row[4]) if row[4] else None)


# Rows counted exactly before an estimate is extrapolated from where the count stopped in the table.
_COUNT_LIMIT = 100_000
_ESTIMATES_SQL = """
SELECT c.oid, c.reltuples::bigint, c.relpages, COALESCE(s.n_live_tup, 0),
       pg_relation_size(c.oid) / current_setting('block_size')::int
FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.oid = ANY(%s)
"""


def row_estimates(conn: psycopg.Connection, tables: list[CatalogTable]) -> dict[int, int]:
    """Rows per table (by oid), for the snapshot's progress: the statistics' live-row count, else the
    planner's (reltuples: -1 for a table never analysed), else rows counted up to a bound and, past it,
    extrapolated to the table's pages from the block the count stopped in (one quick scan at most)."""
    if not tables:
        return {}
    by_oid = {t.oid: t for t in tables}
    out: dict[int, int] = {}
    for oid, reltuples, relpages, live, pages in conn.execute(_ESTIMATES_SQL, (list(by_oid),)).fetchall():
        if live > 0:
            out[oid] = int(live)
        elif reltuples >= 0 and relpages > 0:
            out[oid] = int(reltuples)
        elif pages == 0:
            out[oid] = 0
        else:
            out[oid] = _counted(conn, by_oid[oid], pages)
    return out


def _counted(conn: psycopg.Connection, table: CatalogTable, pages: int) -> int:
    query = sql.SQL("SELECT count(*), max((ctid::text::point)[0])::bigint FROM (SELECT ctid FROM {} LIMIT {}) s"
                    ).format(sql.Identifier(table.schema, table.name), sql.Literal(_COUNT_LIMIT))
    try:
        count, last_block = conn.execute(query).fetchone() or (0, None)
    except psycopg.Error:
        return -1
    if count < _COUNT_LIMIT or last_block is None:
        return int(count)
    return int(count * pages / (last_block + 1))


def server_identity(conn: psycopg.Connection, dbname: str) -> str | None:
    """The cluster (its system identifier, shared by its physical standbys) and the database; None when this
    user may not read it (then offsets are not stamped, nor checked)."""
    try:
        row = conn.execute("SELECT system_identifier::text FROM pg_control_system()").fetchone()
    except psycopg.Error as exc:
        log.info("cannot read the server's system identifier (%s): offsets are not tied to this server", exc)
        return None
    return f"postgres:{row[0]}:{dbname}" if row else None


def drop_slot(conn: psycopg.Connection, slot: str, wait_s: float = 10.0) -> None:
    """Drop the slot if it exists. Right after its stream closed the server's walsender may still hold it
    ("replication slot ... is active for PID"): waited for, up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn.execute("SELECT pg_drop_replication_slot(%s) WHERE EXISTS "
                         "(SELECT 1 FROM pg_replication_slots WHERE slot_name = %s)", (slot, slot))
            return
        except psycopg.errors.ObjectInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
