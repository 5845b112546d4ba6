"""``cdc run`` with a Debezium MariaDB connector's .properties file, end to end in a subprocess."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE, ROOT
from tests.integration.test_mysql_stream import sql

pytestmark = pytest.mark.mysql


def test_cdc_run_with_debeziums_mariadb_properties(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                  tmp_path: Path) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE items (id int PRIMARY KEY, name varchar(10))")
    text = (REFERENCE / "debezium" / "mariadb-types.properties").read_text()
    overrides = {
        "database.hostname": mysql_db["database.hostname"], "database.port": mysql_db["database.port"],
        "database.user": mysql_db["database.user"], "database.password": mysql_db["database.password"],
        "database.include.list": db, "database.server.id": mysql_db["database.server.id"],
        "offset.storage.file.filename": str(tmp_path / "offsets.json"),
        "schema.history.internal.file.filename": str(tmp_path / "history.jsonl"),
        "sink.files.directory": str(tmp_path / "out"), "offset.flush.interval.ms": "200",
    }
    lines = [line for line in text.splitlines() if line.split("=", 1)[0].strip() not in overrides]
    properties = tmp_path / "mariadb.properties"
    properties.write_text("\n".join(lines + [f"{k}={v}" for k, v in overrides.items()]) + "\n")
    process = subprocess.Popen([sys.executable, "-m", "cdc.cli", "-v", "run", str(properties)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = tmp_path / "out" / f"dbz.{db}.items.jsonl"
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "offsets.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        sql(mysql_server, db, "INSERT INTO items VALUES (1, 'a')", "UPDATE items SET name = 'b' WHERE id = 1")
        while (not out.exists() or len(out.read_text().splitlines()) < 2) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["value"]["payload"]["op"], r["value"]["payload"]["after"]) for r in records] == [
        ("c", {"id": 1, "name": "a"}), ("u", {"id": 1, "name": "b"})]
    source = records[0]["value"]["payload"]["source"]
    assert source["connector"] == "mariadb" and source["name"] == "dbz" and source["db"] == db
    assert "unknown property" not in stderr  # every Debezium property of that file is understood
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert history[-1]["tableChanges"][0]["id"] == f'"{db}"."items"'
    offsets = json.loads((tmp_path / "offsets.json").read_text())["offsets"]["dbz-mariadb"]
    assert set(offsets) >= {"file", "pos", "gtids", "event", "row", "server_id", "ts_sec"}
