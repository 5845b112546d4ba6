"""Debezium topics into Spark: ``spark.readStream.format("kafka")`` parsed with the schema we know
for the table (no inference), into the same columns as ``format("cdc")``, so the same
``apply_changes`` folds them into a table.

Two value formats (``value_converter``): the JSON converter's (with or without schemas) and Avro in
Confluent's wire format (the writer's schema from the registry by the id in each record, so a topic
that saw a schema change is read with the schema each record was written with). Two envelopes:
Debezium's change events, and ``unwrapped`` rows (``ExtractNewRecordState``: the row state alone;
``__op`` / ``__deleted`` / ``__source_ts_ms`` ... when ``add.fields`` or the rewrite mode put them
there; a delete written as a tombstone is a delete of the record's key).

Parsing runs on the executors in a Python UDF: Debezium's semantic types (MicroTimestamp,
VariableScaleDecimal, ...) need the same per-type converters as ``format("cdc")``, and each Avro
record may carry another writer schema, which Spark's ``from_avro`` (one schema per column) cannot
follow. ``_position`` is the Kafka offset: every event of one key is in one partition, in order.
``headers`` are the records' (``includeHeaders``): ``apply_changes`` reads a key change's
``__debezium.oldkey`` there.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc.spark.schema import HEADERS, SOURCE_FIELDS, event_schema, struct_type_of

OPS = ("c", "u", "d", "r", "t")
CONVERTERS = ("json", "avro")
ENVELOPES = ("debezium", "unwrapped")
# unwrap's add.fields names for the source block (source.<field> is written __source_<field>)
_SOURCE_PREFIX = "__source_"


class _Payloads:
    """Record bytes -> the payload in the JSON converter's form (on executors; the reader is built lazily)."""

    def __init__(self, converter: str, registry_url: str | None, user_info: str | None) -> None:
        self.converter = converter
        self.registry_url = registry_url
        self.user_info = user_info
        self._reader: Any = None

    def __call__(self, data: bytes | bytearray | None) -> Any:
        if data is None:
            return None
        if self.converter == "json":
            envelope = orjson.loads(bytes(data))
            return envelope.get("payload") if isinstance(envelope, dict) and "schema" in envelope \
                and "payload" in envelope and len(envelope) == 2 else envelope
        if self._reader is None:
            from cdc.converters.avro_reader import AvroReader

            assert self.registry_url is not None
            self._reader = AvroReader(self.registry_url, self.user_info)
        return self._reader.read(bytes(data))


def read_kafka_topic(spark: Any, bootstrap_servers: str, topic: str, row_schema: dict[str, Any], *,
                     starting_offsets: str = "earliest", options: dict[str, str] | None = None,
                     value_converter: str = "json", key_converter: str | None = None,
                     schema_registry_url: str | None = None, schema_registry_user_info: str | None = None,
                     envelope: str = "debezium") -> DataFrame:
    """A streaming DataFrame of the change events of one table topic.

    ``row_schema`` is the Connect struct of the table's rows (``PostgresSource.table_schema``, or
    the ``before`` field of any event's value schema). ``value_converter`` / ``key_converter``
    (default: the value's) are ``json`` or ``avro`` (then ``schema_registry_url``); ``envelope`` is
    ``debezium`` or ``unwrapped``. Needs Spark's Kafka connector on the classpath
    (``scripts/spark-jars.sh``; ``local_session`` adds it).
    """
    key_converter = key_converter or value_converter
    for name, value, allowed in (("value_converter", value_converter, CONVERTERS),
                                 ("key_converter", key_converter, CONVERTERS), ("envelope", envelope, ENVELOPES)):
        if value not in allowed:
            raise ValueError(f"{name}={value!r}: expected one of {', '.join(allowed)}")
    if "avro" in (value_converter, key_converter) and not schema_registry_url:
        raise ValueError("Avro topics need schema_registry_url (the registry the producer's converter used)")
    row_type, to_row = struct_type_of(row_schema)
    value_type = T.StructType(event_schema(row_type).fields[:6])  # op, before, after, source, ts_ms, table
    values = _Payloads(value_converter, schema_registry_url, schema_registry_user_info)
    keys = _Payloads(key_converter, schema_registry_url, schema_registry_user_info)
    as_row: Callable[[Any], tuple | None] = to_row
    if value_converter == "avro":
        from cdc.converters.avro_reader import json_form

        def as_row(row: Any) -> tuple | None:
            return to_row(json_form(row_schema, row))
    parse = _debezium(values, as_row) if envelope == "debezium" else \
        _unwrapped(values, keys, as_row, row_schema, key_converter == "avro", topic)
    parse_udf = F.udf(parse, value_type)
    # read_committed: records of a transaction that was aborted (a pipeline killed under
    # exactly.once.support) are never read; Spark's Kafka source reads uncommitted ones by default.
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
              .option("subscribe", topic).option("startingOffsets", starting_offsets)
              .option("kafka.isolation.level", "read_committed").option("includeHeaders", "true"))
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    parsed = reader.load().select(parse_udf(F.col("key"), F.col("value"), F.col("timestamp")).alias("e"),
                                  F.col("offset").alias("_position"), F.col("headers").alias(HEADERS))
    return parsed.where(F.col("e").isNotNull()).select("e.*", "_position", HEADERS)


