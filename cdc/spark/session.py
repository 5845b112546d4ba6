"""A local Spark session set up for cdc: small, quiet, with the jars fetched by Maven.

The JVM pieces (Delta Lake, Spark's Kafka connector) come from ``scripts/spark-jars.sh``
(``mvn dependency:copy-dependencies`` into a cache folder) and are passed as local jars;
Spark's own Ivy download is never used. Without them, the Data Source reader and the Parquet
fallback of ``apply_changes`` still work.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent.parent


def jar_folder(fetch: bool = True) -> Path | None:
    """The folder with the Delta and Kafka jars (fetched with Maven when missing), or None."""
    cache = Path(os.environ.get("CDC_CACHE", Path.home() / ".cache" / "cdc")) / "spark-jars"
    if (cache / ".complete").exists():
        return cache
    script = ROOT / "scripts" / "spark-jars.sh"
    if not fetch or not script.exists():
        return None
    try:
        out = subprocess.run(["bash", str(script)], check=True, capture_output=True, text=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as exc:
        log.warning("could not fetch the Spark jars with Maven (%s): Delta and Kafka are unavailable", exc)
        return None
    return Path(out.stdout.strip().splitlines()[-1])


def local_session(app: str = "cdc", *, jars: bool = True, delta: bool = True,
                  conf: dict[str, str] | None = None) -> Any:
    from pyspark.sql import SparkSession

    # Executors must run this interpreter (it has cdc and pyarrow); and find the cdc package.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    path = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)
    builder = (
        SparkSession.builder.appName(app)
        .master("local[2]")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
    )
    return start(builder, jars=jars, delta=delta, conf=conf)


def start(builder: Any, *, jars: bool, delta: bool, conf: dict[str, str] | None) -> Any:
    """The session of ``builder`` (local or a cluster's), with the Maven jars (Kafka, Delta) when
    ``jars``, Delta's catalog when ``delta`` and its jar is there, and ``conf`` last."""
    folder = jar_folder() if jars else None
    if folder is not None:
        jar_list = sorted(str(p) for p in folder.glob("*.jar"))
        builder = builder.config("spark.jars", ",".join(jar_list))
        if delta and any("delta-spark" in j for j in jar_list):
            builder = (
                builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                .config("spark.databricks.delta.schema.autoMerge.enabled", "true")
                .config("spark.databricks.delta.snapshotPartitions", "2")
            )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def delta_available(spark: Any) -> bool:
    return on_classpath(spark, "io.delta.tables.DeltaTable")


def on_classpath(spark: Any, class_name: str) -> bool:
    """Whether the session's JVM has ``class_name`` (a jar of spark.jars included)."""
    try:
        # spark.jars are loaded by Spark's own class loader, which Class.forName does not see.
        spark._jvm.org.apache.spark.util.Utils.classForName(class_name, True, False)
        return True
    except Exception:  # noqa: BLE001 - any JVM error means: not on the classpath
        return False
