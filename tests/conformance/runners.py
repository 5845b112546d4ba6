"""Run one workload through Debezium's embedded engine or through cdc; both return the records
in the order emitted, as ``{topic, key, value, headers}`` with each part JSON-parsed."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cdc.core.records import SinkRecord
from tests.conformance import workloads as wl
from tests.conformance.workloads import Workload

DEBEZIUM_DIR = Path(__file__).resolve().parent / "debezium"
JSON_HEADERS = "org.apache.kafka.connect.json.JsonConverter"


def _properties(workload: Workload, dsn: str, tmp: Path) -> dict[str, str]:
    props = {**workload.properties, **wl.connection_properties(workload.db, dsn)}
    props["offset.storage"] = "org.apache.kafka.connect.storage.FileOffsetBackingStore"
    props["offset.storage.file.filename"] = str(tmp / "offsets.dat")
    props["offset.flush.interval.ms"] = "100"
    if workload.db == "mariadb":
        props.setdefault("schema.history.internal", "io.debezium.storage.file.history.FileSchemaHistory")
        props["schema.history.internal.file.filename"] = str(tmp / "history.dat")
    return props


# ---- Debezium ---------------------------------------------------------------------------------

def debezium_classpath(db: str) -> str:
    cache = subprocess.run(["bash", str(DEBEZIUM_DIR / "fetch.sh"), db], check=True, capture_output=True,
                           text=True).stdout.strip()
    return f"{cache}/lib/*:{cache}/classes"


def run_debezium(workload: Workload, dsn: str, tmp: Path, timeout: float = 120) -> list[dict[str, Any]]:
    """Set the workload up, start Debezium, run the captured steps, collect what it emits."""
    tmp.mkdir(parents=True, exist_ok=True)
    classpath = debezium_classpath(workload.db)
    wl.reset_database(workload.db, dsn)
    wl.run_sql(workload.db, dsn, workload.setup)
    props_file = tmp / "connector.properties"
    props = _properties(workload, dsn, tmp)
    if workload.db == "postgres":
        props["slot.drop.on.stop"] = "true"
    props_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    out, ready, done = tmp / "debezium.jsonl", tmp / "ready", tmp / "done"
    log = open(tmp / "debezium.log", "w")
    process = subprocess.Popen(
        ["java", "-Xmx512m", "-cp", classpath, "DebeziumRunner", str(props_file), str(out), str(ready), str(done),
         os.environ.get("CDC_DEBEZIUM_IDLE_MS", "3000")],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Debezium did not start streaming; see {tmp / 'debezium.log'}")
            time.sleep(0.1)
        for step in workload.steps:
            wl.run_sql(workload.db, dsn, step)
        done.write_text("done\n")
        status = process.wait(timeout)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    if status != 0:
        raise RuntimeError(f"Debezium exited with {status}; see {tmp / 'debezium.log'}")
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


# ---- cdc --------------------------------------------------------------------------------------

def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode()


class CollectingSink:
    """Keeps every record in order, parsed; acknowledges on flush."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.raw: list[dict[str, Any]] = []  # the same records as the text cdc wrote (connect_reader.py)
        self.lock = threading.Lock()

    def write(self, records: Sequence[SinkRecord]) -> None:
        with self.lock:
            for r in records:
                self.raw.append({"topic": r.topic, "key": _text(r.key), "value": _text(r.value),
                                 "headers": {k: _text(v) for k, v in r.headers} if r.headers else None})
                self.records.append({
                    "topic": r.topic,
                    "key": json.loads(r.key) if r.key is not None else None,
                    "value": json.loads(r.value) if r.value is not None else None,
                    "headers": {k: json.loads(v) for k, v in r.headers} if r.headers else None,
                })

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def count(self) -> int:
        with self.lock:
            return len(self.records)


def run_cdc(workload: Workload, dsn: str, tmp: Path, expected: int, *, settle: float = 1.0,
            timeout: float = 60, raw: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The same workload through cdc's engine (real source, converter and offset store) into a
    collecting sink; waits for ``expected`` records, then ``settle`` seconds for any extra.
    ``raw``: filled with the records as the text cdc wrote them."""
    from cdc import pipeline

    tmp.mkdir(parents=True, exist_ok=True)
    wl.reset_database(workload.db, dsn)
    wl.run_sql(workload.db, dsn, workload.setup)
    props = _properties(workload, dsn, tmp)
    props["offset.storage"] = "file"
    props["offset.storage.file.filename"] = str(tmp / "offsets.json")
    if workload.db == "mariadb":
        props["schema.history.internal"] = "file"
        props["schema.history.internal.file.filename"] = str(tmp / "history.jsonl")
    props["slot.drop.on.stop"] = "true"
    props["header.converter"] = JSON_HEADERS  # as DebeziumRunner records them
    sink = CollectingSink()
    engine = pipeline.build_from_properties(props, sink=sink)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            engine.run()
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not engine.source_streaming():
            if errors:
                raise errors[0]
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("cdc did not start streaming")
            time.sleep(0.05)
        time.sleep(0.3)
        for step in workload.steps:
            wl.run_sql(workload.db, dsn, step)
        while sink.count() < expected and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
        time.sleep(settle)
    finally:
        engine.stop()
        thread.join(30)
    if errors:
        raise errors[0]
    if raw is not None:
        raw.extend(sink.raw)
    return list(sink.records)
