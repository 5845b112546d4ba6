"""The `cdc` command end to end: a properties file with Debezium names, files on disk, Ctrl-C."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from tests.integration.test_pg_stream import sql


def test_cdc_run_properties_file_and_ctrl_c(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE orders (id int PRIMARY KEY, total numeric(8,2))", "INSERT INTO orders VALUES (1, 9.99)")
    out = tmp_path / "out"
    config = tmp_path / "shop.properties"
    config.write_text("\n".join([
        "connector.class=io.debezium.connector.postgresql.PostgresConnector",
        f"database.hostname={pg_db['database.hostname']}",
        f"database.port={pg_db['database.port']}",
        f"database.user={pg_db['database.user']}",
        "database.password=not-needed-but-secret",
        f"database.dbname={pg_db['database.dbname']}",
        "topic.prefix=shop",
        "slot.name=cli_slot",
        "publication.name=cli_pub",
        "decimal.handling.mode=string",
        "value.converter.schemas.enable=false",
        "key.converter.schemas.enable=false",
        "heartbeat.interval.ms=300",
        "snapshot.mod=initial",  # a typo: warned about, not fatal
        f"sink.files.directory={out}",
        f"offset.storage.file.filename={tmp_path / 'offsets.json'}",
    ]))
    proc = subprocess.Popen([sys.executable, "-m", "cdc.cli", "-v", "run", str(config)],
                            stderr=subprocess.PIPE, text=True)
    topic = out / "shop.public.orders.jsonl"
    try:
        deadline = time.monotonic() + 30
        while not topic.exists() or not topic.read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        sql(pg_db, "UPDATE orders SET total = 19.99 WHERE id = 1")
        while len(topic.read_text().splitlines()) < 2 or not (out / "__debezium-heartbeat.shop.jsonl").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    lines = [json.loads(line) for line in topic.read_text().splitlines()]
    assert [(r["key"], r["value"]["op"], r["value"]["after"]) for r in lines] == [
        ({"id": 1}, "r", {"id": 1, "total": "9.99"}),
        ({"id": 1}, "u", {"id": 1, "total": "19.99"}),
    ]
    # headers as a Connect worker at its defaults writes them (SimpleHeaderConverter): the text of each
    assert lines[0]["headers"]["__debezium.context.connectorLogicalName"] == "shop"
    assert lines[0]["headers"]["__debezium.context.connectorName"] == "postgresql"
    assert lines[0]["headers"]["__debezium.context.taskId"] == "0"
    heartbeat = json.loads((out / "__debezium-heartbeat.shop.jsonl").read_text().splitlines()[0])
    assert heartbeat["key"] == {"serverName": "shop"} and isinstance(heartbeat["value"]["ts_ms"], int)
    assert "unknown property 'snapshot.mod'" in stderr and "did you mean 'snapshot.mode'" in stderr
    assert "not-needed-but-secret" not in stderr and "********" in stderr
    offsets = json.loads((tmp_path / "offsets.json").read_text())
    assert offsets["version"] == 1 and offsets["offsets"]["cdc"]["lsn"] > 0
    with psycopg.connect(pg_db["dsn"]) as conn:  # the slot's position was confirmed to the server
        confirmed = conn.execute("SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots "
                                 "WHERE slot_name = 'cli_slot'").fetchone()[0]
    assert confirmed >= offsets["offsets"]["cdc"]["lsn"]


def test_unknown_source_lists_the_installed_ones(tmp_path: Path) -> None:
    config = tmp_path / "x.toml"
    config.write_text('source = "oracle"\n"topic.prefix" = "x"\n')
    result = subprocess.run([sys.executable, "-m", "cdc.cli", "run", str(config)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "unknown source 'oracle'" in result.stderr and "postgres" in result.stderr
