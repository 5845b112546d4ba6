"""Debezium's topic naming strategies (cdc.core.topics.TopicNaming), as read from its 3.6.1 jars and
recorded in the conformance workloads pg_topic_naming_* / mariadb_topic_naming_*; SQL Server's topic
names through its source (no server here: the fake query layer)."""
from __future__ import annotations

from typing import Any

import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.core.errors import ConfigError
from cdc.core.topics import (
    BINLOG_LAYOUT,
    POSTGRES_LAYOUT,
    SQLSERVER_LAYOUT,
    ConnectorLayout,
    TopicNaming,
    sanitized_topic_name,
)
from tests.unit.test_sqlserver_stream import BEFORE_A, customers_and_orders, make_source, run, with_second_instance

PKG = "io.debezium.schema."


def naming(layout: ConnectorLayout = POSTGRES_LAYOUT, **props: str) -> TopicNaming:
    config = Config({"topic.prefix": "dbz", **props}).declare(CORE_OPTIONS)
    assert config.validate() is None
    return TopicNaming.from_config(config, layout)


def test_each_connector_names_its_tables_by_its_default_strategy() -> None:
    assert naming(POSTGRES_LAYOUT).table(None, "public", "orders").topic == "dbz.public.orders"
    assert naming(BINLOG_LAYOUT).table("shop", None, "orders").topic == "dbz.shop.orders"
    assert naming(SQLSERVER_LAYOUT).table("testDB", "dbo", "orders").topic == "dbz.testDB.dbo.orders"


@pytest.mark.parametrize(("layout", "ids", "default", "schema"), [
    # PostgreSQL's table ids have no catalog, MySQL's no schema: the strategy's missing part is left out
    (POSTGRES_LAYOUT, (None, "public", "t"), "dbz_t", "dbz_public_t"),
    (BINLOG_LAYOUT, ("shop", None, "t"), "dbz_shop_t", "dbz_t"),
    # SQL Server's Schema* strategies run in multi-partition mode: database, schema and table
    (SQLSERVER_LAYOUT, ("testDB", "dbo", "t"), "dbz_testDB_t", "dbz_testDB_dbo_t"),
])
def test_default_and_schema_strategies_pick_the_id_parts(layout: ConnectorLayout, ids: tuple[Any, ...],
                                                          default: str, schema: str) -> None:
    assert naming(layout, **{"topic.naming.strategy": PKG + "DefaultTopicNamingStrategy",
                             "topic.delimiter": "_"}).table(*ids).topic == default
    assert naming(layout, **{"topic.naming.strategy": PKG + "SchemaTopicNamingStrategy",
                             "topic.delimiter": "_"}).table(*ids).topic == schema


def test_schemas_are_named_after_the_topic() -> None:
    names = naming(**{"topic.delimiter": "-"}).table(None, "public", "order items")
    assert names == type(names)("dbz-public-order_items", "dbz-public-order_items", None)


def test_sanitizing_replaces_each_java_char() -> None:
    assert sanitized_topic_name("dbz.public.Prix €/kg") == "dbz.public.Prix___kg"
    assert sanitized_topic_name("dbz.public.Prix €/kg", unicode=True) == "dbz.public.Prix_u0020_u20ac_u002fkg"
    # past U+FFFF: a surrogate pair, two replacements; _ is the Unicode strategies' escape, so escaped too
    assert sanitized_topic_name("t😀", unicode=True) == "t_ud83d_ude00"
    assert sanitized_topic_name("t😀") == "t__"
    assert sanitized_topic_name("my_tbl", unicode=True) == "my_u005ftbl"
    # three hex digits are not padded (Debezium pads only one or two)
    assert sanitized_topic_name("ĀB", unicode=True) == "_u100B"
    assert sanitized_topic_name("x" * 300) == "x" * 249
    assert sanitized_topic_name("..") == "__" and sanitized_topic_name(".", unicode=True) == "_u002e"


