"""The outbox EventRouter's expectations pinned (the Java oracle, test_transforms_oracle.py, checks
the same cases record for record where Java is present)."""
from __future__ import annotations

import logging

import pytest

from cdc.transforms import TransformChain
from tests.unit.test_transforms_oracle import _outbox, _router
from tests.unit.test_transforms_support import fixture_records, from_json, to_json


def _run(**options: str) -> list[dict | None]:
    chain = TransformChain.from_properties(_router(**options))
    records = _outbox(fixture_records("pg_keys"))
    if options.get("table.expand.json.payload") == "true":
        records = records[:7]  # an array payload fails the record when expanded, as in Debezium
    out = [chain.apply(from_json(r)) for r in records]
    return [None if e is None else to_json(e) for e in out]


def test_inserts_become_events_and_everything_else_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        out = _run()
    # create, read, update, delete, tombstone, empty payload, null payload, array payload, not JSON
    assert [r is None for r in out] == [False, False, True, True, True, False, False, False, False]
    first = out[0]
    assert first is not None
    assert (first["topic"], first["key"]["payload"], first["key"]["schema"]) == \
        ("outbox.event.order", "o-1", {"type": "string", "optional": False})
    assert first["value"]["schema"]["name"] == "io.debezium.data.Json"
    assert first["value"]["payload"].startswith('{"id": 1')
    assert first["headers"] == [["id", {"schema": {"type": "string", "optional": False,
                                                   "name": "io.debezium.data.Uuid", "version": 1},
                                        "payload": "00000000-0000-0000-0000-000000000001"}]]
    assert out[1] is not None and out[1]["topic"] == "outbox.event.customer"
    assert "Unexpected update message received" in caplog.text


def test_additional_fields_in_the_envelope_and_headers() -> None:
    out = _run(**{"table.fields.additional.placement": "type:header:eventType,aggregatetype:envelope:agg"})
    first = out[0]
    assert first is not None
    assert first["value"]["schema"]["name"] == "dbz.public.outbox.order.Value"
    assert [f["field"] for f in first["value"]["schema"]["fields"]] == ["payload", "agg"]
    assert first["value"]["payload"]["agg"] == "order"
    assert [h[0] for h in first["headers"]] == ["id", "eventType"]


def test_expanded_json_payload_has_an_inferred_schema() -> None:
    out = _run(**{"table.expand.json.payload": "true"})
    first = out[0]
    assert first is not None
    fields = {f["field"]: f for f in first["value"]["schema"]["fields"]}
    assert (fields["id"]["type"], fields["big"]["type"], fields["total"]["type"]) == ("int32", "int64", "double")
    assert "nothing" not in fields and "empty" not in fields  # nulls and empty arrays have no schema
    assert first["value"]["payload"]["lines"][0] == {"sku": "a", "qty": 2, "note": None}


def test_empty_payload_as_tombstone_and_fatal_updates() -> None:
    out = _run(**{"route.tombstone.on.empty.payload": "true"})
    assert out[5] is not None and out[5]["value"] is None and out[5]["key"]["payload"] == "o-2"
    chain = TransformChain.from_properties(_router(**{"table.op.invalid.behavior": "fatal"}))
    update = _outbox(fixture_records("pg_keys"))[2]
    with pytest.raises(ValueError, match="Unexpected update"):
        chain.apply(from_json(update))
