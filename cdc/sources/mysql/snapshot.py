"""The snapshot's reads: a consistent point in the binlog, the schema, and the rows.

    minimal locking (Debezium's default):
        FLUSH TABLES WITH READ LOCK            (or LOCK TABLES ... READ when RELOAD is missing)
        START TRANSACTION WITH CONSISTENT SNAPSHOT
        binlog position  (MariaDB: binlog_snapshot_file/_position, exact for this transaction)
        SHOW CREATE DATABASE / TABLE           -> schema history
        UNLOCK TABLES                          (global lock only; table locks stay to the end)
        SELECT * FROM each captured table      -> op r, inside the same transaction
        COMMIT
    none (MariaDB only): no lock; the consistent snapshot's own binlog position is exact for the
    rows, but a DDL running meanwhile could make the schema read disagree with them.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pymysql
from pymysql.protocol import MysqlPacket

from cdc.core.errors import RetriableSourceError, SourceError
from cdc.core.snapshot_selection import match_columns
from cdc.sources.mysql.connection import (
    ER_ACCESS_DENIED,
    ER_SPECIFIC_ACCESS_DENIED,
    binlog_position,
    is_connection_lost,
)

log = logging.getLogger(__name__)

SYSTEM_DATABASES = {"mysql", "information_schema", "performance_schema", "sys"}


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass
class SnapshotPoint:
    file: str
    pos: int
    gtids: str | None
    table_locks: bool = False  # LOCK TABLES fallback: released only at the end
    global_lock: bool = False  # FLUSH TABLES WITH READ LOCK: released once the schema is read
    gtids_exact: bool = False  # ``gtids`` are the transactions before file:pos, no more, no less


@dataclass
class SchemaRead:
    databases: list[tuple[str, str]] = field(default_factory=list)  # (name, CREATE DATABASE text)
    charsets: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (charset, collation)
    tables: list[tuple[str, str, str]] = field(default_factory=list)  # (database, table, CREATE TABLE text)


def begin(conn: pymysql.connections.Connection, *, mariadb: bool, locking: str,
          tables_to_lock: Callable[[], list[tuple[str, str]]]) -> SnapshotPoint:
    """Open the snapshot transaction and find its binlog position; the caller reads the schema next."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        table_locks = False
        global_lock = False
        if locking != "none" or not mariadb:
            try:
                cur.execute("FLUSH TABLES WITH READ LOCK")
                global_lock = True
            except pymysql.err.OperationalError as exc:
                if exc.args[0] not in (ER_SPECIFIC_ACCESS_DENIED, ER_ACCESS_DENIED):
                    raise
                if mariadb:
                    log.warning("FLUSH TABLES WITH READ LOCK refused (%s): using MariaDB's consistent snapshot "
                                "position without a lock; avoid DDL until the schema is read", exc.args[1])
                else:
                    locks = tables_to_lock()
                    log.warning("FLUSH TABLES WITH READ LOCK refused (%s): locking the %d captured tables instead, "
                                "until the snapshot ends", exc.args[1], len(locks))
                    if locks:
                        cur.execute("LOCK TABLES " + ", ".join(f"{quote(d)}.{quote(t)} READ" for d, t in locks))
                    table_locks = True
        if not table_locks:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        file, pos = _position(cur, conn, mariadb)
        gtids, exact = _gtids_at(cur, mariadb, file, pos)
    return SnapshotPoint(file, pos, gtids, table_locks, global_lock, gtids_exact=exact or global_lock)


def _gtids_at(cur: Any, mariadb: bool, file: str, pos: int) -> tuple[str | None, bool]:
    """The GTIDs of the transactions before the snapshot's position (a resume by GTID starts there), and whether
    they are exactly those. MariaDB tells them for that very position (BINLOG_GTID_POS); MySQL's gtid_executed
    matches it while the global read lock keeps commits out (the captured tables' locks keep out only theirs)."""
    if mariadb:
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
        row = cur.fetchone()
        if row and row[0] is not None:
            return str(row[0]) or None, True
    cur.execute("SELECT @@GLOBAL.gtid_binlog_pos" if mariadb else "SELECT @@GLOBAL.gtid_executed")
    row = cur.fetchone()
    return ((row[0] or None) if row else None), False


