"""A Confluent-compatible schema registry for the Avro tests (Apicurio Registry, scripts/schema-registry.sh)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "schema-registry.sh"


@pytest.fixture(scope="session")
def registry_url() -> str:
    """CDC_TEST_SCHEMA_REGISTRY_URL if set, else the registry scripts/schema-registry.sh runs (left running)."""
    if os.environ.get("CDC_TEST_SCHEMA_REGISTRY_URL"):
        return os.environ["CDC_TEST_SCHEMA_REGISTRY_URL"]
    missing = [tool for tool in ("java", "mvn", "curl") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"no schema registry: {' and '.join(missing)} not found; set CDC_TEST_SCHEMA_REGISTRY_URL")
    done = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        pytest.fail(f"scripts/schema-registry.sh start failed:\n{done.stderr[-3000:]}", pytrace=False)
    return subprocess.run(["bash", str(SCRIPT), "url"], capture_output=True, text=True, check=True).stdout.strip()
