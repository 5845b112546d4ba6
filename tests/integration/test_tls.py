"""TLS to PostgreSQL and MariaDB as Debezium configures it, against servers of the tests' own, each with a CA made
here (tests/tls_certs.py) and started once per module: a PostgreSQL that takes only TLS connections with a client
certificate signed by that CA (hostssl, clientcert=verify-ca), and a MariaDB whose user is created REQUIRE X509.
A snapshot and a stream over TLS deliver their events, the server confirms the sessions are encrypted, and each
failing case (wrong CA, host name mismatch, no client certificate, wrong password, no TLS on the server) stops
the start with an error that names the cause and the fix."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import Encoding

from cdc.config import Config
from tests.conftest import ROOT
from tests.integration.harness import Pipeline
from tests.tls_certs import PASSWORD, Authority, write


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as(user: str, *command: str) -> list[str]:
    """``command`` run as ``user`` when we are root (the servers refuse to run as root), else as we are."""
    return ["runuser", "-u", user, "--", *command] if os.geteuid() == 0 else list(command)


def _chown(path: Path, user: str) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, user, user)
        for p in path.rglob("*"):
            shutil.chown(p, user, user)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tests' CA, a server certificate for localhost (only), a client certificate, another CA; their files."""
    out = tmp_path_factory.mktemp("tls")
    authority, other = Authority(), Authority("another CA")
    server = authority.issue("localhost", dns=("localhost",))
    client = authority.issue("postgres", client=True)
    stranger = other.issue("postgres", client=True)
    return {
        "authority": authority, "server": server, "client": client, "dir": out,
        "ca.pem": write(out / "ca.pem", authority.cert_pem()),
        "ca.der": write(out / "ca.der", authority.cert.public_bytes(Encoding.DER)),
        "other-ca.pem": write(out / "other-ca.pem", other.cert_pem()),
        "client.crt": write(out / "client.crt", client.cert_pem(), 0o644),
        "client.key": write(out / "client.key", client.key_pem(PASSWORD), 0o644),  # pgjdbc does not mind 0644
        "client.pk8": write(out / "client.pk8", client.key_der(PASSWORD)),
        "client.p12": write(out / "client.p12", authority.keystore(client)),
        "truststore.p12": write(out / "truststore.p12", authority.truststore()),
        "stranger.p12": write(out / "stranger.p12", other.keystore(stranger)),
        "stranger.crt": write(out / "stranger.crt", stranger.cert_pem()),
        "stranger.key": write(out / "stranger.key", stranger.key_pem()),
    }


def _server_files(ca: dict[str, Any], folder: Path, user: str) -> dict[str, str]:
    """The server's certificate, key and CA in ``folder``, readable by the server's ``user`` only."""
    files = {"cert": write(folder / "server.crt", ca["server"].cert_pem()),
             "key": write(folder / "server.key", ca["server"].key_pem()),
             "ca": write(folder / "ca.crt", ca["authority"].cert_pem())}
    _chown(folder, user)
    return files


# ---- PostgreSQL ----------------------------------------------------------------------------------------

def _pg_bin() -> Path:
    found = subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "bin"], capture_output=True, text=True)
    if found.returncode != 0 or not found.stdout.strip():
        pytest.skip("no PostgreSQL binaries: scripts/postgres.sh installs them (needs root)")
    return Path(found.stdout.strip())


