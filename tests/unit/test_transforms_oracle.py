"""cdc's transforms against Debezium's and Kafka Connect's own, record for record.

Each case runs the same properties through ``TransformChain`` and through the Java SMTs (Debezium
3.6.1's debezium-connect-plugins and Kafka Connect 4.3's connect-transforms, the jars that
``tests/conformance/debezium/fetch.sh`` puts in ``~/.cache/cdc/debezium-postgres/lib``), on events
Debezium itself recorded (``tests/conformance/fixtures``), and compares topic, key, value and
headers as Kafka Connect's JsonConverter prints them. Skipped without Java or those jars; the
pinned expectations in test_transforms.py run everywhere.
"""
from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cdc.transforms import TransformChain
from tests.debezium_jars import debezium_lib
from tests.unit.test_transforms_support import fixture_records, from_json, to_json

JARS = Path(os.environ.get("CDC_DEBEZIUM_LIB", Path.home() / ".cache/cdc/debezium-postgres/lib"))

UNWRAP = "io.debezium.transforms.ExtractNewRecordState"
ROUTER = "io.debezium.transforms.ByLogicalTableRouter"
K = "org.apache.kafka.connect.transforms"
P = f"{K}.predicates"
PK = "pg_keys@dbz\\.public\\.pk(_full)?"  # the tables with an id and a v column


def _records(spec: str) -> list[dict[str, Any]]:
    """``fixture`` or ``fixture@topic-regex`` (only those topics). Records holding NaN or
    infinities are left out: the oracle's JsonConverter reads Debezium's "NaN" text back as 0.0."""
    name, _, topics = spec.partition("@")
    records = [r for r in fixture_records(name) if not re.search(r'"(NaN|-?Infinity)"', json.dumps(r["value"]))]
    return [r for r in records if not topics or re.fullmatch(topics, r["topic"])]


def _unwrap(**options: str) -> dict[str, str]:
    props = {"transforms": "u", "transforms.u.type": UNWRAP}
    props.update({f"transforms.u.{k.replace('_', '.')}": v for k, v in options.items()})
    return props


