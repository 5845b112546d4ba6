"""The query layer: the only module that talks to SQL Server.

Everything else sees :class:`QueryLayer` (rows as dicts keyed by column name), so the whole
source runs in the tests against recorded rows. :class:`OdbcConnection` is the pyodbc
implementation; pyodbc (and the ODBC driver manager it links) is imported only when a
connection is opened, so the rest imports without it. Driver errors become
:class:`~cdc.core.errors.SourceError` s that say what to do (:func:`translate`).
"""
from __future__ import annotations

import logging
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cdc.config import Config
from cdc.core.errors import RetriableSourceError, SourceError
from cdc.core.retry import RetryPolicy

log = logging.getLogger(__name__)

DRIVER_PREFERENCE = ("ODBC Driver 18 for SQL Server", "ODBC Driver 17 for SQL Server", "FreeTDS")
DRIVER_FIX = ("install an ODBC driver for SQL Server: Microsoft ODBC Driver 18 (package msodbcsql18, "
              "https://learn.microsoft.com/sql/connect/odbc/linux-mac/"
              "installing-the-microsoft-odbc-driver-for-sql-server) "
              "or FreeTDS (apt-get install unixodbc tdsodbc), then name it in database.odbc.driver if needed")

# ODBC SQL_ATTR_TXN_ISOLATION values; SNAPSHOT is SQL Server's SQL_TXN_SS_SNAPSHOT.
SQL_ATTR_TXN_ISOLATION = 108
ISOLATION_LEVELS = {"read_uncommitted": 1, "read_committed": 2, "repeatable_read": 4, "snapshot": 32, "exclusive": 4}
SQL_SS_TIMESTAMPOFFSET = -155


class QueryLayer(Protocol):
    """One connection to one database."""

    database: str

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    def batches(self, sql: str, params: Sequence[Any] = (), size: int = 1000) -> Iterator[list[dict[str, Any]]]: ...

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    def set_isolation(self, mode: str) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ConnectionSettings:
    hostname: str
    port: int
    instance: str | None
    user: str
    password: str | None
    encrypt: bool
    trust_server_certificate: bool
    driver: str | None
    max_retries: int
    retry_wait_s: float

    @classmethod
    def from_config(cls, config: Config) -> ConnectionSettings:
        return cls(
            hostname=config.get("database.hostname"),
            port=config.get("database.port"),
            instance=config.get("database.instance"),
            user=config.get("database.user"),
            password=config.get("database.password"),
            encrypt=config.get("database.encrypt"),
            trust_server_certificate=config.get("database.trustServerCertificate"),
            driver=config.get("database.odbc.driver"),
            max_retries=config.get("errors.max.retries"),
            retry_wait_s=config.get("retriable.restart.connector.wait.ms") / 1000,
        )

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.retry_wait_s)

    def connection_string(self, database: str, driver: str) -> str:
        server = f"{self.hostname}\\{self.instance}" if self.instance else f"{self.hostname},{self.port}"
        parts = {
            "DRIVER": driver, "SERVER": server, "DATABASE": database, "UID": self.user,
            "PWD": self.password or "", "Encrypt": "yes" if self.encrypt else "no",
            "TrustServerCertificate": "yes" if self.trust_server_certificate else "no",
            "APP": "cdc",
        }
        if driver == "FreeTDS":
            # FreeTDS spells TLS its own way and does not validate certificates unless given a CA file.
            del parts["Encrypt"], parts["TrustServerCertificate"]
            parts["TDS_Version"] = "7.4"
            parts["Encryption"] = "require" if self.encrypt else "off"
        return ";".join(f"{k}={_odbc_value(v)}" for k, v in parts.items())

    def __repr__(self) -> str:  # never print the password
        return f"ConnectionSettings({self.user}@{self.hostname}:{self.port})"


def _odbc_value(value: str) -> str:
    """Brace a value when it holds characters ODBC would split on; '}' doubles inside braces."""
    if any(c in value for c in ";{}= ") or value != value.strip():
        return "{" + value.replace("}", "}}") + "}"
    return value


def _import_pyodbc() -> Any:
    try:
        import pyodbc  # noqa: PLC0415 - heavy and optional: only when connecting
    except ImportError as exc:
        if "libodbc" in str(exc):
            raise SourceError(f"pyodbc cannot load the ODBC driver manager: {exc}",
                              fix="apt-get install unixodbc, then " + DRIVER_FIX) from None
        raise SourceError(f"pyodbc is not installed: {exc}", fix="pip install 'cdc-debezium[sqlserver]'") from None
    return pyodbc


def choose_driver(installed: Sequence[str], wanted: str | None) -> str:
    if wanted:
        if wanted not in installed:
            raise SourceError(f"ODBC driver {wanted!r} (database.odbc.driver) is not installed; installed: "
                              f"{', '.join(installed) or 'none'}", fix=DRIVER_FIX)
        return wanted
    for name in DRIVER_PREFERENCE:
        if name in installed:
            return name
    raise SourceError("no ODBC driver for SQL Server is installed (installed drivers: "
                      f"{', '.join(installed) or 'none'})", fix=DRIVER_FIX)


