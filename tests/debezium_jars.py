"""Debezium's jars for the tests that use it as an oracle: fetched from Maven Central on first use."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FETCH = Path(__file__).resolve().parent / "conformance" / "debezium" / "fetch.sh"
RUNNER = FETCH.parent / "DebeziumRunner.java"  # the embedded engine's runner the suite compiles


def debezium_lib(db: str) -> Path | None:
    """The folder of Debezium's jars for ``db`` (postgres or mariadb), fetched by
    tests/conformance/debezium/fetch.sh when needed; None without Java and Maven."""
    if not (shutil.which("java") and shutil.which("javac") and shutil.which("mvn")):
        return None
    cache = subprocess.run(["bash", str(FETCH), db], check=True, capture_output=True, text=True,
                           timeout=1200).stdout.strip()
    return Path(cache) / "lib"
