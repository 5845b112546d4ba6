"""The shared rules of cdc.core.emitter: what one row change becomes, for every source."""
from __future__ import annotations

import json

from cdc.core import connect
from cdc.core.converters import JsonConverter
from cdc.core.emitter import ChangeEmitter
from cdc.core.envelope import NEW_KEY_HEADER, OLD_KEY_HEADER, TableEnvelope
from cdc.core.header_converters import JsonHeaderConverter
from cdc.core.records import ChangeEvent
from cdc.core.transactions import TransactionTracker
from cdc.sources.postgres.source_info import SOURCE_SCHEMA

ID = connect.field("id", {"type": "int32", "optional": False})
NAME = connect.field("name", {"type": "string", "optional": True})


def envelope(keyed: bool = True) -> TableEnvelope:
    return TableEnvelope(topic="dbz.public.t", table_id="public.t", schema_name_prefix="dbz.public.t",
                         key_fields=[ID] if keyed else [], value_fields=[ID, NAME], source_schema=SOURCE_SCHEMA)


def shape(events: list[ChangeEvent]) -> list[tuple[str | None, object, list[str]]]:
    return [(e.value["op"] if e.value else None, e.key, [h[0] for h in e.headers or ()]) for e in events]


def emitter(**kw: object) -> ChangeEmitter:
    args: dict = {"tombstones": True, "skipped": frozenset(), "tracker": None, **kw}
    return ChangeEmitter(**args)


def test_delete_is_followed_by_a_tombstone_also_without_a_key() -> None:
    out: list[ChangeEvent] = []
    emitter().delete(out, envelope(), {"id": 1, "name": "a"}, {"s": 1})
    emitter().delete(out, envelope(keyed=False), {"id": 2, "name": "b"}, {"s": 2})
    assert shape(out) == [("d", {"id": 1}, []), (None, {"id": 1}, []), ("d", None, []), (None, None, [])]
    assert JsonConverter(True).to_record(out[3]).key is None and out[3].value is None


def test_no_tombstone_when_tombstones_on_delete_is_off() -> None:
    out: list[ChangeEvent] = []
    emitter(tombstones=False).delete(out, envelope(), {"id": 1, "name": "a"}, {"s": 1})
    assert shape(out) == [("d", {"id": 1}, [])]


def test_key_change_puts_newkey_on_delete_and_tombstone_oldkey_on_create() -> None:
    out: list[ChangeEvent] = []
    emitter().update(out, envelope(), {"id": 1, "name": "a"}, {"id": 2, "name": "a"}, {"s": 1})
    assert shape(out) == [("d", {"id": 1}, [NEW_KEY_HEADER]), (None, {"id": 1}, [NEW_KEY_HEADER]),
                          ("c", {"id": 2}, [OLD_KEY_HEADER])]
    records = [JsonConverter(True).to_record(e) for e in out]  # headers as a Connect worker's default writes them
    assert records[1].headers == [(NEW_KEY_HEADER, b'{"id":2}')]
    assert records[2].headers == [(OLD_KEY_HEADER, b'{"id":1}')]
    json_headers = JsonConverter(True, headers=JsonHeaderConverter()).to_record(out[1]).headers
    assert json_headers is not None and json.loads(json_headers[0][1] or b"")["payload"] == {"id": 2}


def test_same_key_is_a_plain_update_and_a_keyless_table_never_changes_key() -> None:
    out: list[ChangeEvent] = []
    emitter().update(out, envelope(), {"id": 1, "name": "a"}, {"id": 1, "name": "b"}, {"s": 1})
    emitter().update(out, envelope(keyed=False), {"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"s": 1})
    assert shape(out) == [("u", {"id": 1}, []), ("u", None, [])]


def test_key_only_old_image_reveals_the_change_and_update_shows_no_before() -> None:
    out: list[ChangeEvent] = []
    emitter().update(out, envelope(), None, {"id": 1, "name": "b"}, {"s": 1}, key_row={"id": 1, "name": None})
    assert shape(out) == [("u", {"id": 1}, [])] and out[0].value["before"] is None
    emitter().update(out, envelope(), None, {"id": 2, "name": "b"}, {"s": 1}, key_row={"id": 1, "name": None})
    assert [s[0] for s in shape(out)[1:]] == ["d", None, "c"]


def test_skipped_operations_drop_their_events_and_a_key_change_with_updates() -> None:
    out: list[ChangeEvent] = []
    emit = emitter(skipped=frozenset({"c", "u", "d", "t"}))
    env = envelope()
    emit.create(out, env, {"id": 1, "name": "a"}, {})
    emit.update(out, env, {"id": 1, "name": "a"}, {"id": 2, "name": "a"}, {})
    emit.update(out, env, {"id": 2, "name": "a"}, {"id": 2, "name": "b"}, {})
    emit.delete(out, env, {"id": 2, "name": "b"}, {})
    emit.truncate(out, env, {})
    assert out == []
    emitter(skipped=frozenset({"d"})).update(out, env, {"id": 1, "name": "a"}, {"id": 2, "name": "a"}, {})
    assert [s[0] for s in shape(out)] == ["d", None, "c"]  # a key change is an update


def test_transaction_blocks_number_every_data_event_but_tombstones() -> None:
    out: list[ChangeEvent] = []
    emit = emitter(tracker=TransactionTracker("dbz.transaction"))
    env = envelope()
    emit.begin(out, "7:100", 1)
    emit.create(out, env, {"id": 1, "name": "a"}, {})
    emit.update(out, env, {"id": 1, "name": "a"}, {"id": 2, "name": "a"}, {})
    emit.end(out, 2)
    blocks = [e.value.get("transaction") if e.value and "op" in e.value else None for e in out]
    assert [b["total_order"] if b else None for b in blocks] == [None, 1, 2, None, 3, None]
    assert out[-1].value["status"] == "END" and out[-1].value["event_count"] == 3
    assert not emit.in_transaction
