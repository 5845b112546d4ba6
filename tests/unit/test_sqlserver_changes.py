"""Pure change logic: merge order, update pairs, key changes, numbering, resume positions."""
from __future__ import annotations

import pytest

from cdc.core.errors import SourceError
from cdc.sources.sqlserver.changes import Change, ChangeRow, Position, change_row, changes, merge
from cdc.sources.sqlserver.lsn import Lsn
from tests.fixtures.sqlserver.testdb import ct_row


def row(instance: str, commit: str, change: str, op: int, **values: object) -> ChangeRow:
    return ChangeRow(instance, Lsn.parse(commit), Lsn.parse(change), op, dict(values))


def brief(items: list[Change]) -> list[tuple[str, str, str, int]]:
    return [(c.instance, c.op, str(c.change_lsn)[-4:], c.event_serial_no) for c in items]


C1, C2 = "00000001:00000010:0001", "00000001:00000020:0001"


def test_change_row_reads_the_server_shape() -> None:
    record = ct_row(C1, "00000001:00000010:0000", 4, b"\x02", 1, "2020-01-01 00:00:00.5000000 +00:00",
                    id=1, name="x")
    parsed = change_row("dbo_t", record)
    assert (str(parsed.commit_lsn), str(parsed.change_lsn), parsed.operation) == (C1, "00000001:00000010:0000", 4)
    assert parsed.values == {"id": 1, "name": "x"}
    assert parsed.commit_ns == 1577836800_500_000_000


def test_change_row_without_meta_columns_is_refused() -> None:
    with pytest.raises(SourceError, match="lacks the column __\\$seqval"):
        change_row("dbo_t", {"__$start_lsn": bytes(10), "id": 1})


def test_merge_orders_by_commit_then_change_then_operation() -> None:
    a = [row("a", C1, "00000001:00000000:0003", 2), row("a", C2, "00000001:00000000:0001", 3),
         row("a", C2, "00000001:00000000:0001", 4)]
    b = [row("b", C1, "00000001:00000000:0002", 1), row("b", C1, "00000001:00000000:0004", 2),
         row("b", C2, "00000001:00000000:0002", 2)]
    merged = [(r.instance, str(r.change_lsn)[-4:], r.operation) for r in merge([a, b])]
    assert merged == [("b", "0002", 1), ("a", "0003", 2), ("b", "0004", 2), ("a", "0001", 3), ("a", "0001", 4),
                      ("b", "0002", 2)]


def test_pairs_and_numbering() -> None:
    rows = [
        row("t", C1, "00000001:00000000:0001", 2, id=1),
        row("t", C1, "00000001:00000000:0002", 3, id=1, v="old"),
        row("t", C1, "00000001:00000000:0002", 4, id=1, v="new"),
        row("t", C1, "00000001:00000000:0003", 1, id=2),
        row("t", C1, "00000001:00000000:0003", 2, id=3),  # a key change: same change LSN
        row("t", C1, "00000001:00000000:0004", 1, id=4),
    ]
    out = list(changes(rows))
    assert brief(out) == [("t", "c", "0001", 1), ("t", "u", "0002", 2), ("t", "k", "0003", 2), ("t", "d", "0004", 1)]
    assert (out[1].before, out[1].after) == ({"id": 1, "v": "old"}, {"id": 1, "v": "new"})
    assert (out[2].before, out[2].after) == ({"id": 2}, {"id": 3})


def test_update_before_without_after_is_an_error() -> None:
    with pytest.raises(SourceError, match="not followed by its update-after row"):
        list(changes([row("t", C1, "00000001:00000000:0002", 3, id=1)]))
    with pytest.raises(SourceError, match="has no update-before row"):
        list(changes([row("t", C1, "00000001:00000000:0002", 4, id=1)]))


@pytest.mark.parametrize("resume, expected", [
    (Position(Lsn.parse(C1)), [("t", "c", "0009", 1)]),
    (Position(Lsn.parse(C1), Lsn.parse("00000001:00000000:0002"), 2), [("t", "k", "0003", 2), ("t", "c", "0009", 1)]),
    (Position(Lsn.parse(C1), Lsn.parse("00000001:00000000:0003"), 2), [("t", "c", "0009", 1)]),
    (Position(Lsn.parse("00000000:00000000:0001")), [("t", "u", "0002", 2), ("t", "k", "0003", 2),
                                                    ("t", "c", "0009", 1)]),
])
def test_resume_skips_what_the_position_covers(resume: Position, expected: list[tuple[str, str, str, int]]) -> None:
    rows = [
        row("t", C1, "00000001:00000000:0002", 3, id=1), row("t", C1, "00000001:00000000:0002", 4, id=1),
        row("t", C1, "00000001:00000000:0003", 1, id=2), row("t", C1, "00000001:00000000:0003", 2, id=3),
        row("t", C2, "00000001:00000000:0009", 2, id=9),
    ]
    out = list(changes(rows, resume))
    assert brief(out) == expected
    assert all(not c.delete_delivered for c in out)


def test_resume_between_the_halves_of_a_key_change() -> None:
    rows = [row("t", C1, "00000001:00000000:0003", 1, id=2), row("t", C1, "00000001:00000000:0003", 2, id=3)]
    out = list(changes(rows, Position(Lsn.parse(C1), Lsn.parse("00000001:00000000:0003"), 1)))
    assert brief(out) == [("t", "k", "0003", 2)] and out[0].delete_delivered


def test_rows_at_or_after_the_stop_lsn_are_dropped() -> None:
    rows = merge([[row("old", C1, "00000001:00000000:0001", 2, id=1),
                   row("old", C2, "00000001:00000000:0001", 2, id=2)],
                  [row("new", C2, "00000001:00000000:0001", 2, id=2)]])
    out = list(changes(rows, None, {"old": Lsn.parse(C2)}))
    assert brief(out) == [("old", "c", "0001", 1), ("new", "c", "0001", 1)]


def test_position_offsets_round_trip() -> None:
    position = Position(Lsn.parse(C1), Lsn.parse(C2), 2)
    assert position.to_offset() == {"commit_lsn": C1, "change_lsn": C2, "event_serial_no": 2}
    assert Position.from_offset(position.to_offset()) == position
    assert Position.from_offset({"commit_lsn": C1}) == Position(Lsn.parse(C1))
    with pytest.raises(SourceError, match="not a SQL Server position"):
        Position.from_offset({"commit_lsn": "12/34"})