def _position(cur: Any, conn: pymysql.connections.Connection, mariadb: bool) -> tuple[str, int]:
    if mariadb:
        cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {name.lower(): value for name, value in cur.fetchall()}
        if status.get("binlog_snapshot_file"):
            return status["binlog_snapshot_file"], int(status["binlog_snapshot_position"])
    return binlog_position(conn)


def read_schema(conn: pymysql.connections.Connection, capture_database: Callable[[str], bool]) -> SchemaRead:
    """CREATE statements of every database ``capture_database`` accepts (but the server's own) and
    all of its tables (views left out)."""
    read = SchemaRead()
    with conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        databases = [r[0] for r in cur.fetchall() if r[0] not in SYSTEM_DATABASES and capture_database(r[0])]
        for database in sorted(databases):
            cur.execute(f"SHOW CREATE DATABASE {quote(database)}")
            read.databases.append((database, cur.fetchone()[1]))
            cur.execute("SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA "
                        "WHERE SCHEMA_NAME = %s", (database,))
            charset, collation = cur.fetchone()
            read.charsets[database] = (charset, collation)
            cur.execute(f"SHOW FULL TABLES IN {quote(database)} WHERE Table_type = 'BASE TABLE'")
            for (table, _kind) in sorted(cur.fetchall()):
                cur.execute(f"SHOW CREATE TABLE {quote(database)}.{quote(table)}")
                read.tables.append((database, table, cur.fetchone()[1]))
    return read


def create_statements(conn: pymysql.connections.Connection, qualified: str) -> list[str]:
    """SHOW CREATE DATABASE and SHOW CREATE TABLE of one table (database.table) as it is now."""
    database, _, table = qualified.partition(".")
    statements: list[str] = []
    try:
        with conn.cursor() as cur:
            for show in (f"SHOW CREATE DATABASE {quote(database)}",
                         f"SHOW CREATE TABLE {quote(database)}.{quote(table)}"):
                cur.execute(show)
                statements.append(cur.fetchone()[1])
    except pymysql.MySQLError as exc:
        raise SourceError(f"table {qualified!r} cannot be read: {exc.args[-1]}",
                          fix="check the table option (database.table)") from None
    return statements


def release_global_lock(conn: pymysql.connections.Connection, point: SnapshotPoint) -> None:
    if point.global_lock:
        with conn.cursor() as cur:
            cur.execute("UNLOCK TABLES")


def finish(conn: pymysql.connections.Connection, point: SnapshotPoint) -> None:
    try:
        with conn.cursor() as cur:
            if point.table_locks:
                cur.execute("UNLOCK TABLES")
            else:
                cur.execute("COMMIT")
    except (pymysql.MySQLError, OSError) as exc:
        if not is_connection_lost(exc):
            raise
        # The rows were read (a small table's are in the socket before cdc turns them into events): the
        # snapshot ends without its COMMIT, which only a lost connection can refuse. Retried as any other loss.
        raise RetriableSourceError(
            f"the connection was lost at the end of the snapshot: {exc.args[-1]}",
            fix="check the server; on the next start the snapshot is taken again (each table starts with a "
                "truncate event, so consumers drop what they applied of this attempt)") from None


_COUNT_LIMIT = 100_000