# (pattern in the driver's message or SQLSTATE, retriable, what failed, fix)
_TRANSLATIONS: tuple[tuple[str, bool, str, str], ...] = (
    (r"IM002|Can't open lib|Data source name not found|file not found", False,
     "the ODBC driver cannot be loaded", DRIVER_FIX),
    (r"28000|Login failed", False, "login failed",
     "check database.user and database.password (and that SQL Server authentication is enabled)"),
    (r"Cannot open database|4060", False, "the database cannot be opened",
     "check database.names and that the login is a user of that database"),
    (r"certificate|SSL Provider|TLS", False, "the TLS handshake failed",
     "set database.trustServerCertificate=true for a self-signed certificate, or database.encrypt=false"),
    (r"08001|08S01|HYT00|Login timeout|TCP Provider|Unable to connect|network", True,
     "the server cannot be reached", "check database.hostname and database.port, and that SQL Server is running"),
    (r"Invalid object name 'cdc\.", False, "the cdc schema or a change table is missing",
     "enable CDC: EXEC sys.sp_cdc_enable_db; then EXEC sys.sp_cdc_enable_table for each table"),
    (r"permission was denied|VIEW SERVER STATE", False, "permission denied",
     "grant the login db_owner on the database (or SELECT on the cdc schema)"),
)


def translate(exc: Exception, doing: str) -> SourceError:
    """A driver error as a SourceError saying what failed and what to do."""
    args = getattr(exc, "args", ())
    text = " ".join(str(a) for a in args) or str(exc)
    for pattern, retriable, what, fix in _TRANSLATIONS:
        if re.search(pattern, text, re.IGNORECASE):
            kind = RetriableSourceError if retriable else SourceError
            return kind(f"{doing}: {what}: {text}", fix=fix)
    return RetriableSourceError(f"{doing}: {text}", fix="see the SQL Server error above")


def datetimeoffset_text(raw: bytes) -> str:
    """SQL_SS_TIMESTAMPOFFSET_STRUCT as SQL Server prints it, with all 7 fraction digits, so that
    no precision is lost (pyodbc has no native type for datetimeoffset)."""
    if len(raw) != 20:  # a driver that hands over text instead of the struct
        return raw.decode("utf-16-le" if b"\x00" in raw else "ascii").strip()
    year, month, day, hour, minute, second, fraction_ns, tz_h, tz_m = struct.unpack("<6hI2h", raw)
    sign = "-" if tz_h < 0 or tz_m < 0 else "+"
    return (f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}.{fraction_ns // 100:07d} "
            f"{sign}{abs(tz_h):02d}:{abs(tz_m):02d}")


class OdbcConnection:
    """:class:`QueryLayer` over pyodbc, autocommit: each statement is its own transaction unless
    the snapshot opens one with BEGIN TRANSACTION."""

    def __init__(self, settings: ConnectionSettings, database: str) -> None:
        pyodbc = _import_pyodbc()
        self.database = database
        self._pyodbc = pyodbc
        driver = choose_driver(list(pyodbc.drivers()), settings.driver)
        try:
            self._conn = pyodbc.connect(settings.connection_string(database, driver), autocommit=True, timeout=30)
        except pyodbc.Error as exc:
            raise translate(exc, f"connecting to SQL Server {settings.hostname}:{settings.port} "
                                 f"database {database!r} as {settings.user!r}") from None
        self._conn.add_output_converter(SQL_SS_TIMESTAMPOFFSET, datetimeoffset_text)

    def _cursor(self, sql: str, params: Sequence[Any]) -> Any:
        try:
            cursor = self._conn.cursor()
            cursor.execute(sql, *params) if params else cursor.execute(sql)
            return cursor
        except self._pyodbc.Error as exc:
            raise translate(exc, f"running {sql[:80]!r} in database {self.database!r}") from None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self._cursor(sql, params)
        if cursor.description is None:
            return []
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def batches(self, sql: str, params: Sequence[Any] = (), size: int = 1000) -> Iterator[list[dict[str, Any]]]:
        cursor = self._cursor(sql, params)
        names = [d[0] for d in cursor.description]
        while True:
            try:
                rows = cursor.fetchmany(size)
            except self._pyodbc.Error as exc:
                raise translate(exc, f"reading {sql[:80]!r} in database {self.database!r}") from None
            if not rows:
                return
            yield [dict(zip(names, row, strict=True)) for row in rows]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._cursor(sql, params).close()

    def set_isolation(self, mode: str) -> None:
        try:
            self._conn.set_attr(SQL_ATTR_TXN_ISOLATION, ISOLATION_LEVELS[mode])
        except self._pyodbc.Error as exc:
            raise translate(exc, f"setting isolation level {mode}") from None

    def close(self) -> None:
        try:
            self._conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass
