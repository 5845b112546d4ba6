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

from tests.conftest import LONG

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
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'cdc-debezium[spark]')")
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


# The driver of a streaming query on the cluster: format("cdc") -> apply_changes into Delta, until
# the stop file appears. Executors read the snapshot's chunks; the driver reads the log.
STREAM_DRIVER = """
import json, sys, time
from pathlib import Path
from cdc.spark import register
from cdc.spark.apply import changes_applier
from cdc.spark.cluster import cluster_session

url, props, target, checkpoint, stop = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], Path(sys.argv[5])
spark = cluster_session(url, "cdc-cluster-stream", cores=2)
register(spark)
reader = spark.readStream.format("cdc").option("source", "postgres").option("table", "public.accounts")
for key, value in props.items():
    reader = reader.option(key, value)
query = (reader.option("snapshotChunkRows", "2500").load().writeStream
         .foreachBatch(changes_applier(target, ["id"], format="delta"))
         .option("checkpointLocation", checkpoint).trigger(processingTime="1 second").start())
print("started", flush=True)
while not stop.exists() and query.isActive:
    time.sleep(0.5)
error = query.exception()
query.stop()
spark.stop()
sys.exit(f"the query failed: {error}" if error else 0)
"""


@LONG  # the same path on local[2] stays in the test command (test_spark.py), and Python on the executors here
def test_snapshot_and_stream_into_delta_on_the_cluster(spark_cluster: str, spark: Any,
                                                      pg_db: dict[str, str], tmp_path: Path) -> None:
    import time

    import psycopg

    from tests.integration.test_pg_stream import sql

    sql(pg_db, "CREATE TABLE accounts (id int PRIMARY KEY, name text, amount numeric(10,2))",
        "INSERT INTO accounts SELECT g, 'n' || g, g / 4.0 FROM generate_series(1, 10000) g")
    props = {k: pg_db[k] for k in ("database.hostname", "database.port", "database.user", "database.dbname")}
    props.update({"slot.name": "cluster_slot", "publication.name": "cluster_pub"})
    target, stop = tmp_path / "target", tmp_path / "stop"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    driver = subprocess.Popen([sys.executable, "-c", STREAM_DRIVER, spark_cluster, json.dumps(props), str(target),
                               str(tmp_path / "ck"), str(stop)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)

    def rows_in_target() -> list[tuple]:
        if not (target / "_delta_log").exists():
            return []
        try:
            return sorted((r["id"], r["name"], r["amount"]) for r in spark.read.format("delta").load(str(target))
                          .collect())
        except Exception:  # noqa: BLE001 - the first commit is not there yet
            return []

    def rows_in_table() -> list[tuple]:
        with psycopg.connect(pg_db["dsn"]) as conn:
            return sorted(conn.execute("SELECT id, name, amount FROM accounts").fetchall())

    def wait_equal() -> None:
        deadline = time.monotonic() + 240
        while rows_in_target() != rows_in_table():
            assert driver.poll() is None, f"the driver stopped:\n{driver.stderr.read()[-5000:]}"
            assert time.monotonic() < deadline, f"{len(rows_in_target())} rows in the target, {len(rows_in_table())}"
            time.sleep(2)

    try:
        wait_equal()
        sql(pg_db, "UPDATE accounts SET amount = 0 WHERE id % 10 = 0", "DELETE FROM accounts WHERE id > 9900",
            "UPDATE accounts SET id = 20000 WHERE id = 1", "INSERT INTO accounts VALUES (30000, 'new', 1)")
        wait_equal()
    finally:
        stop.touch()
        try:
            _, err = driver.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            driver.kill()
            _, err = driver.communicate()
    assert driver.returncode == 0, err[-5000:]
