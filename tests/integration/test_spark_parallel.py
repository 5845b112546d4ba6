"""The initial snapshot read in key chunks by Spark's executors (cdc/spark/datasource.py, cdc/sources/
postgres/parallel.py): the columnar path gives the values of the Python path, and the target equals
the table under a concurrent writer and across a restart in the middle of the snapshot."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cdc.config import CORE_OPTIONS, Config
from tests.integration.test_pg_stream import sql
from tests.waits import wait_until

pytestmark = pytest.mark.spark

COLUMNAR_TYPES = """CREATE TABLE wide (id int PRIMARY KEY, s smallint, b bigint, r real, d8 double precision,
    ok boolean, t text, v varchar(10), c char(5), n numeric(12,3), dt date, ts timestamp(6), ts3 timestamp(3),
    tz timestamptz, by bytea, u uuid, j json, jb jsonb, ip inet, mac macaddr)"""
ROWS = """INSERT INTO wide VALUES
    (1, -32768, -9223372036854775808, 1.5, -0.1, true, 'héllo ☃', '', 'ab', -123456789.123, '2024-02-29',
     '2024-02-29 13:45:30.123456', '1999-12-31 23:59:59.999', '2024-02-29 13:45:30.5+05:30', '\\x00ff10',
     'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"b": [1, 2]}', '{"b": [1, 2], "a": null}', '10.1.0.0/16',
     '08:00:2b:01:02:03'),
    (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL),
    (3, 32767, 9223372036854775807, 'NaN', '-Infinity', false, E'tab\\there\\nnewline', 'ten chars!', '12345',
     0.001, '0001-01-01', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:00', '1970-01-01 00:00:00+00', '\\x',
     '00000000-0000-0000-0000-000000000000', '[]', '{}', '::1', 'ff:ff:ff:ff:ff:ff')"""


def _source(db: dict[str, str], **extra: str) -> Any:
    from cdc.sources.postgres.source import PostgresSource

    props = {k: v for k, v in db.items() if k != "dsn"}
    return PostgresSource(Config({**props, "topic.prefix": "dbz", "slot.name": "par_slot",
                                  "publication.name": "par_pub", **extra}).declare(CORE_OPTIONS))


def _both_paths(db: dict[str, str], table: str, chunks: int = 2, **extra: str
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The table's chunks' events through the Python converters and through Arrow, as Spark rows."""
    from cdc.spark.arrow_events import EventRows, arrow_schema, chunk_batches
    from cdc.spark.schema import event_schema, struct_type_of

    source = _source(db, **extra)
    try:
        row_type, _ = struct_type_of(source.table_schema(table))
        schema = arrow_schema(event_schema(row_type))
        plan = source.plan_parallel_snapshot(chunk_rows=2)
        assert plan is not None
        own = [chunk for chunk in plan["chunks"] if chunk["table"] == table]
        assert len(own) == chunks, plan  # 3 rows in chunks of 2
        source.release_parallel_snapshot()
        python: list[dict[str, Any]] = []
        arrow: list[dict[str, Any]] | None = []
        events = EventRows(table, row_type.fieldNames())
        for chunk in own:
            for batch in source.parallel_chunk_events(plan, chunk):
                rows = events.batch(batch, lambda: 0, schema)
                python += rows.to_pylist() if rows is not None else []
            columnar = source.parallel_chunk_arrow(plan, chunk)
            if columnar is None:
                arrow = None
            elif arrow is not None:
                for batch in chunk_batches(columnar[0], schema, columnar[1], plan["ts_us"] // 1000, table, events):
                    arrow += batch.to_pylist()
        return python, arrow
    finally:
        source.close()


@pytest.mark.parametrize("create, key", [
    ("CREATE TABLE k (id int PRIMARY KEY, v int) WITH (autovacuum_enabled = false); "
     "INSERT INTO k SELECT g, g FROM generate_series(1, 25000) g", "id"),
    ("CREATE TABLE k (a text, b numeric, v int, PRIMARY KEY (a, b)) WITH (autovacuum_enabled = false); "
     "INSERT INTO k SELECT 'k' || (g % 37), g / 7.0, g FROM generate_series(1, 25000) g", "a, b"),
])
def test_chunks_hold_every_row_once(pg_db: dict[str, str], create: str, key: str) -> None:
    """Keys whose text order is not their order (9001 > 10001 as text), a composite key of text and numeric.
    Never analyzed (autovacuum off): the bounds come from numbering every key, so each chunk is exact."""
    sql(pg_db, *create.split("; "))
    source = _source(pg_db)
    try:
        plan = source.plan_parallel_snapshot(chunk_rows=1000)
        assert plan is not None and len(plan["chunks"]) == 25
        seen: list[int] = []
        for chunk in plan["chunks"]:
            got = [e.value["after"]["v"] for batch in source.parallel_chunk_events(plan, chunk) for e in batch]
            assert len(got) == 1000, (chunk, len(got))
            seen += got
        source.release_parallel_snapshot()
    finally:
        source.close()
    assert sorted(seen) == list(range(1, 25001))


@pytest.mark.parametrize("order", ["g", "md5(g::text)"], ids=["key in page order", "keys scattered"])
def test_an_analyzed_table_is_cut_by_a_sample_of_its_pages(pg_db: dict[str, str], order: str) -> None:
    """With statistics, the bounds come from a sample of the pages (here half), not from reading every key:
    every row still in exactly one chunk, and the chunks near chunk_rows."""
    sql(pg_db, "CREATE TABLE k (id text PRIMARY KEY, v int) WITH (autovacuum_enabled = false)",
        f"INSERT INTO k SELECT {order}, g FROM generate_series(1, 200000) g", "ANALYZE k")
    source = _source(pg_db)
    try:
        plan = source.plan_parallel_snapshot(chunk_rows=20000)
        assert plan is not None and len(plan["chunks"]) == 10
        seen: list[int] = []
        sizes = []
        for chunk in plan["chunks"]:
            got = [e.value["after"]["v"] for batch in source.parallel_chunk_events(plan, chunk) for e in batch]
            sizes.append(len(got))
            seen += got
        source.release_parallel_snapshot()
    finally:
        source.close()
    assert sorted(seen) == list(range(1, 200001))
    assert all(12000 <= size <= 28000 for size in sizes), sizes  # measured here: 16,084-23,159


def test_columnar_chunks_give_the_values_of_the_python_path(pg_db: dict[str, str]) -> None:
    sql(pg_db, COLUMNAR_TYPES, ROWS)
    python, arrow = _both_paths(pg_db, "public.wide")
    assert arrow is not None, "every column of this table has a columnar reading"
    assert [r["after"]["id"] for r in python] == [1, 2, 3]
    for ours, theirs in zip(arrow, python, strict=True):
        for name, value in theirs["after"].items():
            if isinstance(value, float) and value != value:  # NaN
                assert ours["after"][name] != ours["after"][name], name
            else:
                assert ours["after"][name] == value, (name, ours["after"][name], value)
        assert {k: v for k, v in ours.items() if k != "after"} == {k: v for k, v in theirs.items() if k != "after"}


def test_a_columnar_chunk_is_read_a_piece_at_a_time(pg_db: dict[str, str]) -> None:
    """A chunk of wide rows (30 MB here, 100,000 rows of 20 kB at the default snapshotChunkRows: 2 GB) reaches
    Spark in pieces as the server sends them, never whole in an executor's memory."""
    sql(pg_db, "CREATE TABLE wide_rows (id int PRIMARY KEY, body text)",
        "INSERT INTO wide_rows SELECT g, repeat(md5(g::text), 320) FROM generate_series(1, 3000) g")
    source = _source(pg_db)
    try:
        plan = source.plan_parallel_snapshot(chunk_rows=3000)
        assert plan is not None and len(plan["chunks"]) == 1
        columnar = source.parallel_chunk_arrow(plan, plan["chunks"][0])
        assert columnar is not None
        sizes = [part.num_rows for part in columnar[0]]
        source.release_parallel_snapshot()
    finally:
        source.close()
    assert sum(sizes) == 3000
    assert len(sizes) >= 2, sizes


@pytest.mark.parametrize("options, secret", [
    ({"column.mask.with.5.chars": "public.people.name"}, "*****"),
    ({"column.mask.hash.SHA-256.with.salt.pepper": "public.people.name"}, None),
    ({"column.truncate.to.3.chars": "public.people.name"}, "Ada"),
    ({"converters": "isbn", "isbn.type": "tests.fixtures.custom_converters:IsbnConverter"}, None),
], ids=["mask", "hash", "truncate", "custom converter"])
def test_column_options_that_change_values_hold_in_every_chunk(pg_db: dict[str, str], options: dict[str, str],
                                                               secret: str | None) -> None:
    """A masked, hashed, truncated or custom-converted column is read the Python way, which applies the option:
    the columnar path read the stored value (a masked column leaked into Spark's snapshot)."""
    sql(pg_db, "CREATE TABLE people (id int PRIMARY KEY, name text, isbn text)",
        "INSERT INTO people VALUES (1, 'Ada Lovelace', '978-3-16-148410-0'), (2, 'Bob', NULL), (3, NULL, 'x-1')")
    python, arrow = _both_paths(pg_db, "public.people", **options)
    assert arrow is None, "the option's table is read through the Python converters"
    first = python[0]["after"]
    if "converters" in options:
        assert first["isbn"] == "9783161484100"
    else:
        assert first["name"] != "Ada Lovelace" and (secret is None or first["name"] == secret)


OUTSIDE_ADBC = "CREATE TABLE dates (id int PRIMARY KEY, d date, ts timestamp, tz timestamptz, n numeric(10,2))"


@pytest.mark.parametrize("column, value", [("d", "'infinity'"), ("d", "'0044-03-15 BC'"), ("ts", "'-infinity'"),
                                           ("tz", "'infinity'"), ("tz", "'4713-01-01 00:00:00+00 BC'"), ("n", "'NaN'")])
def test_rows_outside_the_columnar_path_are_read_the_python_way(pg_db: dict[str, str], column: str, value: str) -> None:
    """Values ADBC would read wrong (it wraps infinite and BC dates around, and has no numeric NaN): their rows
    alone are read again as text and converted by the Python converters; the chunk stays columnar."""
    sql(pg_db, OUTSIDE_ADBC, "INSERT INTO dates VALUES (1, '0001-01-01', '9999-12-31 23:59:59.999999', "
        "'0001-01-01 00:00:00+00', -99999999.99), (2, NULL, NULL, NULL, NULL)",
        f"INSERT INTO dates (id, {column}) VALUES (3, {value})")
    python, arrow = _both_paths(pg_db, "public.dates")
    assert arrow is not None, "the table's chunks are read columnar"
    assert [r["after"]["id"] for r in python] == [1, 2, 3]
    assert sorted(arrow, key=lambda r: r["after"]["id"]) == python


def test_rows_outside_the_columnar_path_under_initial_statements(pg_db: dict[str, str]) -> None:
    """database.initial.statements may change DateStyle: a row read again as text (for its NaN) still has its
    dates in the style the converters parse (in 'SQL, DMY', 2024-03-15 is 15/03/2024)."""
    sql(pg_db, OUTSIDE_ADBC, "INSERT INTO dates VALUES (1, '2024-01-01', NULL, NULL, 1.5), "
        "(2, NULL, NULL, NULL, NULL), (3, '2024-03-15', '2024-03-15 12:00', '2024-03-15 12:00+00', 'NaN')")
    python, arrow = _both_paths(pg_db, "public.dates", **{"database.initial.statements": "SET DateStyle = 'SQL, DMY'"})
    assert arrow is not None
    assert [r["after"]["id"] for r in python] == [1, 2, 3]
    assert sorted(arrow, key=lambda r: r["after"]["id"]) == python


def test_rows_outside_the_columnar_path_of_a_partitioned_table(pg_db: dict[str, str]) -> None:
    """A chunk of a partitioned table reads its partitions' rows: the one holding an infinite date is read
    again once, from its partition, and no other row with it."""
    sql(pg_db, "CREATE TABLE dates (id int PRIMARY KEY, d date) PARTITION BY RANGE (id)",
        "CREATE TABLE dates_low PARTITION OF dates FOR VALUES FROM (1) TO (3)",
        "CREATE TABLE dates_high PARTITION OF dates FOR VALUES FROM (3) TO (10)",
        "INSERT INTO dates VALUES (1, 'infinity'), (2, '2024-01-01'), (3, '2024-01-02')")
    python, arrow = _both_paths(pg_db, "public.dates", chunks=2)
    assert arrow is not None
    assert [r["after"]["id"] for r in python] == [1, 2, 3]
    assert sorted(arrow, key=lambda r: r["after"]["id"]) == python


def _wait_equal(spark: Any, target: Path, db: dict[str, str], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    want: list[tuple] = []
    got: list[tuple] = []
    while time.monotonic() < deadline:
        with psycopg.connect(db["dsn"]) as conn:
            want = sorted(conn.execute("SELECT id, v FROM big").fetchall())
        try:
            got = sorted((r["id"], r["v"]) for r in spark.read.format("delta").load(str(target)).collect())
        except Exception:  # noqa: BLE001 - no commit yet
            got = []
        if got == want:
            return
        time.sleep(2)
    extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    raise AssertionError(f"{len(got)} rows in the target, {len(want)} in the table; extra {extra[:5]}, "
                         f"missing {missing[:5]}")


def _query(spark: Any, db: dict[str, str], target: Path, checkpoint: Path) -> Any:
    from cdc.spark.apply import changes_applier

    reader = spark.readStream.format("cdc").option("source", "postgres").option("table", "public.big")
    for key in ("database.hostname", "database.port", "database.user", "database.dbname"):
        reader = reader.option(key, db[key])
    reader = (reader.option("slot.name", "big_slot").option("publication.name", "big_pub")
              .option("snapshotChunkRows", "20000"))
    return (reader.load().writeStream.foreachBatch(changes_applier(str(target), ["id"], format="delta"))
            .option("checkpointLocation", str(checkpoint)).trigger(processingTime="1 second").start())


def test_parallel_snapshot_under_a_concurrent_writer_and_a_restart(spark: Any, pg_db: dict[str, str],
                                                                    tmp_path: Path) -> None:
    from cdc.spark.session import delta_available

    if not delta_available(spark):
        pytest.fail("Delta jars are not on the classpath (scripts/spark-jars.sh)")
    sql(pg_db, "CREATE TABLE big (id int PRIMARY KEY, v int NOT NULL)",
        "INSERT INTO big SELECT g, 0 FROM generate_series(1, 200000) g")
    stop = threading.Event()

    def writer() -> None:  # updates, deletes and inserts all over the key range, while the snapshot runs
        n = 0
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            while not stop.is_set():
                n += 1
                conn.execute("UPDATE big SET v = v + 1 WHERE id = %s", ((n * 7919) % 200000 + 1,))
                conn.execute("DELETE FROM big WHERE id = %s", ((n * 104729) % 200000 + 1,))
                conn.execute("INSERT INTO big VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET v = -1", (200000 + n, n))
                time.sleep(0.002)

    target, checkpoint = tmp_path / "target", tmp_path / "ck"
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        query = _query(spark, pg_db, target, checkpoint)
        deadline = time.monotonic() + 120
        while not (checkpoint / "offsets" / "0").exists():  # the snapshot's micro-batch is planned
            assert time.monotonic() < deadline and query.isActive, query.exception()
            time.sleep(0.1)
        query.stop()  # a restart in the middle of the snapshot: its chunks are read again, as they are now
        assert not (checkpoint / "commits" / "0").exists(), "the snapshot finished before the stop"
        planned = json.loads((checkpoint / "offsets" / "0").read_text().splitlines()[-1])
        assert len(planned["plan"]["chunks"]) >= 10, planned  # 200,000 rows and more in chunks of 20,000
        query = _query(spark, pg_db, target, checkpoint)

        def rereading() -> bool:  # its chunks read again (micro-batch 0 running, or done), the writer still going
            assert query.isActive, query.exception()
            return bool(query.status["isTriggerActive"]) or (checkpoint / "commits" / "0").exists()

        wait_until(rereading, 120, "the restarted query to read the snapshot's chunks again", interval=0.2)
    finally:
        stop.set()
        thread.join()
    try:
        _wait_equal(spark, target, pg_db)
    finally:
        query.stop()


def test_asked_twice_before_the_first_micro_batch_the_reader_gives_the_same_plan(pg_db: dict[str, str]) -> None:
    """Spark may ask for the latest offset again before the snapshot's micro-batch runs (a trigger that
    found too few rows under minRowsPerBatch): the reader hands over the plan it holds, instead of planning
    anew and meeting its own new slot as another consumer's (found by bench/bench_spark.py)."""
    from cdc.spark.datasource import CdcDataSource, CdcStreamReader

    sql(pg_db, "CREATE TABLE twice (id int PRIMARY KEY)", "INSERT INTO twice SELECT generate_series(1, 10)")
    options = {"source": "postgres", "table": "public.twice", "slot.name": "twice_slot",
               "publication.name": "twice_pub", "snapshotChunkRows": "4",
               **{k: v for k, v in pg_db.items() if k != "dsn"}}
    reader = CdcStreamReader(options, CdcDataSource(options).schema())
    try:
        start = reader.initialOffset()
        first = reader.latestOffset(start, None)
        second = reader.latestOffset(start, None)
        assert "plan" in first and second == first
        assert len(first["plan"]["chunks"]) == 3  # 10 rows in chunks of 4
        reader.commit(first)
    finally:
        reader.stop()
        with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
            conn.execute("SELECT pg_drop_replication_slot('twice_slot') FROM pg_replication_slots "
                         "WHERE slot_name = 'twice_slot'")
