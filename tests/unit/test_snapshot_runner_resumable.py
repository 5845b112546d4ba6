"""A resumable snapshot through the core runner (cdc.core.snapshot_runner.read_tables, resumable=True):
batches with an offset hand over every row read up to them, marked as the one rule says; a resumed
snapshot marks nothing first; a stop ends it after a batch with an offset, never between two others."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdc.core import connect
from cdc.core.envelope import TableEnvelope
from cdc.core.records import Batch
from cdc.core.snapshot_runner import RowBatch, SnapshotStopped, SnapshotTable, read_tables
from cdc.sources.postgres.source_info import SOURCE_SCHEMA

ID = connect.field("id", {"type": "int32", "optional": False})
TS = (1, 1000, 1_000_000)


def table(name: str, chunks: list[list[int]], *, keyed: bool = True, partly_read: bool = False) -> SnapshotTable:
    """A table read in ``chunks`` (a keyed one: each chunk with its offset; else every chunk without, then
    an empty batch with the offset that ends the table)."""
    envelope = TableEnvelope(topic=f"dbz.{name}", table_id=name, schema_name_prefix=f"dbz.{name}",
                             key_fields=[ID], value_fields=[ID], source_schema=SOURCE_SCHEMA)

    def batches() -> Iterator[RowBatch]:
        for n, ids in enumerate(chunks):
            last = n == len(chunks) - 1
            offset = {"table": name, "chunk": n} if keyed else None
            yield RowBatch([{"id": i} for i in ids], {"snapshot": "true"}, (7, 0), TS, offset=offset,
                           ends_table=keyed and last)
        if not keyed:
            yield RowBatch([], {"snapshot": "true"}, (7, 0), TS, offset={"table": name, "end": True}, ends_table=True)

    return SnapshotTable(envelope, batches, partly_read=partly_read)


def run(tables: list[SnapshotTable], **kwargs: bool) -> tuple[list[Batch], object]:
    out: list[Batch] = []
    reader = read_tables(tables, progress="off", stopping=lambda: False, resumable=True, **kwargs)
    while True:
        try:
            out.append(next(reader))
        except StopIteration as done:
            return out, done.value


def marks(batches: list[Batch]) -> list[tuple[str, int, str]]:
    return [(e.table_id, e.value["after"]["id"], e.value["source"]["snapshot"]) for b in batches for e in b.events
            if e.value is not None]


def test_every_row_goes_out_with_the_offset_after_it_marked_by_the_one_rule() -> None:
    batches, last = run([table("a", [[1, 2], [3]]), table("b", [[1]]), table("c", [[1]], keyed=False),
                         table("d", [[1]])])
    assert last is None  # nothing held back for the source to hand over
    assert marks(batches) == [("a", 1, "first"), ("a", 2, "true"), ("a", 3, "last_in_data_collection"),
                              ("b", 1, "last_in_data_collection"), ("c", 1, "last_in_data_collection"),
                              ("d", 1, "last")]
    with_offset = [(b.offset, [e.value["after"]["id"] for e in b.events]) for b in batches if b.offset is not None]
    assert with_offset == [({"table": "a", "chunk": 0}, [1, 2]), ({"table": "a", "chunk": 1}, [3]),
                           ({"table": "b", "chunk": 0}, [1]), ({"table": "c", "end": True}, [1]),
                           ({"table": "d", "chunk": 0}, [1])]
    positions = [e.position for b in batches for e in b.events]
    assert positions == [(7, 0, n) for n in range(1, 7)]


def test_a_resumed_snapshot_marks_nothing_first() -> None:
    batches, _ = run([table("a", [[3, 4]], partly_read=True), table("b", [[1, 2]])], resumed=True)
    assert marks(batches) == [("a", 3, "true"), ("a", 4, "last_in_data_collection"),
                              ("b", 1, "first_in_data_collection"), ("b", 2, "last")]


def test_a_stop_ends_it_after_a_batch_with_an_offset() -> None:
    stop = {"now": False}
    tables = [table("k", [[1, 2]], keyed=False), table("a", [[1], [2], [3]])]
    reader = read_tables(tables, progress="off", stopping=lambda: stop["now"], resumable=True)
    first = next(reader)  # the keyless table's only chunk: no offset
    assert first.offset is None
    stop["now"] = True
    assert next(reader).offset == {"table": "k", "end": True}  # not stopped in between
    with pytest.raises(SnapshotStopped):
        next(reader)
