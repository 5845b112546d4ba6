"""libpq's TLS and keep-alive parameters from Debezium's options, which pgjdbc reads.

pgjdbc and libpq share the names (sslmode, sslrootcert, sslcert, sslkey, sslpassword) but not the files
they take: pgjdbc reads a key as PKCS-8 DER (``.pk8``), PKCS12 (``.p12``/``.pfx``, which then holds the
certificate too) or PEM, and certificates as PEM or DER; libpq wants PEM, and refuses a key file others
may read. So certificates that are not PEM, and every key, are read here (cdc.core.tls: a wrong file or
password stops the start with its fix) and handed to libpq as PEM files in a private folder, the key
encrypted with a password made for it. They also differ in one rule: pgjdbc verifies the server only
under verify-ca and verify-full, whereas libpq also does under require (even prefer) whenever a root
certificate file exists (~/.postgresql/root.crt by default); libpq is pointed at a root file that
cannot exist in those modes, so that they mean what they mean to Debezium.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from cdc.config import Config
from cdc.core import tls

VERIFYING = ("verify-ca", "verify-full")
ROOT_CERT = "database.sslrootcert"
CERT = "database.sslcert"
KEY = "database.sslkey"
PASSWORD = "database.sslpassword"


def libpq_params(config: Config) -> dict[str, str]:
    """The conninfo parameters beside sslmode: keepalives, and the certificates and key."""
    params = {"keepalives": "1" if config.get("database.tcpKeepAlive") else "0"}
    mode = config.get("database.sslmode")
    if mode == "disable":
        return params  # no TLS: pgjdbc reads none of the files either
    return {**params, **_files(mode, config.get(ROOT_CERT), config.get(CERT), config.get(KEY), config.get(PASSWORD))}


# A root certificate path that can never exist (/dev/null is no folder): libpq then verifies nothing.
NO_ROOT_CERT = os.devnull + "/root.crt"


@lru_cache(maxsize=8)  # a source, its status queries and its snapshot readers share one set of files
def _files(mode: str, root: str | None, cert: str | None, key: str | None, password: str | None) -> dict[str, str]:
    params: dict[str, str] = {}
    if mode not in VERIFYING:
        params["sslrootcert"] = NO_ROOT_CERT  # pgjdbc does not verify here; libpq would, given a root file
    elif root:
        params["sslrootcert"] = _root(root)
    # else libpq's default, ~/.postgresql/root.crt, which is pgjdbc's too
    if key:
        params.update(_client(cert, key, password))
    elif cert:
        params["sslcert"] = _certificates(cert, CERT, "postgresql.crt")
    return params


def _root(path: str) -> str:
    return _certificates(path, ROOT_CERT, "root.crt")


def _certificates(path: str, option: str, name: str) -> str:
    """A certificate file as libpq reads it: the file itself when it is PEM, else a PEM copy."""
    certs = tls.read_certificates(path, option)  # read even when PEM: a wrong file stops the start here
    if b"-----BEGIN " in Path(path).expanduser().read_bytes():
        return path
    return str(tls.private_file(name, tls.pem(certs).encode()))


def _client(cert: str | None, key: str, password: str | None) -> dict[str, str]:
    """sslcert, sslkey and sslpassword for the client's key (and its certificate, from a PKCS12 key)."""
    params: dict[str, str] = {}
    if key.lower().endswith((".p12", ".pfx")):  # pgjdbc's rule: a PKCS12 store holds both; sslcert is unused
        identity = tls.read_keystore(key, KEY, password, PASSWORD)
        params["sslcert"] = str(tls.private_file("postgresql.crt", tls.pem(identity.chain).encode()))
        private_key = identity.key
    else:
        private_key = tls.read_private_key(key, KEY, password, PASSWORD)
        if cert:
            params["sslcert"] = _certificates(cert, CERT, "postgresql.crt")
    data, one_time = tls.encrypted_key(private_key)
    params["sslkey"] = str(tls.private_file("postgresql.key", data))
    params["sslpassword"] = one_time
    return params
