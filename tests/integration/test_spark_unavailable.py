"""Values the source did not send (PostgreSQL's unchanged TOASTed values) never reach a target.

Hand-made batches first (the source's marks, the placeholder of events read from Kafka, a key change
from its headers), then the real thing: TOASTed text, bytea, jsonb and int[] under REPLICA IDENTITY
DEFAULT through format("cdc") into Delta and Parquet, SCD1 and SCD2, with a restart; and through Kafka.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LONG

pytestmark = pytest.mark.spark

P = "__debezium_unavailable_value"
ROW = "struct<id:int,body:string,blob:binary,nums:array<int>,n:int>"
MARKED = f"op string, before {ROW}, after {ROW}, _position long, _unavailable array<string>, " \
         "headers array<struct<key:string,value:binary>>"
KAFKA = f"op string, before {ROW}, after {ROW}, _position long, headers array<struct<key:string,value:binary>>"


def formats(spark: Any) -> list[str]:
    from cdc.spark.session import delta_available

    return ["parquet", "delta"] if delta_available(spark) else ["parquet"]


def current(spark: Any, path: Path, fmt: str, scd_type: int) -> list[tuple]:
    df = spark.read.format(fmt).load(str(path))
    if scd_type == 2:
        df = df.where("is_current")
    return sorted((r["id"], r["body"], None if r["blob"] is None else bytes(r["blob"]), r["nums"], r["n"])
                  for r in df.collect())


def old_key(key: int) -> list[tuple[str, bytes]]:
    return [("__debezium.oldkey", f'{{"id":{key}}}'.encode())]


@pytest.mark.parametrize("fmt", ["parquet", "delta"])
def test_missing_values_come_from_the_batch_or_the_target(spark: Any, tmp_path: Path, fmt: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """The source's marks (format("cdc")) and the placeholder (Kafka) alike, SCD1 and SCD2: an update
    without the value keeps the target's; an insert then an update without it in one batch takes the
    insert's; a key change's create takes the old key's row; a row nowhere to be found gets NULL, reported."""
    from cdc.spark.apply import apply_changes

    if fmt not in formats(spark):
        pytest.skip("no Delta jars")
    first = [("r", None, (1, "b1", b"x1", [1, 2], 0), 1), ("r", None, (2, "b2", b"x2", [3], 0), 2)]
    # (id 1's update lacks body and blob; 3 is inserted and updated without nums; 2 becomes 4 without its
    # body; 9 was never seen)
    second_marked = [("u", None, (1, P, P.encode(), [5], 1), 3, ["body", "blob"], None),
                     ("c", None, (3, "b3", b"x3", [7], 0), 4, None, None),
                     ("u", None, (3, "b3", b"x3", list(P.encode()), 1), 5, ["nums"], None),
                     ("d", (2, None, None, None, None), None, 6, None, [("__debezium.newkey", b'{"id":4}')]),
                     ("c", None, (4, P, b"x4", [3], 2), 7, ["body"], old_key(2)),
                     ("u", None, (9, P, b"x9", [9], 9), 8, ["body"], None)]
    # read from Kafka: no marks, the placeholder in each type's form tells them
    second_kafka = [(op, before, after, seq, headers) for op, before, after, seq, _, headers in second_marked]
    expected = [(1, "b1", b"x1", [5], 1), (3, "b3", b"x3", [7], 1), (4, "b2", b"x4", [3], 2),
                (9, None, b"x9", [9], 9)]
    # (each apply costs seconds: the marks with SCD2, the placeholder with SCD1; the same fill follows)
    for name, schema, second, scd_type in (("marked", MARKED, second_marked, 2), ("kafka", KAFKA, second_kafka, 1)):
        target = tmp_path / f"{name}{scd_type}"
        rows = [(*r, None, None) if schema is MARKED else (*r, None) for r in first]
        apply_changes(spark.createDataFrame(rows, schema), str(target), ["id"], format=fmt, scd_type=scd_type)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="cdc.spark.unavailable"):
            apply_changes(spark.createDataFrame(second, schema), str(target), ["id"], format=fmt, scd_type=scd_type)
        assert current(spark, target, fmt, scd_type) == expected, (name, scd_type)
        warned = [r.getMessage() for r in caplog.records]
        assert len(warned) == 1 and "1 row(s)" in warned[0] and "keys 9" in warned[0] and "body" in warned[0] \
            and "post.processors=reselector" in warned[0], warned
    history = spark.read.format(fmt).load(str(tmp_path / "marked2")).where("id = 3").orderBy("valid_from").collect()
    assert [(r["nums"], r["n"]) for r in history] == [([7], 0), ([7], 1)]  # the insert's value, carried


