"""A Debezium configuration's transforms= runs in the pipeline, between the source and the converter."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from cdc.pipeline import build
from tests.integration.harness import CollectingSink
from tests.integration.test_pg_stream import sql


def test_unwrap_and_route_between_source_and_converter(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text)")
    props: dict[str, Any] = {
        **{k: v for k, v in pg_db.items() if k != "dsn"}, "topic.prefix": "dbz", "slot.name": "tr_slot",
        "publication.name": "tr_pub", "snapshot.mode": "no_data", "offset.flush.interval.ms": "100",
        "offset.storage.file.filename": str(tmp_path / "offsets.json"),
        "transforms": "unwrap,route",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.add.fields": "op,table",
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": r"dbz\.public\.(.*)",
        "transforms.route.replacement": "lake.$1",
        "predicates": "notHeartbeat",  # parsed and ignored unless a transform names it
        "predicates.notHeartbeat.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.notHeartbeat.pattern": "__debezium-heartbeat.*",
    }
    sink = CollectingSink()
    engine = build("postgres", props, sink=sink)
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    try:
        import time

        deadline = time.monotonic() + 30
        while not engine.source_streaming():
            assert time.monotonic() < deadline, "the source never started streaming"
            time.sleep(0.05)
        sql(pg_db, "INSERT INTO items VALUES (1, 'a')", "UPDATE items SET name = 'b' WHERE id = 1",
            "DELETE FROM items WHERE id = 1", "INSERT INTO items VALUES (2, 'c')")
        while len(sink.snapshot()) < 4:
            assert time.monotonic() < deadline, sink.snapshot()
            time.sleep(0.05)
    finally:
        engine.stop()
        thread.join(30)
    records = sink.snapshot()
    assert [r["topic"] for r in records] == ["lake.items"] * 4  # the delete's tombstone is dropped (rewrite)
    assert [r["value"]["payload"] for r in records] == [
        {"id": 1, "name": "a", "__op": "c", "__table": "items", "__deleted": "false"},
        {"id": 1, "name": "b", "__op": "u", "__table": "items", "__deleted": "false"},
        # REPLICA IDENTITY DEFAULT: the key only
        {"id": 1, "name": None, "__op": "d", "__table": "items", "__deleted": "true"},
        {"id": 2, "name": "c", "__op": "c", "__table": "items", "__deleted": "false"},
    ]
    assert [r["key"]["payload"] for r in records] == [{"id": 1}, {"id": 1}, {"id": 1}, {"id": 2}]
    assert records[0]["value"]["schema"]["name"] == "dbz.public.items.Value"