def estimate_rows(conn: pymysql.connections.Connection, database: str, table: str) -> int | None:
    """Rows in the table, for the progress display: the server's estimate (InnoDB's TABLE_ROWS), else rows
    counted up to a bound and, past it, the data length over the average row length. None when the server
    cannot say (a lost connection is reported by the read that follows, with its cause)."""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_ROWS, DATA_LENGTH, AVG_ROW_LENGTH FROM information_schema.TABLES "
                        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s", (database, table))
            row = cur.fetchone()
            if row is None:
                return None
            rows, data_length, avg_length = (int(v) if v is not None else None for v in row)
            if rows:
                return rows
            cur.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {quote(database)}.{quote(table)} "
                        f"LIMIT {_COUNT_LIMIT}) s")
            (counted,) = cur.fetchone() or (0,)
    except (pymysql.MySQLError, OSError, AttributeError):
        return None
    if counted < _COUNT_LIMIT or not data_length or not avg_length:
        return int(counted)
    return max(int(counted), data_length // avg_length)


# pymysql's view of each result column: (the text's encoding, None for binary; its decoder or None)
ResultColumns = Sequence[tuple[str | None, Callable[[Any], Any] | None]]


@dataclass(slots=True)
class TextRows:
    """Rows of a ``SELECT`` as the server sent them: each row packet's payload."""

    packets: list[bytes]
    columns: ResultColumns
    read_row: Callable[[MysqlPacket], tuple[Any, ...]]  # pymysql's own reading of a row packet into values

    def decoded(self, packets: Sequence[bytes]) -> list[tuple[Any, ...]]:
        """The rows' values as pymysql gives them (the reference way)."""
        return [self.read_row(MysqlPacket(packet, "utf8")) for packet in packets]


# Values (rows x columns) per snapshot batch at most: 10,240 rows (snapshot.fetch.size) of a 1,000-column
# table held 10 million Python values, and their events, at once (1.8 GB); 256 Ki values are some 20-60 MB.
MAX_VALUES_PER_BATCH = 1 << 18


def select_rows(conn: pymysql.connections.Connection, database: str, table: str,
                batch_rows: int, condition: str | None = None) -> Iterator[list[tuple[Any, ...]]]:
    """Every row of the table (or those of ``condition``), unbuffered, in batches (columns in table order)
    of ``batch_rows`` rows, fewer for a wide table: at most MAX_VALUES_PER_BATCH values, so that memory is
    bounded by the batch whatever the table's width."""
    return _select(conn, database, table, batch_rows, condition, _value_batches)


def select_packets(conn: pymysql.connections.Connection, database: str, table: str,
                   batch_rows: int) -> Iterator[TextRows | list[tuple[Any, ...]]]:
    """As ``select_rows``, each batch as the row packets the server sent (:class:`TextRows`, for the
    compiled codec), not split into values; as values if pymysql's result is not laid out as expected."""
    return _select(conn, database, table, batch_rows, None, _packet_batches)


def select_statement(conn: pymysql.connections.Connection, database: str, table: str, statement: str,
                     columns: Sequence[str], batch_rows: int) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of a SELECT of snapshot.select.statement.overrides, in batches as ``select_rows`` gives them,
    each row as the table's ``columns``: the result's columns by name, one it leaves out None."""
    option = f"snapshot.select.statement.overrides.{database}.{table}"

    def batches_of(cur: Any) -> Callable[[Any], list[tuple[Any, ...]]]:
        picked = match_columns([d[0] for d in cur.description or ()], columns, option)
        values = _value_batches(cur)
        if picked == list(range(len(columns))):
            return values
        return lambda rows: [tuple(row[i] if i is not None else None for i in picked) for row in values(rows)]

    return _select(conn, database, table, batch_rows, None, batches_of, statement=statement)


B = TypeVar("B")


def _select(conn: pymysql.connections.Connection, database: str, table: str, batch_rows: int,
            condition: str | None, batches_of: Callable[[Any], Callable[[Any], B]],
            statement: str | None = None) -> Iterator[B]:
    """The rows in batches, each made by ``batches_of(cursor)`` from the fetched rows; ``statement``: the
    SELECT to read them with instead of every row of the table."""
    cur = conn.cursor(pymysql.cursors.SSCursor)
    try:
        cur.execute(statement or f"SELECT * FROM {quote(database)}.{quote(table)}"
                    + (f" WHERE ({condition})" if condition else ""))
        batch_rows = min(batch_rows, max(1, MAX_VALUES_PER_BATCH // max(1, len(cur.description or ()))))
        batch = batches_of(cur)
        while True:
            rows = cur.fetchmany(batch_rows)
            if not rows:
                return
            yield batch(rows)
    except (pymysql.MySQLError, OSError) as exc:
        if is_connection_lost(exc):
            _abandon(cur)
            raise RetriableSourceError(
                f"the connection was lost during the snapshot of {database}.{table}: {exc.args[-1]}",
                fix="check the server; on the next start the snapshot is taken again (each table starts with a "
                    "truncate event, so consumers drop what they applied of this attempt)") from None
        raise SourceError(f"snapshot of {database}.{table} failed: {exc.args[-1]}") from None
    finally:
        try:
            cur.close()  # reads what is left of the result: fails on a connection already lost
        except (pymysql.MySQLError, OSError, AttributeError):
            pass


def _take_decoders(cur: Any) -> list[Callable[[Any], Any] | None] | None:
    """pymysql's value decoders of the result (int, Decimal, datetime parsing ...), taken out of its
    per-value loop to be applied a column at a time (:func:`_decoded`): the same values, at a fraction of
    the cost for a wide table. None (pymysql decodes as it reads) if its result is not laid out as expected."""
    converters = _result_columns(cur)
    if converters is None:
        return None
    decoders = [decode for _, decode in converters]
    cur._result.converters = [(encoding, None) for encoding, _ in converters]
    return decoders


def _result_columns(cur: Any) -> list[tuple[str | None, Callable[[Any], Any] | None]] | None:
    """pymysql's (encoding, decoder) per column of the result, or None if it is not laid out as expected."""
    converters = getattr(getattr(cur, "_result", None), "converters", None)
    if not isinstance(converters, list) or not all(isinstance(c, tuple) and len(c) == 2 for c in converters):
        return None
    return converters


def _value_batches(cur: Any) -> Callable[[Any], list[tuple[Any, ...]]]:
    decoders = _take_decoders(cur)
    if decoders is None:
        return list
    return lambda rows: _decoded(rows, decoders)


def _packet_batches(cur: Any) -> Callable[[Any], TextRows | list[tuple[Any, ...]]]:
    """Rows as their packets' payloads (pymysql's per-value loop left out), with pymysql's (encoding,
    decoder) per column to decode them with; as values if its result is not laid out as expected."""
    columns = _result_columns(cur)
    read_row = getattr(getattr(cur, "_result", None), "_read_row_from_packet", None)
    if columns is None or not callable(read_row):
        return _value_batches(cur)
    cur._result._read_row_from_packet = _payload  # read_row stays pymysql's, for the rows decoded the Python way
    return lambda rows: TextRows(list(rows), list(columns), read_row)


def _payload(packet: Any) -> bytes:
    return bytes(packet.get_all_data())


def _decoded(rows: list[tuple[Any, ...]], decoders: list[Callable[[Any], Any] | None]) -> list[tuple[Any, ...]]:
    """Rows read without pymysql's decoders, decoded column by column (NULLs stay None)."""
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True))
    for index, decode in enumerate(decoders):
        if decode is None:
            continue
        column = columns[index]
        columns[index] = ([None if value is None else decode(value) for value in column] if None in column
                          else list(map(decode, column)))
    return list(zip(*columns, strict=True))