def test_the_target_is_read_for_the_keys_that_lack_values_only(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The target's rows a fill reads: those of the keys whose events lack values and of key changes' old
    keys, listed (so Delta and Parquet skip the other files), or their range when there are many."""
    from pyspark.sql import functions as F

    from cdc.spark import unavailable

    target = spark.range(1, 101).select(F.col("id").cast("int").alias("id"), F.lit("b").alias("body"))
    schema = "id int, body string, _seq long, _unavailable array<string>, _old_key struct<id:int>"
    changes = spark.createDataFrame([(1, "P", 3, ["body"], None), (3, "b3", 4, None, None), (4, "P", 7, ["body"], (2,)),
                                     (50, "P", 8, ["body"], None), (60, "b", 9, None, None)], schema)

    def read(limit: int) -> list[int]:
        monkeypatch.setattr(unavailable, "LOOKUP_LIMIT", limit)
        return sorted(r["id"] for r in unavailable._rows_looked_up(target, changes, ["id"]).collect())

    assert read(1000) == [1, 2, 4, 50]  # 3 and 60 have their values; 2 is 4's old key
    assert read(3) == list(range(1, 51))  # more than 3 keys: their range
    stamped = changes.withColumn("id", F.timestamp_seconds("id"))  # a timestamp key: no literal, the whole target
    assert unavailable._rows_looked_up(target, stamped, ["id"]).count() == 100


# ---- a real PostgreSQL: TOASTed text, bytea, jsonb and int[] under REPLICA IDENTITY DEFAULT ----------------

DOCS = ("CREATE TABLE docs (id int PRIMARY KEY, title text, body text, blob bytea, payload jsonb, nums int[], n int)",
        # EXTERNAL: out of line and uncompressed, so the values below (over 8 kB) are really TOASTed
        "ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL, ALTER COLUMN blob SET STORAGE EXTERNAL, "
        "ALTER COLUMN payload SET STORAGE EXTERNAL, ALTER COLUMN nums SET STORAGE EXTERNAL")


def toasted(ids: str) -> str:
    """An INSERT of rows ``ids`` (a set-returning SQL expression) whose four last columns are TOASTed."""
    return ("INSERT INTO docs SELECT g, 't' || g, repeat('0123456789abcdef', 1000) || g, "
            "decode(repeat('deadbeef', 5000) || lpad(to_hex(g), 8, '0'), 'hex'), "
            "('{\"k\": \"' || repeat('v', 20000) || g || '\"}')::jsonb, array_fill(g, ARRAY[3000]), 0 "
            f"FROM {ids} g")


def in_one_transaction(db: dict[str, str], *statements: str) -> None:
    """One transaction: a micro-batch of format("cdc") ends between transactions, so these are in one."""
    import psycopg

    with psycopg.connect(db["dsn"]) as conn, conn.transaction():
        for statement in statements:
            conn.execute(statement)


def digest(*values: Any) -> tuple:
    """A row with its large values as short digests (a failure prints them)."""
    import hashlib

    def one(value: Any) -> Any:
        if isinstance(value, (bytes, bytearray, memoryview)):
            value = bytes(value)
        elif isinstance(value, list | str) and len(str(value)) > 100:
            value = str(value).encode()
        else:
            return value
        return hashlib.md5(value).hexdigest()[:12]  # noqa: S324 - a digest for comparing, not security
    return tuple(one(v) for v in values)


def source_docs(db: dict[str, str]) -> list[tuple]:
    import psycopg

    with psycopg.connect(db["dsn"]) as conn:
        rows = conn.execute("SELECT id, title, body, blob, payload::text, nums, n FROM docs").fetchall()
    return sorted(digest(*r) for r in rows)


def target_docs(spark: Any, path: Path, fmt: str, scd_type: int = 1) -> list[tuple]:
    if fmt == "delta" and not (path / "_delta_log").exists() or fmt == "parquet" and not (path / "_SUCCESS").exists():
        return []
    try:
        df = spark.read.format(fmt).load(str(path))
        rows = df.where("is_current").collect() if scd_type == 2 else df.collect()
    except Exception:  # noqa: BLE001 - the Parquet fallback swaps folders under a concurrent reader
        return [("being replaced",)]
    return sorted(digest(r["id"], r["title"], r["body"], r["blob"], r["payload"], r["nums"], r["n"]) for r in rows)


def toast_slot(db: dict[str, str]) -> str:
    return f"toast_{db['database.dbname']}"


def docs_query(spark: Any, db: dict[str, str], apply: Any, checkpoint: Path, **options: str) -> Any:
    reader = spark.readStream.format("cdc").option("source", "postgres").option("table", "public.docs")
    for key in ("database.hostname", "database.port", "database.user", "database.dbname"):
        reader = reader.option(key, db[key])
    # a slot of the test's database (slot names are the cluster's: one a killed run left cannot be taken)
    reader = reader.option("slot.name", toast_slot(db)).option("publication.name", "toast_pub")
    for key, value in options.items():
        reader = reader.option(key, value)
    return (reader.load().writeStream.foreachBatch(apply).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="500 milliseconds").start())


# The Parquet fallback's case is LONG (scripts/long-suite.sh): its rules are in the test command through
# test_missing_values_come_from_the_batch_or_the_target[parquet], and this stream through Delta.
@pytest.mark.parametrize("targets", ["delta", pytest.param("parquet", marks=LONG)])
def test_toasted_values_through_format_cdc(spark: Any, pg_db: dict[str, str], tmp_path: Path, targets: str) -> None:
    """Delta SCD1 and SCD2 in one query (or the Parquet fallback): after the snapshot, updates that leave
    the TOASTed columns alone, an insert and updates of one key in one micro-batch, a key change, and
    changes while the query was stopped, each target equals the table; no SCD2 version lost a value."""
    from cdc.spark.apply import apply_changes
    from cdc.spark.session import delta_available
    from tests.integration.test_pg_stream import sql
    from tests.integration.test_spark import wait_equal

    if targets == "delta" and not delta_available(spark):
        pytest.skip("Delta jars are not on the classpath (scripts/spark-jars.sh)")
    sql(pg_db, *DOCS, toasted("generate_series(1, 5)"))
    scd1, scd2, parquet = tmp_path / "scd1", tmp_path / "scd2", tmp_path / "parquet"

    chosen = [(scd1, "delta", 1), (scd2, "delta", 2)] if targets == "delta" else [(parquet, "parquet", 1)]

    def apply(batch: Any, batch_id: int) -> None:
        batch = batch.persist()
        for path, fmt, scd_type in chosen:
            apply_changes(batch, str(path), ["id"], format=fmt, scd_type=scd_type)
        batch.unpersist()

    def all_equal() -> None:
        for path, fmt, scd_type in chosen:
            wait_equal(lambda p=path, f=fmt, t=scd_type: target_docs(spark, p, f, t), lambda: source_docs(pg_db),
                       timeout=180)

    query = docs_query(spark, pg_db, apply, tmp_path / "ck")
    try:
        all_equal()  # the snapshot
        sql(pg_db, "UPDATE docs SET n = 1 WHERE id <= 3")  # the TOASTed values are not sent
        in_one_transaction(pg_db, toasted("generate_series(10, 11)"), "UPDATE docs SET n = 2 WHERE id = 10",
                           "UPDATE docs SET title = 'again' WHERE id = 10", "UPDATE docs SET n = 3 WHERE id = 1")
        sql(pg_db, "UPDATE docs SET id = 20 WHERE id = 4")  # a key change: the create lacks them too
        all_equal()
    finally:
        query.stop()
    sql(pg_db, "UPDATE docs SET n = 4 WHERE id IN (2, 20)", "UPDATE docs SET body = 'short now' WHERE id = 3",
        "DELETE FROM docs WHERE id = 5")
    query = docs_query(spark, pg_db, apply, tmp_path / "ck")  # resumes from its checkpoint
    try:
        all_equal()
        sql(pg_db, "UPDATE docs SET n = 5 WHERE id = 3", "UPDATE docs SET title = 'last' WHERE id = 11")
        all_equal()
    finally:
        query.stop()
    if targets != "delta":
        return
    versions = spark.read.format("delta").load(str(scd2)).collect()
    lost = [(r["id"], r["valid_from"]) for r in versions
            if None in (r["body"], r["blob"], r["payload"], r["nums"]) or P in (r["body"], r["payload"])]
    assert not lost, f"SCD2 versions without their values: {lost}"
    assert len({r["id"] for r in versions}) == 8 and len(versions) > 15


def test_the_reselect_post_processor_reads_them_at_the_source(spark: Any, pg_db: dict[str, str],
                                                            tmp_path: Path) -> None:
    """Rows the target has never seen (no snapshot) updated without their TOASTed values: with Debezium's
    reselect post processor in the query's options, the reader reads them again, and the target is exact."""
    import psycopg

    from cdc.core.post_processors import RESELECT
    from cdc.spark.apply import changes_applier
    from tests.integration.test_pg_stream import sql
    from tests.integration.test_spark import wait_equal

    sql(pg_db, *DOCS, toasted("generate_series(1, 3)"))
    target = tmp_path / "target"
    query = docs_query(spark, pg_db, changes_applier(str(target), ["id"], format="parquet"), tmp_path / "ck",
                       **{"snapshot.mode": "no_data", "post.processors": "reselector", "reselector.type": RESELECT})
    try:
        with psycopg.connect(pg_db["dsn"]) as conn:  # the stream starts where the slot is made
            for _ in range(300):
                if conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                                (toast_slot(pg_db),)).fetchone():
                    break
                conn.execute("SELECT pg_sleep(0.2)")
        sql(pg_db, "UPDATE docs SET n = 1 WHERE id <= 2")
        wait_equal(lambda: target_docs(spark, target, "parquet"), lambda: source_docs(pg_db)[:2])
        assert query.exception() is None
    finally:
        query.stop()


