"""Rows that lack values the source did not send (cdc.core.unavailable): PostgreSQL's rows name their
unchanged TOASTed columns, the column options keep the names right, the reselector unmarks what it read
again, and format("cdc")'s Arrow rows carry the names (``_unavailable``) and the events' headers."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pytest

from cdc.core import post_processors as pp
from cdc.core.columns import ColumnStage
from cdc.core.emitter import ChangeEmitter
from cdc.core.topics import TopicNaming
from cdc.core.unavailable import PartialRow, unavailable_fields
from cdc.sources.postgres.catalog import CatalogColumn, CatalogTable
from cdc.sources.postgres.pgoutput import UNCHANGED_TOAST
from cdc.sources.postgres.tables import TableState
from cdc.sources.postgres.types import TypeModes, TypeRegistry

P = "__debezium_unavailable_value"


def Emitter() -> ChangeEmitter:  # noqa: N802 - reads as the class it makes
    return ChangeEmitter(tombstones=True, skipped=frozenset(), tracker=None)


def _no_server() -> None:
    raise AssertionError("built-in types only")


def state(properties: Mapping[str, Any] | None = None, field_names: str = "none") -> TableState:
    columns = (CatalogColumn("id", 1, 23, -1, True, None, "int4", 0),
               CatalogColumn("my-body", 2, 25, -1, False, None, "text", 0),
               CatalogColumn("blob", 3, 17, -1, False, None, "bytea", 0),
               CatalogColumn("n", 4, 23, -1, False, None, "int4", 0))
    return TableState(CatalogTable(1, "public", "t", "d", columns, ("id",)), columns, topics=TopicNaming("p"),
                      types=TypeRegistry(_no_server), modes=TypeModes(),
                      columns_stage=ColumnStage(properties or {}, field_names=field_names), key_spec={},
                      unavailable_placeholder=P)


def test_a_row_names_the_values_the_server_did_not_send() -> None:
    table = state()
    row = table.row(["1", UNCHANGED_TOAST, UNCHANGED_TOAST, "7"])
    assert row == {"id": 1, "my-body": P, "blob": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==", "n": 7}
    assert unavailable_fields(row) == ("my-body", "blob")
    assert orjson.dumps(row) == orjson.dumps(dict(row))  # JSON as any row's
    full = table.row(["1", UNCHANGED_TOAST, "\\x00", "7"], old=["1", "old body", "\\x00", "6"])
    assert type(full) is dict and full["my-body"] == "old body"  # REPLICA IDENTITY FULL: the old value
    assert type(table.row(["1", "b", "\\x00", "7"])) is dict


def test_the_names_follow_the_column_options_into_the_event() -> None:
    table = state({"column.mask.with.4.chars": r"public\.t\.my-body"}, field_names="avro")
    out: list[Any] = []
    after = table.row(["1", UNCHANGED_TOAST, "\\x00", "7"])
    Emitter().update(out, table.envelope, None, after, {"db": "d"})
    shaped = out[0].value["after"]
    assert shaped["my_body"] == "****"  # the placeholder, masked: the mark says it is none of the data
    assert unavailable_fields(shaped) == ("my_body",)  # the field's name in events


class Source:
    def reselect_lookup(self, table_id: str) -> pp.TableLookup:
        def read(key: Mapping[str, Any], wanted: Sequence[str]) -> Mapping[str, Any]:
            return {c: f"read {c}" for c in wanted}

        return pp.TableLookup(fields={"id": "id", "body": "body", "note": "note"},
                              unavailable={"body": P, "note": P}, key_columns=["id"], read=read)


def test_the_reselector_unmarks_what_it_read_again() -> None:
    from cdc.core.records import ChangeEvent

    only_body = {"r.reselect.columns.include.list": r"public\.docs:body"}
    [reselect] = pp.from_config({"post.processors": "r", "r.type": pp.RESELECT, **only_body}, Source())
    after = PartialRow({"id": 1, "body": P, "note": P}, ["body", "note"])
    reselect([ChangeEvent("t", None, {"id": 1}, None, {"op": "u", "after": after}, table_id="public.docs")])
    assert after == {"id": 1, "body": "read body", "note": P}
    assert unavailable_fields(after) == ("note",)


def test_arrow_rows_carry_the_names_and_the_headers() -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql import types as T

    from cdc.core.envelope import OLD_KEY_HEADER
    from cdc.spark.arrow_events import EventRows, arrow_schema
    from cdc.spark.schema import event_schema, struct_type_of

    table = state()
    out: list[Any] = []
    emit = Emitter()
    emit.create(out, table.envelope, table.row(["1", "b", "\\x00", "1"]), {"db": "d"})
    emit.update(out, table.envelope, table.row(["1", "b", "\\x00", "1"]), table.row(["2", UNCHANGED_TOAST,
                                                                                      "\\x00", "2"]), {"db": "d"})
    assert [e.value["op"] if e.value else None for e in out] == ["c", "d", None, "c"]  # a key change
    row_type, _ = struct_type_of(table.envelope.row_schema)
    schema = arrow_schema(event_schema(row_type))
    batch = EventRows("public.t", row_type.fieldNames()).batch(out, iter(range(1, 9)).__next__, schema)
    assert batch is not None
    rows = batch.to_pylist()
    assert [r["_unavailable"] for r in rows] == [None, None, ["my-body"]]
    assert rows[2]["headers"] == [{"key": OLD_KEY_HEADER, "value": b'{"id":1}'}]  # as Connect's default writes it
    assert rows[1]["headers"][0]["value"] == b'{"id":2}' and rows[0]["headers"] is None
    assert isinstance(event_schema(row_type)["headers"].dataType, T.ArrayType)
