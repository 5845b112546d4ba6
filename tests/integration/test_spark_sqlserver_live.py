"""SQL Server -> readStream.format("cdc") -> apply_changes -> Parquet, across a restart of the
query: only when ``CDC_TEST_SQLSERVER_DSN`` is set (tests/integration/test_sqlserver_live.py).
Without a server, tests/unit/test_sqlserver_spark_reader.py drives the same reader against
recorded change-table rows."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdc.sources.sqlserver.connection import OdbcConnection
from tests.integration.test_spark import target_rows, wait_equal
from tests.integration.test_sqlserver_live import DSN, admin, enable, props, table  # noqa: F401 - fixtures

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not DSN, reason="set CDC_TEST_SQLSERVER_DSN to run against a "
                                                                   "real SQL Server")]


def source_rows(admin: OdbcConnection, name: str) -> list[tuple]:  # noqa: F811
    return sorted((r["id"], r["name"], r["amount"]) for r in admin.query(f"SELECT id, name, amount FROM dbo.{name}"))


def start_query(spark: Any, props: dict[str, str], name: str, tmp_path: Path) -> Any:  # noqa: F811
    from cdc.spark.apply import changes_applier

    reader = spark.readStream.format("cdc").option("source", "sqlserver") \
        .option("table", f"{props['database.names']}.dbo.{name}").option("poll.interval.ms", "200")
    for key, value in props.items():
        reader = reader.option(key, value)
    return (reader.load().writeStream.foreachBatch(changes_applier(str(tmp_path / "target"), ["id"], format="parquet"))
            .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(processingTime="500 milliseconds")
            .start())


def test_sqlserver_into_spark_with_restart(spark: Any, admin: OdbcConnection, props: dict[str, str],  # noqa: F811
                                           table: str, tmp_path: Path) -> None:  # noqa: F811
    admin.execute(f"CREATE TABLE dbo.{table} (id INT NOT NULL PRIMARY KEY, name VARCHAR(20), amount DECIMAL(10,2))")
    for n in range(1, 21):
        admin.execute(f"INSERT INTO dbo.{table} VALUES ({n}, 'n{n}', {n * 1.5})")
    enable(admin, table)
    target = tmp_path / "target"
    expected = lambda: source_rows(admin, table)  # noqa: E731
    query = start_query(spark, props, table, tmp_path)
    try:
        wait_equal(lambda: target_rows(spark, target, "parquet"), expected)  # the snapshot
        admin.execute(f"INSERT INTO dbo.{table} VALUES (100, 'new', 1.00)")
        admin.execute(f"UPDATE dbo.{table} SET amount = amount + 10 WHERE id <= 5")
        admin.execute(f"DELETE FROM dbo.{table} WHERE id BETWEEN 10 AND 12")
        admin.execute(f"UPDATE dbo.{table} SET id = 200 WHERE id = 15")
        wait_equal(lambda: target_rows(spark, target, "parquet"), expected)
    finally:
        query.stop()
    admin.execute(f"UPDATE dbo.{table} SET name = 'while stopped' WHERE id = 1")
    query = start_query(spark, props, table, tmp_path)  # resumes from its checkpoint
    try:
        wait_equal(lambda: target_rows(spark, target, "parquet"), expected)
    finally:
        query.stop()
    assert (1, "while stopped", Decimal("11.50")) in target_rows(spark, target, "parquet")
