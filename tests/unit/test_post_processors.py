"""post.processors: Debezium's ReselectColumnsPostProcessor over a source's TableLookup (the PostgreSQL and
MariaDB reads are checked against Debezium in tests/conformance/workloads/*_reselect.sql)."""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from cdc.core import post_processors as pp
from cdc.core.errors import ConfigError, SourceError
from cdc.core.records import ChangeEvent

PLACEHOLDER = "__debezium_unavailable_value"
TYPE = {"r.type": pp.RESELECT}


class Source:
    def __init__(self, rows: dict[int, dict[str, Any]]) -> None:
        self.rows = rows
        self.reads: list[tuple[dict[str, Any], list[str]]] = []

    def reselect_lookup(self, table_id: str) -> pp.TableLookup | None:
        def read(key: Mapping[str, Any], wanted: Sequence[str]) -> Mapping[str, Any] | None:
            self.reads.append((dict(key), list(wanted)))
            row = self.rows.get(key["id"])
            return None if row is None else {c: row[c] for c in wanted}

        return pp.TableLookup(fields={"id": "id", "body": "body", "note": "note"}, unavailable={"body": PLACEHOLDER},
                              key_columns=["id"], read=read)


def event(op: str, after: dict[str, Any]) -> ChangeEvent:
    return ChangeEvent("t", None, {"id": after["id"]}, None, {"op": op, "after": after}, table_id="public.docs")


def test_placeholders_and_nulls_are_read_again_by_key() -> None:
    source = Source({1: {"id": 1, "body": "the body", "note": "a note"}})
    [reselect] = pp.from_config({"post.processors": "r", **TYPE}, source)
    events = reselect([event("u", {"id": 1, "body": PLACEHOLDER, "note": None}),
                       event("d", {"id": 1, "body": PLACEHOLDER, "note": None}),
                       event("c", {"id": 1, "body": "x", "note": "y"})])
    assert events[0].value["after"] == {"id": 1, "body": "the body", "note": "a note"}  # type: ignore[index]
    assert events[1].value["after"]["body"] == PLACEHOLDER  # type: ignore[index]  # a delete is left alone
    assert source.reads == [({"id": 1}, ["body", "note"])]  # nothing to read again in the last one


def test_the_lists_and_switches_choose_the_columns() -> None:
    source = Source({1: {"id": 1, "body": "b", "note": "n"}})
    only_body = {"r.reselect.columns.include.list": r"public\.docs:body", "r.reselect.unavailable.values": "true"}
    [reselect] = pp.from_config({"post.processors": "r", **TYPE, **only_body}, source)
    after = reselect([event("u", {"id": 1, "body": PLACEHOLDER, "note": None})])[0].value["after"]  # type: ignore[index]
    assert after == {"id": 1, "body": "b", "note": None}
    [reselect] = pp.from_config({"post.processors": "r", **TYPE, "r.reselect.null.values": "false"}, source)
    after = reselect([event("u", {"id": 1, "body": PLACEHOLDER, "note": None})])[0].value["after"]  # type: ignore[index]
    assert after == {"id": 1, "body": "b", "note": None}


def test_a_row_gone_warns_or_fails(caplog: pytest.LogCaptureFixture) -> None:
    gone = [event("u", {"id": 7, "body": PLACEHOLDER, "note": "n"})]
    [warn] = pp.from_config({"post.processors": "r", **TYPE}, Source({}))
    with caplog.at_level(logging.WARNING):
        assert warn(gone)[0].value["after"]["body"] == PLACEHOLDER  # type: ignore[index]
    assert "no row of public.docs has key {'id': 7} any more" in caplog.text
    [fail] = pp.from_config({"post.processors": "r", **TYPE, "r.reselect.error.handling.mode": "fail"}, Source({}))
    with pytest.raises(SourceError, match="no row of public.docs has key"):
        fail(gone)


def test_a_post_processor_cdc_has_not_is_refused() -> None:
    with pytest.raises(ConfigError, match="cdc has Debezium's io.debezium.processors.reselect"):
        pp.from_config({"post.processors": "x", "x.type": "com.acme.Enricher"}, Source({}))
    with pytest.raises(ConfigError, match="cannot read its tables again by key"):
        pp.from_config({"post.processors": "r", **TYPE}, object())
