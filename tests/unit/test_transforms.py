"""The transform chain and Debezium's SMTs, on events Debezium recorded (tests/conformance/fixtures).

Expected values are Debezium's: "oracle" marks output recorded by running Debezium 3.6.1's own
SMT on the same input (the harness in test_transforms_oracle.py, which re-checks all of it when Java
is there); other comments cite Debezium's documentation or tests.
"""
from __future__ import annotations

import dataclasses

import pytest

from cdc.core.connect import ConnectSchema
from cdc.core.envelope import TableEnvelope
from cdc.core.errors import ConfigError
from cdc.core.records import ChangeEvent
from cdc.transforms import TransformChain
from tests.unit.test_transforms_support import events, to_json

UNWRAP = "io.debezium.transforms.ExtractNewRecordState"
ROUTER = "io.debezium.transforms.ByLogicalTableRouter"
K = "org.apache.kafka.connect.transforms"

# pg_keys: 0 = create pk id=1 v='one'; 10 = delete of pk id=1 (key change); 11 = its tombstone.
PG_KEYS = events("pg_keys")
CREATE, DELETE, TOMBSTONE = PG_KEYS[0], PG_KEYS[10], PG_KEYS[11]
PK_KEY = {"schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}],
                     "optional": False, "name": "dbz.public.pk.Key"}, "payload": {"id": 1}}
NEWKEY_HEADER = ["__debezium.newkey", {"schema": PK_KEY["schema"], "payload": {"id": 10}}]


def unwrap(**options: str) -> TransformChain:
    props = {"transforms": "u", "transforms.u.type": UNWRAP}
    props.update({f"transforms.u.{k.replace('_', '.')}": v for k, v in options.items()})
    return TransformChain.from_properties(props)


def row_schema(*extra: dict[str, object], optional: bool = False) -> dict[str, object]:
    return {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"},
                                         {"type": "string", "optional": True, "field": "v"}, *extra],
            "optional": optional, "name": "dbz.public.pk.Value"}


# --- the chain ------------------------------------------------------------------------------------

def test_empty_chain_passes_events_through() -> None:
    empty = TransformChain.from_properties({})
    assert len(empty) == 0
    assert empty.apply(CREATE) is CREATE
    assert empty.apply_all(PG_KEYS) == PG_KEYS


def test_stages_run_in_order_and_a_drop_ends_the_chain() -> None:
    props = {"transforms": "route, unwrap", "transforms.route.type": f"{K}.RegexRouter",
             "transforms.route.regex": r"dbz\.public\.(.*)", "transforms.route.replacement": "$1",
             "transforms.unwrap.type": UNWRAP}
    out = TransformChain.from_properties(props).apply_all([CREATE, DELETE, TOMBSTONE])
    # ExtractNewRecordState's default (tombstone) keeps the delete as a null value and drops the tombstone.
    assert [(e.topic, e.value) for e in out] == [("pk", {"id": 1, "v": "one"}), ("pk", None)]


def test_predicate_and_negate() -> None:
    # Kafka's documented use: Filter with a predicate (https://kafka.apache.org/documentation/#connect_predicates).
    base = {"transforms": "f", "transforms.f.type": f"{K}.Filter", "transforms.f.predicate": "isPk",
            "predicates": "isPk", "predicates.isPk.type": f"{K}.predicates.TopicNameMatches",
            "predicates.isPk.pattern": r".*\.pk"}
    dropped = TransformChain.from_properties(base).apply_all(PG_KEYS)
    kept = TransformChain.from_properties({**base, "transforms.f.negate": "true"}).apply_all(PG_KEYS)
    assert {e.topic for e in dropped} == {"dbz.public.composite", "dbz.public.keyless_full",
                                          "dbz.public.keyless_default", "dbz.public.by_index", "dbz.public.pk_full"}
    assert {e.topic for e in kept} == {"dbz.public.pk"}
    assert len(dropped) + len(kept) == len(PG_KEYS)


