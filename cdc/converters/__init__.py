"""Kafka Connect converters chosen by Kafka Connect's property names, so a Debezium config runs unchanged.

``key.converter`` / ``value.converter`` name the class, ``key.converter.<option>`` /
``value.converter.<option>`` configure it:

* ``org.apache.kafka.connect.json.JsonConverter`` (the default): :class:`cdc.core.converters.JsonConverter`
* ``io.confluent.connect.avro.AvroConverter``: Avro in Confluent's wire format with a schema registry
  (``schema.registry.url``, ``basic.auth.*``, ``auto.register.schemas``, ``key|value.subject.name.strategy``)
* ``io.apicurio.registry.utils.converter.AvroConverter``: the same, through Apicurio's Confluent-compatible
  API (``apicurio.registry.url`` + ``/apis/ccompat/v7``); records are in Confluent's format (4-byte id), as
  Apicurio's converter writes them with ``apicurio.registry.as-confluent=true``
* ``io.debezium.converters.CloudEventsConverter``: CloudEvents in JSON

Headers (``__debezium.newkey``, context headers) go through ``header.converter``, set apart from the key
and value converters as in Kafka Connect: ``org.apache.kafka.connect.storage.SimpleHeaderConverter`` (Connect's
default) or ``org.apache.kafka.connect.json.JsonConverter`` (cdc.core.header_converters).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from cdc.config import Config, Option
from cdc.converters.avro import TOPIC_NAME, AvroSerializer, strategy_class
from cdc.converters.cloudevents import CloudEventsSerializer
from cdc.converters.registry import SchemaRegistry
from cdc.core.connect import ConnectSchema
from cdc.core.context_headers import ContextHeaders
from cdc.core.converters import Converter, JsonConverter
from cdc.core.errors import ConfigError
from cdc.core.header_converters import HEADER_OPTIONS, HeaderConverter, header_converter
from cdc.core.records import ChangeEvent, SinkRecord
from cdc.core.source import CloudEventsMaker

JSON = "org.apache.kafka.connect.json.JsonConverter"
AVRO = "io.confluent.connect.avro.AvroConverter"
APICURIO_AVRO = "io.apicurio.registry.utils.converter.AvroConverter"
CLOUDEVENTS = "io.debezium.converters.CloudEventsConverter"
CLASSES = (JSON, AVRO, APICURIO_AVRO, CLOUDEVENTS)
CCOMPAT_PATH = "/apis/ccompat/v7"

__all__ = ["CONVERTER_OPTIONS", "Converter", "converter_from_config"]


class Serializer(Protocol):
    def serialize(self, topic: str, schema: ConnectSchema | None, payload: Any) -> bytes | None: ...


def _class_problem(value: str) -> str | None:
    return None if value in CLASSES else f"not a converter cdc has: {', '.join(CLASSES)}"


def _strategy_problem(value: str) -> str | None:
    return None if strategy_class(value) else \
        "expected TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy"


def _options(side: str) -> tuple[Option, ...]:
    p = f"{side}.converter"
    return (
        Option(p, str, JSON, f"The {side} converter class, as in Kafka Connect: {', '.join(CLASSES)}.",
               validator=_class_problem),
        Option(f"{p}.schema.registry.url", str, None,
               "Avro: the schema registry's URL (several, comma-separated, are tried in order)."),
        Option(f"{p}.basic.auth.credentials.source", str, "url",
               "Avro: where the registry's basic-auth credentials come from: USER_INFO or URL (user:pass@host).",
               choices=("url", "user_info")),
        Option(f"{p}.basic.auth.user.info", str, None, "Avro: user:password for the schema registry (USER_INFO).",
               secret=True),
        Option(f"{p}.auto.register.schemas", bool, True,
               "Avro: register new schemas; false only looks them up (an unknown schema stops the pipeline)."),
        Option(f"{p}.{side}.subject.name.strategy", str, TOPIC_NAME,
               "Avro: the registry subject, by Confluent's strategy class: TopicNameStrategy (<topic>-" + side
               + "), RecordNameStrategy (<record name>) or TopicRecordNameStrategy (<topic>-<record name>).",
               validator=_strategy_problem),
        Option(f"{p}.scrub.invalid.names", bool, False,
               "Avro: replace characters Avro names cannot hold with _ (as Confluent's AvroData does)."),
        Option(f"{p}.connect.meta.data", bool, True,
               "Avro: keep connect.name, connect.version, connect.parameters... in the Avro schema."),
        Option(f"{p}.apicurio.registry.url", str, None,
               "Apicurio's AvroConverter: the registry's base URL; its Confluent-compatible API is used."),
        Option(f"{p}.apicurio.registry.auto-register", bool, None,
               "Apicurio's AvroConverter: register new schemas (as auto.register.schemas)."),
        Option(f"{p}.apicurio.registry.artifact-resolver-strategy", str, None,
               "Apicurio's AvroConverter: TopicIdStrategy, RecordIdStrategy or TopicRecordIdStrategy.",
               validator=_strategy_problem),
        Option(f"{p}.serializer.type", str, "json", "CloudEvents: the envelope's format (json only here).",
               choices=("json",)),
        Option(f"{p}.data.serializer.type", str, "json", "CloudEvents: the data attribute's format (json only here).",
               choices=("json",)),
        Option(f"{p}.json.schemas.enable", bool, True, "CloudEvents: include the schema in the data attribute."),
        Option(f"{p}.extension.attributes.enable", bool, True,
               "CloudEvents: add the iodebezium* attributes (operation, source and transaction fields)."),
    )


CONVERTER_OPTIONS: tuple[Option, ...] = _options("key") + _options("value") + HEADER_OPTIONS


def _serializer(config: Config, side: str, cloud_events: Mapping[str, CloudEventsMaker]) -> Serializer:
    p = f"{side}.converter"
    kind = config.get(p)
    if kind == JSON:
        return _JsonSerializer(config.get(f"{p}.schemas.enable"))
    if kind == CLOUDEVENTS:
        if side == "value" and not cloud_events:
            raise ConfigError(f"{p}={kind}: the source does not say what CloudEvents' id and data are made of "
                              "(it offers no cdc.core.source.MakesCloudEvents)",
                              fix="use the JSON or Avro converter with this source, or declare cloud_events on "
                                  "the source class (docs/plugins.md)")
        return CloudEventsSerializer(cloud_events, data_schemas_enable=config.get(f"{p}.json.schemas.enable"),
                                     extension_attributes=config.get(f"{p}.extension.attributes.enable"),
                                     is_key=side == "key")
    if kind in (AVRO, APICURIO_AVRO):
        url = config.get(f"{p}.schema.registry.url")
        strategy = config.get(f"{p}.{side}.subject.name.strategy")
        auto_register = config.get(f"{p}.auto.register.schemas")
        if kind == APICURIO_AVRO:
            base = config.get(f"{p}.apicurio.registry.url")
            if not url and base:
                url = ",".join(u.strip().rstrip("/") + CCOMPAT_PATH for u in base.split(",") if u.strip())
            if config.get(f"{p}.apicurio.registry.artifact-resolver-strategy"):
                strategy = config.get(f"{p}.apicurio.registry.artifact-resolver-strategy")
            if config.get(f"{p}.apicurio.registry.auto-register") is not None:
                auto_register = config.get(f"{p}.apicurio.registry.auto-register")
        if not url:
            where = "apicurio.registry.url" if kind == APICURIO_AVRO else "schema.registry.url"
            raise ConfigError(f"{p}={kind} needs {p}.{where}", fix=f"set {p}.{where}=http://registry:8081")
        source = config.get(f"{p}.basic.auth.credentials.source")
        user_info = config.get(f"{p}.basic.auth.user.info") if source == "user_info" else None
        registry = SchemaRegistry.from_url_list(url, user_info, source)
        return AvroSerializer(registry, is_key=side == "key", strategy=strategy_class(strategy) or TOPIC_NAME,
                              auto_register=auto_register, scrub_invalid_names=config.get(f"{p}.scrub.invalid.names"),
                              connect_meta_data=config.get(f"{p}.connect.meta.data"))
    raise ConfigError(f"{p}={kind!r} is not a converter cdc has", fix=f"use one of {', '.join(CLASSES)}")


def converter_from_config(config: Config, context: ContextHeaders | None = None,
                          cloud_events: Mapping[str, CloudEventsMaker] | None = None) -> Converter:
    """The record converter ``key.converter`` and ``value.converter`` describe (JSON by default);
    ``cloud_events``: the source's CloudEvents makers by connector (cdc.core.source.MakesCloudEvents)."""
    config.declare(CONVERTER_OPTIONS)
    key_kind, value_kind = config.get("key.converter"), config.get("value.converter")
    value_schemas = config.get("value.converter.schemas.enable")
    headers = header_converter(config)
    if key_kind == JSON and value_kind == JSON and config.get("key.converter.schemas.enable") == value_schemas:
        return JsonConverter(value_schemas, context, headers)  # the common case, unchanged and fastest
    makers = cloud_events or {}
    return RecordConverter(_serializer(config, "key", makers), _serializer(config, "value", makers), context, headers)


class _JsonSerializer:
    def __init__(self, schemas_enable: bool) -> None:
        self._json = JsonConverter(schemas_enable)

    def serialize(self, topic: str, schema: ConnectSchema | None, payload: Any) -> bytes | None:
        return self._json.serialize(schema, payload)


class RecordConverter:
    """Key and value each through its own serializer; headers through the header converter."""

    def __init__(self, key: Serializer, value: Serializer, context: ContextHeaders | None = None,
                 headers: HeaderConverter | None = None) -> None:
        self.key = key
        self.value = value
        self._headers = JsonConverter(True, context, headers)  # its header logic (context headers once)

    def to_record(self, event: ChangeEvent) -> SinkRecord:
        value = self.value.serialize(event.topic, event.value_schema, event.value)
        key = None if event.key is None else self.key.serialize(event.topic, event.key_schema, event.key)
        return SinkRecord(event.topic, key, value, self._headers.headers(event))
