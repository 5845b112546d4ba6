"""Signals and incremental snapshots on a real PostgreSQL (in-process pipeline)."""
from __future__ import annotations

import json
import logging
import random
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.integration.harness import Pipeline
from tests.integration.test_pg_stream import sql

SIGNALS = "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data text)"


def signal(db: dict[str, str], type_: str, data: Any, id_: str | None = None) -> None:
    text = data if isinstance(data, str) or data is None else json.dumps(data)
    with psycopg.connect(db["dsn"], autocommit=True) as conn:
        conn.execute("INSERT INTO debezium_signal VALUES (%s, %s, %s)",
                     (id_ or f"s-{time.monotonic_ns()}", type_, text))


def props(db: dict[str, str], **extra: str) -> dict[str, str]:
    return {**db, "snapshot.mode": "no_data", "signal.data.collection": "public.debezium_signal", **extra}


def values(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["value"]["payload"] for r in records if r["value"] is not None]


def settle(p: Any, db: dict[str, str], table: str, key: int, rest: str = "") -> list[dict[str, Any]]:
    """Insert ``key`` into ``table`` and wait for its event: whatever the pipeline had read before is
    out by then (a negative assertion then rests on the stream's order, not on a sleep)."""
    sql(db, f"INSERT INTO {table} VALUES ({key}{rest})")
    return p.wait_for(lambda rs: any(v["op"] == "c" and v["after"]["id"] == key for v in values(rs)))


def incremental(records: list[dict[str, Any]], topic: str | None = None) -> list[dict[str, Any]]:
    return [r["value"]["payload"] for r in records if r["value"] is not None and r["value"]["payload"]["op"] == "r"
            and r["value"]["payload"]["source"]["snapshot"] == "incremental" and (topic is None or r["topic"] == topic)]


def test_incremental_snapshot_under_concurrent_writes(pg_db: dict[str, str], tmp_path: Path) -> None:
    """50,000 rows while a writer inserts, updates and deletes: applying the events in order gives
    the table exactly, and no snapshot row follows a newer streamed change of its key."""
    sql(pg_db, SIGNALS, "CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL, pad text)",
        "INSERT INTO big SELECT g, 0, md5(g::text) FROM generate_series(1, 50000) g")
    stop = threading.Event()
    counts = {"tx": 0}

    def writer() -> None:
        rng = random.Random(11)
        next_id = 50001
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            while not stop.is_set():
                with conn.transaction():
                    conn.execute("INSERT INTO big VALUES (%s, 0, 'new')", (next_id,))
                    for _ in range(3):
                        conn.execute("UPDATE big SET v = v + 1 WHERE id = %s", (rng.randint(1, next_id),))
                    if rng.random() < 0.5:
                        conn.execute("DELETE FROM big WHERE id = %s", (rng.randint(1, next_id),))
                next_id += 1
                counts["tx"] += 1
                time.sleep(0.004)

    with Pipeline(props(pg_db, **{"incremental.snapshot.chunk.size": "2000"}), tmp_path / "o.json") as p:
        p.wait_ready()
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            time.sleep(0.3)
            signal(pg_db, "execute-snapshot", {"data-collections": ["public.big"], "type": "incremental"})
            p.wait_for(lambda rs: len(incremental(rs)) > 10_000, timeout=50)
        finally:
            time.sleep(0.3)
            stop.set()
            thread.join()
        with psycopg.connect(pg_db["dsn"]) as conn:
            expected = {i: v for i, v in conn.execute("SELECT id, v FROM big")}
        source_done = lambda: p.source.incremental.state() is None  # noqa: E731
        p.wait_for(lambda rs: source_done() and fold(rs) == expected, timeout=50)
        records = p.sink.snapshot()
    assert counts["tx"] > 50
    # ordering: a snapshot row never follows a newer streamed change of its key
    last_stream: dict[int, tuple[str, int]] = {}
    snapshot_keys: set[int] = set()
    for payload in values(records):
        if payload["op"] == "r":
            key = payload["after"]["id"]
            assert key not in snapshot_keys, f"key {key} read twice"
            snapshot_keys.add(key)
            seen = last_stream.get(key)
            assert seen is None or (seen[0] != "d" and seen[1] <= payload["after"]["v"]), (key, seen, payload["after"])
        else:
            row = payload["after"] or payload["before"]
            last_stream[row["id"]] = (payload["op"], (payload["after"] or {}).get("v", -1))
    assert len(snapshot_keys) > 45_000
    assert {p["source"]["snapshot"] for p in values(records) if p["op"] == "r"} == {"incremental"}
    assert not any(r["topic"].endswith("debezium_signal") for r in records)  # signals are consumed, not emitted


