"""Streaming from a real PostgreSQL: every operation, replica identities, keys, transactions."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.integration.harness import Pipeline


def sql(db: dict[str, str], *statements: str) -> None:
    with psycopg.connect(db["dsn"], autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def payloads(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(op, key, before, after) per record; tombstones as ('tombstone', key, None, None)."""
    out = []
    for r in records:
        key = r["key"]["payload"] if r["key"] else None
        if r["value"] is None:
            out.append(("tombstone", key, None, None))
        else:
            p = r["value"]["payload"]
            out.append((p["op"], key, p.get("before"), p.get("after")))
    return out


def test_insert_update_delete_truncate_message(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int)")
    with Pipeline({**pg_db, "snapshot.mode": "no_data", "skipped.operations": "none"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db,
            "INSERT INTO items VALUES (1, 'apple', 3), (2, 'pear', NULL)",
            "UPDATE items SET qty = 4 WHERE id = 1",
            "DELETE FROM items WHERE id = 2",
            "TRUNCATE items",
            "SELECT pg_logical_emit_message(true, 'audit', 'hello')",
            "SELECT pg_logical_emit_message(false, 'audit', 'bye')")
        items = p.wait_count(6, topic="dbz.public.items")
        messages = p.wait_count(2, topic="dbz.message")
    assert payloads(items) == [
        ("c", {"id": 1}, None, {"id": 1, "name": "apple", "qty": 3}),
        ("c", {"id": 2}, None, {"id": 2, "name": "pear", "qty": None}),
        ("u", {"id": 1}, None, {"id": 1, "name": "apple", "qty": 4}),
        ("d", {"id": 2}, {"id": 2, "name": "", "qty": None}, None),  # NOT NULL left out: "", as Debezium
        ("tombstone", {"id": 2}, None, None),
        ("t", None, None, None),
    ]
    source = items[0]["value"]["payload"]["source"]
    assert source["connector"] == "postgresql" and source["db"] == pg_db["database.dbname"]
    assert (source["schema"], source["table"], source["snapshot"]) == ("public", "items", "false")
    assert isinstance(source["txId"], int) and isinstance(source["lsn"], int)
    assert [m["value"]["payload"]["message"] for m in messages] == [
        {"prefix": "audit", "content": base64.b64encode(b"hello").decode()},
        {"prefix": "audit", "content": base64.b64encode(b"bye").decode()},
    ]
    assert messages[0]["value"]["payload"]["source"]["txId"] is not None
    assert messages[1]["value"]["payload"]["source"]["txId"] is None  # non-transactional
    assert messages[0]["key"]["payload"] == {"prefix": "audit"}


@pytest.mark.parametrize("identity, update_before, delete_before", [
    # columns a key-only old tuple leaves out: null, or the type's zero when NOT NULL (as Debezium)
    ("DEFAULT", None, {"id": 1, "a": "", "b": None}),
    ("FULL", {"id": 1, "a": "x", "b": 1}, {"id": 1, "a": "y", "b": 1}),
    ("USING INDEX t_a_key", None, {"id": 0, "a": "y", "b": None}),
])
def test_replica_identity_decides_the_before_image(pg_db: dict[str, str], tmp_path: Path, identity: str,
                                                    update_before: Any, delete_before: Any) -> None:
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY, a text NOT NULL UNIQUE, b int)",
        f"ALTER TABLE t REPLICA IDENTITY {identity}")
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO t VALUES (1, 'x', 1)", "UPDATE t SET a = 'y' WHERE id = 1", "DELETE FROM t")
        got = p.wait_count(4, topic="dbz.public.t")
    ops = payloads(got)
    assert ops[1] == ("u", {"id": 1}, update_before, {"id": 1, "a": "y", "b": 1})
    assert ops[2][0] == "d" and ops[2][2] == delete_before
    assert ops[3][0] == "tombstone"