def test_unicode_strategies_escape_the_joined_name_delimiter_included() -> None:
    topics = naming(**{"topic.naming.strategy": PKG + "DefaultUnicodeTopicNamingStrategy", "topic.delimiter": "_"})
    assert topics.table(None, "public", "my_tbl").topic == "dbz_u005fmy_u005ftbl"
    assert topics.transaction_topic() == "dbz_transaction"  # never sanitized


def test_regex_strategies_route_and_identify_the_table_in_keys() -> None:
    topics = naming(**{"topic.naming.strategy": PKG + "SchemaRegexTopicNamingStrategy",
                       "topic.regex": r"dbz\.public\.orders_(.*)", "topic.replacement": "dbz.orders",
                       "topic.key.field.name": "source_table", "topic.key.field.regex": r"dbz\.public\.(.*)",
                       "topic.key.field.replacement": "table_$1"})
    assert topics.table(None, "public", "orders_eu") == type(topics.table(None, "public", "x"))(
        "dbz.orders", "dbz.orders", ("source_table", "table_orders_eu"))
    # a table the regex does not match keeps its topic, and its keys gain the field all the same
    assert topics.table(None, "public", "customers").key_field == ("source_table", "table_customers")
    assert topics.augments_keys


def test_regex_strategy_key_field_defaults_and_uniqueness_off() -> None:
    props = {"topic.naming.strategy": PKG + "DefaultRegexTopicNamingStrategy", "topic.regex": r"dbz\.lab\.a_(.*)",
             "topic.replacement": "dbz.lab.a"}
    names = naming(BINLOG_LAYOUT, **props).table("lab", None, "a_1")
    assert (names.topic, names.key_field) == ("dbz.lab.a", ("__dbz__physicalTableIdentifier", "dbz.lab.a_1"))
    off = naming(BINLOG_LAYOUT, **props, **{"topic.key.enforce.uniqueness": "false"})
    assert off.table("lab", None, "a_1").key_field is None and not off.augments_keys
    # the key field holds the original topic, before sanitizing; an empty replacement keeps the topic
    assert naming(BINLOG_LAYOUT, **props).table("lab", None, "a b").key_field == (
        "__dbz__physicalTableIdentifier", "dbz.lab.a b")
    empty = naming(BINLOG_LAYOUT, **{**props, "topic.regex": r"dbz\.lab\.(x?)", "topic.replacement": "$1"})
    assert empty.table("lab", None, "").topic == "dbz.lab"


@pytest.mark.parametrize(("props", "message"), [
    ({"topic.naming.strategy": "com.example.MyStrategy"}, "cannot load"),
    ({"topic.naming.strategy": PKG + "DefaultRegexTopicNamingStrategy"}, "needs topic.regex"),
    ({"topic.naming.strategy": PKG + "DefaultRegexTopicNamingStrategy", "topic.regex": "a", "topic.replacement": " "},
     "needs topic.regex"),
    ({"topic.naming.strategy": PKG + "DefaultRegexTopicNamingStrategy", "topic.regex": "a", "topic.replacement": "b",
      "topic.key.field.regex": "(.*)"}, "topic.key.field.replacement must be non-empty"),
])
def test_strategies_cdc_cannot_run_are_refused(props: dict[str, str], message: str) -> None:
    config = Config({"topic.prefix": "dbz", **props}).declare(CORE_OPTIONS)
    with pytest.raises(ConfigError, match=message):
        config.validate()
        TopicNaming.from_config(config)


@pytest.mark.parametrize("props", [{"topic.delimiter": "/"}, {"topic.transaction": "tx events"},
                                   {"topic.heartbeat.prefix": "hb!"}, {"topic.regex": "("}])
