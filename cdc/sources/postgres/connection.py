"""Opening connections to PostgreSQL, with errors that say what to do.

Every failure libpq reports is mapped once, here, to a :class:`CdcError` that names the cause
and the fix; transient ones (server down, connection dropped) are retriable and retried with
exponential backoff by :func:`with_retries`.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import make_conninfo

from cdc.config import Config
from cdc.core import initial_statements
from cdc.core.errors import CdcError, RetriableSourceError, SourceError
from cdc.core.quoting import pg_identifier
from cdc.core.retry import RetryPolicy
from cdc.sources.postgres.tls import libpq_params

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class ConnectionSettings:
    host: str
    port: int
    user: str
    password: str | None
    dbname: str
    sslmode: str
    max_retries: int
    retry_wait_s: float
    # keepalives, certificates and key (cdc.sources.postgres.tls); its sslpassword is never shown
    tls: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    initial_statements: tuple[str, ...] = ()  # database.initial.statements, on every connection but replication's

    @classmethod
    def from_config(cls, config: Config) -> ConnectionSettings:
        return cls(
            host=config.get("database.hostname"),
            port=config.get("database.port"),
            user=config.get("database.user"),
            password=config.get("database.password"),
            dbname=config.get("database.dbname"),
            sslmode=config.get("database.sslmode"),
            max_retries=config.get("errors.max.retries"),
            retry_wait_s=config.get("retriable.restart.connector.wait.ms") / 1000,
            tls=tuple(libpq_params(config).items()),
            initial_statements=initial_statements.split(config.get(initial_statements.NAME)),
        )

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}/{self.dbname}"

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.retry_wait_s)

    def conninfo(self, **extra: str) -> str:
        params: dict[str, Any] = dict(
            host=self.host, port=self.port, user=self.user, dbname=self.dbname,
            sslmode=self.sslmode, application_name="cdc", connect_timeout=10,
            # Pin what shapes the text form of values: the converters in types.py parse it.
            options="-c DateStyle=ISO -c IntervalStyle=postgres -c TimeZone=UTC -c bytea_output=hex "
                    "-c extra_float_digits=1",
            **dict(self.tls),
            **extra,
        )
        if self.password:
            params["password"] = self.password
        return make_conninfo(**params)

    def connect(self, *, replication: bool = False) -> psycopg.Connection:
        extra = {"replication": "database"} if replication else {}
        try:
            conn = psycopg.Connection.connect(self.conninfo(**extra), autocommit=True)
        except psycopg.Error as exc:
            raise translate(exc, self) from None
        if self.initial_statements and not replication:  # as Debezium: not on the replication connection
            try:
                self._run_initial_statements(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    def _run_initial_statements(self, conn: psycopg.Connection) -> None:
        initial_statements.run(self.initial_statements, conn.execute, self.where, lambda exc: translate(exc, self),
                               (psycopg.Error,))
        # The settings the converters read values' text by are set back (pgjdbc refuses a DateStyle change
        # and reads the others its own way, so Debezium's values do not depend on them either).
        changed = [name for (name,) in conn.execute(
            "SELECT name FROM pg_settings WHERE source = 'session' AND name = ANY(%s)", (list(PINNED),))]
        for name in changed:
            conn.execute(f"RESET {name}")
        if changed:
            log.warning("%s changed %s, which cdc reads values by: set back to %s", initial_statements.NAME,
                        ", ".join(changed), ", ".join(f"{n}={PINNED[n]}" for n in changed))


# Session settings pinned at connect (conninfo's options) that the value converters depend on.
PINNED = {"DateStyle": "ISO", "IntervalStyle": "postgres", "bytea_output": "hex", "extra_float_digits": "1"}


def translate(exc: BaseException, settings: ConnectionSettings | None = None) -> CdcError:
    """Map a libpq/psycopg error to a CdcError naming cause and fix."""
    text = str(exc).strip()
    where = settings.where if settings else "the server"
    low = text.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return SourceError(
            f"PostgreSQL refused the login of {where}: {text}",
            fix="check database.user and database.password",
        )
    if "does not exist" in low and "database" in low:
        return SourceError(f"{text} (connecting to {where})", fix="check database.dbname, or CREATE DATABASE it")
    if "must be superuser or replication role" in low or "permission denied to start wal sender" in low or (
        "replication" in low and "permission denied" in low
    ):
        user = settings.user if settings else "the user"
        role = pg_identifier(settings.user) if settings else "<user>"
        return SourceError(
            f"{user} may not start logical replication: {text}",
            fix=f"ALTER ROLE {role} WITH REPLICATION; (and GRANT SELECT on the captured tables)",
        )
    if "server does not support ssl" in low or ("ssl" in low and "was required" in low):
        return SourceError(f"{where} offers no SSL, which database.sslmode requires: {text}",
                           fix="enable ssl on the server, or set database.sslmode=prefer (or disable)")
    if (tls := _tls_problem(text, settings)) is not None:
        return tls
    if "could not translate host name" in low or "failed to resolve host" in low or "name or service not known" in low:
        host = settings.host if settings else "the host"
        return SourceError(f"the host name {host!r} does not resolve: {text}",
                           fix="check database.hostname (and the DNS of this machine)")
    if "no pg_hba.conf entry" in low and "no encryption" in low:
        return SourceError(f"{text}", fix="the server takes this user over TLS only (hostssl): set database.sslmode="
                                          "require, verify-ca or verify-full; or allow it in pg_hba.conf")
    if "no pg_hba.conf entry" in low:
        return SourceError(f"{text}", fix="allow the user (and 'replication' for the database) in pg_hba.conf")
    if any(s in low for s in ("connection refused", "could not connect", "timeout expired",
                              "server closed the connection",
                              "terminating connection", "connection to server", "could not receive data",
                              "no connection to the server", "the database system is starting up",
                              "the database system is shutting down", "consuming input failed",
                              "ssl connection has been closed", "eof detected")):
        return RetriableSourceError(
            f"cannot reach PostgreSQL at {where}: {text}",
            fix="start the server, or check database.hostname and database.port",
        )
    return SourceError(f"PostgreSQL error at {where}: {text}")


def _tls_problem(text: str, settings: ConnectionSettings | None) -> CdcError | None:
    """A failed TLS check, by either side: never retried, as it fails again the same way."""
    low = text.lower()
    where = f"{settings.host}:{settings.port}" if settings else "the server"
    mode = f"database.sslmode={settings.sslmode}" if settings else "database.sslmode"
    if "does not match host name" in low:
        return SourceError(f"the certificate of the server at {where} is not issued for the name it was reached by "
                           f"({mode} checks it): {text}",
                           fix="set database.hostname to a name the certificate holds (its subject alternative "
                               "names), or database.sslmode=verify-ca to check its chain alone")
    if "certificate verify failed" in low:
        return SourceError(f"the certificate of the server at {where} is not signed by a CA of "
                           f"database.sslrootcert ({mode} checks it): {text}",
                           fix="set database.sslrootcert to the certificate of the CA that signed the server's (PEM "
                               "or DER), and check that database.hostname is the server meant")
    if "root certificate file" in low and "does not exist" in low:
        return SourceError(f"{mode} checks the server's certificate, but no CA certificate is given: {text}",
                           fix="set database.sslrootcert to the CA certificate that signed the server's")
    if "requires a valid client certificate" in low:
        return SourceError(f"the server at {where} asks for a client certificate: {text}",
                           fix="give the client's certificate and key in database.sslcert and database.sslkey "
                               "(signed by a CA in the server's ssl_ca_file)")
    if any(alert in low for alert in ("alert unknown ca", "alert bad certificate", "alert certificate unknown",
                                      "alert certificate required")):
        return SourceError(f"the server at {where} refused the client certificate: {text}",
                           fix="give database.sslcert and database.sslkey a certificate signed by a CA in the "
                               "server's ssl_ca_file")
    if "certificate authentication failed" in low:
        return SourceError(f"the client certificate does not name the user: {text}",
                           fix="its common name must be database.user (or be mapped to it in pg_ident.conf)")
    return None


@contextmanager
def lost_connection_retriable(when: str) -> Iterator[None]:
    """Around the statements of a long read (a snapshot's transaction, a COPY): a connection lost on the
    way (a backend terminated, a server restarting) becomes a RetriableSourceError saying ``when``, which
    the engine answers by starting the source again from the stored offset under the retry policy; the
    server's refusals stay psycopg's errors, for the caller to name."""
    try:
        yield
    except psycopg.OperationalError as exc:
        if not translate(exc).retriable:
            raise
        raise RetriableSourceError(
            f"the connection was lost {when}: {str(exc).strip()}",
            fix="nothing to do if it comes back: the source starts again under the retry policy "
                "(errors.max.retries); else check the server and its log") from None


def with_retries(settings: ConnectionSettings, what: str, action: Callable[[], T],
                 stopping: Callable[[], bool] = lambda: False) -> T:
    """Run ``action`` under the retry policy (cdc.core.retry)."""
    return settings.retry.call(what, action, stopping)


class Connections:
    """The source's two long-lived connections, each opened on first use (with retries) and again after
    it broke: the catalog one (queries, slot management) and the replication one (the slot's stream)."""

    def __init__(self, settings: ConnectionSettings, stopping: Callable[[], bool]) -> None:
        self.settings = settings
        self._stopping = stopping
        self._catalog: psycopg.Connection | None = None
        self._replication: psycopg.Connection | None = None

    def catalog(self) -> psycopg.Connection:
        if self._catalog is None or self._catalog.closed:
            self._catalog = with_retries(self.settings, "connecting to PostgreSQL", self.settings.connect,
                                         self._stopping)
        return self._catalog

    def replication(self) -> psycopg.Connection:
        if self._replication is None or self._replication.closed:
            self._replication = with_retries(self.settings, "opening a replication connection",
                                             lambda: self.settings.connect(replication=True), self._stopping)
        return self._replication

    def close_replication(self) -> None:
        """The replication connection holds the exported snapshot and the slot in use: let them go."""
        if self._replication is not None:
            self._replication.close()
            self._replication = None

    def close(self) -> None:
        for conn in (self._replication, self._catalog):
            if conn is not None and not conn.closed:
                conn.close()
        self._replication = self._catalog = None

    def drop(self) -> None:
        """Both connections broke (the stream is retried): closed whatever state they are in."""
        for conn in (self._replication, self._catalog):
            try:
                if conn is not None:
                    conn.close()
            except Exception:  # noqa: BLE001 - the connection is broken anyway
                pass
        self._replication = self._catalog = None


def one(conn: psycopg.Connection, query: str, params: Any = ()) -> tuple[Any, ...]:
    """The single row a catalog query always returns (``SHOW``, an aggregate)."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        raise SourceError(f"PostgreSQL returned no row for {query!r}")
    return row
