"""Kafka Connect as a consumer of cdc's records: ConnectReader.java reads each record with Connect's own
JsonConverter (key, value) and header converter, into Connect data checked against its schema, and
writes it back; a record Connect refuses, or writes back differently, is a problem a Kafka Connect sink
would meet. One JVM serves the whole session (Connect's jars come from scripts/connect.sh)."""
from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


class ConnectReader:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def problems(self, records: list[dict[str, Any]], header_converter: str) -> list[str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"header_converter": header_converter, "records": records}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("ConnectReader.java stopped; its errors are in the test's output")
        return list(json.loads(line)["problems"])


@pytest.fixture(scope="session")
def connect_reader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectReader]:
    try:
        classpath = subprocess.run(["bash", str(ROOT / "scripts" / "connect.sh"), "fetch"], check=True,
                                   capture_output=True, text=True, timeout=900)
        classpath = subprocess.run(["bash", str(ROOT / "scripts" / "connect.sh"), "classpath"], check=True,
                                   capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"needs Java, Maven and Kafka Connect's jars (scripts/connect.sh fetch): {exc}")
    work = tmp_path_factory.mktemp("connect-reader")
    subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", str(work), str(HERE / "ConnectReader.java")],
                   check=True, capture_output=True)
    process = subprocess.Popen(["java", "-Xmx256m", "-cp", f"{classpath}:{work}", "ConnectReader"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield ConnectReader(process)
    finally:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(30)
