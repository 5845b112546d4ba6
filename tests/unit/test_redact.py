"""Credentials in DDL text are masked before the text is stored, emitted or logged."""
from __future__ import annotations

import pytest

from cdc.core.redact import redact_secrets

CASES = [
    ("CREATE USER 'u'@'%' IDENTIFIED BY 'LeakMe_123'", "CREATE USER 'u'@'%' IDENTIFIED BY '***'"),
    ("ALTER USER u@localhost IDENTIFIED BY 'Le''ak\\'Me'", "ALTER USER u@localhost IDENTIFIED BY '***'"),
    ("CREATE USER u IDENTIFIED BY PASSWORD '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'",
     "CREATE USER u IDENTIFIED BY PASSWORD '***'"),
    ("CREATE USER u IDENTIFIED WITH caching_sha2_password BY 'x1'", "CREATE USER u IDENTIFIED WITH "
                                                                     "caching_sha2_password BY '***'"),
    ("CREATE USER u IDENTIFIED WITH mysql_native_password AS '*ABC'", "CREATE USER u IDENTIFIED WITH "
                                                                       "mysql_native_password AS '***'"),
    ("CREATE USER u IDENTIFIED VIA ed25519 USING PASSWORD('x2') OR unix_socket",
     "CREATE USER u IDENTIFIED VIA ed25519 USING PASSWORD('***') OR unix_socket"),
    ("CREATE USER u IDENTIFIED VIA mysql_native_password USING '*ABC'",
     "CREATE USER u IDENTIFIED VIA mysql_native_password USING '***'"),
    ("SET PASSWORD FOR 'u'@'%' = PASSWORD('x3')", "SET PASSWORD FOR 'u'@'%' = PASSWORD('***')"),
    ("SET PASSWORD = '*ABC'", "SET PASSWORD = '***'"),
    ("SET PASSWORD FOR u = OLD_PASSWORD(\"x4\")", "SET PASSWORD FOR u = OLD_PASSWORD('***')"),
    ("GRANT SELECT ON *.* TO u IDENTIFIED BY 'x5'", "GRANT SELECT ON *.* TO u IDENTIFIED BY '***'"),
    ("CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'r', PASSWORD 'x6', HOST 'h')",
     "CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'r', PASSWORD '***', HOST 'h')"),
    ("CHANGE MASTER TO MASTER_USER='r', MASTER_PASSWORD='x7'", "CHANGE MASTER TO MASTER_USER='r', "
                                                                "MASTER_PASSWORD='***'"),
    ("CREATE ROLE app LOGIN ENCRYPTED PASSWORD 'x8' VALID UNTIL '2030-01-01'",
     "CREATE ROLE app LOGIN ENCRYPTED PASSWORD '***' VALID UNTIL '2030-01-01'"),
]


@pytest.mark.parametrize(("sql", "masked"), CASES)
def test_credentials_are_masked(sql: str, masked: str) -> None:
    assert redact_secrets(sql) == masked


@pytest.mark.parametrize("sql", [
    "CREATE TABLE t (id int, pw varchar(10) DEFAULT 'by', c text COMMENT 'IDENTIFIED BY nothing')",
    "ALTER TABLE users ADD COLUMN password varchar(64) DEFAULT 'x'",
    "INSERT INTO t VALUES ('IDENTIFIED BY')",
    None, "",
])
def test_other_text_is_left_as_it_is(sql: str | None) -> None:
    assert redact_secrets(sql) == sql
