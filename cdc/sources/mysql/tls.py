"""TLS to MySQL / MariaDB as Debezium's connectors set it up: ``database.ssl.mode`` and Java keystores.

The MySQL connector (3.6) and the MariaDB one (3.5) read the same property with their own values and
defaults: disabled, preferred (its default), required, verify_ca, verify_identity for MySQL; disable (its
default), trust, verify-ca, verify-full for MariaDB, which maps them onto the first ones for its binlog
client (trust is required, verify-full verify_identity). Both spellings are accepted whatever the
connector; the default is the configured connector's (cdc.core.option_surface.connector_default).

One ``ssl.SSLContext`` serves every connection (queries, snapshot, binlog): the CA certificates of
``database.ssl.truststore`` (else the system's, as Java falls back on its own), the client's key and
certificates of ``database.ssl.keystore`` (cdc.core.tls reads both).
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

import pymysql

from cdc.config import Config
from cdc.core import tls
from cdc.core.option_surface import connector_default

MODE = "database.ssl.mode"
# Debezium's values, both connectors' -> what cdc does
LEVELS = {
    "disabled": "disabled", "preferred": "preferred", "required": "required", "verify_ca": "verify_ca",
    "verify_identity": "verify_identity",
    "disable": "disabled", "trust": "required", "verify-ca": "verify_ca", "verify-full": "verify_identity",
}
VERIFYING = ("verify_ca", "verify_identity")
CR_SSL_CONNECTION_ERROR = 2026


@dataclass(frozen=True)
class Tls:
    mode: str  # as configured (Debezium's spelling), for messages
    level: str  # disabled | preferred | required | verify_ca | verify_identity
    context: ssl.SSLContext | None = field(default=None, compare=False, repr=False)
    client_certificate: bool = False  # database.ssl.keystore was given

    @classmethod
    def from_config(cls, config: Config) -> Tls:
        raw = config.properties.get(MODE)
        mode = config.get(MODE) if raw not in (None, "") else connector_default(config.properties, MODE) \
            or config.get(MODE)
        level = LEVELS[mode]
        if level == "disabled":
            return cls(mode, level)
        keystore = config.get("database.ssl.keystore")
        context = client_context(level, config.get("database.ssl.truststore"),
                                 config.get("database.ssl.truststore.password"), keystore,
                                 config.get("database.ssl.keystore.password"))
        return cls(mode, level, context, bool(keystore))

    @property
    def on(self) -> bool:
        return self.level != "disabled"


def client_context(level: str, truststore: str | None, truststore_password: str | None, keystore: str | None,
                   keystore_password: str | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = level == "verify_identity"
    if level in VERIFYING:
        context.verify_mode = ssl.CERT_REQUIRED
        if truststore:
            cas = tls.read_certificates(truststore, "database.ssl.truststore", truststore_password,
                                        "database.ssl.truststore.password")
            context.load_verify_locations(cadata=tls.pem(cas))
        else:
            context.load_default_certs()  # Java falls back on its own truststore
    else:
        context.verify_mode = ssl.CERT_NONE  # preferred, required: encrypted, the server not checked
    if keystore:
        _load_identity(context, tls.read_keystore(keystore, "database.ssl.keystore", keystore_password,
                                                  "database.ssl.keystore.password"))
    return context


def _load_identity(context: ssl.SSLContext, identity: tls.Identity) -> None:
    """The ssl module loads a key only from a file: written encrypted, loaded, removed at once."""
    key, password = tls.encrypted_key(identity.key)
    path = tls.private_file("client.pem", key + tls.pem(identity.chain).encode())
    try:
        context.load_cert_chain(path, password=password)
    finally:
        path.unlink()


class CheckedConnection(pymysql.connections.Connection):  # type: ignore[misc]
    """A pymysql connection that refuses to go on in clear when it was given TLS settings: PyMySQL before
    1.2 quietly skips TLS when the server does not offer it, where required means required."""

    def connect(self, sock: Any = None) -> None:
        super().connect(sock)
        if self.ssl and not isinstance(self._sock, ssl.SSLSocket):
            self.close()
            raise pymysql.err.OperationalError(CR_SSL_CONNECTION_ERROR,
                                               "SSL is required but the server doesn't support it")


def encrypted(conn: pymysql.connections.Connection) -> bool:
    return isinstance(conn._sock, ssl.SSLSocket)