def _abandon(cur: Any) -> None:
    """An unbuffered result on a lost connection: pymysql would read the rest of it on close and when
    garbage-collected, and print "Exception ignored" tracebacks; there is nothing left to read."""
    result = getattr(cur, "_result", None)
    if result is not None:
        result.unbuffered_active = False
    cur._result = None


def schema_statements(read: SchemaRead, server_charset: str | None, server_collation: str | None
                      ) -> list[tuple[str, str | None, str, str | None, bool]]:
    """The DDL a snapshot records, in Debezium's order: ``(database, table, ddl, dropped table,
    emitted)``.

        SET character_set_server=..., collation_server=...
        DROP TABLE IF EXISTS `db`.`t`                          every table, so a replay starts clean
        DROP DATABASE IF EXISTS `db`; CREATE DATABASE `db` CHARSET .. COLLATE ..; USE `db`
        CREATE TABLE ... (SHOW CREATE TABLE)                   every table of that database

    Debezium goes through the databases of the tables it read, so a database without tables has no
    schema change events (``emitted`` False); the source still records those of a captured one, so
    that the tables created there later take its charset.
    """
    charset = server_charset or "utf8mb4"
    statements: list[tuple[str, str | None, str, str | None, bool]] = [
        ("", None,
         f"SET character_set_server={charset}, collation_server={server_collation or charset + '_general_ci'}",
         None, True)]
    for database, table, _ in read.tables:
        statements.append((database, table, f"DROP TABLE IF EXISTS {quote(database)}.{quote(table)}", table, True))
    with_tables = {database for database, _, _ in read.tables}
    for database, _ in read.databases:
        emitted = database in with_tables
        db_charset, db_collation = read.charsets.get(database, (charset, server_collation or ""))
        statements.append((database, None, f"DROP DATABASE IF EXISTS {quote(database)}", None, emitted))
        statements.append((database, None,
                           f"CREATE DATABASE {quote(database)} CHARSET {db_charset} COLLATE {db_collation}",
                           None, emitted))
        statements.append((database, None, f"USE {quote(database)}", None, emitted))
        for db, table, ddl in read.tables:
            if db == database:
                statements.append((database, table, ddl, None, True))
    return statements
