"""A streaming query run as its own process, so a test can kill -9 the driver.

    python -m tests.integration.spark_pipeline TARGET CHECKPOINT key=value...
"""
from __future__ import annotations

import sys
import time

from cdc.spark import local_session, register
from cdc.spark.apply import changes_applier


def main() -> None:
    target, checkpoint, *pairs = sys.argv[1:]
    options = dict(pair.split("=", 1) for pair in pairs)
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
