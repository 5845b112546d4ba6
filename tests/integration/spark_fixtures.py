"""A local Spark session for the tests (one per test session: it takes ~10 s to start)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'cdc-debezium[spark]')")
    import shutil

    if shutil.which("java") is None:
        pytest.skip("no Java: Spark needs a JVM")
    from cdc.spark import local_session, register

    session = local_session("cdc-tests")
    register(session)
    yield session
    session.stop()


@pytest.fixture()
def delta(spark: Any) -> Any:
    from cdc.spark.session import delta_available

    if not delta_available(spark):
        pytest.skip("Delta jars are not on the classpath (scripts/spark-jars.sh)")
    return spark


@pytest.fixture()
def supervised() -> Iterator[list[Any]]:
    """The queries a test starts, stopped at its end whatever happens."""
    queries: list[Any] = []
    yield queries
    for query in queries:
        query.stop()
