"""Kafka Connect's transforms in ``format("cdc")``: the ones that keep Debezium's envelope apply to the
snapshot (its chunks then go the event way, not the columnar one) and to the stream; one that
replaces the envelope stops the query with a message saying what to do instead."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_pg_stream import sql

pytestmark = pytest.mark.spark


def _reader(spark: Any, db: dict[str, str], slot: str, **transforms: str) -> Any:
    reader = spark.readStream.format("cdc").option("source", "postgres").option("table", "public.items")
    for key in ("database.hostname", "database.port", "database.user", "database.dbname"):
        reader = reader.option(key, db[key])
    for key, value in transforms.items():
        reader = reader.option(key, value)
    return reader.option("slot.name", slot).option("publication.name", f"{slot}_pub").load()


def test_read_to_insert_and_a_filter_apply_to_snapshot_and_stream(spark: Any, pg_db: dict[str, str],
                                                                  tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text)",
        "INSERT INTO items SELECT g, 'n' || g FROM generate_series(1, 50) g")
    events = _reader(spark, pg_db, "tr_slot", **{
        "transforms": "r2i,drop",
        "transforms.r2i.type": "io.debezium.transforms.ReadToInsertEvent",
        # drop the records that carry a __debezium.newkey header (the delete half of a key change)
        "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.drop.predicate": "moved",
        "predicates": "moved",
        "predicates.moved.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        "predicates.moved.name": "__debezium.newkey",
    })
    seen: list[Any] = []
    query = (events.writeStream.foreachBatch(lambda df, _: seen.extend(df.collect()))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="500 milliseconds").start())
    try:
        deadline = time.monotonic() + 90
        while len(seen) < 50:
            assert time.monotonic() < deadline and query.isActive, (len(seen), query.exception())
            time.sleep(0.5)
        sql(pg_db, "INSERT INTO items VALUES (100, 'new')", "UPDATE items SET id = 200 WHERE id = 1")
        while not any(r["after"] is not None and r["after"]["id"] == 200 for r in seen):
            assert time.monotonic() < deadline and query.isActive, (len(seen), query.exception())
            time.sleep(0.5)
    finally:
        query.stop()
    snapshot = seen[:50]
    assert {r["op"] for r in snapshot} == {"c"}  # read events became inserts
    assert sorted(r["after"]["id"] for r in snapshot) == list(range(1, 51))
    streamed = [(r["op"], r["before"] and r["before"]["id"], r["after"] and r["after"]["id"]) for r in seen[50:]]
    assert streamed == [("c", None, 100), ("c", None, 200)]  # the key change's delete (header newkey) dropped


def test_a_transform_that_replaces_the_envelope_stops_the_query(spark: Any, pg_db: dict[str, str],
                                                                tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE items (id int PRIMARY KEY, name text)", "INSERT INTO items VALUES (1, 'a')")
    events = _reader(spark, pg_db, "unwrap_slot", **{
        "transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"})
    query = (events.writeStream.foreachBatch(lambda df, _: df.collect())
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="500 milliseconds").start())
    try:
        deadline = time.monotonic() + 90
        while query.isActive and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not query.isActive
        assert "without Debezium's envelope" in str(query.exception())
        assert "read_kafka_topic" in str(query.exception())
    finally:
        query.stop()