def test_toasted_values_and_a_key_change_through_kafka(spark: Any, pg_db: dict[str, str], tmp_path: Path,
                                                       kafka_bootstrap: str) -> None:
    """cdc's pipeline into Kafka, read_kafka_topic into Delta: the placeholder of each type is told from
    data and the target keeps its values; a key change's create (its __debezium.oldkey header, which
    read_kafka_topic reads) takes the old key's."""
    import threading
    import time
    import uuid

    from cdc.config import CORE_OPTIONS, Config
    from cdc.pipeline import build
    from cdc.sinks.kafka import KafkaSink
    from cdc.spark.apply import changes_applier
    from cdc.spark.kafka import read_kafka_topic
    from cdc.spark.session import delta_available, jar_folder
    from tests.integration.test_pg_stream import sql
    from tests.integration.test_spark import wait_equal

    folder = jar_folder(fetch=False)
    if folder is None or not list(folder.glob("spark-sql-kafka*.jar")) or not delta_available(spark):
        pytest.skip("Spark's Kafka connector or Delta jars are not fetched (scripts/spark-jars.sh)")
    sql(pg_db, *DOCS, toasted("generate_series(1, 4)"))
    prefix = "u" + uuid.uuid4().hex[:8]
    props: dict[str, Any] = {
        **{k: v for k, v in pg_db.items() if k != "dsn"}, "topic.prefix": prefix, "slot.name": f"{prefix}_slot",
        "publication.name": f"{prefix}_pub", "offset.flush.interval.ms": "100", "slot.drop.on.stop": "true",
        "offset.storage.file.filename": str(tmp_path / "offsets.json"), "kafka.bootstrap.servers": kafka_bootstrap}
    sink = KafkaSink(Config({"kafka.bootstrap.servers": kafka_bootstrap, "topic.prefix": prefix}).declare(CORE_OPTIONS))
    engine = build("postgres", props, sink=sink)
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    query = None
    try:
        deadline = time.monotonic() + 60
        while not engine.source_streaming():
            assert thread.is_alive() and time.monotonic() < deadline, "the pipeline never started streaming"
            time.sleep(0.1)
        events = read_kafka_topic(spark, kafka_bootstrap, f"{prefix}.public.docs",
                                  engine.source.table_schema("public.docs"))
        target = tmp_path / "target"
        query = (events.writeStream.foreachBatch(changes_applier(str(target), ["id"], format="delta"))
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="1 second").start())
        wait_equal(lambda: target_docs(spark, target, "delta"), lambda: source_docs(pg_db), timeout=180)
        sql(pg_db, "UPDATE docs SET n = 1 WHERE id <= 2", "UPDATE docs SET id = 20 WHERE id = 3")
        in_one_transaction(pg_db, toasted("generate_series(10, 10)"), "UPDATE docs SET n = 2 WHERE id = 10")
        wait_equal(lambda: target_docs(spark, target, "delta"), lambda: source_docs(pg_db), timeout=180)
    finally:
        if query is not None:
            query.stop()
        engine.stop()
        thread.join(30)