def test_has_header_key_and_record_is_tombstone() -> None:
    props = {"transforms": "a,b", "predicates": "h,t",
             "transforms.a.type": f"{K}.RegexRouter", "transforms.a.regex": ".*", "transforms.a.replacement": "moved",
             "transforms.a.predicate": "h",
             "transforms.b.type": f"{K}.Filter", "transforms.b.predicate": "t",
             "predicates.h.type": f"{K}.predicates.HasHeaderKey", "predicates.h.name": "__debezium.newkey",
             "predicates.t.type": f"{K}.predicates.RecordIsTombstone"}
    c = TransformChain.from_properties(props)
    assert c.apply(CREATE) is CREATE
    moved = c.apply(DELETE)
    assert moved is not None and moved.topic == "moved"
    assert c.apply(TOMBSTONE) is None


@pytest.mark.parametrize(("props", "message", "fix"), [
    ({"transforms": "u", "transforms.u.type": "io.debezium.transforms.ExtractNewRecordStat"},
     "no installed transform or predicate is named 'io.debezium.transforms.ExtractNewRecordStat'. Did you mean "
     "'io.debezium.transforms.ExtractNewRecordState'?", "use one of:"),
    ({"transforms": "u"}, "transforms.u.type is not set", "set transforms.u.type"),
    ({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.drop.tombstones": "false"},
     "is no longer an option: Debezium 2.5 replaced it with delete.tombstone.handling.mode", "remove"),
    ({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.delete.tombstone.handling.mode": "delete"},
     "'delete' is not one of drop, tombstone, rewrite, rewrite-with-tombstone, delete-to-tombstone", "use one of"),
    ({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.replace.null.with.default": "yes"},
     "'yes' is not a boolean", "use true or false"),
    ({"transforms": "u,u", "transforms.u.type": UNWRAP}, "transforms lists u more than once", "own alias"),
    ({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.negate": "true"},
     "transforms.u.negate is set but there is no transforms.u.predicate", "set transforms.u.predicate"),
    ({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.predicate": "p"},
     "transforms.u.predicate refers to 'p', which predicates= does not list", "add p to predicates="),
    ({"transforms": "r", "transforms.r.type": f"{K}.RegexRouter", "transforms.r.regex": "(",
      "transforms.r.replacement": "x"}, "'(' is not a valid regular expression", "correct the expression"),
    ({"transforms": "r", "transforms.r.type": f"{K}.RegexRouter", "transforms.r.regex": "x"},
     "transforms.r.replacement (org.apache.kafka.connect.transforms.RegexRouter): is required", "set"),
    ({"transforms": "r", "transforms.r.type": f"{K}.predicates.RecordIsTombstone"},
     "is a predicate, not a transform", "predicates.<name>.type"),
    ({"transforms": "r", "transforms.r.type": ROUTER, "transforms.r.topic.regex": "a",
      "transforms.r.topic.replacement": "b", "transforms.r.key.field.regex": "a"},
     "key.field.replacement must be non-empty if key.field.regex is set.", "set key.field.replacement"),
])
def test_configuration_errors_say_what_and_how_to_fix(props: dict[str, str], message: str, fix: str) -> None:
    with pytest.raises(ConfigError) as err:
        TransformChain.from_properties(props)
    assert message in err.value.message
    assert err.value.fix is not None and fix in err.value.fix


def test_every_registered_class_loads() -> None:
    from importlib.metadata import entry_points
    names = {ep.name for ep in entry_points(group="cdc.transforms")}
    assert {f"{K}.ReplaceField$Key", f"{K}.ReplaceField$Value", f"{K}.RegexRouter", f"{K}.Filter",
            f"{K}.predicates.TopicNameMatches", UNWRAP, ROUTER, "io.debezium.transforms.ReadToInsertEvent"} <= names
    for ep in entry_points(group="cdc.transforms"):
        assert callable(ep.load())


# --- ExtractNewRecordState ------------------------------------------------------------------------

def test_unwrap_create_is_the_after_row() -> None:
    out = unwrap().apply(CREATE)
    assert out is not None
    # oracle: the row schema keeps its name and becomes required (Debezium rebuilds it with
    # SchemaUtil.copySchemaBasics); key and headers unchanged.
    assert to_json(out) == {"topic": "dbz.public.pk", "key": PK_KEY,
                            "value": {"schema": row_schema(), "payload": {"id": 1, "v": "one"}}, "headers": []}


def test_unwrap_rewrite_adds_deleted_and_fields() -> None:
    # Debezium docs (event-flattening.adoc): rewrite adds __deleted "true" to deletes and "false"
    # otherwise; add.fields=op,table,source.ts_ms adds __op, __table, __source_ts_ms
    # https://debezium.io/documentation/reference/stable/transformations/event-flattening.html
    c = unwrap(add_fields="op,table,source.ts_ms", add_headers="op",
               delete_tombstone_handling_mode="rewrite-with-tombstone")
    extra = [{"type": "string", "optional": True, "field": "__deleted"},
             {"type": "string", "optional": True, "field": "__op"},
             {"type": "string", "optional": True, "field": "__table"},
             {"type": "int64", "optional": True, "field": "__source_ts_ms"}]
    created, deleted, tombstone = (c.apply(e) for e in (CREATE, DELETE, TOMBSTONE))
    assert created is not None and deleted is not None and tombstone is not None
    # oracle
    assert to_json(created)["value"] == {"schema": row_schema(*extra), "payload": {
        "id": 1, "v": "one", "__deleted": "false", "__op": "c", "__table": "pk", "__source_ts_ms": 1795521962347}}
    assert to_json(created)["headers"] == [["__op", {"schema": {"type": "string", "optional": True}, "payload": "c"}]]
    assert to_json(deleted)["value"] == {"schema": row_schema(*extra), "payload": {
        "id": 1, "v": None, "__deleted": "true", "__op": "d", "__table": "pk", "__source_ts_ms": 1795521962356}}
    assert to_json(deleted)["headers"] == [
        NEWKEY_HEADER, ["__op", {"schema": {"type": "string", "optional": True}, "payload": "d"}]]
    # A tombstone only gets op (as a required string "d"), being the end of a delete.
    assert to_json(tombstone) == {"topic": "dbz.public.pk", "key": PK_KEY, "value": None, "headers": [
        NEWKEY_HEADER, ["__op", {"schema": {"type": "string", "optional": False}, "payload": "d"}]]}


@pytest.mark.parametrize(("mode", "delete_value", "tombstone_kept"), [
    ("drop", "dropped", False),
    # Not a true tombstone: the row schema stays with a null value (Debezium's DefaultDeleteHandlingStrategy).
    ("tombstone", {"schema": row_schema(optional=True), "payload": None}, False),
    ("delete-to-tombstone", None, False),
    ("rewrite", "rewritten", False),
    ("rewrite-with-tombstone", "rewritten", True),
])
def test_delete_tombstone_handling_modes(mode: str, delete_value: object, tombstone_kept: bool) -> None:
    c = unwrap(delete_tombstone_handling_mode=mode)
    deleted = c.apply(DELETE)
    if delete_value == "dropped":
        assert deleted is None
    elif delete_value == "rewritten":
        assert deleted is not None and deleted.value == {"id": 1, "v": None, "__deleted": "true"}
    else:
        assert deleted is not None and to_json(deleted)["value"] == delete_value
    assert (c.apply(TOMBSTONE) is TOMBSTONE) == tombstone_kept


def test_add_fields_renamed_prefixed_and_transaction_fields() -> None:
    # ExtractNewRecordStateConfigDefinition: "version:VERSION,connector:CONNECTOR,source.ts_ms:EVENT_TIMESTAMP"
    # maps new names (the prefix still applies); id / total_order / data_collection_order come from transaction.
    tx = events("pg_transactions")
    create = next(e for e in tx if e.value and e.value.get("op") == "c" and e.value.get("transaction"))
    c = unwrap(add_fields="op:operation,source.ts_ms:EVENT_TIMESTAMP,id,total_order,transaction.id",
               add_fields_prefix="m_")
    out = c.apply(create)
    assert out is not None and create.value is not None
    added = [f for f in out.value_schema.fields if f["field"].startswith("m_")]  # type: ignore[union-attr]
    assert added == [{"type": "string", "optional": True, "field": "m_operation"},
                     {"type": "int64", "optional": True, "field": "m_EVENT_TIMESTAMP"},
                     {"type": "string", "optional": True, "field": "m_id"},
                     {"type": "int64", "optional": True, "field": "m_total_order"},
                     {"type": "string", "optional": True, "field": "m_transaction_id"}]
    assert out.value is not None
    transaction = create.value["transaction"]
    assert [out.value[f["field"]] for f in added] == [
        "c", create.value["source"]["ts_ms"], transaction["id"], transaction["total_order"], transaction["id"]]


def test_added_field_keeps_logical_type_but_not_default() -> None:
    # source.snapshot is an io.debezium.data.Enum with default "false": the added copy is optional,
    # keeps name, version and parameters, and drops the default (oracle).
    out = unwrap(add_fields="snapshot").apply(CREATE)
    assert out is not None and out.value_schema is not None
    assert out.value_schema.fields[-1] == {
        "type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
        "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
        "field": "__snapshot"}


def test_non_envelopes_pass_unchanged_and_truncates_are_dropped() -> None:
    c = unwrap(add_fields="op")
    schema_changes = [e for e in events("mariadb_schema_evolution") if e.value_schema and
                      e.value_schema.name == "io.debezium.connector.mariadb.SchemaChangeValue"]
    assert schema_changes and all(c.apply(e) is e for e in schema_changes)
    transactions = [e for e in events("pg_transactions") if e.topic == "dbz.transaction"]
    assert transactions and all(c.apply(e) is e for e in transactions)
    truncates = [e for e in events("pg_truncate_messages") if e.value and e.value["op"] == "t"]
    assert len(truncates) == 3 and all(c.apply(e) is None for e in truncates)
    # Logical decoding messages have their own value schema (MessageValue), not an envelope (oracle).
    messages = [e for e in events("pg_truncate_messages") if e.value and e.value["op"] == "m"]
    assert len(messages) == 4 and all(c.apply(e) is e for e in messages)


def test_route_by_field_uses_a_string_column() -> None:
    out = unwrap(route_by_field="v").apply(CREATE)
    assert out is not None and out.topic == "one"
    with pytest.raises(ValueError, match="Field 'id' is not of type STRING"):
        unwrap(route_by_field="id").apply(CREATE)


def test_replace_null_with_default_on_rewrite() -> None:
    # A null in a column with a default: InsertField (used for __deleted) reads it with Struct.get,
    # which gives the default, unless replace.null.with.default=false.
    envelope = TableEnvelope(
        topic="t", table_id="s.t", schema_name_prefix="t", source_schema={"type": "struct", "fields": [],
                                                                          "optional": False, "name": "src"},
        key_fields=[{"type": "int32", "optional": False, "field": "id"}],
        value_fields=[{"type": "int32", "optional": False, "field": "id"},
                      {"type": "string", "optional": True, "default": "dflt", "field": "s"}])
    event = envelope.event("c", None, {"id": 1, "s": None}, {})
    assert unwrap(delete_tombstone_handling_mode="rewrite").apply(event).value == {  # type: ignore[union-attr]
        "id": 1, "s": "dflt", "__deleted": "false"}
    kept = unwrap(delete_tombstone_handling_mode="rewrite", replace_null_with_default="false").apply(event)
    assert kept is not None and kept.value == {"id": 1, "s": None, "__deleted": "false"}
    assert unwrap().apply(event).value == {"id": 1, "s": None}  # type: ignore[union-attr]


def test_drop_fields_header() -> None:
    drop = ("drop", ConnectSchema({"type": "array", "items": {"type": "string", "optional": False},
                                   "optional": False}), ["v", "id"])
    event = dataclasses.replace(CREATE, headers=[drop])
    # Only optional fields go, so the schema stays compatible (drop.fields.keep.schema.compatible=true).
    out = unwrap(drop_fields_header_name="drop").apply(event)
    assert out is not None and out.value == {"id": 1}
    assert out.value_schema == ConnectSchema({"type": "struct", "fields": [
        {"type": "int32", "optional": False, "field": "id"}], "optional": False, "name": "dbz.public.pk.Value"})
    both = unwrap(drop_fields_header_name="drop", drop_fields_keep_schema_compatible="false",
                  drop_fields_from_key="true").apply(event)
    assert both is not None and both.value == {} and both.key == {}


# --- ByLogicalTableRouter -------------------------------------------------------------------------

def test_router_merges_topics_and_marks_the_physical_table() -> None:
    c = TransformChain.from_properties({"transforms": "r", "transforms.r.type": ROUTER,
                                        "transforms.r.topic.regex": r"dbz\.public\.(.*)",
                                        "transforms.r.topic.replacement": "dbz.all"})
    created, tombstone = c.apply(CREATE), c.apply(TOMBSTONE)
    assert created is not None and tombstone is not None
    # oracle (and Debezium's topic-routing docs: the key gains __dbz__physicalTableIdentifier)
    key = {"schema": {"type": "struct", "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": False, "field": "__dbz__physicalTableIdentifier"}],
        "optional": False, "name": "dbz.all.Key"},
        "payload": {"id": 1, "__dbz__physicalTableIdentifier": "dbz.public.pk"}}
    assert to_json(created)["key"] == to_json(tombstone)["key"] == key
    assert created.topic == tombstone.topic == "dbz.all"
    assert created.value == CREATE.value and tombstone.value is None
    schema = created.value_schema
    assert schema is not None and schema.name == "dbz.all.Envelope" and schema.definition["version"] == 2
    renamed = {f["field"]: f.get("name") for f in schema.fields}
    assert renamed["before"] == renamed["after"] == "dbz.all.Value"
    assert renamed["source"] == "io.debezium.connector.postgresql.Source"
    # The headers (the old key) are not rewritten.
    assert to_json(tombstone)["headers"] == [NEWKEY_HEADER]


def test_router_key_field_options_and_avro_names() -> None:
    props = {"transforms": "r", "transforms.r.type": ROUTER, "transforms.r.topic.regex": r"dbz\.public\.(.*)",
             "transforms.r.topic.replacement": "9-$1", "transforms.r.key.field.name": "shard",
             "transforms.r.key.field.regex": r"dbz\.(.*)\.(.*)", "transforms.r.key.field.replacement": "$2@$1",
             "transforms.r.schema.name.adjustment.mode": "avro"}
    out = TransformChain.from_properties(props).apply(CREATE)
    assert out is not None and out.topic == "9-pk"
    assert out.key == {"id": 1, "shard": "pk@public"}
    # Debezium's SchemaNameAdjuster: a leading digit gets "_" before it, "-" becomes "_".
    assert out.key_schema is not None and out.key_schema.name == "_9_pk.Key"
    assert out.value_schema is not None and out.value_schema.name == "_9_pk.Envelope"
    no_key = TransformChain.from_properties({**props, "transforms.r.key.enforce.uniqueness": "false"}).apply(CREATE)
    assert no_key is not None and no_key.key == {"id": 1}


def test_router_leaves_unmatched_topics_and_keyless_events() -> None:
    c = TransformChain.from_properties({"transforms": "r", "transforms.r.type": ROUTER,
                                        "transforms.r.topic.regex": r".*\.keyless_full",
                                        "transforms.r.topic.replacement": "keyless"})
    assert c.apply(CREATE) is CREATE
    keyless = PG_KEYS[4]
    out = c.apply(keyless)
    assert out is not None and out.topic == "keyless" and out.key is None and out.key_schema is None


# --- ReadToInsertEvent, RegexRouter ---------------------------------------------------------------

def test_read_to_insert() -> None:
    assert CREATE.value is not None
    read = dataclasses.replace(CREATE, value={**CREATE.value, "op": "r"})
    for name in ("io.debezium.transforms.ReadToInsertEvent",
                 "io.debezium.connector.mysql.transforms.ReadToInsertEvent"):
        c = TransformChain.from_properties({"transforms": "x", "transforms.x.type": name})
        out = c.apply(read)
        assert out is not None and out.value == CREATE.value
        assert c.apply(DELETE) is DELETE and c.apply(TOMBSTONE) is TOMBSTONE
    assert read.value is not None and read.value["op"] == "r"  # the input is not changed


def test_regex_router_java_replacement() -> None:
    # Kafka docs example: regex "(.*)customers_(.*)", replacement "$1customers_$2"-style rewrites.
    c = TransformChain.from_properties({"transforms": "r", "transforms.r.type": f"{K}.RegexRouter",
                                        "transforms.r.regex": r"(?<prefix>[^.]+)\.([^.]+)\.(.+)",
                                        "transforms.r.replacement": r"${prefix}_$3\$"})
    out = c.apply(CREATE)
    assert out is not None and out.topic == "dbz_pk$"
    assert c.apply(ChangeEvent("nodots", None, None, None, None)).topic == "nodots"  # type: ignore[union-attr]


# --- Kafka Connect's field transforms (after unwrapping, as they are used) ------------------------

def after_unwrap(cls: str, **options: str) -> TransformChain:
    props = {"transforms": "u,x", "transforms.u.type": UNWRAP, "transforms.x.type": f"{K}.{cls}"}
    props.update({f"transforms.x.{k.replace('_', '.')}": v for k, v in options.items()})
    return TransformChain.from_properties(props)


def test_replace_field_exclude_and_rename() -> None:
    out = after_unwrap("ReplaceField$Value", exclude="v", renames="id:ident").apply(CREATE)
    # oracle: the schema keeps its name, is required, and lists the renamed field
    assert out is not None and to_json(out)["value"] == {"schema": {
        "type": "struct", "fields": [{"type": "int32", "optional": False, "field": "ident"}], "optional": False,
        "name": "dbz.public.pk.Value"}, "payload": {"ident": 1}}
    with pytest.raises(ConfigError, match="invalid rename mapping: a"):
        after_unwrap("ReplaceField$Value", renames="a")


def test_insert_field_topic_static_partition_timestamp() -> None:
    out = after_unwrap("InsertField$Value", topic_field="topic!", static_field="origin", static_value="cdc",
                       partition_field="part", timestamp_field="ts").apply(CREATE)
    assert out is not None and out.value_schema is not None
    # oracle: a source record has no partition or timestamp yet, so those stay null
    assert out.value == {"id": 1, "v": "one", "topic": "dbz.public.pk", "part": None, "ts": None, "origin": "cdc"}
    assert out.value_schema.fields[2:] == [
        {"type": "string", "optional": False, "field": "topic"},
        {"type": "int32", "optional": True, "field": "part"},
        {"type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,
         "field": "ts"},
        {"type": "string", "optional": True, "field": "origin"}]
    with pytest.raises(ConfigError, match="only applicable to sink connectors"):
        after_unwrap("InsertField$Value", offset_field="off")


def test_value_to_key_and_extract_field() -> None:
    keyed = after_unwrap("ValueToKey", fields="v,id").apply(CREATE)
    # oracle: an unnamed key struct of the value's field schemas
    assert keyed is not None and to_json(keyed)["key"] == {"schema": {"type": "struct", "fields": [
        {"type": "string", "optional": True, "field": "v"}, {"type": "int32", "optional": False, "field": "id"}],
        "optional": False}, "payload": {"v": "one", "id": 1}}
    extracted = after_unwrap("ExtractField$Key", field="id").apply(CREATE)
    assert extracted is not None and to_json(extracted)["key"] == {"schema": {"type": "int32", "optional": False},
                                                                   "payload": 1}


def test_mask_field() -> None:
    masked = after_unwrap("MaskField$Value", fields="v,id").apply(CREATE)
    assert masked is not None and masked.value == {"id": 0, "v": ""}
    replaced = after_unwrap("MaskField$Value", fields="v,id", replacement="42").apply(CREATE)
    assert replaced is not None and replaced.value == {"id": 42, "v": "42"}
    with pytest.raises(ValueError, match="Unable to convert x"):
        after_unwrap("MaskField$Value", fields="id", replacement="x").apply(CREATE)


def test_header_from_copy_and_move() -> None:
    copied = after_unwrap("HeaderFrom$Value", fields="id,v", headers="hid,hv", operation="copy").apply(CREATE)
    assert copied is not None and copied.value == {"id": 1, "v": "one"}
    assert to_json(copied)["headers"] == [["hid", {"schema": {"type": "int32", "optional": False}, "payload": 1}],
                                          ["hv", {"schema": {"type": "string", "optional": True}, "payload": "one"}]]
    moved = after_unwrap("HeaderFrom$Value", fields="v", headers="hv", operation="move").apply(CREATE)
    assert moved is not None and moved.value == {"id": 1}
    with pytest.raises(ConfigError, match="same number of elements"):
        after_unwrap("HeaderFrom$Value", fields="a,b", headers="h", operation="copy")


def test_timestamp_converter() -> None:
    # source.ts_ms 1795521962347 = 2026-11-24T12:06:02.347Z (day 20781 since the epoch)
    props = {"transforms.u.add.fields": "source.ts_ms"}

    def convert(**options: str) -> object:
        c = TransformChain.from_properties({"transforms": "u,x", "transforms.u.type": UNWRAP, **props,
                                            "transforms.x.type": f"{K}.TimestampConverter$Value",
                                            "transforms.x.field": "__source_ts_ms",
                                            **{f"transforms.x.{k.replace('_', '.')}": v for k, v in options.items()}})
        out = c.apply(CREATE)
        assert out is not None and out.value is not None
        return out.value["__source_ts_ms"]

    assert convert(target_type="string", format="yyyy-MM-dd'T'HH:mm:ss.SSSX") == "2026-11-24T12:06:02.347Z"
    assert convert(target_type="Date") == 20781
    assert convert(target_type="Time") == 43_562_347
    # unix.precision applies to an int64 input too (oracle): read as seconds, written as seconds;
    # read as microseconds, it passes through java.util.Date's milliseconds.
    assert convert(target_type="unix", unix_precision="seconds") == 1795521962347
    assert convert(target_type="unix", unix_precision="microseconds") == 1795521962000
    with pytest.raises(ConfigError, match="requires format"):
        convert(target_type="string")


def test_an_unknown_option_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """As in Kafka Connect, whose transforms ignore options they do not define: a Debezium
    configuration that sets one still runs; the warning names the likely typo."""
    chain = TransformChain.from_properties({"transforms": "u", "transforms.u.type": UNWRAP,
                                            "transforms.u.add.field": "op"})
    assert len(chain) == 1
    assert "transforms.u.add.field (io.debezium.transforms.ExtractNewRecordState): unknown option, ignored " \
           "(did you mean 'add.fields'?)" in caplog.text
