"""Connections to MySQL / MariaDB: settings, error translation and the server checks a source needs.

pymysql's errors carry a server error number; the ones users meet (wrong password, missing
grants, unknown host) become a ``SourceError`` that names the cause and the fix. The session
pins ``time_zone='+00:00'`` so TIMESTAMP values read in a snapshot are UTC, as in the binlog.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pymysql

from cdc.config import Config
from cdc.core import initial_statements
from cdc.core.errors import CdcError, RetriableSourceError, SourceError
from cdc.core.quoting import mysql_literal
from cdc.core.retry import RetryPolicy
from cdc.sources.mysql.tls import CR_SSL_CONNECTION_ERROR, CheckedConnection, Tls

log = logging.getLogger(__name__)

T = TypeVar("T")

ER_ACCESS_DENIED = 1045
ER_DBACCESS_DENIED = 1044
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_MASTER_FATAL_READING_BINLOG = 1236
CR_CONNECTION_ERRORS = {2002, 2003, 2005, 2006, 2013, 2055}
UTC = "+00:00"  # the session time_zone TIMESTAMP values are read in


@dataclass(frozen=True)
class ConnectionSettings:
    host: str
    port: int
    user: str
    password: str
    connect_timeout_s: float
    tls: Tls  # database.ssl.mode and the keystores (tls.py)
    max_retries: int
    retry_wait_s: float
    initial_statements: tuple[str, ...] = ()  # database.initial.statements, on every connection but the binlog's

    @classmethod
    def from_config(cls, config: Config) -> ConnectionSettings:
        return cls(
            host=config.get("database.hostname"),
            port=config.get("database.port"),
            user=config.get("database.user"),
            password=config.get("database.password") or "",
            connect_timeout_s=config.get("connect.timeout.ms") / 1000,
            tls=Tls.from_config(config),
            max_retries=config.get("errors.max.retries"),
            retry_wait_s=config.get("retriable.restart.connector.wait.ms") / 1000,
            initial_statements=initial_statements.split(config.get(initial_statements.NAME)),
        )

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.retry_wait_s)

    @property
    def ssl_mode(self) -> str:
        return self.tls.mode

    def ssl_args(self) -> dict[str, Any]:
        """pymysql's TLS arguments: the context, or TLS off (pymysql would otherwise try it on its own).
        preferred: TLS when the server offers it (asked once); from required on, always (a server without
        it is refused)."""
        if not self.tls.on or self.tls.level == "preferred" and not _offers_tls(self):
            return {"ssl_disabled": True}
        return {"ssl": self.tls.context}

    def replication_settings(self) -> dict[str, Any]:
        """What BinLogStreamReader passes to pymysql (open_stream connects with CheckedConnection)."""
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                "connect_timeout": max(1, int(self.connect_timeout_s)), **self.ssl_args()}

    def connect(self, *, unbuffered: bool = False) -> pymysql.connections.Connection:
        try:
            conn = CheckedConnection(
                host=self.host, port=self.port, user=self.user, password=self.password, charset="utf8mb4",
                connect_timeout=self.connect_timeout_s, autocommit=True, **self.ssl_args(),
                cursorclass=pymysql.cursors.SSCursor if unbuffered else pymysql.cursors.Cursor,
                init_command=f"SET time_zone = '{UTC}'",
            )
        except pymysql.MySQLError as exc:
            raise translate(exc, self) from None
        if self.initial_statements:  # as Debezium: on query connections, not on the binlog reader's
            try:
                self._run_initial_statements(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    def _run_initial_statements(self, conn: pymysql.connections.Connection) -> None:
        with conn.cursor() as cur:
            initial_statements.run(self.initial_statements, cur.execute, self.where,
                                   lambda exc: translate(exc, self), (pymysql.MySQLError,))
            # TIMESTAMP values are read as UTC: a time_zone the statements set is set back.
            cur.execute("SELECT @@session.time_zone")
            (zone,) = cur.fetchone() or (UTC,)
            if zone != UTC:
                cur.execute(f"SET time_zone = '{UTC}'")
                log.warning("%s set time_zone to %s; cdc reads TIMESTAMP values in UTC: set back to '%s'",
                            initial_statements.NAME, zone, UTC)


_TLS_OFFERED: dict[tuple[str, int], bool] = {}


def _offers_tls(settings: ConnectionSettings) -> bool:
    """Whether the server offers TLS (database.ssl.mode=preferred), from its handshake, asked once."""
    key = (settings.host, settings.port)
    if key not in _TLS_OFFERED:
        try:
            CheckedConnection(host=settings.host, port=settings.port, user=settings.user, password=settings.password,
                              connect_timeout=settings.connect_timeout_s, ssl=settings.tls.context).close()
            _TLS_OFFERED[key] = True
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] == CR_SSL_CONNECTION_ERROR:
                _TLS_OFFERED[key] = False
            else:
                raise translate(exc, settings) from None
        except NotImplementedError:
            _TLS_OFFERED[key] = False
    return _TLS_OFFERED[key]


def translate(exc: BaseException, settings: ConnectionSettings, doing: str = "connecting") -> CdcError:
    """A pymysql error as a SourceError with the cause and the fix."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    message = exc.args[1] if len(exc.args) > 1 else str(exc)
    tls_problem = _tls_problem(str(message), settings, code, doing)
    if tls_problem is not None:
        return tls_problem
    if "same server_uuid/server_id" in str(message) or "same server id" in str(message).lower():
        return SourceError(f"the server dropped this binlog reader: another one registered with the same server id "
                           f"(database.server.id): {message}",
                           fix="give every pipeline (and replica) reading this server its own database.server.id, or "
                               "leave it unset: each start then draws one from 5400-6400, as Debezium does")
    if code == ER_ACCESS_DENIED:
        tls_account = "" if settings.tls.client_certificate else (
            "; an account created REQUIRE SSL or X509 needs TLS (database.ssl.mode) and, for X509, the client's "
            "certificate and key (database.ssl.keystore)")
        return SourceError(f"login to {settings.where} failed: {message}",
                           fix="check database.user and database.password" + tls_account)
    if code == ER_SPECIFIC_ACCESS_DENIED or code == ER_DBACCESS_DENIED:
        return SourceError(f"{doing}: user {settings.user!r} lacks a privilege: {message}",
                           fix=f"GRANT SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, "
                               f"REPLICATION CLIENT ON *.* TO {mysql_literal(settings.user)}@'%'")
    if is_connection_lost(exc) or isinstance(exc, pymysql.err.OperationalError) and code is None:
        return RetriableSourceError(f"cannot reach the server at {settings.host}:{settings.port} ({doing}): {message}",
                                    fix="check that it runs and that database.hostname / database.port are right")
    return SourceError(f"{doing} on {settings.where}: {message}")


