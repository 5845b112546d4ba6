"""MariaDB -> Kafka: the events read back from a real broker equal Debezium's, and the schema
history kept in a Kafka topic rebuilds the schema after a restart."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.sources.mysql.source import MySqlSource
from tests.conftest import REFERENCE
from tests.integration.harness import Pipeline
from tests.integration.kafka_fixtures import consume
from tests.integration.test_kafka import as_record
from tests.integration.test_mysql_reference import _run_sql, _scrub
from tests.integration.test_mysql_stream import sql

pytestmark = [pytest.mark.kafka, pytest.mark.mysql]
DEBEZIUM = REFERENCE / "debezium"


def kafka_pipeline(props: dict[str, str], tmp_path: Path) -> Pipeline:
    from cdc.sinks.kafka import KafkaSink

    config = Config({k: v for k, v in props.items() if k not in ("dsn", "db")}).declare(CORE_OPTIONS)
    return Pipeline(props, tmp_path / "o.json", sink=KafkaSink(config), source_cls=MySqlSource)  # type: ignore[arg-type]


def test_mariadb_events_in_kafka_equal_debezium(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path,
                                               kafka_bootstrap: str, topic_prefix: str) -> None:
    expected = [json.loads(line) for line in (DEBEZIUM / "mariadb-types.jsonl").read_text().splitlines()
                if line.strip()]
    setup, capture = (DEBEZIUM / "mariadb-types.sql").read_text().split("-- @@CAPTURE")
    db = mysql_db["db"]
    _run_sql(mysql_server, db, setup)
    props = {**mysql_db, "snapshot.mode": "no_data", "topic.prefix": topic_prefix, "include.schema.changes": "false",
             "kafka.bootstrap.servers": kafka_bootstrap, "schema.history.internal": "kafka",
             "schema.history.internal.kafka.topic": f"{topic_prefix}.history"}
    with kafka_pipeline(props, tmp_path) as p:
        p.wait_ready()
        _run_sql(mysql_server, db, capture)
        messages = consume(kafka_bootstrap, f"{topic_prefix}.{db}.types", len(expected))
    got = [as_record(m) for m in messages]
    assert len(got) == len(expected)
    for index, (ours, theirs) in enumerate(zip(got, expected, strict=True)):
        ours = _scrub(json.loads(json.dumps(ours).replace(f'"{topic_prefix}', '"dbz')), db)
        assert ours == _scrub(theirs, db), index
    history = [json.loads(m.value()) for m in consume(kafka_bootstrap, f"{topic_prefix}.history", 2)]
    assert history[0]["position"]["snapshot_start"] is True
    assert any(h["tableChanges"] and h["tableChanges"][0]["id"] == f'"{db}"."types"' for h in history)


def test_schema_history_in_kafka_survives_a_restart(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                    tmp_path: Path, kafka_bootstrap: str, topic_prefix: str) -> None:
    db = mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE t (id int PRIMARY KEY, a varchar(5))")
    props = {**mysql_db, "snapshot.mode": "no_data", "topic.prefix": topic_prefix,
             "kafka.bootstrap.servers": kafka_bootstrap, "schema.history.internal":
             "io.debezium.storage.kafka.history.KafkaSchemaHistory",
             "schema.history.internal.kafka.topic": f"{topic_prefix}.history"}
    with kafka_pipeline(props, tmp_path) as p:
        p.wait_ready()
        sql(mysql_server, db, "INSERT INTO t VALUES (1, 'x')", "ALTER TABLE t ADD COLUMN b int FIRST",
            "INSERT INTO t VALUES (5, 2, 'y')")
        first = consume(kafka_bootstrap, f"{topic_prefix}.{db}.t", 2)
    sql(mysql_server, db, "INSERT INTO t VALUES (6, 3, 'z')")
    with kafka_pipeline(props, tmp_path) as p:
        p.wait_ready()
        every = consume(kafka_bootstrap, f"{topic_prefix}.{db}.t", 3)
    assert [json.loads(m.value())["payload"]["after"] for m in first] == [{"id": 1, "a": "x"},
                                                                          {"b": 5, "id": 2, "a": "y"}]
    assert json.loads(every[2].value())["payload"]["after"] == {"b": 6, "id": 3, "a": "z"}


def test_signals_through_a_kafka_topic(mysql_server: dict[str, Any], mysql_db: dict[str, str], tmp_path: Path,
                                       kafka_bootstrap: str, topic_prefix: str) -> None:
    """Debezium's Kafka signal channel: key = topic.prefix, value {type, data}; another pipeline's
    signals (another key) and a malformed one are left alone; the position is kept in the offset."""
    from confluent_kafka import Producer

    from tests.integration.test_mysql_incremental import SIGNALS
    from tests.integration.test_mysql_stream import pipeline

    db = mysql_db["db"]
    sql(mysql_server, db, SIGNALS, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t SELECT seq FROM seq_1_to_200")
    topic = f"{topic_prefix}.signals"
    from confluent_kafka.admin import NewTopic

    from tests.integration.kafka_fixtures import kafka_admin

    admin = kafka_admin(kafka_bootstrap)  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, key=b"someone-else", value=json.dumps(
        {"type": "execute-snapshot", "data": {"data-collections": [f"{db}.t"]}}).encode())
    producer.produce(topic, key=b"dbz", value=b"not json")
    producer.flush(30)
    props = {"snapshot.mode": "no_data", "signal.enabled.channels": "source,kafka", "signal.kafka.topic": topic,
             "kafka.bootstrap.servers": kafka_bootstrap, "signal.data.collection": f"{db}.debezium_signal"}
    with pipeline(mysql_db, tmp_path, **props) as p:
        p.wait_ready()
        producer.produce(topic, key=b"dbz", value=json.dumps(
            {"type": "execute-snapshot", "data": {"data-collections": [f"{db}.t"], "additional-conditions": [
                {"data-collection": f"{db}.t", "filter": "id <= 50"}]}}).encode())
        producer.flush(30)
        got = p.wait_count(50, topic=f"dbz.{db}.t", timeout=60)
        sql(mysql_server, db, "INSERT INTO t VALUES (1000)")
        got = p.wait_count(51, topic=f"dbz.{db}.t", timeout=30)
    assert sorted(r["value"]["payload"]["after"]["id"] for r in got[:50]) == list(range(1, 51))
    assert {r["value"]["payload"]["source"]["snapshot"] for r in got[:50]} == {"incremental"}
    assert json.loads((tmp_path / "offsets.json").read_text())["offsets"]["test"]["signal_kafka_pos"] == 3
