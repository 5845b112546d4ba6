"""Envelope, converter, offsets, config: the contract pieces without a server."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from cdc.config import CORE_OPTIONS, Config, Option, parse_properties
from cdc.core import connect
from cdc.core.converters import JsonConverter
from cdc.core.envelope import TableEnvelope
from cdc.core.errors import ConfigError, OffsetStoreError
from cdc.core.offsets import FileOffsetStore
from cdc.core.topics import TopicNaming, sanitize_schema_name, sanitize_topic
from cdc.core.transactions import TransactionTracker
from cdc.sources.postgres.source_info import SOURCE_SCHEMA


def envelope() -> TableEnvelope:
    id_field = connect.field("id", {"type": "int32", "optional": False})
    name_field = connect.field("name", {"type": "string", "optional": True})
    return TableEnvelope(topic="dbz.public.t", table_id="public.t", schema_name_prefix="dbz.public.t",
                         key_fields=[id_field], value_fields=[id_field, name_field], source_schema=SOURCE_SCHEMA)


def test_event_serializes_with_and_without_schemas() -> None:
    env = envelope()
    event = env.event("c", None, {"id": 1, "name": "a"}, {"db": "x"})
    with_schema = json.loads(JsonConverter(True).to_record(event).value)
    assert with_schema["schema"]["name"] == "dbz.public.t.Envelope"
    assert with_schema["schema"]["version"] == 2
    assert [f["field"] for f in with_schema["schema"]["fields"]] == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    assert list(with_schema["payload"])[:5] == ["before", "after", "source", "transaction", "op"]
    assert with_schema["payload"]["after"] == {"id": 1, "name": "a"}
    key = json.loads(JsonConverter(True).to_record(event).key)
    assert key == {"schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}],
                              "optional": False, "name": "dbz.public.t.Key"}, "payload": {"id": 1}}
    plain = JsonConverter(False).to_record(event)
    assert json.loads(plain.key) == {"id": 1}
    assert json.loads(plain.value)["op"] == "c"


def test_tombstone_has_null_value_and_the_key() -> None:
    record = JsonConverter(True).to_record(envelope().tombstone({"id": 7}))
    assert record.value is None
    assert json.loads(record.key)["payload"] == {"id": 7}


def test_transaction_tracker_counts_per_table() -> None:
    tracker = TransactionTracker("dbz.transaction")
    begin = tracker.begin("5:100", 1)
    assert begin.value == {"status": "BEGIN", "id": "5:100", "event_count": None, "data_collections": None, "ts_ms": 1}
    assert tracker.block("public.a") == {"id": "5:100", "total_order": 1, "data_collection_order": 1}
    assert tracker.block("public.b") == {"id": "5:100", "total_order": 2, "data_collection_order": 1}
    assert tracker.block("public.a") == {"id": "5:100", "total_order": 3, "data_collection_order": 2}
    end = tracker.end(2)
    assert end.value["event_count"] == 3
    assert end.value["data_collections"] == [{"data_collection": "public.a", "event_count": 2},
                                             {"data_collection": "public.b", "event_count": 1}]
    assert end.key == {"id": "5:100"}


def test_names_are_sanitised() -> None:
    assert sanitize_topic("dbz.my schema.tä$ble") == "dbz.my_schema.t__ble"
    assert sanitize_schema_name("dbz.1st.my-table") == "dbz._1st.my_table"
    assert TopicNaming("dbz").table(None, "public", "orders").topic == "dbz.public.orders"


def test_file_offsets_round_trip_and_keep_other_pipelines(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    FileOffsetStore(path, "a").save({"lsn": 1})
    FileOffsetStore(path, "b").save({"lsn": 2})
    FileOffsetStore(path, "a").save({"lsn": 3})
    assert FileOffsetStore(path, "a").load() == {"lsn": 3}
    assert FileOffsetStore(path, "b").load() == {"lsn": 2}
    assert FileOffsetStore(path, "c").load() is None
    assert not list(tmp_path.glob("*.tmp"))


def test_corrupt_offset_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    path.write_text('{"version": 1, "offsets": {"a": ')
    with pytest.raises(OffsetStoreError) as info:
        FileOffsetStore(path, "a").load()
    assert str(path) in str(info.value)
    assert "corrupt" in str(info.value)
    assert path.read_text() == '{"version": 1, "offsets": {"a": '  # left as it was, for the user


def test_config_validation_reports_every_problem_at_once() -> None:
    config = Config({"snapshot.mode": "sometimes", "max.batch.size": "zero"}).declare(CORE_OPTIONS)
    with pytest.raises(ConfigError) as info:
        config.validate()
    text = str(info.value)
    assert "snapshot.mode='sometimes' is not one of" in text
    assert "max.batch.size" in text
    assert "topic.prefix is required" in text


def test_unknown_property_warns_with_the_closest_name(caplog: pytest.LogCaptureFixture) -> None:
    config = Config({"topic.prefix": "x", "snapshot.mod": "initial"}).declare(CORE_OPTIONS)
    with caplog.at_level(logging.WARNING):
        config.validate()
    assert "unknown property 'snapshot.mod'" in caplog.text
    assert "did you mean 'snapshot.mode'" in caplog.text


def test_passwords_are_masked() -> None:
    config = Config({"database.password": "hunter2", "topic.prefix": "x"}).declare(
        [Option("database.password", secret=True)])
    assert "hunter2" not in repr(config)
    assert config.masked()["database.password"] == "********"


def test_properties_file_parsing() -> None:
    props = parse_properties("# comment\nname=dbz-pg\ndatabase.port = 5434\n! other\nlong=a\\\n  b\n")
    assert props == {"name": "dbz-pg", "database.port": "5434", "long": "ab"}