def test_replica_identity_nothing_gives_updates_without_before(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE n (id int PRIMARY KEY, v text)", "ALTER TABLE n REPLICA IDENTITY NOTHING")
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO n VALUES (1, 'a')")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
            sql(pg_db, "UPDATE n SET v = 'b'")  # the server refuses: nothing would identify the row
        got = p.wait_count(1, topic="dbz.public.n")
    assert payloads(got) == [("c", {"id": 1}, None, {"id": 1, "v": "a"})]


def test_primary_key_change_is_delete_tombstone_create(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE k (id int PRIMARY KEY, v text)", "INSERT INTO k VALUES (1, 'a')")
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "UPDATE k SET id = 2 WHERE id = 1")
        got = p.wait_count(3, topic="dbz.public.k")
    assert payloads(got) == [
        ("d", {"id": 1}, {"id": 1, "v": None}, None),
        ("tombstone", {"id": 1}, None, None),
        ("c", {"id": 2}, None, {"id": 2, "v": "a"}),
    ]
    # as a Kafka Connect worker at its defaults (SimpleHeaderConverter) writes them
    assert got[0]["headers"]["__debezium.newkey"] == '{"id":2}'
    assert got[2]["headers"]["__debezium.oldkey"] == '{"id":1}'


def test_no_tombstones_when_disabled(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE k (id int PRIMARY KEY)", "INSERT INTO k VALUES (1)")
    with Pipeline({**pg_db, "snapshot.mode": "no_data", "tombstones.on.delete": "false"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "DELETE FROM k", "INSERT INTO k VALUES (5)")
        got = p.wait_count(2, topic="dbz.public.k")
    assert [op for op, *_ in payloads(got)] == ["d", "c"]


def test_transaction_metadata(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)")
    props = {**pg_db, "snapshot.mode": "no_data", "provide.transaction.metadata": "true"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
        with psycopg.connect(pg_db["dsn"]) as conn:  # one transaction over two tables
            conn.execute("INSERT INTO a VALUES (1), (2)")
            conn.execute("INSERT INTO b VALUES (1)")
        got = p.wait_count(5)
    assert [r["topic"] for r in got] == ["dbz.transaction", "dbz.public.a", "dbz.public.a", "dbz.public.b",
                                         "dbz.transaction"]
    begin, end = got[0]["value"]["payload"], got[4]["value"]["payload"]
    tx_id = begin["id"]
    assert begin["status"] == "BEGIN" and begin["event_count"] is None
    assert end == {**end, "status": "END", "id": tx_id, "event_count": 3,
                   "data_collections": [{"data_collection": "public.a", "event_count": 2},
                                        {"data_collection": "public.b", "event_count": 1}]}
    blocks = [r["value"]["payload"]["transaction"] for r in got[1:4]]
    assert blocks == [{"id": tx_id, "total_order": 1, "data_collection_order": 1},
                      {"id": tx_id, "total_order": 2, "data_collection_order": 2},
                      {"id": tx_id, "total_order": 3, "data_collection_order": 1}]
    assert tx_id == f"{got[1]['value']['payload']['source']['txId']}:" + tx_id.split(":")[1]


def test_filters_and_key_columns(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE keep (id int PRIMARY KEY, code text, secret text)",
        "CREATE TABLE skip (id int PRIMARY KEY)")
    props = {**pg_db, "snapshot.mode": "no_data", "table.include.list": "public.keep",
             "column.exclude.list": "public.keep.secret", "message.key.columns": "public.keep:code"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO skip VALUES (1)", "INSERT INTO keep VALUES (1, 'A', 'pw')")
        got = p.wait_count(1)
    assert [r["topic"] for r in got] == ["dbz.public.keep"]
    assert got[0]["key"]["payload"] == {"code": "A"}
    assert got[0]["value"]["payload"]["after"] == {"id": 1, "code": "A"}


def test_unchanged_toast_value_gets_the_placeholder(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE big (id int PRIMARY KEY, n int, body text)",
        "ALTER TABLE big ALTER COLUMN body SET STORAGE EXTERNAL",
        "INSERT INTO big VALUES (1, 0, repeat('x', 10000))")
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "UPDATE big SET n = 1")
        got = p.wait_count(1, topic="dbz.public.big")
    assert got[0]["value"]["payload"]["after"] == {"id": 1, "n": 1, "body": "__debezium_unavailable_value"}


def test_filtered_publication_holds_only_the_included_tables(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)")
    props = {**pg_db, "snapshot.mode": "no_data", "publication.autocreate.mode": "filtered",
             "table.include.list": "public.a"}
    with Pipeline(props, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO b VALUES (1)", "INSERT INTO a VALUES (1)")
        got = p.wait_count(1)
    assert [r["topic"] for r in got] == ["dbz.public.a"]
    with psycopg.connect(pg_db["dsn"]) as conn:
        tables = conn.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'cdc_test_pub'").fetchall()
    assert tables == [("a",)]


def test_skipped_operations_default_skips_truncate(pg_db: dict[str, str], tmp_path: Path) -> None:
    """As Debezium 3: truncates are left out unless skipped.operations says otherwise; c/u/d too on request."""
    sql(pg_db, "CREATE TABLE s (id int PRIMARY KEY, v int)")
    with Pipeline({**pg_db, "snapshot.mode": "no_data"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO s VALUES (1, 1)", "TRUNCATE s", "INSERT INTO s VALUES (2, 2)")
        got = p.wait_count(2, topic="dbz.public.s")
    assert [r["value"]["payload"]["op"] for r in got] == ["c", "c"]
    with Pipeline({**pg_db, "snapshot.mode": "no_data", "skipped.operations": "c,d"}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO s VALUES (3, 3)", "UPDATE s SET v = 30 WHERE id = 3", "DELETE FROM s WHERE id = 3")
        sql(pg_db, "INSERT INTO s VALUES (4, 4)", "UPDATE s SET v = 40 WHERE id = 4")  # a marker after them
        got = p.wait_count(2, topic="dbz.public.s")
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]) for r in got] == [
        ("u", {"id": 3, "v": 30}), ("u", {"id": 4, "v": 40})]
