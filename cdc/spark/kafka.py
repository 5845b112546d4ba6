"""Our Debezium JSON topics into Spark: ``spark.readStream.format("kafka")`` parsed with the
schema we know for the table (no inference), into the same columns as ``format("cdc")``, so
the same ``apply_changes`` folds them into a table.

``_position`` is the Kafka offset: every event of one key is in one partition, in order.
"""
from __future__ import annotations

from typing import Any

import orjson
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc.spark.schema import SOURCE_FIELDS, event_schema, struct_type_of


def read_kafka_topic(spark: Any, bootstrap_servers: str, topic: str, row_schema: dict[str, Any], *,
                     starting_offsets: str = "earliest", options: dict[str, str] | None = None) -> DataFrame:
    """A streaming DataFrame of the change events of one table topic.

    ``row_schema`` is the Connect struct of the table's rows (``PostgresSource.table_schema``, or
    the ``before`` field of any event's value schema). Needs Spark's Kafka connector on the
    classpath (``scripts/spark-jars.sh``; ``local_session`` adds it).
    """
    row_type, to_row = struct_type_of(row_schema)
    schema = event_schema(row_type)
    value_type = T.StructType(schema.fields[:6])  # op, before, after, source, ts_ms, table

    def parse(value: bytearray | None) -> tuple | None:
        if value is None:
            return None  # a tombstone: the delete before it carries the change
        envelope = orjson.loads(bytes(value))
        payload = envelope.get("payload", envelope) if "schema" in envelope else envelope
        if not isinstance(payload, dict) or payload.get("op") not in ("c", "u", "d", "r", "t"):
            return None
        source = payload.get("source") or {}
        return (payload["op"], to_row(payload.get("before")), to_row(payload.get("after")),
                tuple(source.get(k) for k in SOURCE_FIELDS), payload.get("ts_ms"),
                f"{source.get('schema') or source.get('db')}.{source.get('table')}")

    parse_udf = F.udf(parse, value_type)
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
              .option("subscribe", topic).option("startingOffsets", starting_offsets))
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    parsed = reader.load().select(parse_udf(F.col("value")).alias("e"), F.col("offset").alias("_position"))
    return parsed.where(F.col("e").isNotNull()).select("e.*", "_position")
