"""Streaming and snapshots from a real MariaDB (or the MySQL named by CDC_TEST_MYSQL_DSN)."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc.core.transactions import java_hashmap_order
from cdc.sources.mysql.source import MySqlSource
from tests.integration.harness import Pipeline

pytestmark = pytest.mark.mysql


def sql(server: dict[str, Any], db: str, *statements: str) -> None:
    conn = pymysql.connect(**server, database=db, autocommit=True)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


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


def pipeline(db: dict[str, str], tmp_path: Path, **props: str) -> Pipeline:
    base = {**db, "topic.prefix": "dbz", "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")}
    return Pipeline({**base, **props}, tmp_path / "offsets.json", source_cls=MySqlSource)


def test_insert_update_delete_and_key_change(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                             tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE items (id int PRIMARY KEY, name varchar(20) NOT NULL, qty int)")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data"}) as p:
        p.wait_ready()
        sql(mysql_server, db,
            "INSERT INTO items VALUES (1, 'apple', 3), (2, 'pear', NULL)",
            "UPDATE items SET qty = 4 WHERE id = 1",
            "UPDATE items SET id = 10 WHERE id = 1",
            "DELETE FROM items WHERE id = 2")
        got = p.wait_count(8, topic=f"dbz.{db}.items")
    assert payloads(got) == [
        ("c", {"id": 1}, None, {"id": 1, "name": "apple", "qty": 3}),
        ("c", {"id": 2}, None, {"id": 2, "name": "pear", "qty": None}),
        ("u", {"id": 1}, {"id": 1, "name": "apple", "qty": 3}, {"id": 1, "name": "apple", "qty": 4}),
        ("d", {"id": 1}, {"id": 1, "name": "apple", "qty": 4}, None),
        ("tombstone", {"id": 1}, None, None),
        ("c", {"id": 10}, None, {"id": 10, "name": "apple", "qty": 4}),
        ("d", {"id": 2}, {"id": 2, "name": "pear", "qty": None}, None),
        ("tombstone", {"id": 2}, None, None),
    ]
    assert got[3]["headers"]["__debezium.newkey"] == '{"id":10}'  # SimpleHeaderConverter, Connect's default
    assert got[5]["headers"]["__debezium.oldkey"] == '{"id":1}'
    source = got[0]["value"]["payload"]["source"]
    assert (source["db"], source["table"], source["snapshot"]) == (db, "items", "false")


def test_rows_before_an_alter_decode_with_the_old_columns_after_a_restart(
        mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    """ALTER adds, drops and reorders columns; the rows written before it are read after a restart
    whose offset is older than the ALTER, so only the schema history can name their columns."""
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, a varchar(10), b int, c date)")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data"}) as p:
        p.wait_ready()
        sql(mysql_server, db, "INSERT INTO t VALUES (1, 'one', 1, '2024-01-01')")
        p.wait_count(1, topic=f"dbz.{db}.t")
    stored = json.loads((tmp_path / "offsets.json").read_text())
    sql(mysql_server, db,
        "INSERT INTO t VALUES (2, 'two', 2, '2024-01-02')",
        "ALTER TABLE t DROP COLUMN b, ADD COLUMN d varchar(5) DEFAULT 'x' FIRST, MODIFY COLUMN c date AFTER id",
        "INSERT INTO t (id, a, c, d) VALUES (3, 'three', '2024-01-03', 'y')")
    (tmp_path / "offsets.json").write_text(json.dumps(stored))  # as if the process died before the ALTER
    with pipeline(mysql_db, tmp_path) as p:
        got = p.wait_count(2, topic=f"dbz.{db}.t")
        changes = p.wait_count(1, topic="dbz")
    assert [r["value"]["payload"]["after"] for r in got] == [
        {"id": 2, "a": "two", "b": 2, "c": 19724},
        {"d": "y", "id": 3, "c": 19725, "a": "three"},
    ]
    assert [f["field"] for f in got[1]["value"]["schema"]["fields"][1]["fields"]] == ["d", "id", "c", "a"]
    change = changes[0]["value"]["payload"]
    assert change["ddl"].startswith("ALTER TABLE t DROP COLUMN b")
    assert change["databaseName"] == db and changes[0]["key"]["payload"] == {"databaseName": db}
    assert [c["name"] for c in change["tableChanges"][0]["table"]["columns"]] == ["d", "id", "c", "a"]
    assert change["tableChanges"][0]["type"] == "ALTER" and change["tableChanges"][0]["id"] == f'"{db}"."t"'
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [h["ddl"] for h in history if h["ddl"].startswith("ALTER")] == [change["ddl"]]  # recorded once


def test_transaction_metadata_over_two_tables(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                              tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data", "provide.transaction.metadata": "true"}) as p:
        p.wait_ready()
        conn = pymysql.connect(**mysql_server, database=db)
        with conn.cursor() as cur:
            cur.execute("INSERT INTO a VALUES (1), (2)")
            cur.execute("INSERT INTO b VALUES (1)")
            cur.execute("UPDATE a SET id = 3 WHERE id = 2")
        conn.commit()
        conn.close()
        tx = p.wait_count(2, topic="dbz.transaction")
        records = p.sink.snapshot()
    begin, end = tx[0]["value"]["payload"], tx[1]["value"]["payload"]
    assert begin["status"] == "BEGIN" and end["status"] == "END" and begin["id"] == end["id"]
    assert end["event_count"] == 5  # 2 inserts into a, 1 into b, the key change as delete + create
    # in the order of Java's HashMap, as Debezium lists them (tests/conformance checks it against Debezium)
    assert end["data_collections"] == sorted(
        [{"data_collection": f"{db}.a", "event_count": 4}, {"data_collection": f"{db}.b", "event_count": 1}],
        key=lambda c: java_hashmap_order([f"{db}.a", f"{db}.b"]).index(c["data_collection"]))
    data = [r for r in records if r["topic"].startswith(f"dbz.{db}.") and r["value"] is not None]
    assert [r["value"]["payload"]["transaction"]["total_order"] for r in data] == [1, 2, 3, 4, 5]
    assert {r["value"]["payload"]["transaction"]["id"] for r in data} == {begin["id"]}
    assert data[0]["value"]["payload"]["source"]["gtid"] == begin["id"]
    order = [r["topic"] for r in records]
    assert order.index("dbz.transaction") < order.index(f"dbz.{db}.a") and order[-1] == "dbz.transaction"


@pytest.mark.parametrize("locking", ["minimal", "none"])
def test_snapshot_with_concurrent_writes_loses_nothing(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                       tmp_path: Path, locking: str) -> None:
    """Rows written while the snapshot runs arrive once, by snapshot or by stream, and the final
    state rebuilt from the events equals the table: with the global read lock while the schema is
    read (minimal), and with MariaDB's lock-free consistent snapshot position (none)."""
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)")
    conn = pymysql.connect(**mysql_server, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, %s)", [(i, 0) for i in range(1, 5001)])
    stop = threading.Event()

    def writer() -> None:
        n = 5001
        with conn.cursor() as cur:
            while not stop.is_set():
                cur.execute("INSERT INTO t VALUES (%s, 1)", (n,))
                cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (n % 5000 + 1,))
                n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with pipeline(mysql_db, tmp_path, **{"snapshot.fetch.size": "500", "max.batch.size": "500",
                                             "snapshot.locking.mode": locking}) as p:
            p.wait_ready()
            # streamed: a hundred inserts after the snapshot, the writer still going
            p.wait_for(lambda rs: sum(1 for r in rs if r["value"] and r["value"]["payload"].get("op") == "c") >= 100,
                       timeout=60)
            stop.set()
            thread.join()
            with conn.cursor() as cur:
                cur.execute("SELECT id, v FROM t")
                expected = dict(cur.fetchall())
                cur.execute("INSERT INTO t VALUES (0, -1)")  # a marker: everything before it is in
            expected[0] = -1

            def complete(records: list[dict[str, Any]]) -> bool:
                return any(r["value"] and r["value"]["payload"].get("after") == {"id": 0, "v": -1} for r in records)
            records = p.wait_for(complete, timeout=60)
    finally:
        stop.set()
        thread.join()
        conn.close()
    state: dict[int, int] = {}
    snapshot_keys = set()
    for r in records:
        if r["topic"] != f"dbz.{db}.t" or r["value"] is None:
            continue
        p_ = r["value"]["payload"]
        if p_["op"] == "r":
            assert p_["after"]["id"] not in snapshot_keys
            snapshot_keys.add(p_["after"]["id"])
        if p_["op"] == "d":
            state.pop(p_["before"]["id"], None)
        else:
            state[p_["after"]["id"]] = p_["after"]["v"]
    assert len(snapshot_keys) >= 5000
    assert state == expected
    ops = [r["value"]["payload"]["source"]["snapshot"] for r in records if r["topic"] == f"dbz.{db}.t" and r["value"]]
    assert ops[0] == "first" and "last" in ops