def fold(records: list[dict[str, Any]]) -> dict[int, int]:
    state: dict[int, int] = {}
    for r in records:
        if r["value"] is None or not r["topic"].endswith(".big"):
            continue
        p = r["value"]["payload"]
        if p["op"] in ("r", "c", "u"):
            state[p["after"]["id"]] = p["after"]["v"]
        elif p["op"] == "d":
            state.pop(p["before"]["id"], None)
    return state


def test_pause_resume_and_stop(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, SIGNALS, "CREATE TABLE a (id int PRIMARY KEY)", "INSERT INTO a SELECT generate_series(1, 3000)",
        "CREATE TABLE b (id int PRIMARY KEY)", "INSERT INTO b SELECT generate_series(1, 20000)")
    with Pipeline(props(pg_db, **{"incremental.snapshot.chunk.size": "100"}), tmp_path / "o.json") as p:
        p.wait_ready()
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn, conn.transaction():
            # one transaction: the snapshot is queued and paused before its first chunk
            conn.execute("INSERT INTO debezium_signal VALUES ('e1', 'execute-snapshot', "
                         "'{\"data-collections\": [\"public.a\"]}')")
            conn.execute("INSERT INTO debezium_signal VALUES ('p1', 'pause-snapshot', NULL)")
        sql(pg_db, "INSERT INTO a VALUES (5000)")
        p.wait_for(lambda rs: any(v["op"] == "c" for v in values(rs)))
        # a chunk the pause failed to stop would have been read between these two transactions
        sql(pg_db, "INSERT INTO a VALUES (5001)")
        p.wait_for(lambda rs: any(v["op"] == "c" and v["after"]["id"] == 5001 for v in values(rs)))
        assert incremental(p.sink.snapshot()) == [], "paused: no chunk is read"
        assert p.source.incremental.state()["paused"] is True
        signal(pg_db, "resume-snapshot", None)
        p.wait_for(lambda rs: len(incremental(rs, "dbz.public.a")) == 3002)  # with 5000 and 5001, inserted meanwhile
        # stop in the middle of b
        signal(pg_db, "execute-snapshot", {"data-collections": ["public\\.b"]})
        p.wait_for(lambda rs: len(incremental(rs, "dbz.public.b")) >= 500)
        signal(pg_db, "stop-snapshot", {"data-collections": ["public.b"], "type": "incremental"})
        p.wait_for(lambda rs: p.source.incremental.state() is None)
        sql(pg_db, "INSERT INTO a VALUES (5002)")  # what the stopped chunk had read is out before this
        p.wait_for(lambda rs: any(v["op"] == "c" and v["after"]["id"] == 5002 for v in values(rs)))
        got = len(incremental(p.sink.snapshot(), "dbz.public.b"))
        sql(pg_db, "INSERT INTO b VALUES (99999)")  # the stream goes on, and no chunk of b comes with it
        p.wait_for(lambda rs: any(v["op"] == "c" and v["after"]["id"] == 99999 for v in values(rs)))
        assert len(incremental(p.sink.snapshot(), "dbz.public.b")) == got < 20000


