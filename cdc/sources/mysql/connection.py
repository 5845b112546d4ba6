"""Connections to MySQL / MariaDB: settings, error translation and the server checks a source needs.

pymysql's errors carry a server error number; the ones users meet (wrong password, missing
grants, unknown host) become a ``SourceError`` that names the cause and the fix. The session
pins ``time_zone='+00:00'`` so TIMESTAMP values read in a snapshot are UTC, as in the binlog.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import pymysql

from cdc.config import Config
from cdc.core.retry import RetryPolicy
from cdc.core.errors import CdcError, RetriableSourceError, SourceError

log = logging.getLogger(__name__)

T = TypeVar("T")

ER_ACCESS_DENIED = 1045
ER_DBACCESS_DENIED = 1044
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_MASTER_FATAL_READING_BINLOG = 1236
CR_CONNECTION_ERRORS = {2002, 2003, 2005, 2006, 2013, 2055}


@dataclass(frozen=True)
class ConnectionSettings:
    host: str
    port: int
    user: str
    password: str
    connect_timeout_s: float
    ssl: bool
    max_retries: int
    retry_wait_s: float

    @classmethod
    def from_config(cls, config: Config) -> "ConnectionSettings":
        return cls(
            host=config.get("database.hostname"),
            port=config.get("database.port"),
            user=config.get("database.user"),
            password=config.get("database.password") or "",
            connect_timeout_s=config.get("connect.timeout.ms") / 1000,
            ssl=config.get("database.ssl.mode") != "disabled",
            max_retries=config.get("errors.max.retries"),
            retry_wait_s=config.get("retriable.restart.connector.wait.ms") / 1000,
        )

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.retry_wait_s)

    def replication_settings(self) -> dict[str, Any]:
        """What BinLogStreamReader passes to pymysql."""
        settings: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                                    "connect_timeout": max(1, int(self.connect_timeout_s))}
        if self.ssl:
            settings["ssl"] = {}
        return settings

    def connect(self, *, unbuffered: bool = False) -> pymysql.connections.Connection:
        try:
            conn = pymysql.connect(
                host=self.host, port=self.port, user=self.user, password=self.password, charset="utf8mb4",
                connect_timeout=self.connect_timeout_s, autocommit=True, ssl={} if self.ssl else None,
                cursorclass=pymysql.cursors.SSCursor if unbuffered else pymysql.cursors.Cursor,
                init_command="SET time_zone = '+00:00'",
            )
        except pymysql.MySQLError as exc:
            raise translate(exc, self) from None
        return conn


def translate(exc: BaseException, settings: ConnectionSettings, doing: str = "connecting") -> CdcError:
    """A pymysql error as a SourceError with the cause and the fix."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    message = exc.args[1] if len(exc.args) > 1 else str(exc)
    if code == ER_ACCESS_DENIED:
        return SourceError(f"login to {settings.where} failed: {message}",
                           fix="check database.user and database.password")
    if code == ER_SPECIFIC_ACCESS_DENIED or code == ER_DBACCESS_DENIED:
        return SourceError(f"{doing}: user {settings.user!r} lacks a privilege: {message}",
                           fix=f"GRANT SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, "
                               f"REPLICATION CLIENT ON *.* TO '{settings.user}'@'%'")
    if is_connection_lost(exc) or isinstance(exc, pymysql.err.OperationalError) and code is None:
        return RetriableSourceError(f"cannot reach the server at {settings.host}:{settings.port} ({doing}): {message}",
                                    fix="check that it runs and that database.hostname / database.port are right")
    return SourceError(f"{doing} on {settings.where}: {message}")


def is_connection_lost(exc: BaseException) -> bool:
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    return isinstance(exc, (ConnectionError, OSError, pymysql.err.InterfaceError)) or code in CR_CONNECTION_ERRORS


def with_retries(settings: ConnectionSettings, doing: str, action: Callable[[], T], stopping: Callable[[], bool]) -> T:
    """Run ``action`` under the retry policy (cdc.core.retry), pymysql's errors translated first."""
    def attempt() -> T:
        try:
            return action()
        except pymysql.MySQLError as exc:
            raise translate(exc, settings, doing) from None
    return settings.retry.call(doing, attempt, stopping)


