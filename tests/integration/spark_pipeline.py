"""A streaming query run as its own process, so a test can kill -9 the driver.

    python -m tests.integration.spark_pipeline TARGET CHECKPOINT key=value...   # format("cdc") into Parquet
    python -m tests.integration.spark_pipeline --run-changes TARGET CHECKPOINT key=value...   # run_changes into Delta
"""
from __future__ import annotations

import sys
import time

from cdc.spark import local_session, register
from cdc.spark.apply import changes_applier


def main() -> None:
    supervised = sys.argv[1] == "--run-changes"
    target, checkpoint, *pairs = sys.argv[2:] if supervised else sys.argv[1:]
    options = dict(pair.split("=", 1) for pair in pairs)
    if supervised:  # the snapshot through Spark's JDBC reader, then the stream
        from cdc.spark.supervisor import run_changes

        spark = local_session("cdc-kill-test")
        register(spark)
        supervised_query = run_changes(spark, options, target, ["id"], checkpoint=checkpoint,
                                       trigger={"processingTime": "300 milliseconds"}, snapshot="jdbc")
        print("started", flush=True)
        supervised_query.awaitTermination()
        return
    spark = local_session("cdc-kill-test", delta=False)
    register(spark)
    reader = spark.readStream.format("cdc")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load().writeStream.foreachBatch(changes_applier(target, ["id"], format="parquet"))
             .option("checkpointLocation", checkpoint).trigger(processingTime="300 milliseconds").start())
    print("started", flush=True)
    while query.isActive:
        time.sleep(0.5)
    if query.exception():
        raise SystemExit(str(query.exception()))


if __name__ == "__main__":
    main()
