"""Field-by-field comparison of two runs of one workload (Debezium's recorded, ours live).

Only what varies from run to run is normalised, and not blanked but renamed in order of first
appearance: the third distinct LSN of a run becomes ``<lsn3>`` in both runs. So two events that
carry the same LSN (or transaction id, binlog position, thread) in Debezium's output must carry
the same one in ours, and different ones where Debezium's differ; only the numbers themselves
are free. Timestamps, the connector version and the run id are blanked.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

TIME_FIELDS = ("ts_ms", "ts_us", "ts_ns")
TRANSACTION_KEY = "io.debezium.connector.common.TransactionMetadataKey"


class Canon:
    """Renames values per namespace in order of first appearance."""

    def __init__(self) -> None:
        self.names: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, namespace: str, value: Any) -> Any:
        if value is None:
            return None
        key = (namespace, str(value))
        if key not in self.names:
            self.counts[namespace] = self.counts.get(namespace, 0) + 1
            self.names[key] = f"<{namespace}{self.counts[namespace]}>"
        return self.names[key]


def normalize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    canon = Canon()
    return [_normalize_record(copy.deepcopy(r), canon) for r in records]


def _normalize_record(record: dict[str, Any], canon: Canon) -> dict[str, Any]:
    key = record.get("key")
    value = record.get("value")
    payload = value.get("payload") if isinstance(value, dict) else None
    # transaction events by their key's schema: topic.transaction / transaction.topic rename their topic
    transaction = _schema_name(key) == TRANSACTION_KEY or record.get("topic", "").endswith("transaction")
    if isinstance(payload, dict):
        for name in TIME_FIELDS:
            if payload.get(name) is not None:
                payload[name] = "<ts>"
        if isinstance(payload.get("source"), dict):
            _normalize_source(payload["source"], canon)
        if isinstance(payload.get("transaction"), dict):
            payload["transaction"]["id"] = canon("tx", payload["transaction"]["id"])
        if payload.get("status") in ("BEGIN", "END") and transaction:
            payload["id"] = canon("tx", payload["id"])
    if isinstance(key, dict) and isinstance(key.get("payload"), dict) and transaction:
        key["payload"]["id"] = canon("tx", key["payload"].get("id"))
    headers = record.get("headers") or None
    if headers:
        run = headers.get("__debezium.context.runId")
        if isinstance(run, dict):
            run["payload"] = "<run>"
    record["headers"] = headers
    return record


def _schema_name(part: Any) -> str | None:
    schema = part.get("schema") if isinstance(part, dict) else None
    return schema.get("name") if isinstance(schema, dict) else None


def _normalize_source(source: dict[str, Any], canon: Canon) -> None:
    for name in TIME_FIELDS:
        if source.get(name) is not None:
            source[name] = "<ts>"
    if "version" in source:
        source["version"] = "<version>"
    if source.get("connector") == "postgresql":
        source["txId"] = canon("xid", source.get("txId"))
        source["lsn"] = canon("lsn", source.get("lsn"))
        if source.get("xmin") is not None:
            source["xmin"] = canon("xid", source["xmin"])
        if source.get("sequence") is not None:
            parts = json.loads(source["sequence"])
            # [the last commit's LSN, this event's]: two namespaces, so that a commit that ends where
            # the next change starts (WAL layout, which varies from run to run) does not count
            source["sequence"] = json.dumps([canon("commit", parts[0]), canon("lsn", parts[1])])
    else:  # mysql, mariadb
        # a position means something in its file only: after a rotation the numbers start over
        source["pos"] = canon("pos", (source.get("file"), source.get("pos")))
        source["file"] = canon("file", source.get("file"))
        source["gtid"] = canon("gtid", source.get("gtid"))
        source["thread"] = canon("thread", source.get("thread"))


def differences(ours: Any, theirs: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, ours, theirs) for every leaf that differs; key order of objects counts too."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for name in theirs:
            if name not in ours:
                yield f"{path}.{name}", "<missing>", theirs[name]
            else:
                yield from differences(ours[name], theirs[name], f"{path}.{name}")
        for name in ours:
            if name not in theirs:
                yield f"{path}.{name}", ours[name], "<missing>"
        common = [n for n in ours if n in theirs]
        if common != [n for n in theirs if n in ours]:
            yield f"{path} (field order)", list(ours), list(theirs)
        return
    if isinstance(ours, list) and isinstance(theirs, list) and _fields(ours) and _fields(theirs):
        # a struct's fields: matched by name, so one missing field does not shift all the others
        by_name = {f["field"]: f for f in ours}
        names = [f["field"] for f in theirs]
        for field in theirs:
            if field["field"] not in by_name:
                yield f"{path}[{field['field']}]", "<missing>", field
            else:
                yield from differences(by_name[field["field"]], field, f"{path}[{field['field']}]")
        for field in ours:
            if field["field"] not in names:
                yield f"{path}[{field['field']}]", field, "<missing>"
        if [n for n in by_name if n in names] != [n for n in names if n in by_name]:
            yield f"{path} (field order)", list(by_name), names
        return
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            yield f"{path} (length)", len(ours), len(theirs)
        for index, (a, b) in enumerate(zip(ours, theirs, strict=False)):  # unequal lengths reported above
            yield from differences(a, b, f"{path}[{index}]")
        return
    if ours != theirs or type(ours) is not type(theirs):
        yield path, ours, theirs


def _fields(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(i, dict) and "field" in i for i in items)


def identical_count(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> int:
    return sum(1 for a, b in zip(ours, theirs, strict=False) if not list(differences(a, b)))


def report(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], limit: int = 25) -> str:
    """A readable account of where two normalised runs part."""
    lines = []
    if len(ours) != len(theirs):
        lines.append(f"{len(ours)} events from cdc, {len(theirs)} from Debezium")
        lines.append("  cdc:      " + " ".join(_label(r) for r in ours))
        lines.append("  Debezium: " + " ".join(_label(r) for r in theirs))
    shown = 0
    for index, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        for path, x, y in differences(a, b):
            if shown >= limit:
                lines.append("  ...")
                return "\n".join(lines)
            lines.append(f"  event {index} {_label(b)} {path}: cdc {_short(x)} != Debezium {_short(y)}")
            shown += 1
    return "\n".join(lines)


def _label(record: dict[str, Any]) -> str:
    value = record.get("value")
    payload = value.get("payload") if isinstance(value, dict) else None
    if payload is None:
        return f"{record.get('topic')}:tombstone"
    op = payload.get("op") or payload.get("status") or ("schema" if "ddl" in payload else "?")
    return f"{record.get('topic')}:{op}"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=False) if not isinstance(value, str) else repr(value)
    return text if len(text) < 300 else text[:300] + "..."