def test_snapshot_emits_schema_then_rows(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                         tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, e enum('x','y') NOT NULL DEFAULT 'y', s set('a','b'))",
        "INSERT INTO t VALUES (1, 'x', 'a,b'), (2, 'y', '')")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "initial_only"}) as p:
        p.thread.join(30)
    assert p.error is None
    records = p.sink.snapshot()
    # Debezium's snapshot DDL: SET character_set_server, DROP TABLE, DROP/CREATE DATABASE, USE, CREATE TABLE
    assert [r["topic"] for r in records] == ["dbz"] * 6 + [f"dbz.{db}.t", f"dbz.{db}.t"]
    ddl = [r["value"]["payload"]["ddl"] for r in records[:6]]
    assert ddl[0].startswith("SET character_set_server=") and ddl[1] == f"DROP TABLE IF EXISTS `{db}`.`t`"
    assert ddl[2:5] == [f"DROP DATABASE IF EXISTS `{db}`", f"CREATE DATABASE `{db}` CHARSET utf8mb4 COLLATE "
                        "utf8mb4_general_ci", f"USE `{db}`"]
    change = records[5]["value"]["payload"]
    assert change["ddl"].startswith("CREATE TABLE `t`") and change["source"]["snapshot"] == "true"
    records = records[5:]
    assert [r["value"]["payload"]["after"] for r in records[1:]] == [{"id": 1, "e": "x", "s": "a,b"},
                                                                    {"id": 2, "e": "y", "s": ""}]
    assert [r["value"]["payload"]["source"]["snapshot"] for r in records[1:]] == ["first", "last"]
    assert [r["value"]["payload"]["op"] for r in records[1:]] == ["r", "r"]


