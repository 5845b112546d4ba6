"""The Avro converter against a real schema registry (Apicurio Registry's Confluent-compatible API, from
scripts/schema-registry.sh), read back with Confluent's own Python deserializer.

Debezium's recorded events (tests/conformance/fixtures: keys and values with their Connect schemas) go
through the pipeline's converter as configured by Kafka Connect properties; every record must decode to
the same payload, the registry must hold, under the strategy's subject, exactly the schema Confluent's
AvroData derives, and the same records must survive a real Kafka broker.
"""
from __future__ import annotations

import base64
import datetime
import decimal
import glob
import json
import math
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdc.config import Config
from cdc.converters import converter_from_config
from cdc.converters.avro_schema import from_connect_schema
from cdc.core.connect import ConnectSchema
from cdc.core.errors import ConfigError
from cdc.core.records import ChangeEvent, SinkRecord
from tests.conftest import ROOT
from tests.integration.kafka_fixtures import read_topic

fastavro = pytest.importorskip("fastavro", reason="fastavro is not installed (pip install 'cdc-debezium[avro]')")
pytest.importorskip("confluent_kafka.schema_registry.avro",
                    reason="confluent-kafka's Avro support is not installed (pip install 'cdc-debezium[avro]')")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

# Debezium's own output with names Avro rejects (a table named 2nd, topic.delimiter=-) at its default
# schema.name.adjustment.mode=none: Confluent's AvroConverter refuses it as cdc's does (the test below),
# which is why Avro users set schema.name.adjustment.mode=avro.
NOT_AVRO = ("mariadb_topic_naming_delimiter.jsonl", "pg_names_default.jsonl", "pg_topic_naming_heartbeat.jsonl")
FIXTURES = sorted(p for p in glob.glob(str(ROOT / "tests" / "conformance" / "fixtures" / "*.jsonl"))
                  if Path(p).name not in NOT_AVRO)
AVRO = "io.confluent.connect.avro.AvroConverter"
LISTING_LIMIT = 1000  # Apicurio's ccompat API lists at most this many subjects


def events(prefix: str, paths: list[str] = FIXTURES) -> Iterator[ChangeEvent]:
    for path in paths:
        for line in Path(path).read_text().splitlines():
            record = json.loads(line)
            key, value = record.get("key"), record.get("value")
            yield ChangeEvent(f"{prefix}.{record['topic']}",
                              ConnectSchema(key["schema"]) if key and key.get("schema") else None,
                              key["payload"] if key else None,
                              ConnectSchema(value["schema"]) if value and value.get("schema") else None,
                              value["payload"] if value else None)


def avro_converter(url: str, **extra: str) -> Any:
    return converter_from_config(Config({"key.converter": AVRO, "value.converter": AVRO,
                                         "key.converter.schema.registry.url": url,
                                         "value.converter.schema.registry.url": url, **extra}))


# --- reading back: Avro datum -> the JSON converter's form, per Connect schema ---------------------