def _drop_header(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every record gets a ``drop`` header listing ``v`` (for drop.fields.header.name)."""
    out = copy.deepcopy(records)
    for r in out:
        r["headers"] = {**(r.get("headers") or {}), "drop": {
            "schema": {"type": "array", "items": {"type": "string", "optional": False}, "optional": False},
            "payload": ["v"]}}
    return out


CASES: dict[str, tuple[dict[str, str], str]] = {
    # ExtractNewRecordState
    "unwrap-default": (_unwrap(), "pg_keys"),
    "unwrap-drop": (_unwrap(**{"delete_tombstone_handling_mode": "drop"}), "pg_keys"),
    "unwrap-rewrite": (_unwrap(**{"delete_tombstone_handling_mode": "rewrite"}), "pg_keys"),
    "unwrap-rewrite-with-tombstone": (_unwrap(**{"delete_tombstone_handling_mode": "rewrite-with-tombstone"}),
                                      "mariadb_keys"),
    "unwrap-delete-to-tombstone": (_unwrap(**{"delete_tombstone_handling_mode": "delete-to-tombstone"}), "pg_keys"),
    "unwrap-add-fields": (_unwrap(add_fields="op,table,lsn,source.ts_ms,ts_ms,snapshot,db,txId"), "pg_keys"),
    "unwrap-add-fields-rewrite": (_unwrap(add_fields="op,table,source.ts_ms",
                                          delete_tombstone_handling_mode="rewrite"), "pg_toast"),
    "unwrap-add-fields-renamed": ({**_unwrap(add_fields="op:operation,source.ts_ms:event_ts,table"),
                                   "transforms.u.add.fields.prefix": "meta_"}, "pg_types"),
    "unwrap-add-fields-transaction": (_unwrap(add_fields="id,total_order,data_collection_order,transaction.id",
                                              add_headers="op,id"), "pg_transactions"),
    "unwrap-add-headers": ({**_unwrap(add_headers="op,source.ts_ms,table:tbl,missing"),
                            "transforms.u.add.headers.prefix": "h_"}, "pg_keys"),
    "unwrap-add-headers-tombstones": (
        _unwrap(add_headers="op,db", delete_tombstone_handling_mode="rewrite-with-tombstone"), "mariadb_keys"),
    "unwrap-route-by-int-field": (_unwrap(route_by_field="id"), PK),
    "unwrap-truncate-messages": (_unwrap(add_fields="op"), "pg_truncate_messages"),
    "unwrap-schema-changes": (_unwrap(delete_tombstone_handling_mode="rewrite"), "mariadb_schema_evolution"),
    "unwrap-defaults": (_unwrap(delete_tombstone_handling_mode="rewrite"), "pg_numeric_edges"),
    "unwrap-defaults-kept-null": ({**_unwrap(delete_tombstone_handling_mode="rewrite"),
                                   "transforms.u.replace.null.with.default": "false"}, "pg_numeric_edges"),
    "unwrap-route-by-field": (_unwrap(route_by_field="v", delete_tombstone_handling_mode="rewrite"), PK),
    "unwrap-types": (_unwrap(add_fields="op,source.ts_ms"), "pg_types"),
    "unwrap-temporal": (_unwrap(), "mariadb_temporal"),
    # ByLogicalTableRouter / ToLogicalTopicRouter
    "router-default": ({"transforms": "r", "transforms.r.type": ROUTER,
                        "transforms.r.topic.regex": "dbz\\.public\\.(.*)",
                        "transforms.r.topic.replacement": "dbz.all"}, "pg_keys"),
    "router-group": ({"transforms": "r", "transforms.r.type": ROUTER,
                      "transforms.r.topic.regex": "(.*)\\.(pk|pk_full)",
                      "transforms.r.topic.replacement": "$1.pk-all",
                      "transforms.r.key.field.name": "shard",
                      "transforms.r.key.field.regex": "dbz\\.public\\.(.*)",
                      "transforms.r.key.field.replacement": "t_$1"}, "pg_keys"),
    "router-no-uniqueness-avro": ({"transforms": "r", "transforms.r.type": ROUTER,
                                   "transforms.r.topic.regex": "(.*)",
                                   "transforms.r.topic.replacement": "9-$1",
                                   "transforms.r.key.enforce.uniqueness": "false",
                                   "transforms.r.schema.name.adjustment.mode": "avro"}, "mariadb_keys"),
    "router-all-kinds": ({"transforms": "r", "transforms.r.type": ROUTER, "transforms.r.topic.regex": "(.*)",
                          "transforms.r.topic.replacement": "merged"}, "mariadb_transactions"),
    "router-then-unwrap": ({"transforms": "r,u", "transforms.r.type": ROUTER,
                            "transforms.r.topic.regex": "dbz\\.public\\.(.*)",
                            "transforms.r.topic.replacement": "all",
                            "transforms.u.type": UNWRAP,
                            "transforms.u.delete.tombstone.handling.mode": "rewrite"}, "pg_keys"),
    # Kafka Connect: routing, filters, predicates
    "regex-router": ({"transforms": "r", "transforms.r.type": f"{K}.RegexRouter",
                      "transforms.r.regex": "([^.]+)\\.([^.]+)\\.([^.]+)",
                      "transforms.r.replacement": "$3-from-$1"}, "pg_keys"),
    "filter-tombstones": ({"transforms": "f", "transforms.f.type": f"{K}.Filter",
                           "transforms.f.predicate": "t", "predicates": "t",
                           "predicates.t.type": f"{P}.RecordIsTombstone"}, "pg_keys"),
    "filter-keep-topic": ({"transforms": "f", "transforms.f.type": f"{K}.Filter",
                           "transforms.f.predicate": "t", "transforms.f.negate": "true", "predicates": "t",
                           "predicates.t.type": f"{P}.TopicNameMatches",
                           "predicates.t.pattern": ".*\\.composite"}, "pg_keys"),
    "unwrap-only-with-header": ({"transforms": "u", "transforms.u.type": UNWRAP,
                                 "transforms.u.predicate": "h", "predicates": "h",
                                 "predicates.h.type": f"{P}.HasHeaderKey",
                                 "predicates.h.name": "__debezium.newkey"}, "pg_keys"),
}

# Cases whose input records need changing first.
OUTBOX = "io.debezium.transforms.outbox.EventRouter"
_UUID = {"type": "string", "optional": False, "name": "io.debezium.data.Uuid", "version": 1}
_OUTBOX_ROW = {"type": "struct", "fields": [
    {**_UUID, "field": "id"}, {"type": "string", "optional": False, "field": "aggregatetype"},
    {"type": "string", "optional": False, "field": "aggregateid"},
    {"type": "string", "optional": False, "field": "type"},
    {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1, "field": "payload"},
    {"type": "int64", "optional": False, "name": "io.debezium.time.MicroTimestamp", "version": 1, "field": "created"},
], "optional": True, "name": "dbz.public.outbox.Value"}
_PAYLOAD = json.dumps({"id": 1, "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1, "note": "x"}],
                       "total": 12.5, "big": 5000000000, "nothing": None, "tags": ["x", "y"], "empty": [],
                       "customer": {"name": "Ann", "vip": True}})


def _outbox(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Debezium-shaped change events of an outbox table, built on a recorded event's envelope (its
    source block and field layout): inserts (one from the snapshot), an update, a delete and its
    tombstone, an empty and a null payload."""
    template = next(r for r in records if r["value"] and r["value"]["payload"].get("op") == "c")
    envelope = copy.deepcopy(template["value"]["schema"])
    envelope["name"] = "dbz.public.outbox.Envelope"
    for f in envelope["fields"]:
        if f["field"] in ("before", "after"):
            f.clear()
            f.update({**_OUTBOX_ROW, "field": f.get("field") or ("before" if not f else "after")})
    envelope["fields"][0]["field"], envelope["fields"][1]["field"] = "before", "after"
    key_schema = {"type": "struct", "fields": [{**_UUID, "field": "id"}], "optional": False,
                  "name": "dbz.public.outbox.Key"}
    base = template["value"]["payload"]

    def event(n: int, op: str, kind: str, agg: str, payload: str | None, before: bool = False) -> dict[str, Any]:
        row = {"id": f"00000000-0000-0000-0000-00000000000{n}", "aggregatetype": kind, "aggregateid": agg,
               "type": f"{kind}Created", "payload": payload, "created": 1700000000123456 + n}
        value = {**base, "op": op, "before": row if before else None, "after": None if op == "d" else row,
                 "source": {**base["source"], "table": "outbox"}}
        return {"topic": "dbz.public.outbox", "key": {"schema": key_schema, "payload": {"id": row["id"]}},
                "value": {"schema": envelope, "payload": value}, "headers": None}

    out = [event(1, "c", "order", "o-1", _PAYLOAD), event(2, "r", "customer", "c-7", '{"name": "Bo"}'),
           event(3, "u", "order", "o-1", '{"id": 1}', before=True), event(4, "d", "order", "o-1", None, before=True)]
    tombstone = copy.deepcopy(out[-1])
    tombstone["value"] = None
    out += [tombstone, event(5, "c", "order", "o-2", ""), event(6, "c", "order", "o-3", None),
            event(7, "c", "order", "o-4", '[{"a": 1}, {"a": 2, "b": "x"}]'), event(8, "c", "order", "o-5", "not json")]
    return out


def _router(**options: str) -> dict[str, str]:
    props = {"transforms": "o", "transforms.o.type": OUTBOX}
    props.update({f"transforms.o.{k}": v for k, v in options.items()})
    return props


INPUTS = {
    "outbox-defaults": (_router(), "pg_keys", _outbox),
    "outbox-route": (_router(**{"route.by.field": "type", "route.topic.replacement": "events.${routedByValue}",
                                "table.field.event.key": "type"}), "pg_keys", _outbox),
    "outbox-additional": (_router(**{"table.fields.additional.placement":
                                     "type:header:eventType,aggregatetype:envelope:agg,created:envelope"}),
                          "pg_keys", _outbox),
    "outbox-additional-headers-only": (_router(**{"table.fields.additional.placement": "type:header"}),
                                       "pg_keys", _outbox),
    "outbox-expand-json": (_router(**{"table.expand.json.payload": "true"}), "pg_keys", _outbox),
    "outbox-expand-json-envelope": (_router(**{"table.expand.json.payload": "true",
                                               "table.fields.additional.placement": "type:envelope:eventType"}),
                                    "pg_keys", _outbox),
    "outbox-tombstone-on-empty": (_router(**{"route.tombstone.on.empty.payload": "true"}), "pg_keys", _outbox),
    "outbox-update-fatal": (_router(**{"table.op.invalid.behavior": "fatal"}), "pg_keys", _outbox),
    "unwrap-drop-fields": ({**_unwrap(drop_fields_header_name="drop", delete_tombstone_handling_mode="rewrite")},
                           "pg_keys", _drop_header),
    "unwrap-drop-fields-strict": ({**_unwrap(drop_fields_header_name="drop"),
                                   "transforms.u.drop.fields.keep.schema.compatible": "false"},
                                  "pg_keys", _drop_header),
}


def _kafka_cases() -> dict[str, tuple[dict[str, str], str]]:
    unwrap = {"transforms.u.type": UNWRAP, "transforms.u.delete.tombstone.handling.mode": "rewrite"}

    def after_unwrap(alias: str, cls: str, **options: str) -> dict[str, str]:
        props = {"transforms": f"u,{alias}", **unwrap, f"transforms.{alias}.type": cls}
        props.update({f"transforms.{alias}.{k}": v for k, v in options.items()})
        return props

    return {
        "replace-field": (after_unwrap("x", f"{K}.ReplaceField$Value", exclude="v", renames="id:ident,__deleted:gone"),
                          PK),
        "replace-field-include": (after_unwrap("x", f"{K}.ReplaceField$Value", include="id,b"), PK),
        "replace-field-key": (after_unwrap("x", f"{K}.ReplaceField$Key", renames="id:key_id"), PK),
        "insert-field": (after_unwrap("x", f"{K}.InsertField$Value", **{
            "topic.field": "topic!", "static.field": "origin", "static.value": "cdc",
            "partition.field": "part", "timestamp.field": "ts"}), PK),
        "insert-field-key": (after_unwrap("x", f"{K}.InsertField$Key", **{"topic.field": "t"}), PK),
        "value-to-key": (after_unwrap("x", f"{K}.ValueToKey", fields="v,id"), PK),
        "extract-field-key": (after_unwrap("x", f"{K}.ExtractField$Key", field="id"), PK),
        "extract-field-value": (after_unwrap("x", f"{K}.ExtractField$Value", field="v"), PK),
        "mask-field": (after_unwrap("x", f"{K}.MaskField$Value", fields="v,id"), PK),
        "mask-field-replacement": (after_unwrap("x", f"{K}.MaskField$Value", fields="v,id", replacement="42"),
                                   PK),
        "header-from-copy": (after_unwrap("x", f"{K}.HeaderFrom$Value", fields="id,v", headers="hid,hv",
                                          operation="copy"), PK),
        "header-from-move": (after_unwrap("x", f"{K}.HeaderFrom$Value", fields="v", headers="hv", operation="move"),
                             PK),
        "header-from-key": (after_unwrap("x", f"{K}.HeaderFrom$Key", fields="id", headers="k", operation="move"),
                            PK),
        "timestamp-to-string": (after_unwrap("x", f"{K}.TimestampConverter$Value", field="__source_ts_ms",
                                             **{"target.type": "string", "format": "yyyy-MM-dd'T'HH:mm:ss.SSSX"})
                                | {"transforms.u.add.fields": "source.ts_ms"}, PK),
        "timestamp-to-timestamp": (after_unwrap("x", f"{K}.TimestampConverter$Value", field="__ts_us",
                                                **{"target.type": "Timestamp", "unix.precision": "microseconds"})
                                   | {"transforms.u.add.fields": "ts_us"}, PK),
        "timestamp-to-date": (after_unwrap("x", f"{K}.TimestampConverter$Value", field="__ts_ms",
                                           **{"target.type": "Date"}) | {"transforms.u.add.fields": "ts_ms"},
                              PK),
        "timestamp-to-unix-seconds": (after_unwrap("x", f"{K}.TimestampConverter$Value", field="__ts_ms",
                                                   **{"target.type": "unix", "unix.precision": "seconds"})
                                      | {"transforms.u.add.fields": "ts_ms"}, PK),
        "timestamp-string-roundtrip": ({
            "transforms": "u,a,b", **unwrap, "transforms.u.add.fields": "ts_ms",
            "transforms.a.type": f"{K}.TimestampConverter$Value", "transforms.a.field": "__ts_ms",
            "transforms.a.target.type": "string", "transforms.a.format": "yyyy-MM-dd HH:mm:ss.SSS",
            "transforms.b.type": f"{K}.TimestampConverter$Value", "transforms.b.field": "__ts_ms",
            "transforms.b.target.type": "Timestamp", "transforms.b.format": "yyyy-MM-dd HH:mm:ss.SSS"}, PK),
        "timestamp-to-time": (after_unwrap("x", f"{K}.TimestampConverter$Value", field="__ts_ms",
                                           **{"target.type": "Time"}) | {"transforms.u.add.fields": "ts_ms"}, PK),
        "timestamp-unknown-type": (after_unwrap("x", f"{K}.TimestampConverter$Value", field="d",
                                                **{"target.type": "unix"}), "mariadb_temporal"),
        "timestamp-micros": (after_unwrap("x", f"{K}.TimestampConverter$Value", field="dt6",
                                          **{"target.type": "Timestamp", "unix.precision": "microseconds"}),
                             "mariadb_temporal"),
        "mask-types": (after_unwrap("x", f"{K}.MaskField$Value", fields="c_int,c_ubigint,c_varchar,c_double,c_bool,"
                                    "c_float,c_decimal,c_date"), "mariadb_types"),
        "mask-blob": (after_unwrap("x", f"{K}.MaskField$Value", fields="c_blob"), "mariadb_types"),
        "mask-types-replacement": (after_unwrap("x", f"{K}.MaskField$Value", fields="c_int,c_varchar,c_double",
                                                replacement="7"), "mariadb_types"),
        "replace-types": (after_unwrap("x", f"{K}.ReplaceField$Value", exclude="c_int", renames="c_varchar:s"),
                          "mariadb_types"),
        "insert-static-required": (after_unwrap("x", f"{K}.InsertField$Value", **{"static.field": "s!",
                                                                                    "static.value": "v"}), PK),
    }


CASES.update(_kafka_cases())

ORACLE_SOURCE = r"""// Oracle for cdc/transforms tests: applies Debezium's / Kafka Connect's own SMTs to records.
// stdin: one JSON object per line {"props": {...}, "records": [{topic,key,value,headers,timestamp}]}
// stdout: one JSON line per input line: {"out": [record | null | {"error": ...}...]} or {"error": "..."}
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.*;

public class SmtOracle {
    static final ObjectMapper JSON = new ObjectMapper();

    static Map<String, String> sub(Map<String, String> props, String prefix) {
        Map<String, String> out = new HashMap<>();
        for (var e : props.entrySet()) if (e.getKey().startsWith(prefix)) out.put(e.getKey().substring(prefix.length()), e.getValue());
        return out;
    }

    static JsonNode parse(byte[] b) throws Exception { return b == null ? null : JSON.readTree(b); }

    public static void main(String[] args) throws Exception {
        JsonConverter keys = new JsonConverter(); keys.configure(Map.of("schemas.enable", "true"), true);
        JsonConverter values = new JsonConverter(); values.configure(Map.of("schemas.enable", "true", "replace.null.with.default", "false"), false);
        JsonConverter hconv = new JsonConverter(); hconv.configure(Map.of("schemas.enable", "true", "converter.type", "header"));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode result = JSON.createObjectNode();
            try {
                JsonNode req = JSON.readTree(line);
                Map<String, String> props = new LinkedHashMap<>();
                req.get("props").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
                Map<String, Predicate<SourceRecord>> preds = new HashMap<>();
                for (String p : props.getOrDefault("predicates", "").split(",")) {
                    if (p.isBlank()) continue;
                    p = p.trim();
                    Map<String, String> c = sub(props, "predicates." + p + ".");
                    @SuppressWarnings("unchecked") Predicate<SourceRecord> pr = (Predicate<SourceRecord>) Class.forName(c.remove("type")).getDeclaredConstructor().newInstance();
                    pr.configure(c);
                    preds.put(p, pr);
                }
                List<Object[]> chain = new ArrayList<>();
                for (String t : props.getOrDefault("transforms", "").split(",")) {
                    if (t.isBlank()) continue;
                    t = t.trim();
                    Map<String, String> c = sub(props, "transforms." + t + ".");
                    String pred = c.remove("predicate");
                    boolean negate = Boolean.parseBoolean(c.remove("negate"));
                    @SuppressWarnings("unchecked") Transformation<SourceRecord> tr = (Transformation<SourceRecord>) Class.forName(c.remove("type")).getDeclaredConstructor().newInstance();
                    tr.configure(c);
                    chain.add(new Object[]{tr, pred == null ? null : preds.get(pred), negate});
                }
                ArrayNode out = JSON.createArrayNode();
                for (JsonNode r : req.get("records")) {
                  try {
                    String topic = r.get("topic").asText();
                    SchemaAndValue k = keys.toConnectData(topic, r.get("key").isNull() ? null : JSON.writeValueAsBytes(r.get("key")));
                    SchemaAndValue v = values.toConnectData(topic, r.get("value").isNull() ? null : JSON.writeValueAsBytes(r.get("value")));
                    ConnectHeaders hs = new ConnectHeaders();
                    JsonNode hn = r.get("headers");
                    if (hn != null && !hn.isNull()) {
                        var it = hn.fields();
                        while (it.hasNext()) {
                            var e = it.next();
                            SchemaAndValue h = hconv.toConnectHeader(topic, e.getKey(), JSON.writeValueAsBytes(e.getValue()));
                            hs.add(e.getKey(), h.value(), h.schema());
                        }
                    }
                    Long ts = r.has("timestamp") && !r.get("timestamp").isNull() ? r.get("timestamp").asLong() : null;
                    Integer part = r.has("partition") && !r.get("partition").isNull() ? r.get("partition").asInt() : null;
                    SourceRecord rec = new SourceRecord(Map.of(), Map.of(), topic, part, k.schema(), k.value(), v.schema(), v.value(), ts, hs);
                    for (Object[] st : chain) {
                        if (rec == null) break;
                        @SuppressWarnings("unchecked") Predicate<SourceRecord> pr = (Predicate<SourceRecord>) st[1];
                        boolean run = pr == null || (pr.test(rec) != (Boolean) st[2]);
                        @SuppressWarnings("unchecked") Transformation<SourceRecord> tr = (Transformation<SourceRecord>) st[0];
                        if (run) rec = tr.apply(rec);
                    }
                    if (rec == null) { out.addNull(); continue; }
                    ObjectNode o = JSON.createObjectNode();
                    o.put("topic", rec.topic());
                    if (rec.kafkaPartition() != null) o.put("partition", rec.kafkaPartition());
                    if (rec.timestamp() != null) o.put("timestamp", rec.timestamp());
                    o.set("key", parse(keys.fromConnectData(rec.topic(), rec.keySchema(), rec.key())));
                    o.set("value", parse(values.fromConnectData(rec.topic(), rec.valueSchema(), rec.value())));
                    ArrayNode ho = JSON.createArrayNode();
                    for (Header h : rec.headers()) {
                        ArrayNode pair = JSON.createArrayNode();
                        pair.add(h.key());
                        pair.add(parse(hconv.fromConnectHeader(rec.topic(), h.key(), h.schema(), h.value())));
                        ho.add(pair);
                    }
                    o.set("headers", ho);
                    out.add(o);
                  } catch (RuntimeException e) {
                    ObjectNode err = JSON.createObjectNode();
                    err.put("error", e.getClass().getName() + ": " + e.getMessage());
                    out.add(err);
                  }
                }
                result.set("out", out);
            } catch (Throwable e) {
                result.put("error", e.getClass().getName() + ": " + e.getMessage());
            }
            System.out.println(JSON.writeValueAsString(result));
            System.out.flush();
        }
    }
}
"""  # noqa: E501


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if "CDC_DEBEZIUM_LIB" not in os.environ and not any(JARS.glob("debezium-connect-plugins-*.jar")):
        debezium_lib("postgres")  # fetched from Maven Central (Java and Maven needed)
    if not (shutil.which("javac") and shutil.which("java") and any(JARS.glob("debezium-connect-plugins-*.jar"))):
        pytest.skip(f"needs Java and Debezium's jars in {JARS} (tests/conformance/debezium/fetch.sh)")
    work = tmp_path_factory.mktemp("smt-oracle")
    (work / "SmtOracle.java").write_text(ORACLE_SOURCE)
    classpath = f"{JARS}/*"
    subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", str(work), str(work / "SmtOracle.java")],
                   check=True, capture_output=True)
    requests = []
    for name, (props, fixture) in CASES.items():
        requests.append((name, props, _records(fixture)))
    for name, (props, fixture, change) in INPUTS.items():
        requests.append((name, props, change(_records(fixture))))
    stdin = "".join(json.dumps({"props": props, "records": records}) + "\n" for _, props, records in requests)
    run = subprocess.run(["java", "-cp", f"{classpath}:{work}", "SmtOracle"], input=stdin, capture_output=True,
                         text=True, check=True)
    results = [json.loads(line) for line in run.stdout.splitlines()]
    return {name: (records, result) for (name, _, records), result in zip(requests, results, strict=True)}


@pytest.mark.parametrize("case", [*CASES, *INPUTS])
def test_same_as_debezium(oracle: dict[str, Any], case: str) -> None:
    props = CASES[case][0] if case in CASES else INPUTS[case][0]
    records, result = oracle[case]
    assert "error" not in result, result.get("error")
    chain = TransformChain.from_properties(props)
    for i, (record, theirs) in enumerate(zip(records, result["out"], strict=True)):
        if theirs is not None and "error" in theirs:
            # Kafka Connect fails the record; so must cdc (the task stops either way).
            with pytest.raises(ValueError):
                chain.apply(from_json(record))
            continue
        out = chain.apply(from_json(record))
        mine = None if out is None else to_json(out)
        expected = None if theirs is None else {k: theirs[k] for k in ("topic", "key", "value", "headers")}
        assert mine == expected, f"record {i} of {case}"
