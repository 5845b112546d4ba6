"""TLS material as Debezium's configurations name it (cdc.core.tls), and what each source makes of it: Java
keystores, pgjdbc's key formats, the connectors' ssl modes and defaults, files that never hold a key in clear."""
from __future__ import annotations

import shutil
import ssl
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, load_pem_private_key

from cdc.config import Config
from cdc.core import tls
from cdc.core.errors import ConfigError
from cdc.core.option_surface import MARIADB, MYSQL, POSTGRES, rows, treatment
from tests.tls_certs import PASSWORD, Authority, write


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("tls")
    authority = Authority()
    client = authority.issue("cdc", client=True)
    return {
        "authority": authority, "client": client, "dir": out,
        "ca.pem": write(out / "ca.pem", authority.cert_pem()),
        "ca.der": write(out / "ca.der", authority.cert.public_bytes(Encoding.DER)),
        "truststore.p12": write(out / "truststore.p12", authority.truststore()),
        "client.p12": write(out / "client.p12", authority.keystore(client)),
        "client.crt": write(out / "client.crt", client.cert_pem()),
        "client.key": write(out / "client.key", client.key_pem(PASSWORD), 0o644),
        "plain.key": write(out / "plain.key", client.key_pem()),
        "client.pk8": write(out / "client.pk8", client.key_der(PASSWORD)),
        "store.jks": write(out / "store.jks", b"\xfe\xed\xfe\xed" + bytes(40)),
        "store.jceks": write(out / "store.jceks", b"\xce\xce\xce\xce" + bytes(40)),
    }


def _same_key(a: Any, b: Any) -> bool:
    return bool(a.public_key().public_numbers() == b.public_key().public_numbers())


# ---- reading -----------------------------------------------------------------------------------------

def test_a_pkcs12_keystore_gives_the_key_and_its_chain(files: dict[str, Any]) -> None:
    identity = tls.read_keystore(files["client.p12"], "database.ssl.keystore", PASSWORD,
                                 "database.ssl.keystore.password")
    assert _same_key(identity.key, files["client"].key)
    assert identity.chain[0] == files["client"].cert and identity.chain[1] == files["authority"].cert


@pytest.mark.parametrize(("password", "says"), [("wrong", "database.ssl.keystore.password is not its password"),
                                                (None, "cannot be read without a password")])
