"""cdc against Debezium, field for field, on every conformance workload.

Each workload's Debezium output is a recorded fixture (``python -m tests.conformance.record``
regenerates them, see README.md); here the same workload runs through cdc on the same kind of
server, and the two runs must agree after normalising what varies from run to run (compare.py)
and applying the documented differences (deviations.py, docs/debezium-differences.md).
MariaDB workloads run twice: at the server's default binlog_row_metadata (NO_LOG) and with FULL.

Each value rule lives on two paths, the compiled codec (native/, ``native.rows``, on by default, used where
it takes a table) and Python's converters: the workloads the codec takes run again with ``native.rows=false``;
``CDC_CONFORMANCE_PATHS=all`` (scripts/two-paths.sh) runs every workload on the Python path too.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from cdc.core.native_row import native_module
from tests.conformance import compare, deviations, runners
from tests.conformance import workloads as wl
from tests.conformance.connect_reader import ConnectReader

# Extra runs with properties that restore a Debezium behaviour cdc does not default to.
VARIANTS = {"pg_transactions": {"transaction.id.mode=debezium": {"transaction.id.mode": "debezium"}}}

CASES = [pytest.param(name, "default", id=name) for name in wl.names("postgres")] + [
    pytest.param(name, variant, id=f"{name}-{variant}")
    for name in wl.names("postgres") for variant in VARIANTS.get(name, {})
] + [
    pytest.param(name, metadata, id=f"{name}-{metadata.lower()}")
    for name in wl.names("mariadb") for metadata in ("NO_LOG", "FULL")
]

# Workloads where the codec takes the tables (a table with a column of a kind it does not write, or with rows
# the column options change, goes the Python way whole: MariaDB's type workloads do, and its binlog writers are
# compared with Python's by tests/unit/test_native_rows_mysql.py instead). Every workload with
# CDC_CONFORMANCE_PATHS=all.
CODEC_WORKLOADS = ("pg_types", "pg_types_more", "pg_arrays", "pg_array_edges", "pg_numeric_edges", "pg_temporal_edges",
                   "pg_special_types", "pg_toast", "pg_defaults_modes", "pg_partitions", "mariadb_keys",
                   "mariadb_time_adjust", "mariadb_transactions", "mariadb_schema_evolution", "mariadb_crossdb")
PYTHON_PATH_CASES = [
    pytest.param(name, id=name) for name in wl.names("postgres") + wl.names("mariadb")
    if os.environ.get("CDC_CONFORMANCE_PATHS") == "all" or name in CODEC_WORKLOADS
]


@pytest.fixture()
def codec_tables(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Filled with each table version the compiled codec took (PostgreSQL relations and snapshots, MySQL
    binlog tables): proof of which path a run went."""
    from cdc.sources.mysql import stream
    from cdc.sources.postgres import relations, snapshot_tables

    taken: list[object] = []
    for module, name in ((relations, "encoder_for"), (snapshot_tables, "encoder_for"), (stream, "binlog_codec")):
        real = getattr(module, name)

        def counting(*args: object, _real: Any = real, **kwargs: object) -> object:
            codec = _real(*args, **kwargs)
            if codec is not None:
                taken.append(codec)
            return codec
        monkeypatch.setattr(module, name, counting)
    return taken


@pytest.fixture(scope="session")
def conformance_pg() -> str:
    return wl.postgres_dsn()


@pytest.fixture(scope="session")
def conformance_mariadb() -> str:
    pytest.importorskip("pymysql")
    return wl.mariadb_dsn()


def expected_records(workload: wl.Workload, server: str | None = None) -> list[dict[str, Any]]:
    """Debezium's recorded output: the server version's own fixture where its output differs (fixtures/SERVER/),
    else the default one."""
    fixture = workload.fixture
    if server is not None and (wl.FIXTURES / server / fixture.name).exists():
        fixture = wl.FIXTURES / server / fixture.name
    if not fixture.exists():
        pytest.fail(f"no recorded Debezium output for {workload.name}: run python -m tests.conformance.record "
                    f"{workload.name}")
    return [json.loads(line) for line in fixture.read_text(encoding="utf-8").splitlines() if line.strip()]


def assert_same_as_debezium(name: str, variant: str, dsn: str, tmp_path: Path, reader: ConnectReader,
                            server: str | None = None, properties: dict[str, str] | None = None) -> None:
    """The workload through cdc on the server at ``dsn`` (with ``properties`` over the workload's) gives
    Debezium's recorded events, and a Kafka Connect consumer reads every record back as it was written."""
    workload = wl.load(name)
    workload.properties.update(VARIANTS.get(name, {}).get(variant, {}))
    workload.properties.update(properties or {})
    theirs = expected_records(workload, server)
    if workload.db == "mariadb":
        wl.set_global(dsn, {"binlog_row_metadata": f"'{variant}'"})
    raw: list[dict[str, Any]] = []
    try:
        # as many records as Debezium's that cdc writes too (less those a documented difference drops)
        expected = len(deviations.apply_raw(name, "default", copy.deepcopy(theirs)))
        ours = runners.run_cdc(workload, dsn, tmp_path, expected, raw=raw)
    finally:
        if workload.db == "mariadb":
            wl.set_global(dsn, {"binlog_row_metadata": "'NO_LOG'"})
    a, b = deviations.prepare(name, "default" if workload.db == "mariadb" else variant, ours, theirs)
    assert a == b, f"{name} ({variant}): cdc differs from Debezium\n" + compare.report(a, b)
    assert reader.problems(raw, workload.properties.get("header.converter", runners.JSON_HEADERS)) == []


@pytest.mark.conformance
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_same_events_as_debezium(name: str, variant: str, tmp_path: Path, request: pytest.FixtureRequest,
                                 connect_reader: ConnectReader, codec_tables: list[object]) -> None:
    dsn = request.getfixturevalue("conformance_pg" if name.startswith("pg_") else "conformance_mariadb")
    assert_same_as_debezium(name, variant, dsn, tmp_path, connect_reader)
    if name in CODEC_WORKLOADS and native_module() is not None:
        assert codec_tables, f"{name}: the compiled codec took no table, so its value rules were not compared"


@pytest.mark.conformance
@pytest.mark.parametrize("name", PYTHON_PATH_CASES)
def test_same_events_on_the_python_path(name: str, tmp_path: Path, request: pytest.FixtureRequest,
                                        connect_reader: ConnectReader, codec_tables: list[object]) -> None:
    """The same events with the compiled codec off: Python's converters give Debezium's values too."""
    dsn = request.getfixturevalue("conformance_pg" if name.startswith("pg_") else "conformance_mariadb")
    variant = "default" if name.startswith("pg_") else "NO_LOG"
    assert_same_as_debezium(name, variant, dsn, tmp_path, connect_reader, properties={"native.rows": "false"})
    assert codec_tables == []