def test_option_values_kafka_or_java_would_refuse(props: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        Config({"topic.prefix": "dbz", **props}).declare(CORE_OPTIONS).validate()


def test_transaction_topic_and_cdc_s_own_whole_name() -> None:
    assert naming().transaction_topic() == "dbz.transaction"
    assert naming(**{"topic.delimiter": "_", "topic.transaction": "txn"}).transaction_topic() == "dbz_txn"
    assert naming(**{"topic.transaction": "txn", "transaction.topic": "all.tx"}).transaction_topic() == "all.tx"


def test_heartbeat_topic_precedence() -> None:
    assert naming().heartbeat_topic() == "__debezium-heartbeat.dbz"
    assert naming(**{"heartbeat.topics.prefix": "legacy"}).heartbeat_topic() == "legacy.dbz"  # cdc honours it alone
    both = {"heartbeat.topics.prefix": "legacy", "topic.heartbeat.prefix": "hb", "topic.delimiter": "-"}
    assert naming(**both).heartbeat_topic() == "hb-dbz"
    assert naming(**both, **{"topic.heartbeat.name": "beats"}).heartbeat_topic() == "beats"
    assert naming().schema_change_topic() == "dbz"


# ---- SQL Server, through its source ---------------------------------------------------------------

def test_sqlserver_topics_under_a_delimiter_and_the_default_strategy() -> None:
    source, _ = make_source(customers_and_orders(), **{
        "topic.naming.strategy": PKG + "DefaultTopicNamingStrategy", "topic.delimiter": "_",
        "provide.transaction.metadata": "true", "topic.transaction": "txn"})
    events, _ = run(source, BEFORE_A)
    assert sorted({e.topic for e in events}) == ["server1_testDB_customers", "server1_testDB_orders", "server1_txn"]
    created = next(e for e in events if e.topic == "server1_testDB_orders")
    assert created.key_schema is not None and created.key_schema.definition["name"] == "server1_testDB_orders.Key"
    assert created.value_schema is not None
    assert created.value_schema.definition["name"] == "server1_testDB_orders.Envelope"


def test_sqlserver_regex_strategy_routes_and_augments_keys() -> None:
    source, _ = make_source(customers_and_orders(), **{
        "topic.naming.strategy": PKG + "SchemaRegexTopicNamingStrategy",
        "topic.regex": r"server1\.testDB\.dbo\.(.*)", "topic.replacement": "server1.all"})
    events, _ = run(source, BEFORE_A)
    assert {e.topic for e in events} == {"server1.all"}
    identifier = "__dbz__physicalTableIdentifier"
    keys = [(e.key, e.value is None) for e in events]
    assert ({"id": 1, identifier: "server1.testDB.dbo.orders"}, False) in keys
    assert ({"id": 1006, identifier: "server1.testDB.dbo.customers"}, True) in keys  # the key change's tombstone
    key_schema = events[0].key_schema
    assert key_schema is not None and key_schema.definition["name"] == "server1.all.Key"
    assert [f["field"] for f in key_schema.definition["fields"]] == ["id", identifier]
    changed = next(e for e in events if e.key == {"id": 2006, identifier: "server1.testDB.dbo.customers"})
    assert dict((name, value) for name, _, value in changed.headers or [])["__debezium.oldkey"] == {
        "id": 1006, identifier: "server1.testDB.dbo.customers"}


def test_sqlserver_schema_change_and_heartbeat_topics() -> None:
    db = with_second_instance(customers_and_orders())
    source, _ = make_source(db, **{"topic.naming.strategy": PKG + "SchemaUnicodeTopicNamingStrategy",
                                   "topic.heartbeat.name": "beats"})
    events, _ = run(source, {"databases": {"testDB": {"commit_lsn": "00000027:00000e00:0009", "change_lsn": None,
                                                      "event_serial_no": None}}})
    assert [e.topic for e in events] == ["server1.testDB.dbo.customers", "server1",
                                         "server1.testDB.dbo.customers"]
    assert source.streamer.heartbeat.topic == "beats"
