"""A local Spark session for the tests (one per test session: it takes ~10 s to start)."""
from __future__ import annotations

from collections.abc import Iterator

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
