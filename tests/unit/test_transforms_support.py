"""Helpers for the transform tests (no tests here): Debezium's recorded events as ChangeEvents,
and ChangeEvents back in the shape Kafka Connect's JsonConverter prints."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cdc.core.connect import ConnectSchema
from cdc.core.records import ChangeEvent

FIXTURES = Path(__file__).resolve().parents[1] / "conformance" / "fixtures"
CONTEXT_HEADER = "__debezium.context."


def fixture_records(name: str) -> list[dict[str, Any]]:
    """The records of ``tests/conformance/fixtures/<name>.jsonl`` without the context headers
    (cdc's converter adds those after the transforms)."""
    records = []
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        record = json.loads(line)
        headers = {k: v for k, v in (record.get("headers") or {}).items() if not k.startswith(CONTEXT_HEADER)}
        record["headers"] = headers or None
        records.append(record)
    return records


def _schema(part: dict[str, Any] | None) -> ConnectSchema | None:
    return None if part is None or part.get("schema") is None else ConnectSchema(part["schema"])


def from_json(record: dict[str, Any]) -> ChangeEvent:
    key, value = record["key"], record["value"]
    headers = [(name, _schema(h), h["payload"]) for name, h in (record.get("headers") or {}).items()]
    return ChangeEvent(record["topic"], _schema(key), None if key is None else key["payload"], _schema(value),
                       None if value is None else value["payload"], headers or None)


def _part(schema: ConnectSchema | None, payload: Any) -> dict[str, Any] | None:
    # JsonConverter writes null only when both are null (a null value with a schema is an envelope).
    if schema is None and payload is None:
        return None
    return {"schema": None if schema is None else schema.definition, "payload": payload}


def to_json(event: ChangeEvent) -> dict[str, Any]:
    return {
        "topic": event.topic,
        "key": _part(event.key_schema, event.key),
        "value": _part(event.value_schema, event.value),
        "headers": [[name, {"schema": None if s is None else s.definition, "payload": p}]
                    for name, s, p in event.headers or []],
    }


def events(name: str) -> list[ChangeEvent]:
    return [from_json(r) for r in fixture_records(name)]
