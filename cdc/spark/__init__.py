"""Spark integration: ``spark.readStream.format("cdc")``, ``apply_changes`` and Kafka topics.

    from cdc.spark import local_session, register, apply_changes
    spark = local_session()          # local[2], with Delta + Kafka jars when they were fetched
    register(spark)                  # the "cdc" Python Data Source
    events = (spark.readStream.format("cdc").option("source", "postgres")
              .option("table", "public.orders").option("database.hostname", ...).load())
    events.writeStream.foreachBatch(apply_changes("/data/orders", keys=["id"])).start()
    run_changes(spark, {"source": "postgres", "table": "public.orders", ...}, "/data/orders", ["id"],
                checkpoint="/data/orders-checkpoint")   # the same, restarted by itself at schema changes

pyspark is imported lazily: ``import cdc`` stays light for users without Spark.
"""
from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name in ("register", "CdcDataSource"):
        from cdc.spark import datasource

        return getattr(datasource, name)
    if name == "apply_changes":
        from cdc.spark.apply import apply_changes

        return apply_changes
    if name in ("local_session", "jar_folder"):
        from cdc.spark import session

        return getattr(session, name)
    if name == "run_changes":
        from cdc.spark.supervisor import run_changes

        return run_changes
    if name == "read_kafka_topic":
        from cdc.spark.kafka import read_kafka_topic

        return read_kafka_topic
    raise AttributeError(name)