def _tls_problem(message: str, settings: ConnectionSettings, code: int | None, doing: str) -> CdcError | None:
    """A TLS failure (pymysql reports the ssl module's as a lost connection): never retried, as it fails
    again the same way; but for a connection closed as the login begins, which is how a server refuses the
    client certificate under TLS 1.3 when its alert comes too late to be read (or a server going down)."""
    mode = f"database.ssl.mode={settings.ssl_mode}"
    if code == CR_SSL_CONNECTION_ERROR or "SSL is required" in message:
        return SourceError(f"{settings.where} offers no TLS, which {mode} requires: {message}",
                           fix="enable TLS on the server (ssl_cert and ssl_key in its configuration), or lower "
                               "database.ssl.mode to preferred (MariaDB's connector: disable)")
    if "CERTIFICATE_VERIFY_FAILED" in message and "mismatch" in message:
        return SourceError(f"the certificate of the server at {settings.host} is not issued for the name "
                           f"{settings.host!r} ({mode} checks it): {message}",
                           fix="set database.hostname to a name the certificate holds (its subject alternative "
                               "names), or database.ssl.mode=verify_ca to check its chain alone")
    if "CERTIFICATE_VERIFY_FAILED" in message:
        return SourceError(f"the certificate of the server at {settings.host}:{settings.port} is not signed by a CA "
                           f"that database.ssl.truststore holds ({mode} checks it): {message}",
                           fix="put the CA certificate that signed the server's in database.ssl.truststore (keytool "
                               "-importcert -file ca.pem -keystore truststore.p12 -storetype PKCS12), and check that "
                               "database.hostname is the server meant")
    if "ALERT_UNKNOWN_CA" in message or "ALERT_BAD_CERTIFICATE" in message or "CERTIFICATE_REQUIRED" in message:
        return SourceError(f"the server at {settings.host}:{settings.port} refused the client certificate: {message}",
                           fix="give database.ssl.keystore a key and certificate signed by a CA in the server's "
                               "ssl_ca")
    if doing.startswith("connecting") and settings.tls.client_certificate and "EOF occurred in violation" in message:
        return RetriableSourceError(
            f"the server at {settings.host}:{settings.port} closed the connection as the TLS login began: {message}",
            fix="if it persists, the server refuses the client certificate: give database.ssl.keystore a key and "
                "certificate signed by a CA in the server's ssl_ca (its error log says why); else check that it runs")
    return None


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
    server_uuid: str | None = None  # MySQL's
    gtid_domain_id: int = 0  # MariaDB's
    datadir: str | None = None

    @property
    def flavor(self) -> str:
        return "mariadb" if self.mariadb else "mysql"

    @property
    def identity(self) -> str:
        """What tells this server from another, stored with offsets and schema history so that they are
        never used on another server: MySQL's server_uuid; MariaDB has none, so its server id, GTID domain
        and data directory (two servers started alike share the first two)."""
        if not self.mariadb and self.server_uuid:
            return f"mysql:{self.server_uuid}"
        return f"mariadb:{self.server_id}:{self.gtid_domain_id}:{self.datadir}"

    def check_written_here(self, what: str, stored: str | None, error: type[CdcError], *,
                           topology: bool = False) -> None:
        """Offsets and schema history name the server they were written on: another server's are refused
        (its binlog positions and tables are not this one's). ``topology``: the pipeline resumes by GTID, which
        name the transactions of the whole replication topology, so another server of it (a promoted replica)
        is accepted; but not a MariaDB server with the server id of the one that wrote them: the servers of one
        topology have distinct ids, and two servers started alike (both id 1) log GTIDs 0-1-n that name
        different transactions."""
        if stored is None or stored == self.identity:
            return  # written before servers were named (or by Debezium): taken as it is
        if topology and not (self.mariadb and _mariadb_server_id(stored) == self.server_id):
            return
        raise error(
            f"the {what} was written on another server ({stored}) than this one ({self.identity}): its "
            f"binlog positions and tables are not this server's",
            fix="point the pipeline at the server it was capturing; after a failover the pipeline continues on the "
                "promoted replica by GTID (MariaDB, or MySQL with gtid_mode=ON; log_slave_updates on the replica; "
                "every server of the topology with its own server_id); otherwise (a restore, another server) take "
                "a new snapshot: move the offsets and the schema history away (or give the pipeline a new name)")