# ---- server facts ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerInfo:
    version: str
    mariadb: bool
    server_id: int
    lower_case_table_names: int
    charset: str | None
    row_metadata: str | None
    gtid_mode: bool
    collation: str | None = None

    @property
    def flavor(self) -> str:
        return "mariadb" if self.mariadb else "mysql"


def _variables(conn: pymysql.connections.Connection, names: list[str]) -> dict[str, str]:
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ",".join(["%s"] * len(names)) + ")", names)
        return {name.lower(): value for name, value in cur.fetchall()}


def server_checks(conn: pymysql.connections.Connection, settings: ConnectionSettings) -> ServerInfo:
    """Refuse a server whose binlog cannot be captured, and say how to fix it."""
    values = _variables(conn, ["version", "server_id", "log_bin", "binlog_format", "binlog_row_image",
                               "binlog_row_metadata", "lower_case_table_names", "character_set_server",
                               "collation_server", "gtid_mode"])
    version = values.get("version", "")
    mariadb = "mariadb" in version.lower()
    if values.get("log_bin", "OFF").upper() != "ON":
        raise SourceError(f"the binlog is off on {settings.host}:{settings.port}",
                          fix="start the server with log_bin (e.g. --log-bin=mysql-bin), binlog_format=ROW and a server_id")
    if values.get("binlog_format", "").upper() != "ROW":
        raise SourceError(f"binlog_format is {values.get('binlog_format')!r}: only ROW records the rows a CDC source needs",
                          fix="SET GLOBAL binlog_format = 'ROW' (and in the server's config), then reconnect clients")
    if values.get("binlog_row_image", "FULL").upper() != "FULL":
        raise SourceError(f"binlog_row_image is {values.get('binlog_row_image')!r}: updates would miss columns",
                          fix="SET GLOBAL binlog_row_image = 'FULL' (and in the server's config)")
    metadata = values.get("binlog_row_metadata")
    if metadata is not None and metadata.upper() != "FULL":
        log.info("binlog_row_metadata is %s: rows are decoded with the column names, signedness and character "
                 "sets of the schema history (as with FULL)", metadata)
    _check_grants(conn, settings)
    return ServerInfo(
        version=version,
        mariadb=mariadb,
        server_id=int(values.get("server_id", 0) or 0),
        lower_case_table_names=int(values.get("lower_case_table_names", 0) or 0),
        charset=values.get("character_set_server"),
        collation=values.get("collation_server"),
        row_metadata=metadata,
        gtid_mode=(values.get("gtid_mode", "OFF").upper() == "ON") if not mariadb else True,
    )


def _check_grants(conn: pymysql.connections.Connection, settings: ConnectionSettings) -> None:
    with conn.cursor() as cur:
        cur.execute("SHOW GRANTS")
        grants = " ".join(row[0] for row in cur.fetchall()).upper()
    if "ALL PRIVILEGES ON *.*" in grants:
        return
    missing = [p for p in ("REPLICATION SLAVE", "REPLICATION CLIENT")
               if p not in grants and not (p == "REPLICATION CLIENT" and "BINLOG MONITOR" in grants)
               and not (p == "REPLICATION SLAVE" and "REPLICATION SLAVE ADMIN" in grants and "REPLICATION SLAVE," in grants)]
    if missing:
        raise SourceError(f"user {settings.user!r} lacks {' and '.join(missing)} on *.*: it cannot read the binlog",
                          fix=f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{settings.user}'@'<host>'")


def binlog_position(conn: pymysql.connections.Connection) -> tuple[str, int]:
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    if not row:
        raise SourceError("SHOW MASTER STATUS returned nothing: the binlog is off", fix="start the server with log_bin")
    return row[0], int(row[1])


def binlog_files(conn: pymysql.connections.Connection) -> list[str]:
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [row[0] for row in cur.fetchall()]


def gtid_position(conn: pymysql.connections.Connection, mariadb: bool) -> str | None:
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.gtid_binlog_pos" if mariadb else "SELECT @@GLOBAL.gtid_executed")
        row = cur.fetchone()
    return (row[0] or None) if row else None