def test_a_wrong_or_missing_keystore_password_is_a_config_error(files: dict[str, Any], password: str | None,
                                                                says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        tls.read_keystore(files["client.p12"], "database.ssl.keystore", password, "database.ssl.keystore.password")
    assert says in str(raised.value) and "database.ssl.keystore.password" in str(raised.value.fix)
    assert PASSWORD not in str(raised.value)


@pytest.mark.parametrize(("name", "kind"), [("store.jks", "JKS"), ("store.jceks", "JCEKS")])
def test_a_java_only_keystore_is_refused_with_the_keytool_command(files: dict[str, Any], name: str,
                                                                  kind: str) -> None:
    with pytest.raises(ConfigError) as raised:
        tls.read_certificates(files[name], "database.ssl.truststore", PASSWORD)
    assert f"is a {kind} keystore" in str(raised.value)
    assert f"keytool -importkeystore -srckeystore {files[name]} -destkeystore" in str(raised.value.fix)
    assert "-deststoretype PKCS12" in str(raised.value.fix)


@pytest.mark.parametrize("name", ["ca.pem", "ca.der", "truststore.p12"])
def test_ca_certificates_from_pem_der_or_a_truststore(files: dict[str, Any], name: str) -> None:
    assert tls.read_certificates(files[name], "database.ssl.truststore", PASSWORD) == [files["authority"].cert]


def test_a_missing_file_names_the_option(files: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="database.sslrootcert='/nowhere/ca.pem' cannot be read"):
        tls.read_certificates("/nowhere/ca.pem", "database.sslrootcert")


@pytest.mark.parametrize(("name", "password"), [("client.key", PASSWORD), ("client.pk8", PASSWORD),
                                                ("plain.key", None), ("plain.key", PASSWORD)])
def test_private_keys_as_pgjdbc_reads_them(files: dict[str, Any], name: str, password: str | None) -> None:
    """Encrypted PEM, encrypted PKCS-8 DER (.pk8); a password given for a key that needs none is unused."""
    key = tls.read_private_key(files[name], "database.sslkey", password, "database.sslpassword")
    assert _same_key(key, files["client"].key)


def test_an_encrypted_key_without_its_password(files: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="is encrypted") as raised:
        tls.read_private_key(files["client.pk8"], "database.sslkey", None, "database.sslpassword")
    assert "database.sslpassword" in str(raised.value.fix)


def test_keys_are_written_encrypted_into_a_private_folder(files: dict[str, Any]) -> None:
    data, password = tls.encrypted_key(files["client"].key)
    path = tls.private_file("k.pem", data)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert b"ENCRYPTED PRIVATE KEY" in path.read_bytes() and password != PASSWORD
    assert _same_key(load_pem_private_key(path.read_bytes(), password.encode()), files["client"].key)


# ---- stores made by Java's keytool -----------------------------------------------------------------------

def _keytool(*args: str) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def keytool_stores(files: dict[str, Any]) -> dict[str, str]:
    if shutil.which("keytool") is None:
        pytest.skip("no Java keytool (apt-get install default-jdk-headless)")
    out = Path(files["dir"]) / "keytool"
    out.mkdir()
    stores = {"keystore": str(out / "keystore.p12"), "truststore": str(out / "truststore.p12"),
              "jks": str(out / "truststore.jks")}
    _keytool("-genkeypair", "-alias", "client", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=cdc",
             "-validity", "2", "-storetype", "PKCS12", "-keystore", stores["keystore"], "-storepass", PASSWORD)
    for store, kind in ((stores["truststore"], "PKCS12"), (stores["jks"], "JKS")):
        _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", files["ca.pem"], "-storetype", kind,
                 "-keystore", store, "-storepass", PASSWORD)
    return stores


def test_stores_made_by_keytool(files: dict[str, Any], keytool_stores: dict[str, str]) -> None:
    """What Debezium's users have: a keytool keystore and truststore (PKCS12) read; its JKS refused."""
    identity = tls.read_keystore(keytool_stores["keystore"], "database.ssl.keystore", PASSWORD, "p")
    assert identity.chain[0].subject.rfc4514_string() == "CN=cdc"
    trusted = tls.read_certificates(keytool_stores["truststore"], "database.ssl.truststore", PASSWORD)
    assert trusted == [files["authority"].cert]
    with pytest.raises(ConfigError, match="is a JKS keystore"):
        tls.read_certificates(keytool_stores["jks"], "database.ssl.truststore", PASSWORD)


# ---- MySQL / MariaDB --------------------------------------------------------------------------------------

def _mysql_tls(**properties: str) -> Any:
    from cdc.sources.mysql.config import MYSQL_OPTIONS
    from cdc.sources.mysql.tls import Tls

    return Tls.from_config(Config(properties).declare(MYSQL_OPTIONS))


def test_debeziums_default_mode_per_connector() -> None:
    """MySQL's connector prefers TLS; MariaDB's leaves it off (connector.class says which)."""
    assert _mysql_tls().level == "preferred"
    assert _mysql_tls(**{"connector.class": MYSQL}).level == "preferred"
    mariadb = _mysql_tls(**{"connector.class": MARIADB})
    assert (mariadb.mode, mariadb.level, mariadb.context) == ("disable", "disabled", None)