@pytest.fixture(scope="module")
def pg_tls(pg_admin_dsn: str, ca: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A PostgreSQL of this module's own: TLS only, with a client certificate of the tests' CA."""
    bin_dir = _pg_bin()
    folder = ROOT / ".local" / f"tls-postgres-{uuid.uuid4().hex[:8]}"
    data, run = folder / "data", folder / "run"
    run.mkdir(parents=True)
    _chown(folder, "postgres")
    subprocess.run(_as("postgres", str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                       "-E", "UTF8", "--locale=C.UTF-8"), check=True, capture_output=True)
    files = _server_files(ca, data, "postgres")
    port = _free_port()
    with open(data / "postgresql.conf", "a") as conf:
        conf.write(f"port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{run}'\n"
                   "wal_level = logical\nmax_replication_slots = 10\nmax_wal_senders = 10\nfsync = off\n"
                   f"ssl = on\nssl_cert_file = '{files['cert']}'\nssl_key_file = '{files['key']}'\n"
                   f"ssl_ca_file = '{files['ca']}'\n")
    (data / "pg_hba.conf").write_text(
        "local all all trust\nlocal replication all trust\n"
        "hostssl all all 127.0.0.1/32 trust clientcert=verify-ca\n"
        "hostssl replication all 127.0.0.1/32 trust clientcert=verify-ca\n")
    _chown(folder, "postgres")
    subprocess.run(_as("postgres", str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"),
                       "-w", "-t", "60", "start"), check=True, capture_output=True)
    try:
        yield {"port": port, "socket": str(run), "dsn": f"host={run} port={port} user=postgres dbname=postgres"}
    finally:
        subprocess.run(_as("postgres", str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"),
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _pg_props(pg_tls: dict[str, Any], ca: dict[str, Any], **extra: str) -> dict[str, str]:
    return {"database.hostname": "localhost", "database.port": str(pg_tls["port"]), "database.user": "postgres",
            "database.dbname": "postgres", "database.sslmode": "verify-full", "database.sslrootcert": ca["ca.pem"],
            "database.sslcert": ca["client.crt"], "database.sslkey": ca["client.key"],
            "database.sslpassword": PASSWORD, **extra}


def _pg_sql(pg_tls: dict[str, Any], *statements: str, dbname: str = "postgres") -> list[Any]:
    """Statements over the server's socket (trust, no TLS); the last one's rows."""
    import psycopg

    rows: list[Any] = []
    with psycopg.connect(f"host={pg_tls['socket']} port={pg_tls['port']} user=postgres dbname={dbname}",
                         autocommit=True) as conn:
        for statement in statements:
            cur = conn.execute(statement)
            rows = cur.fetchall() if cur.description else []
    return rows


@pytest.fixture()
def pg_tls_db(pg_tls: dict[str, Any]) -> str:
    name = "t_" + uuid.uuid4().hex[:8]
    _pg_sql(pg_tls, f'CREATE DATABASE "{name}"')
    return name


@pytest.mark.postgres
@pytest.mark.parametrize("key", ["client.p12", "client.pk8"])
def test_pg_snapshot_and_stream_over_verified_tls(pg_tls: dict[str, Any], ca: dict[str, Any], pg_tls_db: str,
                                                  key: str, tmp_path: Path) -> None:
    """verify-full with the tests' CA and a client certificate (a PKCS12 key, as pgjdbc takes it, or a PKCS-8 DER
    one): the snapshot's and the stream's events arrive, and every session of the pipeline, the replication one
    included, is encrypted with that certificate (the server takes no other: hostssl, clientcert=verify-ca)."""
    _pg_sql(pg_tls, "CREATE TABLE items (id int PRIMARY KEY, name text)", "INSERT INTO items VALUES (1, 'before')",
            dbname=pg_tls_db)
    slot = "tls_" + uuid.uuid4().hex[:8]
    props = _pg_props(pg_tls, ca, **{"database.dbname": pg_tls_db, "database.sslkey": ca[key],
                                     "slot.name": slot, "slot.drop.on.stop": "true"})
    with Pipeline(props, tmp_path / "offsets.json") as p:
        p.wait_count(1, topic="dbz.public.items")
        p.wait_ready()
        _pg_sql(pg_tls, "INSERT INTO items VALUES (2, 'after')", dbname=pg_tls_db)
        got = p.wait_count(2, topic="dbz.public.items")
        sessions = _pg_sql(pg_tls, "SELECT a.backend_type, s.ssl, s.client_dn FROM pg_stat_activity a "
                                   "JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'cdc'")
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]) for r in got] == [
        ("r", {"id": 1, "name": "before"}), ("c", {"id": 2, "name": "after"})]
    assert {backend for backend, _, _ in sessions} >= {"client backend", "walsender"}, sessions
    assert all(ssl and dn == "/CN=postgres" for _, ssl, dn in sessions), sessions


def _pg_session(pg_tls: dict[str, Any], ca: dict[str, Any], **extra: str) -> tuple[Any, ...]:
    """(ssl, client_dn) of a session cdc's PostgreSQL source opens with these options."""
    from cdc.sources.postgres.config import POSTGRES_OPTIONS
    from cdc.sources.postgres.connection import ConnectionSettings

    settings = ConnectionSettings.from_config(Config(_pg_props(pg_tls, ca, **extra)).declare(POSTGRES_OPTIONS))
    with settings.connect() as conn:
        row = conn.execute("SELECT ssl, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()
    assert row is not None
    return tuple(row)


@pytest.mark.postgres
@pytest.mark.parametrize("extra", [
    {"database.sslrootcert": "ca.der"},  # DER, as pgjdbc reads it too
    {"database.sslkey": "client.key"},  # an encrypted PEM key that others may read: libpq alone would refuse it
    {"database.sslkey": "client.p12", "database.sslcert": ""},  # the certificate from the PKCS12 store
    {"database.sslmode": "verify-ca", "database.hostname": "127.0.0.1"},  # the chain alone: any host name
    {"database.sslmode": "require", "database.sslrootcert": "other-ca.pem"},  # pgjdbc does not verify here
], ids=["der-root", "pem-key", "p12-only", "verify-ca-by-ip", "require-unverified"])
def test_pg_certificate_files_as_pgjdbc_reads_them(pg_tls: dict[str, Any], ca: dict[str, Any],
                                                   extra: dict[str, str]) -> None:
    files = {name: ca.get(value, value) for name, value in extra.items()}
    assert _pg_session(pg_tls, ca, **files) == (True, "/CN=postgres")


@pytest.mark.postgres
def test_pg_spark_snapshot_reader_connects_over_tls(pg_tls: dict[str, Any], ca: dict[str, Any]) -> None:
    """Spark's parallel snapshot reads chunks through ADBC's libpq with the same conninfo (arrow_chunks)."""
    from cdc.sources.postgres.config import POSTGRES_OPTIONS
    from cdc.sources.postgres.connection import ConnectionSettings

    adbc = pytest.importorskip("adbc_driver_postgresql.dbapi")
    props = _pg_props(pg_tls, ca, **{"database.sslkey": ca["client.p12"], "database.sslcert": ""})
    settings = ConnectionSettings.from_config(Config(props).declare(POSTGRES_OPTIONS))
    with adbc.connect(settings.conninfo()) as conn, conn.cursor() as cur:
        cur.execute("SELECT ssl, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        assert cur.fetchall() == [(True, "/CN=postgres")]

def _run_cli(capsys: pytest.CaptureFixture[str], source: str, props: dict[str, str], tmp_path: Path) -> str:
    """The CLI in this process; its error output, checked as a user reads it: an error, its fix, no traceback."""
    from cdc import cli

    argv = [source, "--topic-prefix", "shop", "--output", str(tmp_path / "out")]
    for name, value in {"errors.max.retries": "0", "offset.storage.file.filename": str(tmp_path / "o.json"),
                        **props}.items():
        argv += ["--set", f"{name}={value}"]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err and "cdc: error: " in err and "\n  fix: " in err, err
    return err


@pytest.mark.postgres
@pytest.mark.parametrize(("extra", "expected"), [
    ({"database.sslrootcert": "other-ca.pem"}, ("not signed by a CA of database.sslrootcert", "set database."
                                                                                              "sslrootcert")),
    ({"database.hostname": "127.0.0.1"}, ("not issued for the name", "database.sslmode=verify-ca")),
    ({"database.sslcert": "", "database.sslkey": ""}, ("asks for a client certificate", "database.sslcert")),
    ({"database.sslcert": "stranger.crt", "database.sslkey": "stranger.key"}, ("refused the client certificate",
                                                                               "ssl_ca_file")),
    ({"database.sslpassword": "wrong"}, ("database.sslpassword is not its password", "check database.sslpassword")),
    ({"database.sslmode": "disable"}, ("no encryption", "database.sslmode=require")),
], ids=["wrong-ca", "host-mismatch", "no-client-cert", "unknown-client-ca", "wrong-key-password", "no-tls"])
def test_pg_tls_failures_name_cause_and_fix(pg_tls: dict[str, Any], ca: dict[str, Any], extra: dict[str, str],
                                            expected: tuple[str, str], capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    files = {name: ca.get(value, value) for name, value in extra.items()}
    props = {**_pg_props(pg_tls, ca, **files), "slot.name": "never_" + uuid.uuid4().hex[:8]}
    err = _run_cli(capsys, "postgres", props, tmp_path)
    assert all(text in err for text in expected), err
    assert PASSWORD not in err


@pytest.mark.postgres
def test_pg_require_on_a_server_without_tls(pg_db: dict[str, str], capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    """The project's own server, which has no TLS."""
    props = {k: v for k, v in pg_db.items() if k.startswith("database.")}
    err = _run_cli(capsys, "postgres", {**props, "database.sslmode": "require",
                                        "slot.name": "never_" + uuid.uuid4().hex[:8]}, tmp_path)
    assert "offers no SSL" in err and "database.sslmode" in err, err


# ---- MariaDB -------------------------------------------------------------------------------------------

def _mariadbd() -> str:
    found = shutil.which("mariadbd") or ("/usr/sbin/mariadbd" if Path("/usr/sbin/mariadbd").exists() else None)
    if found is None or shutil.which("mariadb-install-db") is None:
        pytest.skip("no MariaDB binaries: scripts/mariadb.sh installs them (needs root)")
    return found


def _root_sql(socket_path: str, *statements: str) -> list[Any]:
    import pymysql

    conn = pymysql.connect(unix_socket=socket_path, user="root", autocommit=True, ssl_disabled=True)
    try:
        rows: list[Any] = []
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
                rows = list(cur.fetchall())
        return rows
    finally:
        conn.close()


@pytest.fixture(scope="module")
def maria_tls(mysql_server: dict[str, Any], ca: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A MariaDB of this module's own with TLS: user cdc is REQUIRE X509 (no TLS, no client certificate: no
    login), user plain may log in without TLS."""
    mariadbd = _mariadbd()
    folder = ROOT / ".local" / f"tls-mariadb-{uuid.uuid4().hex[:8]}"
    data = folder / "data"
    data.mkdir(parents=True)
    files = _server_files(ca, folder, "mysql")
    _chown(folder, "mysql")
    user = ["--user=mysql"] if os.geteuid() == 0 else []
    subprocess.run(["mariadb-install-db", "--no-defaults", *user, f"--datadir={data}",
                    "--auth-root-authentication-method=normal"], check=True, capture_output=True)
    port, sock = _free_port(), str(folder / "mysqld.sock")
    server = subprocess.Popen(
        [mariadbd, "--no-defaults", *user, f"--datadir={data}", f"--port={port}", "--bind-address=127.0.0.1",
         f"--socket={sock}", f"--log-error={folder / 'server.log'}", f"--pid-file={folder / 'mariadbd.pid'}",
         "--server-id=1", f"--log-bin={data / 'bin'}", "--binlog-format=ROW", "--binlog-row-image=FULL",
         f"--ssl-ca={files['ca']}", f"--ssl-cert={files['cert']}", f"--ssl-key={files['key']}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _root_sql(sock, "SELECT 1")
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError(f"MariaDB did not start: {(folder / 'server.log').read_text()}") from None
                time.sleep(0.2)
        grants = "SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, REPLICATION CLIENT ON *.*"
        for host in ("127.0.0.1", "localhost"):
            _root_sql(sock, f"CREATE USER 'cdc'@'{host}' IDENTIFIED BY 'cdc' REQUIRE X509",
                      f"GRANT {grants} TO 'cdc'@'{host}'", f"CREATE USER 'plain'@'{host}' IDENTIFIED BY 'plain'",
                      f"GRANT {grants} TO 'plain'@'{host}'")
        yield {"port": port, "socket": sock}
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def maria_db(maria_tls: dict[str, Any]) -> str:
    name = "tls_" + uuid.uuid4().hex[:8]
    _root_sql(maria_tls["socket"], f"CREATE DATABASE {name}")
    return name


def _maria_props(maria_tls: dict[str, Any], ca: dict[str, Any], **extra: str) -> dict[str, str]:
    return {"database.hostname": "localhost", "database.port": str(maria_tls["port"]), "database.user": "cdc",
            "database.password": "cdc", "database.ssl.mode": "verify_identity",
            "database.ssl.truststore": ca["truststore.p12"], "database.ssl.truststore.password": PASSWORD,
            "database.ssl.keystore": ca["client.p12"], "database.ssl.keystore.password": PASSWORD, **extra}


def _cipher(props: dict[str, str]) -> str:
    """Ssl_cipher of a session cdc's MySQL source opens with these options ('' : not encrypted)."""
    from cdc.sources.mysql.config import MYSQL_OPTIONS
    from cdc.sources.mysql.connection import ConnectionSettings

    conn = ConnectionSettings.from_config(Config(props).declare(MYSQL_OPTIONS)).connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            row = cur.fetchone()
        return str(row[1]) if row else ""
    finally:
        conn.close()


@pytest.mark.mysql
@pytest.mark.parametrize("connector", [{}, {"connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
                                            "database.ssl.mode": "verify-full"}], ids=["mysql", "mariadb"])
def test_mariadb_snapshot_and_stream_over_verified_tls(maria_tls: dict[str, Any], ca: dict[str, Any], maria_db: str,
                                                       connector: dict[str, str], tmp_path: Path) -> None:
    """verify_identity (the MariaDB connector's verify-full) with the tests' CA in a PKCS12 truststore and the
    client's key in a PKCS12 keystore: the snapshot's and the binlog's events arrive over connections the
    server takes only with TLS and that certificate (REQUIRE X509), and it reports the session encrypted."""
    from cdc.sources.mysql.source import MySqlSource

    _root_sql(maria_tls["socket"], f"CREATE TABLE {maria_db}.items (id int PRIMARY KEY, name varchar(20))",
              f"INSERT INTO {maria_db}.items VALUES (1, 'before')")
    props = {**_maria_props(maria_tls, ca, **connector), "database.include.list": maria_db,
             "database.server.id": str(5400 + uuid.uuid4().int % 1000),
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")}
    topic = f"dbz.{maria_db}.items"
    with Pipeline(props, tmp_path / "offsets.json", source_cls=MySqlSource) as p:
        p.wait_count(1, topic=topic)
        p.wait_ready()
        _root_sql(maria_tls["socket"], f"INSERT INTO {maria_db}.items VALUES (2, 'after')")
        got = p.wait_count(2, topic=topic)
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]) for r in got] == [
        ("r", {"id": 1, "name": "before"}), ("c", {"id": 2, "name": "after"})]
    assert _cipher(_maria_props(maria_tls, ca, **connector)) != ""


@pytest.mark.mysql
def test_mariadb_modes_and_defaults(maria_tls: dict[str, Any], ca: dict[str, Any]) -> None:
    """verify_ca checks the chain and not the host name; Debezium's defaults: the MySQL connector's preferred
    encrypts (the server offers TLS, unverified), the MariaDB connector's disable does not; PEM files serve as
    keystore and truststore too."""
    by_ip = {"database.hostname": "127.0.0.1"}
    assert _cipher(_maria_props(maria_tls, ca, **by_ip, **{"database.ssl.mode": "verify_ca"})) != ""
    assert _cipher(_maria_props(maria_tls, ca, **by_ip, **{"database.ssl.mode": "verify-ca"})) != ""
    plain = {"database.user": "plain", "database.password": "plain"}
    assert _cipher({**_maria_props(maria_tls, ca, **plain), "database.ssl.mode": ""}) != ""
    mariadb = {"connector.class": "io.debezium.connector.mariadb.MariaDbConnector", "database.ssl.mode": ""}
    assert _cipher({**_maria_props(maria_tls, ca, **plain), **mariadb}) == ""
    assert _cipher(_maria_props(maria_tls, ca, **plain, **{"database.ssl.mode": "disabled"})) == ""
    pem = {"database.ssl.truststore": ca["ca.pem"], "database.ssl.truststore.password": "",
           "database.ssl.keystore": _pem_keystore(ca), "database.ssl.keystore.password": ""}
    assert _cipher(_maria_props(maria_tls, ca, **pem)) != ""


def _pem_keystore(ca: dict[str, Any]) -> str:
    path = Path(ca["dir"]) / "client-keystore.pem"
    if not path.exists():
        write(path, ca["client"].key_pem() + ca["client"].cert_pem())
    return str(path)


@pytest.mark.mysql
@pytest.mark.parametrize(("extra", "expected"), [
    ({"database.ssl.truststore": "other-ca.pem", "database.ssl.truststore.password": ""},
     ("not signed by a CA that database.ssl.truststore holds", "keytool -importcert")),
    ({"database.hostname": "127.0.0.1"}, ("not issued for the name '127.0.0.1'", "database.ssl.mode=verify_ca")),
    ({"database.ssl.keystore": "", "database.ssl.keystore.password": ""}, ("login to", "database.ssl.keystore")),
    # TLS 1.3: the server's alert may come after the client's first write fails: either message, both naming the fix
    ({"database.ssl.keystore": "stranger.p12"}, ("client certificate", "database.ssl.keystore a key and certificate "
                                                                       "signed by a CA in the server's ssl_ca")),
    ({"database.ssl.keystore.password": "wrong"}, ("database.ssl.keystore.password is not its password",
                                                   "check database.ssl.keystore.password")),
    ({"database.ssl.truststore": "store.jks"}, ("is a JKS keystore", "keytool -importkeystore -srckeystore")),
], ids=["wrong-ca", "host-mismatch", "no-client-cert", "unknown-client-ca", "wrong-keystore-password", "jks"])
def test_mariadb_tls_failures_name_cause_and_fix(maria_tls: dict[str, Any], ca: dict[str, Any],
                                                 extra: dict[str, str], expected: tuple[str, str],
                                                 capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    jks = Path(ca["dir"]) / "store.jks"
    if not jks.exists():
        write(jks, b"\xfe\xed\xfe\xed" + bytes(60))  # a JKS store's magic number is all cdc looks at
    files = {name: ca.get(value, value) if value != "store.jks" else str(jks) for name, value in extra.items()}
    props = {**_maria_props(maria_tls, ca, **files), "database.include.list": "none",
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")}
    err = _run_cli(capsys, "mysql", props, tmp_path)
    assert all(text in err for text in expected), err
    assert PASSWORD not in err


@pytest.mark.mysql
def test_mariadb_required_on_a_server_without_tls(mysql_server: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """The project's own server, which has no TLS (scripts/mariadb.sh starts it without certificates)."""
    import pymysql

    with pymysql.connect(**mysql_server, ssl_disabled=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@have_ssl")
        row = cur.fetchone()
    if row and row[0] == "YES":
        pytest.skip("this server has TLS")
    props = {"database.hostname": str(mysql_server["host"]), "database.port": str(mysql_server["port"]),
             "database.user": str(mysql_server["user"]), "database.password": str(mysql_server["password"]),
             "database.ssl.mode": "required", "database.include.list": "none",
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")}
    err = _run_cli(capsys, "mysql", props, tmp_path)
    assert "offers no TLS" in err and "database.ssl.mode=required" in err, err

