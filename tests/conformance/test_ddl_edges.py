"""MariaDB DDL that Debezium 3.5 does not apply to its schema (or whose columns its parser refuses),
so no Debezium output can be recorded for it: cdc's events after each statement, checked by hand.
Runs on the MariaDB at its defaults, at binlog_row_metadata NO_LOG and FULL."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conformance import runners
from tests.conformance import workloads as wl

SETUP = """
CREATE TABLE t (id int PRIMARY KEY, a varchar(10)) CHARACTER SET utf8mb4;
CREATE TABLE nets (id int PRIMARY KEY, v6 inet6, v4 inet4) CHARACTER SET utf8mb4;
"""
STEPS = [
    "INSERT INTO t VALUES (1, 'one')",
    "ALTER TABLE t ADD COLUMN b int NOT NULL DEFAULT 5 AFTER id, ALGORITHM=INPLACE, LOCK=NONE",
    "INSERT INTO t (id, a) VALUES (2, 'two')",
    "/*!100100 ALTER TABLE t ADD COLUMN c varchar(5) DEFAULT 'x' */",
    "INSERT INTO t (id, a) VALUES (3, 'three')",
    "CREATE OR REPLACE TABLE t (k bigint PRIMARY KEY, w text) CHARACTER SET utf8mb4",
    "INSERT INTO t VALUES (9000000000, 'replaced')",
    "INSERT INTO nets VALUES (1, '2001:db8::', '10.0.0.0'), (2, '::1', '192.168.0.1'), (3, NULL, NULL)",
]


@pytest.fixture(scope="module")
def server() -> str:
    pytest.importorskip("pymysql")
    return wl.mariadb_dsn()


def _data(records: list[dict[str, Any]], topic: str) -> list[dict[str, Any]]:
    return [r["value"]["payload"]["after"] for r in records if r["topic"] == topic and r["value"] is not None]


@pytest.mark.conformance
@pytest.mark.parametrize("metadata", ["NO_LOG", "FULL"])
def test_statements_debezium_does_not_apply(server: str, tmp_path: Path, metadata: str) -> None:
    workload = wl.Workload("mariadb_ddl_edges", "mariadb", SETUP, STEPS,
                           dict(wl._read_properties(wl.HERE / "base-mariadb.properties")))
    wl.set_global(server, {"binlog_row_metadata": f"'{metadata}'"})
    try:
        # 18 records: the run waits for that many (then a second for any extra), not for a timeout
        records = runners.run_cdc(workload, server, tmp_path, expected=18)
    finally:
        wl.set_global(server, {"binlog_row_metadata": "'NO_LOG'"})
    assert _data(records, "dbz.lab.t") == [
        {"id": 1, "a": "one"},
        {"id": 2, "b": 5, "a": "two"},  # ALTER ... AFTER id, ALGORITHM=INPLACE, LOCK=NONE
        {"id": 3, "b": 5, "a": "three", "c": "x"},  # the versioned comment's ALTER
        {"k": 9000000000, "w": "replaced"},  # CREATE OR REPLACE TABLE
    ]
    t_schema = [r for r in records if r["topic"] == "dbz.lab.t"][-1]["value"]["schema"]["fields"][1]["fields"]
    assert [(f["field"], f["type"]) for f in t_schema] == [("k", "int64"), ("w", "string")]
    assert _data(records, "dbz.lab.nets") == [
        {"id": 1, "v6": "2001:db8::", "v4": "10.0.0.0"},  # trailing zero bytes, dropped by the binlog
        {"id": 2, "v6": "::1", "v4": "192.168.0.1"},
        {"id": 3, "v6": None, "v4": None},
    ]
    ddl = [r["value"]["payload"]["ddl"] for r in records if r["topic"] == "dbz"]
    assert any(d.startswith("CREATE OR REPLACE TABLE t") for d in ddl)
