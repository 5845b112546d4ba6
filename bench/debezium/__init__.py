"""Debezium's rate on a benchmark's workload, when its jars are there (the conformance suite's
``tests/conformance/debezium/fetch.sh`` fetches them): the embedded engine, records serialized by
JsonConverter (with schemas unless ``bench.schemas.enable=false``) into a buffered file, timed from the first
record to the last."""
from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.debezium_jars import RUNNER, debezium_lib

HERE = Path(__file__).resolve().parent


def classpath(db: str) -> str | None:
    """Debezium's jars for ``db`` (fetched as the conformance suite fetches them) plus this runner
    compiled beside the suite's (whose readiness check it shares), or None without Java and Maven."""
    lib = debezium_lib(db)
    if lib is None:
        return None
    classes = lib.parent / "bench-classes"
    sources = [HERE / "DebeziumBench.java", RUNNER]
    compiled = classes / "DebeziumBench.class"
    if not compiled.exists() or any(compiled.stat().st_mtime < s.stat().st_mtime for s in sources):
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", f"{lib}/*", *map(str, sources)], check=True,
                       capture_output=True)
    return f"{lib}/*:{classes}"


def rate(db: str, properties: dict[str, str], topic: str, count: int,
         workload: Callable[[], None] | None = None) -> float | None:
    """Records per second of ``topic`` (``count`` of them), or None without Debezium's jars.
    ``workload``: run once the connector streams (for a source that starts at the log's end)."""
    cp = classpath(db)
    if cp is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        props = {"offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
                 "offset.flush.interval.ms": "500", **properties}
        if "schema.history.internal" in props:
            props.setdefault("schema.history.internal.file.filename", str(work / "history.dat"))
        (work / "connector.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        ready = work / "ready"
        command = ["java", "-Xmx1g", "-cp", cp, "DebeziumBench", str(work / "connector.properties"),
                   str(work / "out.jsonl"), topic, str(count)] + ([str(ready)] if workload else [])
        with open(work / "log", "w") as log:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
            try:
                if workload is not None:
                    deadline = time.monotonic() + 120
                    while not ready.exists():
                        if process.poll() is not None or time.monotonic() > deadline:
                            raise RuntimeError(f"Debezium did not start streaming: {_tail(work / 'log')}")
                        time.sleep(0.1)
                    workload()
                stdout, _ = process.communicate(timeout=900)
            finally:
                if process.poll() is None:
                    process.kill()
        if process.returncode != 0:
            raise RuntimeError(f"Debezium's bench run failed ({process.returncode}): {_tail(work / 'log')}")
        result = json.loads(stdout.strip().splitlines()[-1])
        seconds = max(result["last_ms"] - result["first_ms"], 1) / 1000
        return result["count"] / seconds


def _tail(log: Path) -> str:
    return log.read_text()[-2000:]