def _debezium(values: _Payloads, as_row: Callable[[Any], tuple | None]) -> Callable[..., tuple | None]:
    def parse(key: bytearray | None, value: bytearray | None, timestamp: Any) -> tuple | None:
        payload = values(value)
        if not isinstance(payload, dict) or payload.get("op") not in OPS:
            return None  # a tombstone (the delete before it carries the change), or not a change event
        source = payload.get("source") or {}
        return (payload["op"], as_row(payload.get("before")), as_row(payload.get("after")),
                tuple(source.get(k) for k in SOURCE_FIELDS), payload.get("ts_ms"),
                f"{source.get('schema') or source.get('db')}.{source.get('table')}")
    return parse


def _unwrapped(values: _Payloads, keys: _Payloads, as_row: Callable[[Any], tuple | None],
               row_schema: dict[str, Any], avro_key: bool, topic: str) -> Callable[..., tuple | None]:
    from cdc.converters.avro_reader import json_form

    def parse(key: bytearray | None, value: bytearray | None, timestamp: Any) -> tuple | None:
        payload = values(value)
        if payload is None:  # delete.tombstone.handling.mode=tombstone: the key is what was deleted
            key_payload = keys(key)
            if not isinstance(key_payload, dict):
                return None
            if avro_key:
                key_payload = json_form(row_schema, key_payload)
            return ("d", to_key_row(key_payload), None, None, _millis(timestamp), topic)
        if not isinstance(payload, dict):
            return None
        deleted = str(payload.get("__deleted", "false")).lower() == "true"
        op = payload.get("__op") or ("d" if deleted else "u")
        if op not in OPS:
            return None
        row = as_row(payload)
        source = tuple(payload.get(_SOURCE_PREFIX + k) for k in SOURCE_FIELDS)
        table = payload.get("__table")
        if table is not None:
            table = f"{payload.get('__schema') or payload.get('__db') or payload.get(_SOURCE_PREFIX + 'db')}.{table}"
        ts_ms = payload.get("__ts_ms") or payload.get(_SOURCE_PREFIX + "ts_ms") or _millis(timestamp)
        if op == "d":
            return ("d", row, None, source, ts_ms, table or topic)
        return (op, None, row, source, ts_ms, table or topic)

    def to_key_row(key_payload: dict[str, Any]) -> tuple | None:
        # A row holding only the key's columns: what apply_changes matches a delete by.
        return to_row_json({f["field"]: key_payload.get(f["field"]) for f in row_schema["fields"]})

    _, to_row_json = struct_type_of(row_schema)
    return parse


def _millis(timestamp: Any) -> int | None:
    return None if timestamp is None else int(timestamp.timestamp() * 1000)
