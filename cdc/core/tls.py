"""TLS material from the files a Debezium configuration names, for Python's ssl module and libpq.

Debezium runs on Java: its MySQL/MariaDB connectors read Java keystores (``database.ssl.keystore``,
``database.ssl.truststore``: PKCS12, Java's default type) and pgjdbc reads PEM or DER certificates and a
PKCS-8 (DER), PKCS12 or PEM key. Python's ssl module and libpq take PEM files, so the material is read
here with ``cryptography`` and handed on: CA certificates in memory, a private key only ever written
encrypted (with a password made for the purpose, never the user's) into a private folder (0700, files
0600) that is removed when the process exits. A JKS keystore, which ``cryptography`` cannot read, is
refused with the ``keytool`` command that converts it. Passwords are never logged.
"""
from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cdc.core.errors import ConfigError

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

_JAVA_STORES = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}


@dataclass(frozen=True)
class Identity:
    """A client's private key and certificate chain (its own certificate first)."""

    key: PrivateKeyTypes
    chain: tuple[x509.Certificate, ...]


# ---- reading -----------------------------------------------------------------------------------

def _read(path: str, option: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise ConfigError(f"{option}={path!r} cannot be read: {exc.strerror or exc}",
                          fix=f"check the path in {option} and that the user running cdc may read the file") from None


def _refuse_java_store(data: bytes, path: str, option: str) -> None:
    kind = _JAVA_STORES.get(data[:4])
    if kind is not None:
        p12 = Path(path).with_suffix(".p12")
        raise ConfigError(
            f"{option}={path!r} is a {kind} keystore, which cdc cannot read (only PKCS12, Java's default keystore "
            "type since Java 9, and PEM files)",
            fix=f"convert it to PKCS12 once: keytool -importkeystore -srckeystore {path} -destkeystore {p12} "
                f"-deststoretype PKCS12, and set {option}={p12}")


def _pem(data: bytes) -> bool:
    return b"-----BEGIN " in data


def _password(password: str | None) -> bytes | None:
    return password.encode() if password else None


def _pkcs12(data: bytes, password: str | None, path: str, option: str, password_option: str
            ) -> tuple[PrivateKeyTypes | None, list[x509.Certificate]]:
    """A PKCS12 store's key and certificates (its own certificate first)."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, _password(password))
    except ValueError:
        if not password:
            raise ConfigError(f"{option}={path!r} cannot be read without a password (or is no PKCS12 file)",
                              fix=f"set {password_option} to the store's password") from None
        raise ConfigError(f"{option}={path!r} cannot be read: {password_option} is not its password, or the file "
                          "is no PKCS12 keystore",
                          fix=f"check {password_option} (keytool -list -keystore {path} asks for it), and that "
                              f"{option} names a PKCS12 (.p12) or PEM file") from None
    return key, ([cert] if cert is not None else []) + list(extra)


def _pem_certificates(data: bytes, path: str, option: str) -> list[x509.Certificate]:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ConfigError(f"{option}={path!r} holds no readable PEM certificate",
                          fix="give a file with -----BEGIN CERTIFICATE----- blocks (or a PKCS12 store)") from None


def read_certificates(path: str, option: str, password: str | None = None,
                      password_option: str = "") -> list[x509.Certificate]:
    """Certificates from a truststore (PKCS12), a PEM file (one or more) or a DER certificate."""
    from cryptography import x509

    data = _read(path, option)
    _refuse_java_store(data, path, option)
    if _pem(data):
        return _pem_certificates(data, path, option)
    try:
        return [x509.load_der_x509_certificate(data)]
    except ValueError:
        pass
    _, certs = _pkcs12(data, password, path, option, password_option or f"{option}.password")
    if not certs:
        raise ConfigError(f"{option}={path!r} holds no certificate",
                          fix="import the CA certificate: keytool -importcert -file ca.pem -keystore "
                              f"{path} -storetype PKCS12")
    return certs


def read_private_key(path: str, option: str, password: str | None, password_option: str) -> PrivateKeyTypes:
    """A private key from a PEM file (PKCS-8 or traditional, encrypted or not) or a PKCS-8 DER file
    (pgjdbc's .pk8), decrypted with ``password`` when it is encrypted."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    data = _read(path, option)
    load = serialization.load_pem_private_key if _pem(data) else serialization.load_der_private_key
    try:
        try:
            return load(data, _password(password))
        except TypeError as exc:
            if "not encrypted" not in str(exc):
                raise ConfigError(f"{option}={path!r} is encrypted", fix=f"set {password_option} to its password") \
                    from None
            return load(data, None)  # a password for a key that is not encrypted: unused, as Java does
    except ValueError:
        raise ConfigError(f"{option}={path!r} cannot be read: {password_option} is not its password, or the file "
                          "is no private key (PEM, or PKCS-8 DER)",
                          fix=f"check {password_option} and {option}") from None
    except UnsupportedAlgorithm as exc:
        raise ConfigError(f"{option}={path!r} is encrypted in a way cdc cannot read: {exc}",
                          fix=f"encrypt it again with PBES2: openssl pkcs8 -topk8 -v2 aes-256-cbc -in {path} "
                              f"-out key.pem, and name key.pem in {option}") from None


def read_keystore(path: str, option: str, password: str | None, password_option: str) -> Identity:
    """The client's key and certificates from a keystore (PKCS12) or a PEM file holding both."""
    data = _read(path, option)
    _refuse_java_store(data, path, option)
    if _pem(data):
        certs = _pem_certificates(data, path, option)
        key = read_private_key(path, option, password, password_option)
    else:
        found, certs = _pkcs12(data, password, path, option, password_option)
        if found is None:
            raise ConfigError(f"{option}={path!r} holds no private key (a truststore?)",
                              fix=f"name the keystore with the client's key and certificate in {option}")
        key = found
    if not certs:
        raise ConfigError(f"{option}={path!r} holds no certificate for its key",
                          fix="put the client certificate beside the key in the keystore")
    return Identity(key, tuple(certs))


# ---- handing on --------------------------------------------------------------------------------

def pem(certs: Sequence[x509.Certificate]) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def encrypted_key(key: PrivateKeyTypes) -> tuple[bytes, str]:
    """The key as encrypted PKCS-8 PEM, and the password made for it (so that no key is ever written in
    clear, whatever the user's file was)."""
    from cryptography.hazmat.primitives import serialization

    password = secrets.token_urlsafe(24)
    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.BestAvailableEncryption(password.encode()))
    return data, password


_FOLDER: Path | None = None


def _folder() -> Path:
    """This process's private folder (0700), removed when it exits."""
    global _FOLDER
    if _FOLDER is None or not _FOLDER.is_dir():
        _FOLDER = Path(tempfile.mkdtemp(prefix="cdc-tls-"))
        atexit.register(shutil.rmtree, _FOLDER, True)
    return _FOLDER


def private_file(name: str, data: bytes) -> Path:
    """``data`` in a new file of the private folder, readable by this user only (0600)."""
    path = _folder() / f"{secrets.token_hex(6)}-{name}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path