def test_additional_conditions_queueing_and_bad_signals(pg_db: dict[str, str], tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    sql(pg_db, SIGNALS, "CREATE TABLE p (id int PRIMARY KEY, color text)",
        "INSERT INTO p SELECT g, CASE WHEN g % 3 = 0 THEN 'blue' ELSE 'red' END FROM generate_series(1, 3000) g",
        "CREATE TABLE q (id int PRIMARY KEY)", "INSERT INTO q SELECT generate_series(1, 500)",
        "CREATE TABLE nopk (x int)", "INSERT INTO nopk VALUES (1)", "CREATE TABLE qq (id int PRIMARY KEY)")
    caplog.set_level(logging.INFO)
    with Pipeline(props(pg_db), tmp_path / "o.json") as p:
        p.wait_ready()
        signal(pg_db, "execute-snapshot", "{not json", "bad-json")
        signal(pg_db, "launch-rockets", {}, "bad-type")
        signal(pg_db, "execute-snapshot", {"type": "incremental"}, "no-collections")
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.nope"]}, "unknown-table")
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.nopk"]}, "no-pk")
        # (another table: a request for a table already queued is dropped, see the next one)
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.qq"], "additional-conditions": [
            {"data-collection": "public.qq", "filter": "no_such_column > 1"}]}, "sql-error")
        # two snapshots requested at once: queued, both done
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.p"], "additional-conditions": [
            {"data-collection": "public.p", "filter": "color = 'blue'"}]}, "blue")
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.q"]}, "q")
        signal(pg_db, "log", {"message": "hello from a signal"}, "log")
        records = p.wait_for(lambda rs: len(incremental(rs, "dbz.public.q")) == 500
                             and len(incremental(rs, "dbz.public.p")) == 1000, timeout=30)
        sql(pg_db, "INSERT INTO q VALUES (1000)")
        p.wait_for(lambda rs: any(v["op"] == "c" for v in values(rs)))
    assert {v["after"]["color"] for v in incremental(records, "dbz.public.p")} == {"blue"}
    text = caplog.text
    assert "'bad-json'" in text and "not valid JSON" in text
    assert "unknown signal type 'launch-rockets'" in text
    assert "data-collections must be a non-empty list" in text
    assert "'public.nope' matches no captured table" in text
    assert "public.nopk has no primary key" in text
    assert "no_such_column" in text and "incremental snapshot of public.qq skipped" in text
    assert "hello from a signal" in text
    assert not any(r["topic"].endswith("nopk") for r in records)


def test_file_channel_and_blocking_snapshot(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE f (id int PRIMARY KEY, n int)",
        "INSERT INTO f SELECT g, g FROM generate_series(1, 1000) g")
    signals = tmp_path / "signals.jsonl"
    signals.write_text("")
    offsets = tmp_path / "o.json"
    config = {**pg_db, "snapshot.mode": "no_data", "signal.enabled.channels": "file", "signal.file": str(signals)}
    with Pipeline(config, offsets) as p:
        p.wait_ready()
        with signals.open("a") as f:
            f.write("this is not json\n")
            f.write(json.dumps({"id": "b1", "type": "execute-snapshot", "data": {
                "data-collections": ["public.f"], "type": "blocking",
                "additional-conditions": [{"data-collection": "public.f", "filter": "n <= 100"}]}}) + "\n")
        got = p.wait_for(lambda rs: len(values(rs)) >= 100)
        sql(pg_db, "UPDATE f SET n = -1 WHERE id = 1")
        got = p.wait_for(lambda rs: any(v["op"] == "u" for v in values(rs)))
    ops = [(v["op"], v["source"]["snapshot"]) for v in values(got)]
    assert ops[:100] == [("r", "true")] * 100 and ops[100:] == [("u", "false")]
    # the file position is in the offset: a restart does not act on the line again
    stored = json.loads(offsets.read_text())["offsets"]["test"]
    assert stored["signal_file_pos"] == signals.stat().st_size
    with Pipeline(config, offsets) as p:
        p.wait_ready()
        sql(pg_db, "UPDATE f SET n = -2 WHERE id = 1")
        got = p.wait_for(lambda rs: any(v["op"] == "u" for v in values(rs)))
    assert [v["op"] for v in values(got)] == ["u"]


def test_signal_table_missing_or_wrong(pg_db: dict[str, str], tmp_path: Path) -> None:
    p = Pipeline(props(pg_db), tmp_path / "o.json")
    with pytest.raises(Exception, match="signal table 'public.debezium_signal'.*does not exist"):
        p.engine.run()
    sql(pg_db, "CREATE TABLE debezium_signal (id text PRIMARY KEY, kind text)")
    p = Pipeline(props(pg_db), tmp_path / "o.json")
    with pytest.raises(Exception, match="lacks column.*type, data"):
        p.engine.run()