@pytest.mark.parametrize(("mode", "level", "verify", "host_name"), [
    ("preferred", "preferred", ssl.CERT_NONE, False), ("required", "required", ssl.CERT_NONE, False),
    ("trust", "required", ssl.CERT_NONE, False), ("verify_ca", "verify_ca", ssl.CERT_REQUIRED, False),
    ("verify-ca", "verify_ca", ssl.CERT_REQUIRED, False),
    ("verify_identity", "verify_identity", ssl.CERT_REQUIRED, True),
    ("verify-full", "verify_identity", ssl.CERT_REQUIRED, True),
])
def test_each_mode_checks_what_debezium_checks(files: dict[str, Any], mode: str, level: str, verify: int,
                                               host_name: bool) -> None:
    got = _mysql_tls(**{"database.ssl.mode": mode, "database.ssl.truststore": files["truststore.p12"],
                        "database.ssl.truststore.password": PASSWORD, "database.ssl.keystore": files["client.p12"],
                        "database.ssl.keystore.password": PASSWORD})
    assert got.level == level and got.client_certificate
    assert (got.context.verify_mode, got.context.check_hostname) == (verify, host_name)
    if level.startswith("verify"):
        assert [c["subject"] for c in got.context.get_ca_certs()] == [((("commonName", "cdc test CA"),),)]
    assert not list(tls._folder().glob("*client.pem"))  # the key file is gone once loaded


# ---- PostgreSQL -------------------------------------------------------------------------------------------

def _libpq(**properties: str) -> dict[str, str]:
    from cdc.sources.postgres.config import POSTGRES_OPTIONS
    from cdc.sources.postgres.tls import libpq_params

    return libpq_params(Config(properties).declare(POSTGRES_OPTIONS))


def test_libpq_parameters_follow_pgjdbc(files: dict[str, Any]) -> None:
    from cdc.sources.postgres.tls import NO_ROOT_CERT

    assert _libpq() == {"keepalives": "1", "sslrootcert": NO_ROOT_CERT}  # prefer: pgjdbc checks nothing
    assert _libpq(**{"database.sslmode": "disable", "database.tcpKeepAlive": "false"}) == {"keepalives": "0"}
    assert _libpq(**{"database.sslmode": "require", "database.sslrootcert": files["ca.pem"]})["sslrootcert"] \
        == NO_ROOT_CERT
    assert _libpq(**{"database.sslmode": "verify-ca", "database.sslrootcert": files["ca.pem"]})["sslrootcert"] \
        == files["ca.pem"]  # PEM: libpq reads the file itself
    root = _libpq(**{"database.sslmode": "verify-full", "database.sslrootcert": files["ca.der"]})["sslrootcert"]
    assert root != files["ca.der"] and b"BEGIN CERTIFICATE" in Path(root).read_bytes()


@pytest.mark.parametrize("key", ["client.p12", "client.pk8", "client.key"])
def test_the_client_key_reaches_libpq_encrypted(files: dict[str, Any], key: str) -> None:
    got = _libpq(**{"database.sslmode": "verify-full", "database.sslcert": files["client.crt"],
                    "database.sslkey": files[key], "database.sslpassword": PASSWORD})
    written = Path(got["sslkey"])
    assert stat.S_IMODE(written.stat().st_mode) == 0o600 and got["sslpassword"] != PASSWORD
    assert _same_key(load_pem_private_key(written.read_bytes(), got["sslpassword"].encode()), files["client"].key)
    certificate = Path(got["sslcert"]).read_bytes()
    assert files["client"].cert_pem() in certificate


def test_passwords_are_secrets_and_the_options_are_honoured() -> None:
    from cdc.sources.mysql.config import MYSQL_OPTIONS
    from cdc.sources.postgres.config import POSTGRES_OPTIONS

    masked = Config({"database.sslpassword": "a", "database.ssl.keystore.password": "b",
                     "database.ssl.truststore.password": "c"}).declare(POSTGRES_OPTIONS).declare(MYSQL_OPTIONS)
    assert set(masked.masked().values()) == {"********"}
    for connector, declared in ((POSTGRES, POSTGRES_OPTIONS), (MYSQL, MYSQL_OPTIONS), (MARIADB, MYSQL_OPTIONS)):
        names = {o.name for o in declared}
        tls_rows = [r for r in rows(connector, {o.name: o for o in declared})
                    if r.name.startswith(("database.ssl", "database.tcpKeepAlive"))]
        assert {r.status for r in tls_rows if r.name != "database.sslfactory"} == {"honoured"}, tls_rows
        assert all(treatment(connector, r.name) is None for r in tls_rows if r.name in names)
        assert all(not r.note for r in tls_rows if r.name == "database.ssl.mode"), tls_rows  # defaults agree