def test_truncate_and_skipped_operations(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                         tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data", "skipped.operations": "u"}) as p:
        p.wait_ready()
        sql(mysql_server, db, "INSERT INTO t VALUES (1)", "UPDATE t SET id = id", "UPDATE t SET id = 2",
            f"TRUNCATE TABLE `{db}`.t", "INSERT INTO t VALUES (3)")
        got = p.wait_count(3, topic=f"dbz.{db}.t")
    assert [(r["value"]["payload"]["op"], r["key"]) for r in got] == [
        ("c", {"schema": got[0]["key"]["schema"], "payload": {"id": 1}}), ("t", None),
        ("c", {"schema": got[0]["key"]["schema"], "payload": {"id": 3}})]
    with pipeline(mysql_db, tmp_path / "second") as p:  # Debezium's default skips truncate
        p.wait_ready()
        sql(mysql_server, db, "TRUNCATE t", "INSERT INTO t VALUES (4)")
        got = p.wait_count(2, topic=f"dbz.{db}.t")
    assert [r["value"]["payload"]["op"] for r in got] == ["r", "c"]


def test_heartbeats_on_a_quiet_binlog(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path) -> None:
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data", "heartbeat.interval.ms": "300"}) as p:
        p.wait_ready()
        beats = p.wait_count(2, topic="__debezium-heartbeat.dbz", timeout=20)
    assert beats[0]["key"]["payload"] == {"serverName": "dbz"}
    assert beats[0]["value"]["schema"]["name"] == "io.debezium.connector.common.Heartbeat"
    assert beats[1]["value"]["payload"]["ts_ms"] >= beats[0]["value"]["payload"]["ts_ms"] + 250


def test_snapshot_without_reload_privilege_uses_the_consistent_snapshot_position(
        mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """FLUSH TABLES WITH READ LOCK needs RELOAD; without it MariaDB's binlog_snapshot position is used."""
    import uuid

    db = mysql_db["db"]
    user = f"u{uuid.uuid4().hex[:8]}"
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)",
        f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'pw'",
        f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'127.0.0.1'")
    try:
        with pipeline({**mysql_db, "database.user": user, "database.password": "pw"}, tmp_path) as p:
            got = p.wait_count(2, topic=f"dbz.{db}.t")
            sql(mysql_server, db, "INSERT INTO t VALUES (3)")
            got = p.wait_count(3, topic=f"dbz.{db}.t")
    finally:
        sql(mysql_server, db, f"DROP USER '{user}'@'127.0.0.1'")
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]["id"]) for r in got] == [
        ("r", 1), ("r", 2), ("c", 3)]
    assert "FLUSH TABLES WITH READ LOCK refused" in caplog.text


def test_history_of_captured_tables_only(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                         tmp_path: Path) -> None:
    """schema.history.internal.store.only.captured.tables.ddl: other tables' DDL stays out of the history,
    in the snapshot and in the stream."""
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY)", "CREATE TABLE other (id int PRIMARY KEY)")
    props = {"snapshot.mode": "no_data", "table.include.list": f"{db}\\.t",
             "schema.history.internal.store.only.captured.tables.ddl": "true"}
    with pipeline(mysql_db, tmp_path, **props) as p:
        p.wait_ready()
        sql(mysql_server, db, "ALTER TABLE other ADD COLUMN x int", "ALTER TABLE t ADD COLUMN y int",
            "INSERT INTO t VALUES (1, 2)")
        p.wait_count(1, topic=f"dbz.{db}.t")
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    ddl = [h["ddl"] for h in history]
    assert not [d for d in ddl if "other" in d]
    assert any(d.startswith("CREATE TABLE `t`") for d in ddl) and "ALTER TABLE t ADD COLUMN y int" in ddl


def test_heartbeat_action_query_runs_on_every_heartbeat(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                        tmp_path: Path) -> None:
    """heartbeat.action.query: a write to a captured heartbeat table on each heartbeat, whose rows then come
    through the stream (how a quiet database keeps its stored position moving)."""
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE beat (id int PRIMARY KEY, n int)", "INSERT INTO beat VALUES (1, 0)")
    with pipeline(mysql_db, tmp_path, **{"snapshot.mode": "no_data", "heartbeat.interval.ms": "100",
                                         "binlog.heartbeat.interval.ms": "100",
                                         "heartbeat.action.query": f"UPDATE {db}.beat SET n = n + 1"}) as p:
        p.wait_ready()
        got = p.wait_count(3, topic=f"dbz.{db}.beat")
    assert [(op, after["n"]) for op, _, _, after in payloads(got[:3])] == [("u", 1), ("u", 2), ("u", 3)]
