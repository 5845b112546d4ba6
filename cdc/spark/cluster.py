"""A SparkSession against a Spark standalone cluster, set up like ``local_session``.

    from cdc.spark.cluster import cluster_session
    spark = cluster_session("spark://127.0.0.1:57077")   # scripts/spark-cluster.sh start

Same jars (Delta, Kafka connector, from ``scripts/spark-jars.sh``), same interpreter for the
Python workers (``PYSPARK_PYTHON``, default: this one's ``sys.executable``), small executors.
On a real cluster that interpreter path must exist on every executor host, with
``pip install 'cdc-debezium[spark]'``; see the comment at the top of ``scripts/spark-cluster.sh``.

``python -m cdc.spark.cluster URL`` runs a smoke job and prints, as JSON, where its partitions
ran (executor, process, host, Python, whether ``cdc`` imports there).
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any
from urllib.parse import urlparse

from cdc.spark.session import ROOT, start

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def cluster_session(master_url: str, app_name: str = "cdc", *, cores: int | None = None,
                    executor_memory: str = "512m", jars: bool = True, delta: bool = True,
                    conf: dict[str, str] | None = None, wait_s: int = 60) -> Any:
    """A session whose executors run on the cluster at ``master_url`` (``spark://host:port``).

    ``cores`` caps the cores the application takes (``spark.cores.max``); when given, the
    session is returned once executors with that many cores have registered (at most
    ``wait_s`` seconds), so that a first job is spread over all of them. Executors get one core
    and ``executor_memory`` each. A master on the loopback address binds the driver to it too.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is not None and active.master != master_url:
        # One SparkContext per process: getOrCreate would silently hand back the other one.
        raise RuntimeError(f"this process already has a SparkContext on {active.master}; "
                           f"stop it, or use another process, for {master_url}")
    python = os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master_url)
        .config("spark.pyspark.python", python)
        .config("spark.driver.memory", "1g")
        .config("spark.executor.memory", executor_memory)
        .config("spark.executor.cores", "1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.executor.extraJavaOptions", "-Duser.timezone=UTC")
        # The checkout's cdc for executors that do not have it installed (same machine); a
        # path that does not exist on an executor host is ignored there.
        .config("spark.executorEnv.PYTHONPATH", str(ROOT))
    )
    if urlparse(master_url).hostname in LOOPBACK:
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    if cores is not None:
        builder = (
            builder.config("spark.cores.max", str(cores))
            .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
            .config("spark.scheduler.maxRegisteredResourcesWaitingTime", f"{wait_s}s")
        )
    return start(builder, jars=jars, delta=delta, conf=conf)


def executor_count(spark: Any) -> int:
    """Executors registered now (the driver's own entry left out)."""
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1


def where_it_runs(spark: Any, rows: int = 1000, partitions: int = 4, pause_s: float = 0.5) -> list[dict[str, Any]]:
    """One record per partition of ``spark.range(rows)``, computed by a Python UDF on the
    executors (plain UDF: no pandas needed): the partition, its row count and sum of squares,
    and where it ran (Python worker pid and parent pid, host, working directory, executor id,
    interpreter, cdc's location or the import error). ``pause_s`` keeps each partition busy
    (once, on its first row) so that the partitions spread over the executors."""
    from pyspark.sql import functions as F

    step = max(1, rows // partitions)

    def describe(i):  # type: ignore[no-untyped-def]  # no hints: pyspark would read them as a pandas UDF's
        import os
        import socket
        import sys
        import time

        if i % step == 0:
            time.sleep(pause_s)
        try:
            import cdc

            cdc_at = os.path.dirname(cdc.__file__ or "")
        except ImportError as exc:
            cdc_at = f"ImportError: {exc}"
        return json.dumps({
            "square": i * i,
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "host": socket.gethostname(),
            "cwd": os.getcwd(),
            # A standalone executor runs in <work-dir>/<app-id>/<executor-id>.
            "executor": os.path.basename(os.getcwd()),
            "python": sys.executable,
            "python_version": ".".join(map(str, sys.version_info[:3])),
            "cdc": cdc_at,
        })

    udf = F.udf(describe, "string", useArrow=False)  # Arrow-optimized UDFs need pandas
    df = spark.range(0, rows, 1, partitions).select(F.spark_partition_id().alias("partition"), udf("id").alias("info"))
    parts: dict[int, dict[str, Any]] = {}
    for row in df.collect():
        info = json.loads(row["info"])
        square = info.pop("square")
        part = parts.setdefault(row["partition"], {"partition": row["partition"], "rows": 0, "squares": 0,
                                                   "processes": []})
        part["rows"] += 1
        part["squares"] += square
        if info not in part["processes"]:
            part["processes"].append(info)
    return [parts[k] for k in sorted(parts)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m cdc.spark.cluster spark://HOST:PORT [CORES]", file=sys.stderr)
        return 2
    cores = int(args[1]) if len(args) > 1 else None
    began = time.monotonic()
    spark = cluster_session(args[0], "cdc-cluster-check", cores=cores)
    session_s = time.monotonic() - began
    try:
        executors = executor_count(spark)
        began = time.monotonic()
        parts = where_it_runs(spark)
        job_s = time.monotonic() - began
    finally:
        spark.stop()
    print(json.dumps({"master": args[0], "executors": executors, "session_s": round(session_s, 2),
                      "job_s": round(job_s, 2), "partitions": parts}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
