"""Secrets stay secret: passwords from files and Kafka Connect's config providers, masked whatever the
property's spelling, never in a log; files cdc writes readable by their owner only."""
from __future__ import annotations

import logging
import re
import stat
from pathlib import Path

import pytest

from cdc.config import CORE_OPTIONS, SECRET_MASK, Config, parse_properties
from cdc.core.errors import ConfigError
from cdc.core.records import SinkRecord
from cdc.core.schema_history import FileSchemaHistory
from cdc.sinks.files import FileSink

FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"
ENV = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
DIRECTORY = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"


def test_connect_config_providers_resolve_references(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "db.properties").write_text("password=s3cr=t\nuser=cdc\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "kafka-pass").write_text("k-pass")
    monkeypatch.setenv("DB_HOST", "db.example")
    config = Config({"config.providers": "file,env,dir", "config.providers.file.class": FILE,
                     "config.providers.env.class": ENV, "config.providers.dir.class": DIRECTORY,
                     "database.password": "${file:" + str(tmp_path / "db.properties") + ":password}",
                     "database.user": "${file:" + str(tmp_path / "db.properties") + ":user}",
                     "database.hostname": "${env:DB_HOST}",
                     "kafka.sasl.password": "${dir:" + str(tmp_path / "secrets") + ":kafka-pass}",
                     "topic.prefix": "${other:x}"})  # not a declared provider: left as it is
    assert config.properties["database.password"] == "s3cr=t" and config.properties["database.user"] == "cdc"
    assert config.properties["database.hostname"] == "db.example"
    assert config.properties["kafka.sasl.password"] == "k-pass" and config.properties["topic.prefix"] == "${other:x}"


def test_unresolvable_references_name_the_property_not_a_value(tmp_path: Path) -> None:
    base = {"config.providers": "file", "config.providers.file.class": FILE}
    (tmp_path / "db.properties").write_text("user=cdc\n")
    with pytest.raises(ConfigError, match="database.password's reference .* has no key 'password'"):
        Config({**base, "database.password": "${file:" + str(tmp_path / "db.properties") + ":password}"})
    with pytest.raises(ConfigError, match="cannot read .*missing"):
        Config({**base, "database.password": "${file:" + str(tmp_path / "missing") + ":password}"})
    with pytest.raises(ConfigError, match="not a config provider cdc has"):
        Config({"config.providers": "vault", "config.providers.vault.class": "com.example.Vault"})


def test_password_file(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("p@ss word\n")
    assert Config({"database.password.file": str(tmp_path / "pw")}).properties["database.password"] == "p@ss word"
    with pytest.raises(ConfigError, match="both database.password and database.password.file"):
        Config({"database.password.file": str(tmp_path / "pw"), "database.password": "x"})


def test_misspelled_secret_keys_are_masked_and_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    config = Config({"topic.prefix": "shop", "database.pasword": "LeakMe_1", "database.passwd": "LeakMe_2",
                     "kafka.ssl.keystore.key": "LeakMe_3", "message.key.columns": "public.t:id"}).declare(CORE_OPTIONS)
    with caplog.at_level(logging.DEBUG):
        config.validate()
        logging.getLogger("cdc").info("configuration: %s", config.masked())
    assert "LeakMe" not in caplog.text and "LeakMe" not in repr(config)
    assert config.masked()["message.key.columns"] == "public.t:id"  # not a secret


def test_a_property_set_twice_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        props = parse_properties("a=1\nb=2\na=3\n", "shop.properties")
    assert props == {"a": "3", "b": "2"}
    assert "shop.properties line 3 sets a again: the last value is used" in caplog.text


def test_files_are_created_for_their_owner_only(tmp_path: Path) -> None:
    sink = FileSink(Config({"sink.files.directory": str(tmp_path / "out")}))
    sink.write([SinkRecord("t", b"1", b"2")])
    sink.close()
    assert stat.S_IMODE((tmp_path / "out" / "t.jsonl").stat().st_mode) == 0o600
    shared = FileSink(Config({"sink.files.directory": str(tmp_path / "shared"), "sink.files.mode": "644"}))
    shared.write([SinkRecord("t", b"1", b"2")])
    shared.close()
    assert stat.S_IMODE((tmp_path / "shared" / "t.jsonl").stat().st_mode) == 0o644
    history = FileSchemaHistory(tmp_path / "history.jsonl")
    history.record({"ddl": "CREATE TABLE t (id int)"})
    assert stat.S_IMODE((tmp_path / "history.jsonl").stat().st_mode) == 0o600
    with pytest.raises(ConfigError, match="sink.files.mode"):
        Config({"sink.files.mode": "rw"}).declare(FileSink.options).validate()


def test_debeziums_default_sanitize_pattern_is_within_cdcs_own_rule() -> None:
    """Every property name Debezium's default custom.sanitize.pattern hides, cdc hides without being told."""
    from cdc.core.debezium_options import OPTIONS

    default = OPTIONS["io.debezium.connector.postgresql.PostgresConnector"]["custom.sanitize.pattern"][0]
    names = ["a.secret", "database.password", "x.sasl.jaas.config", "schema.registry.basic.auth.user.info",
             "registry.auth.client-secret", "gcp.credentials.json", "db.connectionstring", "db.connection.string"]
    assert all(re.fullmatch(default, n) for n in names)
    shown = Config({n: "value" for n in names}).masked()
    assert set(shown.values()) == {SECRET_MASK}


def test_custom_sanitize_pattern_hides_more_names() -> None:
    config = Config({"custom.sanitize.pattern": r".*\.tenant", "acme.tenant": "t-123", "acme.region": "eu"})
    assert config.masked()["acme.tenant"] == SECRET_MASK and config.masked()["acme.region"] == "eu"