def as_json_form(schema: dict[str, Any], datum: Any) -> Any:
    """What the JSON converter writes for the decoded datum (bytes as base64, Decimal as its unscaled bytes)."""
    if datum is None:
        return None
    kind = schema["type"]
    if kind == "bytes":
        if isinstance(datum, decimal.Decimal):
            sign, digits, exponent = datum.as_tuple()  # exact: no Decimal context rounding at 65 digits
            scale = int(schema["parameters"]["scale"])
            unscaled = int("".join(map(str, digits)) or "0") * 10 ** (int(exponent) + scale)
            unscaled = -unscaled if sign else unscaled
            datum = unscaled.to_bytes(max(1, (unscaled + (unscaled < 0)).bit_length() // 8 + 1), "big", signed=True)
        return base64.b64encode(datum).decode()
    if kind in ("float", "double"):
        if math.isnan(datum):
            return "NaN"
        if math.isinf(datum):
            return "Infinity" if datum > 0 else "-Infinity"
        if kind == "float":  # compare float32 values as float32
            return struct.unpack("f", struct.pack("f", datum))[0]
        return datum
    if kind == "array":
        return [as_json_form(schema["items"], x) for x in datum]
    if kind == "map":
        if schema["keys"]["type"] == "string":
            return {k: as_json_form(schema["values"], v) for k, v in datum.items()}
        return [[as_json_form(schema["keys"], e["key"]), as_json_form(schema["values"], e["value"])] for e in datum]
    if kind == "struct":
        return {f["field"]: as_json_form(f, datum.get(f["field"])) for f in schema["fields"]}
    # Connect's Date/Time/Timestamp are Avro's date/time-millis/timestamp-millis: the deserializer gives
    # Python objects where the JSON converter writes days and milliseconds
    if isinstance(datum, datetime.datetime):
        return int(datum.timestamp() * 1000) if datum.tzinfo else \
            int((datum - datetime.datetime(1970, 1, 1)).total_seconds() * 1000)
    if isinstance(datum, datetime.date):
        return (datum - datetime.date(1970, 1, 1)).days
    if isinstance(datum, datetime.time):
        return ((datum.hour * 60 + datum.minute) * 60 + datum.second) * 1000 + datum.microsecond // 1000
    return datum


def normalized(schema: dict[str, Any], payload: Any) -> Any:
    """The fixture's payload with float32 values rounded as float32 (Avro's float), for comparison."""
    if payload is None:
        return None
    kind = schema["type"]
    if kind == "float" and isinstance(payload, (int, float)):
        return struct.unpack("f", struct.pack("f", payload))[0]
    if kind == "array":
        return [normalized(schema["items"], x) for x in payload]
    if kind == "struct":
        return {f["field"]: normalized(f, payload.get(f["field"])) for f in schema["fields"]}
    return payload


def decode(deserializer: AvroDeserializer, registry: SchemaRegistryClient, topic: str, field: MessageField,
           data: bytes) -> Any:
    try:
        return deserializer(data, SerializationContext(topic, field))
    except Exception as exc:  # noqa: BLE001 - only the one schema Confluent's Python client cannot parse
        if "decimal scale" not in str(exc):
            raise
        # numeric(p, s) with s > p: Confluent's "legacy" decimal, which Avro Java reads as plain bytes and
        # fastavro refuses; read it with the logical type dropped, like Avro Java.
        from cdc.converters.avro import _encodable

        schema_id = int.from_bytes(data[1:5], "big")
        writer = fastavro.parse_schema(_encodable(json.loads(registry.get_schema(schema_id).schema_str)))
        import io

        return fastavro.schemaless_reader(io.BytesIO(data[5:]), writer, None)


# --- tests ----------------------------------------------------------------------------------------

def test_every_recorded_debezium_event_round_trips_through_the_registry(registry_url: str) -> None:
    prefix = "rt" + uuid.uuid4().hex[:8]
    converter = avro_converter(registry_url)
    client = SchemaRegistryClient({"url": registry_url})
    deserializer = AvroDeserializer(client)
    checked = 0
    for event in events(prefix):
        record = converter.to_record(event)
        for field, schema, payload, data in ((MessageField.KEY, event.key_schema, event.key, record.key),
                                             (MessageField.VALUE, event.value_schema, event.value, record.value)):
            if payload is None:
                assert data is None  # tombstones (and truncates' missing key) stay null
                continue
            assert schema is not None and data is not None
            assert data[:1] == b"\x00"
            try:
                got = decode(deserializer, client, event.topic, field, data)
            except ValueError as exc:
                # MariaDB's TIME '24:00:00' is Connect Time 86400000 (Debezium's too): fastavro cannot make a
                # datetime.time of it; the bytes are checked against Java's AvroData in test_converters_oracle
                assert "hour must be in" in str(exc) and '"t' in json.dumps(payload) and "86400000" in json.dumps(
                    payload), (event.topic, exc)
                continue
            assert as_json_form(schema.definition, got) == normalized(schema.definition, payload), event.topic
            checked += 1
    assert checked > 600


def test_a_name_avro_rejects_is_a_clear_error_naming_the_fix(registry_url: str) -> None:
    converter = avro_converter(registry_url)
    event = next(e for e in events("bad", [str(ROOT / "tests/conformance/fixtures/pg_names_default.jsonl")])
                 if e.value_schema is not None and "2nd" in (e.value_schema.name or ""))
    with pytest.raises(ConfigError, match="'2nd' is not a valid Avro name") as raised:
        converter.to_record(event)
    assert "schema.name.adjustment.mode=avro" in raised.value.fix


def test_registered_schemas_are_what_confluents_avrodata_derives(registry_url: str) -> None:
    prefix = "sc" + uuid.uuid4().hex[:8]
    converter = avro_converter(registry_url)
    client = SchemaRegistryClient({"url": registry_url})
    expected: dict[str, list[str]] = {}
    for event in events(prefix):
        record = converter.to_record(event)
        sides = (("key", event.key_schema, record.key), ("value", event.value_schema, record.value))
        for suffix, schema, data in sides:
            if data is None or schema is None:
                continue
            text = json.dumps(from_connect_schema(schema.definition), separators=(",", ":"), ensure_ascii=False)
            registered = client.get_schema(int.from_bytes(data[1:5], "big")).schema_str
            assert json.loads(registered) == json.loads(text)
            expected.setdefault(f"{event.topic}-{suffix}", [])
            if text not in expected[f"{event.topic}-{suffix}"]:
                expected[f"{event.topic}-{suffix}"].append(text)
    listed = client.get_subjects()
    if len(listed) < LISTING_LIMIT:  # a registry left running across many test runs lists only the first ones
        assert {s for s in listed if s.startswith(prefix + ".")} == set(expected)
    # A schema change (pg_schema_evolution) is a new version under the same subject, in order.
    for subject, texts in expected.items():
        versions = client.get_versions(subject)
        assert [json.loads(client.get_version(subject, v).schema.schema_str) for v in versions] == \
            [json.loads(t) for t in texts], subject


def test_the_envelope_schema_text_is_confluents(registry_url: str) -> None:
    """One value schema written out in full, as Confluent's converter registers it for Debezium."""
    prefix = "tx" + uuid.uuid4().hex[:8]
    converter = avro_converter(registry_url)
    event = next(e for e in events(prefix, [str(ROOT / "tests/conformance/fixtures/pg_keys.jsonl")])
                 if e.value_schema is not None)
    record = converter.to_record(event)
    client = SchemaRegistryClient({"url": registry_url})
    registered = client.get_schema(int.from_bytes(record.value[1:5], "big")).schema_str  # type: ignore[index]
    value = json.loads(registered)
    assert value["type"] == "record" and value["name"] == "Envelope" and value["connect.version"] == 2
    fields = {f["name"]: f for f in value["fields"]}
    assert fields["after"]["type"][1] == "Value"  # the second use of a record is its name, in its namespace
    source = fields["source"]["type"]
    assert source["namespace"] == "io.debezium.connector.postgresql" and source["connect.name"] == \
        "io.debezium.connector.postgresql.Source"
    snapshot = next(f for f in source["fields"] if f["name"] == "snapshot")
    assert snapshot == {"name": "snapshot", "type": [
        {"type": "string", "connect.version": 1,
         "connect.parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,"
                                           "incremental"},
         "connect.default": "false", "connect.name": "io.debezium.data.Enum"}, "null"], "default": "false"}
    assert fields["transaction"]["type"][1]["name"] == "block" and \
        fields["transaction"]["type"][1]["namespace"] == "event"


@pytest.mark.parametrize("strategy, subject", [
    ("io.confluent.kafka.serializers.subject.TopicNameStrategy", "{topic}-value"),
    ("io.confluent.kafka.serializers.subject.RecordNameStrategy", "{prefix}.dbz.public.types.Envelope"),
    ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", "{topic}-{prefix}.dbz.public.types.Envelope"),
])
def test_subject_name_strategies(registry_url: str, strategy: str, subject: str) -> None:
    prefix = "sn" + uuid.uuid4().hex[:8]
    event = next(events(prefix, [str(ROOT / "tests/conformance/fixtures/pg_types.jsonl")]))
    # RecordNameStrategy names the subject after the record, which carries the topic prefix here: rename
    # the schema too, so that each parametrized run has its own subject.
    assert event.value_schema is not None
    definition = json.loads(json.dumps(event.value_schema.definition).replace('"dbz.public.types.',
                                                                               f'"{prefix}.dbz.public.types.'))
    event.value_schema = ConnectSchema(definition)
    converter = avro_converter(registry_url, **{"value.converter.value.subject.name.strategy": strategy})
    converter.to_record(event)
    client = SchemaRegistryClient({"url": registry_url})
    assert client.get_versions(subject.format(topic=event.topic, prefix=prefix)) == [1]


def test_apicurio_converter_class_uses_the_ccompat_api(registry_url: str) -> None:
    base = registry_url.removesuffix("/apis/ccompat/v7")
    prefix = "ap" + uuid.uuid4().hex[:8]
    converter = converter_from_config(Config({
        "value.converter": "io.apicurio.registry.utils.converter.AvroConverter",
        "value.converter.apicurio.registry.url": base,
        "value.converter.apicurio.registry.artifact-resolver-strategy":
            "io.apicurio.registry.serde.avro.strategy.TopicIdStrategy"}))
    event = next(events(prefix, [str(ROOT / "tests/conformance/fixtures/pg_types.jsonl")]))
    record = converter.to_record(event)
    assert record.key is not None and record.key.startswith(b"{")  # the key stays JSON
    client = SchemaRegistryClient({"url": registry_url})
    decoded = AvroDeserializer(client)(record.value, SerializationContext(event.topic, MessageField.VALUE))
    assert decoded["op"] == event.value["op"] and decoded["source"]["lsn"] == event.value["source"]["lsn"]
    assert client.get_versions(f"{event.topic}-value") == [1]


def test_auto_register_off_finds_registered_schemas_and_refuses_new_ones(registry_url: str) -> None:
    from cdc.converters.registry import SchemaRegistryError

    prefix = "ar" + uuid.uuid4().hex[:8]
    event = next(events(prefix, [str(ROOT / "tests/conformance/fixtures/pg_types.jsonl")]))
    lookup_only = avro_converter(registry_url, **{"value.converter.auto.register.schemas": "false",
                                                  "key.converter.auto.register.schemas": "false"})
    with pytest.raises(SchemaRegistryError, match="auto.register.schemas"):
        lookup_only.to_record(event)
    registered = avro_converter(registry_url).to_record(event)
    assert avro_converter(registry_url, **{"value.converter.auto.register.schemas": "false",
                                           "key.converter.auto.register.schemas": "false"}
                          ).to_record(event).value == registered.value


def test_message_sizes_against_json_with_schemas(registry_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Average bytes per value, Avro (5-byte header + binary) against JSON with schemas; printed with -s."""
    prefix = "sz" + uuid.uuid4().hex[:8]
    json_converter = converter_from_config(Config({}))
    avro = avro_converter(registry_url)
    lines = []
    for name in ("pg_types", "pg_keys", "mariadb_types"):
        sizes = {"json": 0, "avro": 0}
        count = 0
        for event in events(prefix, [str(ROOT / f"tests/conformance/fixtures/{name}.jsonl")]):
            if event.value is None:
                continue
            sizes["json"] += len(json_converter.to_record(event).value or b"")
            sizes["avro"] += len(avro.to_record(event).value or b"")
            count += 1
        lines.append(f"{name}: {count} values, JSON with schemas {sizes['json'] / count:.0f} B, "
                     f"Avro {sizes['avro'] / count:.0f} B ({sizes['json'] / sizes['avro']:.1f}x smaller)")
        assert sizes["avro"] * 2 < sizes["json"]  # (3-12x on these fixtures: the schema is most of a JSON value)
    with capsys.disabled():
        print("\n" + "\n".join(lines))


@pytest.mark.kafka
def test_avro_records_through_a_real_kafka_broker(registry_url: str, kafka_bootstrap: str,
                                                  topic_prefix: str) -> None:
    from cdc.sinks.kafka import KafkaSink

    converter = avro_converter(registry_url)
    sent = [e for e in events(topic_prefix, [str(ROOT / "tests/conformance/fixtures/pg_keys.jsonl")])]
    records: list[SinkRecord] = [converter.to_record(e) for e in sent]
    sink = KafkaSink(Config({"kafka.bootstrap.servers": kafka_bootstrap, "topic.prefix": topic_prefix}))
    try:
        sink.write(records)
        sink.flush()
    finally:
        sink.close()
    client = SchemaRegistryClient({"url": registry_url})
    deserializer = AvroDeserializer(client)
    for topic in sorted({e.topic for e in sent}):
        expected = [e for e in sent if e.topic == topic]
        messages = read_topic(kafka_bootstrap, topic)
        assert len(messages) == len(expected)
        for message, event in zip(messages, expected, strict=True):
            if event.value is None:
                assert message.value() is None
                continue
            assert event.value_schema is not None
            got = deserializer(message.value(), SerializationContext(topic, MessageField.VALUE))
            assert as_json_form(event.value_schema.definition, got) == \
                normalized(event.value_schema.definition, event.value)
