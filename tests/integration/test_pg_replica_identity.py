"""replica.identity.autoset.values: the REPLICA IDENTITY of captured tables after the pipeline starts."""
from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.core.errors import ConfigError, SourceError
from cdc.sources.postgres.config import POSTGRES_OPTIONS
from tests.integration.harness import Pipeline
from tests.integration.test_pg_failures import run_until_error
from tests.integration.test_pg_stream import sql

TABLES = ("CREATE TABLE keyless (id int NOT NULL, v text)",
          "CREATE UNIQUE INDEX keyless_id ON keyless (id)",
          "CREATE TABLE orders (id int PRIMARY KEY, v text)",
          "CREATE TABLE log_rows (id int PRIMARY KEY, v text)",
          "CREATE TABLE other (id int PRIMARY KEY, v text)")


def identities(db: dict[str, str]) -> dict[str, str]:
    """Each table's identity as \\d+ shows it: DEFAULT, FULL, NOTHING or USING INDEX name."""
    query = """SELECT c.relname, c.relreplident, (SELECT ic.relname FROM pg_index i JOIN pg_class ic
                 ON ic.oid = i.indexrelid WHERE i.indrelid = c.oid AND i.indisreplident)
               FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'"""
    names = {"d": "DEFAULT", "f": "FULL", "n": "NOTHING"}
    with psycopg.connect(db["dsn"]) as conn:
        return {name: f"USING INDEX {index}" if code == "i" else names[code]
                for name, code, index in conn.execute(query)}


def test_identities_set_at_start_on_captured_tables_only(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, *TABLES, "ALTER TABLE log_rows REPLICA IDENTITY FULL")
    props = {**pg_db, "snapshot.mode": "no_data", "table.include.list": "public.keyless,public.orders,public.log_rows",
             # other matches public\.o.* too, but is not captured: left alone
             "replica.identity.autoset.values":
                 "public.keyless:INDEX keyless_id, PUBLIC\\.O.*:full,public.log_rows:DEFAULT"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
        assert identities(pg_db) == {"keyless": "USING INDEX keyless_id", "orders": "FULL", "log_rows": "DEFAULT",
                                     "other": "DEFAULT"}
        sql(pg_db, "INSERT INTO orders VALUES (1, 'a')", "UPDATE orders SET v = 'b'",
            "INSERT INTO keyless VALUES (7, 'k')", "DELETE FROM keyless")
        records = p.wait_count(5)  # c, u, c, d, tombstone
    update = records[1]["value"]["payload"]
    assert update["before"] == {"id": 1, "v": "a"}  # FULL: the whole old row
    delete = records[3]
    assert delete["key"]["payload"] == {"id": 7}  # the identity index is the key of a table without one
    assert delete["value"]["payload"]["before"] == {"id": 7, "v": None}


def test_a_table_already_as_configured_is_left_alone(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, *TABLES, "ALTER TABLE orders REPLICA IDENTITY FULL")
    props = {**pg_db, "snapshot.mode": "no_data", "replica.identity.autoset.values": "public.orders:FULL"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
    assert identities(pg_db)["orders"] == "FULL"


def test_an_index_the_table_lacks_is_a_clear_error(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, *TABLES)
    error = run_until_error({**pg_db, "replica.identity.autoset.values": "public.keyless:INDEX no_such_index"},
                            tmp_path)
    assert isinstance(error, SourceError)
    text = str(error)
    assert "public.keyless has no index 'no_such_index'" in text and "keyless_id" in text
    assert "create the index" in text
    assert identities(pg_db)["keyless"] == "DEFAULT"


def test_an_index_the_server_refuses_is_a_clear_error(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, *TABLES, "CREATE INDEX orders_v ON orders (v)")  # not unique
    error = run_until_error({**pg_db, "replica.identity.autoset.values": "public.orders:INDEX orders_v"}, tmp_path)
    text = str(error)
    assert "cannot set the REPLICA IDENTITY of public.orders to USING INDEX orders_v" in text
    assert 'ALTER TABLE "public"."orders" REPLICA IDENTITY USING INDEX "orders_v"' in text


def test_two_entries_for_one_table_are_refused(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, *TABLES)
    error = run_until_error({**pg_db, "replica.identity.autoset.values": "public.orders:FULL,public\\..*:NOTHING"},
                            tmp_path)
    assert "more than one entry matches table public.orders" in str(error)
    assert identities(pg_db)["orders"] == "DEFAULT"


@pytest.mark.parametrize("value", ["public.orders", "public.orders:EVERYTHING", "public.orders:INDEX",
                                   "public.orders FULL", "public.(orders:FULL"])
def test_malformed_entries_are_refused_before_start(value: str) -> None:
    config = Config({"replica.identity.autoset.values": value}).declare(CORE_OPTIONS).declare(POSTGRES_OPTIONS)
    with pytest.raises(ConfigError, match="replica.identity.autoset.values"):
        config.validate()
