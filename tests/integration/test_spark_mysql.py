"""MariaDB -> readStream.format("cdc") -> apply_changes -> table, compared row by row, across a
restart of the query (the MySQL source's offsets and schema history in Spark's hands)."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest

from tests.integration.test_mysql_stream import sql
from tests.integration.test_spark import target_rows, wait_equal
from tests.waits import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.mysql]


def source_rows(server: dict[str, Any], db: str) -> list[tuple]:
    conn = pymysql.connect(**server, database=db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, name, amount FROM accounts")
            return sorted(cur.fetchall())
    finally:
        conn.close()


def start_query(spark: Any, db: dict[str, str], tmp_path: Path) -> Any:
    from cdc.spark.apply import changes_applier

    reader = spark.readStream.format("cdc").option("source", "mysql").option("table", f"{db['db']}.accounts")
    for key in ("database.hostname", "database.port", "database.user", "database.password", "database.server.id",
                "database.include.list"):
        reader = reader.option(key, db[key])
    reader = reader.option("schema.history.internal.file.filename", str(tmp_path / "history.jsonl"))
    return (reader.load().writeStream.foreachBatch(changes_applier(str(tmp_path / "target"), ["id"], format="parquet"))
            .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(processingTime="500 milliseconds")
            .start())


def test_mariadb_into_spark_with_restart(spark: Any, mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                         tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE accounts (id int PRIMARY KEY, name varchar(20), amount decimal(10,2))",
        "INSERT INTO accounts SELECT seq, CONCAT('n', seq), seq * 1.5 FROM seq_1_to_50")
    target = tmp_path / "target"
    expected = lambda: source_rows(mysql_server, db)  # noqa: E731
    query = start_query(spark, mysql_db, tmp_path)
    try:
        wait_equal(lambda: target_rows(spark, target, "parquet"), expected)  # the snapshot
        sql(mysql_server, db, "INSERT INTO accounts VALUES (100, 'new', 1.00)",
            "UPDATE accounts SET amount = amount + 10 WHERE id <= 10",
            "DELETE FROM accounts WHERE id BETWEEN 20 AND 25",
            "UPDATE accounts SET id = 200 WHERE id = 30")
        wait_equal(lambda: target_rows(spark, target, "parquet"), expected)
    finally:
        query.stop()
    sql(mysql_server, db, "UPDATE accounts SET name = 'while stopped' WHERE id = 1",
        "DELETE FROM accounts WHERE id = 2")
    query = start_query(spark, mysql_db, tmp_path)  # resumes from its checkpoint
    try:
        wait_equal(lambda: target_rows(spark, target, "parquet"), expected)
        sql(mysql_server, db, "INSERT INTO accounts VALUES (300, 'after restart', 3.00)")
        wait_equal(lambda: target_rows(spark, target, "parquet"), expected)
    finally:
        query.stop()
    assert (300, "after restart", Decimal("3.00")) in target_rows(spark, target, "parquet")


def test_mariadb_snapshot_in_parallel_chunks_under_a_writer(spark: Any, mysql_server: dict[str, Any],
                                                            mysql_db: dict[str, str], tmp_path: Path) -> None:
    """The snapshot cut into key chunks read by the executors while a writer changes rows all over the
    key range; the stream from the schema's binlog position brings every change since: the target
    ends equal to the table."""
    import threading
    import time

    from cdc.spark.apply import changes_applier
    from cdc.spark.session import delta_available

    if not delta_available(spark):
        pytest.fail("Delta jars are not on the classpath (scripts/spark-jars.sh)")
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE accounts (id int PRIMARY KEY, name varchar(20), amount decimal(10,2))",
        "INSERT INTO accounts SELECT seq, CONCAT('n', seq), seq * 1.5 FROM seq_1_to_20000")
    stop = threading.Event()

    def writer() -> None:
        conn = pymysql.connect(**mysql_server, database=db, autocommit=True)
        n = 0
        try:
            with conn.cursor() as cur:
                while not stop.is_set():
                    n += 1
                    cur.execute("UPDATE accounts SET amount = amount + 1 WHERE id = %s", ((n * 7919) % 20000 + 1,))
                    cur.execute("DELETE FROM accounts WHERE id = %s", ((n * 104729) % 20000 + 1,))
                    cur.execute("INSERT INTO accounts VALUES (%s, 'w', %s) ON DUPLICATE KEY UPDATE name = 'again'",
                                (20000 + n, n))
                    time.sleep(0.002)
        finally:
            conn.close()

    reader = spark.readStream.format("cdc").option("source", "mysql").option("table", f"{db}.accounts")
    for key in ("database.hostname", "database.port", "database.user", "database.password", "database.server.id",
                "database.include.list"):
        reader = reader.option(key, mysql_db[key])
    reader = (reader.option("schema.history.internal.file.filename", str(tmp_path / "history.jsonl"))
              .option("snapshotChunkRows", "3000"))
    target = tmp_path / "target"
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        query = (reader.load().writeStream.foreachBatch(changes_applier(str(target), ["id"], format="delta"))
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(processingTime="1 second")
                 .start())
        def snapshot_done() -> bool:  # the writer runs through the snapshot's chunks (micro-batch 0)
            assert query.isActive, query.exception()
            return (tmp_path / "checkpoint" / "commits" / "0").exists()

        wait_until(snapshot_done, 180, "the snapshot's micro-batch", interval=0.5)
    finally:
        stop.set()
        thread.join()
    try:
        wait_equal(lambda: target_rows(spark, target, "delta"), lambda: source_rows(mysql_server, db), timeout=180)
    finally:
        query.stop()