def _mariadb_server_id(identity: str) -> int | None:
    """The server id in a MariaDB identity (``mariadb:<server id>:<domain>:<datadir>``)."""
    parts = identity.split(":", 3)
    return int(parts[1]) if len(parts) > 2 and parts[0] == "mariadb" and parts[1].isdigit() else None


def _variables(conn: pymysql.connections.Connection, names: list[str]) -> dict[str, str]:
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ",".join(["%s"] * len(names)) + ")", names)
        return {name.lower(): value for name, value in cur.fetchall()}


def server_checks(conn: pymysql.connections.Connection, settings: ConnectionSettings) -> ServerInfo:
    """Refuse a server whose binlog cannot be captured, and say how to fix it."""
    values = _variables(conn, ["version", "server_id", "log_bin", "binlog_format", "binlog_row_image",
                               "binlog_row_metadata", "lower_case_table_names", "character_set_server",
                               "collation_server", "gtid_mode", "server_uuid", "gtid_domain_id", "datadir"])
    version = values.get("version", "")
    mariadb = "mariadb" in version.lower()
    if values.get("log_bin", "OFF").upper() != "ON":
        raise SourceError(f"the binlog is off on {settings.host}:{settings.port}",
                          fix="start the server with log_bin (e.g. --log-bin=mysql-bin), binlog_format=ROW and a "
                              "server_id")
    if values.get("binlog_format", "").upper() != "ROW":
        raise SourceError(f"binlog_format is {values.get('binlog_format')!r}: only ROW records the rows a CDC source "
                          "needs",
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
        server_uuid=values.get("server_uuid"),
        gtid_domain_id=int(values.get("gtid_domain_id", 0) or 0),
        datadir=values.get("datadir"),
    )


def _check_grants(conn: pymysql.connections.Connection, settings: ConnectionSettings) -> None:
    with conn.cursor() as cur:
        cur.execute("SHOW GRANTS")
        grants = " ".join(row[0] for row in cur.fetchall()).upper()
    if "ALL PRIVILEGES ON *.*" in grants:
        return
    missing = [p for p in ("REPLICATION SLAVE", "REPLICATION CLIENT")
               if p not in grants and not (p == "REPLICATION CLIENT" and "BINLOG MONITOR" in grants)
               and not (p == "REPLICATION SLAVE" and "REPLICATION SLAVE ADMIN" in grants
                        and "REPLICATION SLAVE," in grants)]
    if missing:
        raise SourceError(f"user {settings.user!r} lacks {' and '.join(missing)} on *.*: it cannot read the binlog",
                          fix="GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO "
                              f"{mysql_literal(settings.user)}@'<host>'")


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


