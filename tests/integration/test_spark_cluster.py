"""A real Spark standalone cluster (scripts/spark-cluster.sh: a master and two workers from
pyspark's own spark-class) runs a job whose Python code executes in two executor processes.

The job's driver runs in a child process: a process holds one SparkContext, and the other Spark
tests keep a local[2] one for the whole test session (tests/integration/spark_fixtures.py), so
an in-process session against the cluster would get that local one back.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "scripts" / "spark-cluster.sh"


def cluster(command: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.run(["bash", str(SCRIPT), command], capture_output=True, text=True, timeout=timeout, env=env)


def state_dir() -> Path:
    return Path(os.environ.get("CDC_SPARK_DIR", ROOT / ".local" / "spark"))


def daemon_pids() -> dict[str, str]:
    return {p.stem: p.read_text().strip() for p in sorted(state_dir().glob("*.pid"))}


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[str]:
    """The cluster's master URL. Stopped at the end of the test session if this fixture started
    it; a cluster that was already running is left as it was."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'cdc[spark]')")
    if shutil.which("java") is None:
        pytest.skip("no Java: a Spark cluster needs a JVM (apt-get install openjdk-17-jre-headless)")
    was_running = cluster("status", timeout=30).returncode == 0
    started = cluster("start")
    assert started.returncode == 0, f"scripts/spark-cluster.sh start failed:\n{started.stderr[-3000:]}"
    url = cluster("url", timeout=30).stdout.strip()
    yield url
    if not was_running:
        stopped = cluster("stop", timeout=120)
        assert stopped.returncode == 0, stopped.stderr


def test_start_is_idempotent_and_status_reports_two_workers(spark_cluster: str) -> None:
    assert spark_cluster == f"spark://127.0.0.1:{os.environ.get('CDC_SPARK_MASTER_PORT', '57077')}"
    before = daemon_pids()
    again = cluster("start", timeout=60)
    assert again.returncode == 0, again.stderr
    assert daemon_pids() == before, "a second start must leave the running daemons as they are"
    status = cluster("status", timeout=30)
    assert status.returncode == 0 and "2 workers ALIVE" in status.stdout, status.stdout + status.stderr
    assert sys.executable in status.stdout, f"the workers must run this interpreter: {status.stdout}"


def run_job(url: str) -> dict[str, Any]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, "-m", "cdc.spark.cluster", url, "2"], capture_output=True, text=True,
                          timeout=240, cwd=ROOT, env=env)
    assert done.returncode == 0, f"the job's driver failed:\n{done.stderr[-5000:]}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_python_runs_in_two_executors(spark_cluster: str) -> None:
    result = run_job(spark_cluster)
    parts = result["partitions"]
    # The result is right: every row once, the squares computed by Python on the executors.
    assert [p["partition"] for p in parts] == [0, 1, 2, 3]
    assert [p["rows"] for p in parts] == [250] * 4
    assert sum(p["squares"] for p in parts) == sum(i * i for i in range(1000))
    # ... by two executors, one per worker, in Python processes of their own.
    assert result["executors"] == 2
    processes = [proc for p in parts for proc in p["processes"]]
    executors = {(Path(proc["cwd"]).parent.parent.name, proc["executor"]) for proc in processes}
    assert len(executors) == 2, f"expected work in two executors, got {executors}"
    assert len({proc["pid"] for proc in processes}) >= 2
    work = state_dir().resolve()
    assert {Path(proc["cwd"]).resolve().parent.parent for proc in processes} == {work / "work-1", work / "work-2"}
    # ... with this interpreter, which has cdc.
    assert {proc["python"] for proc in processes} == {sys.executable}
    assert all(not proc["cdc"].startswith("ImportError") for proc in processes), processes
