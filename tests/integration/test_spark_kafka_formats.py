"""Spark reads the topics a Debezium configuration writes, whatever its converter and transforms:
Avro with a schema registry, and unwrapped rows (ExtractNewRecordState, with its tombstones or its
rewrite mode). A real pipeline writes to a real Kafka broker; read_kafka_topic + apply_changes must
end with the target equal to the table, through inserts, updates, deletes and a key change."""
from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdc.pipeline import build
from tests.integration.test_pg_stream import sql
from tests.integration.test_spark import wait_equal

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

AVRO = "io.confluent.connect.avro.AvroConverter"
UNWRAP = {"transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"}


def source_rows(db: dict[str, str]) -> list[tuple]:
    import psycopg

    with psycopg.connect(db["dsn"]) as conn:
        return sorted(conn.execute("SELECT id, name, amount, seen FROM accounts").fetchall())


def target_rows(spark: Any, path: Path) -> list[tuple]:
    if not path.exists():
        return []
    try:
        return sorted((r["id"], r["name"], r["amount"], r["seen"]) for r in spark.read.parquet(str(path)).collect())
    except Exception:  # noqa: BLE001 - the Parquet fallback swaps folders under a concurrent reader
        return [("being replaced",)]


def _avro(url: str) -> dict[str, str]:
    return {"key.converter": AVRO, "value.converter": AVRO, "key.converter.schema.registry.url": url,
            "value.converter.schema.registry.url": url}


CASES: dict[str, tuple[dict[str, Any], bool]] = {  # name -> (read_kafka_topic's options, needs the registry)
    "avro": ({"value_converter": "avro"}, True),
    "unwrapped-rewrite": ({"envelope": "unwrapped"}, False),
    "unwrapped-tombstones": ({"envelope": "unwrapped"}, False),
    "unwrapped-avro": ({"envelope": "unwrapped", "value_converter": "avro"}, True),
}


def _properties(case: str, url: str | None) -> dict[str, str]:
    if case == "avro":
        return _avro(url or "")
    if case == "unwrapped-rewrite":
        return {**UNWRAP, "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
                "transforms.unwrap.add.fields": "op,source.ts_ms,table,schema"}
    if case == "unwrapped-tombstones":  # unwrap's defaults: a delete is a tombstone of its key
        return dict(UNWRAP)
    return {**UNWRAP, **_avro(url or "")}


@pytest.fixture()
def running(pg_db: dict[str, str], tmp_path: Path, kafka_bootstrap: str,
            request: pytest.FixtureRequest) -> Iterator[Any]:
    """start(extra properties) -> the engine of a pipeline writing to Kafka; stopped after the test."""
    engines: list[tuple[Any, threading.Thread]] = []

    def start(prefix: str, extra: dict[str, str]) -> Any:
        from cdc.config import CORE_OPTIONS, Config
        from cdc.sinks.kafka import KafkaSink

        props: dict[str, Any] = {
            **{k: v for k, v in pg_db.items() if k != "dsn"}, "topic.prefix": prefix, "slot.name": f"{prefix}_slot",
            "publication.name": f"{prefix}_pub", "snapshot.mode": "initial", "offset.flush.interval.ms": "100",
            "offset.storage.file.filename": str(tmp_path / "offsets.json"), "kafka.bootstrap.servers": kafka_bootstrap,
            "slot.drop.on.stop": "true", **extra}
        sink = KafkaSink(Config({"kafka.bootstrap.servers": kafka_bootstrap, "topic.prefix": prefix})
                         .declare(CORE_OPTIONS))
        engine = build("postgres", props, sink=sink)
        thread = threading.Thread(target=engine.run, daemon=True)
        thread.start()
        engines.append((engine, thread))
        deadline = time.monotonic() + 60
        while not engine.source_streaming():
            assert thread.is_alive() and time.monotonic() < deadline, "the pipeline never started streaming"
            time.sleep(0.1)
        return engine

    yield start
    for engine, thread in engines:
        engine.stop()
        thread.join(30)


@pytest.mark.parametrize("case", list(CASES))
def test_topic_of_any_converter_and_envelope_into_the_target(spark: Any, pg_db: dict[str, str],
                                                             tmp_path: Path, kafka_bootstrap: str,
                                                             running: Any, case: str,
                                                             request: pytest.FixtureRequest) -> None:
    from cdc.spark.apply import changes_applier
    from cdc.spark.kafka import read_kafka_topic
    from cdc.spark.session import jar_folder

    folder = jar_folder(fetch=False)
    if folder is None or not list(folder.glob("spark-sql-kafka*.jar")):
        pytest.skip("Spark's Kafka connector jar is not fetched (scripts/spark-jars.sh)")
    options, needs_registry = CASES[case]
    url = request.getfixturevalue("registry_url") if needs_registry else None
    prefix = "f" + uuid.uuid4().hex[:8]
    sql(pg_db, "CREATE TABLE accounts (id int PRIMARY KEY, name text, amount numeric(10,2), seen timestamp)",
        "INSERT INTO accounts SELECT g, 'n' || g, g / 3.0, '2024-01-01'::timestamp + g * interval '1 hour' "
        "FROM generate_series(1, 30) g")
    engine = running(prefix, _properties(case, url))
    row_schema = engine.source.table_schema("public.accounts")
    events = read_kafka_topic(spark, kafka_bootstrap, f"{prefix}.public.accounts", row_schema,
                              schema_registry_url=url, **options)
    target = tmp_path / "target"
    query = (events.writeStream.foreachBatch(changes_applier(str(target), ["id"], format="parquet"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="1 second").start())
    try:
        wait_equal(lambda: target_rows(spark, target), lambda: source_rows(pg_db))
        sql(pg_db, "UPDATE accounts SET amount = 0, name = NULL WHERE id < 5", "DELETE FROM accounts WHERE id > 25",
            "UPDATE accounts SET id = 100 WHERE id = 10", "INSERT INTO accounts VALUES (200, 'x', 2.5, now())")
        wait_equal(lambda: target_rows(spark, target), lambda: source_rows(pg_db))
    finally:
        query.stop()