def test_composite_text_keys_surrogate_key_and_the_cli(pg_db: dict[str, str], tmp_path: Path) -> None:
    """Keys of several columns and types go back into SQL intact; `cdc signal` writes the signal."""
    import subprocess
    import sys

    sql(pg_db, SIGNALS, "CREATE TABLE ck (a int, b text, n int, PRIMARY KEY (a, b))",
        "INSERT INTO ck SELECT g % 5, 'k''' || g || E'\\u00e9 \\t', g FROM generate_series(1, 200) g",
        "CREATE TABLE nk (u uuid NOT NULL UNIQUE, n int)",
        "INSERT INTO nk SELECT md5(g::text)::uuid, g FROM generate_series(1, 60) g",
        "CREATE TABLE c2 (id int PRIMARY KEY)", "INSERT INTO c2 SELECT generate_series(1, 50)")
    config = tmp_path / "c.properties"
    config.write_text("\n".join(f"{k}={v}" for k, v in {
        "source": "postgres", "topic.prefix": "dbz", "signal.data.collection": "public.debezium_signal",
        **{k: v for k, v in pg_db.items() if k.startswith("database.")}}.items()) + "\n")
    with Pipeline(props(pg_db, **{"incremental.snapshot.chunk.size": "7"}), tmp_path / "o.json") as p:
        p.wait_ready()
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.ck"]})
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.nk"], "surrogate-key": "u"})
        result = subprocess.run([sys.executable, "-m", "cdc.cli", "signal", str(config), "execute-snapshot",
                                 "--table", "public.c2", "--condition", "id <= 10"], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert "signal table public.debezium_signal" in result.stdout
        wrong = subprocess.run([sys.executable, "-m", "cdc.cli", "signal", str(config), "execute-snapshot",
                                "--table", "public.nosuchtable"], capture_output=True, text=True)
        assert wrong.returncode != 0 and "Traceback" not in wrong.stderr and "sent" not in wrong.stdout
        assert "captures no table named public.nosuchtable" in wrong.stderr and "public.ck" in wrong.stderr
        records = p.wait_for(lambda rs: len(incremental(rs, "dbz.public.ck")) == 200
                             and len(incremental(rs, "dbz.public.nk")) == 60
                             and len(incremental(rs, "dbz.public.c2")) == 10)
        records = settle(p, pg_db, "c2", 10_000)
    ck = [(v["after"]["a"], v["after"]["b"]) for v in incremental(records, "dbz.public.ck")]
    assert len(ck) == len(set(ck)) == 200  # each row once, quotes, tabs and accents in the key survive
    assert {b for _, b in ck} == {f"k'{g}\u00e9 \t" for g in range(1, 201)}
    assert len({v["after"]["u"] for v in incremental(records, "dbz.public.nk")}) == 60
    assert sorted(v["after"]["id"] for v in incremental(records, "dbz.public.c2")) == list(range(1, 11))


def test_row_changed_inside_its_window_is_emitted_once_by_the_stream(pg_db: dict[str, str], tmp_path: Path) -> None:
    """Deterministic: right after each chunk is read (between the watermarks), its first row is updated
    and its second deleted. The read rows are superseded: only the streamed events carry those keys."""
    sql(pg_db, SIGNALS, "CREATE TABLE w (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO w SELECT g, 0 FROM generate_series(1, 100) g")
    with Pipeline(props(pg_db, **{"incremental.snapshot.chunk.size": "10"}), tmp_path / "o.json") as p:
        p.wait_ready()
        reader = p.source.incremental.reader
        original = reader.read
        touched: list[int] = []

        def read_then_write(task, limit):  # type: ignore[no-untyped-def]
            rows = original(task, limit)
            if len(rows) >= 2:
                first, second = int(rows[0][0][0]), int(rows[1][0][0])
                sql(pg_db, f"UPDATE w SET v = 1 WHERE id = {first}", f"DELETE FROM w WHERE id = {second}")
                touched.extend([first, second])
            return rows

        reader.read = read_then_write  # type: ignore[method-assign]
        signal(pg_db, "execute-snapshot", {"data-collections": ["public.w"]})
        p.wait_for(lambda rs: p.source.incremental.state() is None and len(incremental(rs)) == 80)
        records = settle(p, pg_db, "w", 10_000, ", 0")
    assert len(touched) == 20
    read_keys = {v["after"]["id"] for v in incremental(records)}
    assert read_keys == set(range(1, 101)) - set(touched)
    assert p.source.incremental.rows_dropped == 20
    with psycopg.connect(pg_db["dsn"]) as conn:
        expected = dict(conn.execute("SELECT id, v FROM w").fetchall())
    state: dict[int, int] = {}
    for v in values(records):
        if v["op"] == "d":
            state.pop(v["before"]["id"], None)  # a row read in its window and deleted there: never shown
        else:
            state[v["after"]["id"]] = v["after"]["v"]
    assert state == expected
