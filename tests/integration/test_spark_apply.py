"""apply_changes on hand-made batches: SCD1 and SCD2, truncates, replay, a new column."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

ROW = "struct<id:int,name:string>"


def batch(spark: Any, events: list[tuple[str, Any, Any, int]], row_type: str = ROW) -> Any:
    schema = f"op string, before {row_type}, after {row_type}, _position long"
    return spark.createDataFrame(events, schema)


def formats(spark: Any) -> list[str]:
    from cdc.spark.session import delta_available

    return ["parquet", "delta"] if delta_available(spark) else ["parquet"]


def rows(spark: Any, path: Path, fmt: str, *columns: str) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in spark.read.format(fmt).load(str(path)).collect())


@pytest.mark.parametrize("fmt", ["parquet", "delta"])
def test_scd1_latest_wins_deletes_remove_and_replay_is_idempotent(spark: Any, tmp_path: Path, fmt: str) -> None:
    from cdc.spark.apply import apply_changes

    if fmt not in formats(spark):
        pytest.skip("no Delta jars")
    target = tmp_path / "t"
    first = batch(spark, [("r", None, (1, "a"), 1), ("r", None, (2, "b"), 2), ("r", None, (3, "c"), 3)])
    apply_changes(first, str(target), ["id"], format=fmt)
    second = batch(spark, [("u", None, (1, "a2"), 5), ("u", None, (1, "a3"), 6), ("d", (2, None), None, 7),
                           ("c", None, (4, "d"), 8), ("d", (3, "c"), None, 9), ("c", None, (3, "c2"), 10)])
    apply_changes(second, str(target), ["id"], format=fmt)
    expected = [(1, "a3"), (3, "c2"), (4, "d")]
    assert rows(spark, target, fmt, "id", "name") == expected
    apply_changes(second, str(target), ["id"], format=fmt)  # a replayed micro-batch
    assert rows(spark, target, fmt, "id", "name") == expected
    apply_changes(batch(spark, [("c", None, (9, "x"), 11), ("t", None, None, 12), ("c", None, (5, "e"), 13)]),
                  str(target), ["id"], format=fmt)
    assert rows(spark, target, fmt, "id", "name") == [(5, "e")]  # the truncate cleared what came before


@pytest.mark.parametrize("fmt", ["parquet", "delta"])
def test_scd2_history(spark: Any, tmp_path: Path, fmt: str) -> None:
    from cdc.spark.apply import apply_changes

    if fmt not in formats(spark):
        pytest.skip("no Delta jars")
    target = tmp_path / "h"
    apply_changes(batch(spark, [("c", None, (1, "a"), 1), ("c", None, (2, "b"), 2)]), str(target), ["id"],
                  scd_type=2, format=fmt)
    second = batch(spark, [("u", None, (1, "a2"), 3), ("u", None, (1, "a3"), 4), ("d", (2, "b"), None, 5)])
    apply_changes(second, str(target), ["id"], scd_type=2, format=fmt)
    apply_changes(second, str(target), ["id"], scd_type=2, format=fmt)  # replay: no new history
    history = rows(spark, target, fmt, "id", "name", "valid_from", "valid_to", "is_current")
    assert history == [
        (1, "a", 1, 3, False),
        (1, "a2", 3, 4, False),
        (1, "a3", 4, None, True),
        (2, "b", 2, 5, False),
    ]


def test_new_column_appears_in_the_delta_target(spark: Any, tmp_path: Path) -> None:
    from cdc.spark.apply import apply_changes

    if "delta" not in formats(spark):
        pytest.skip("no Delta jars")
    target = tmp_path / "evolve"
    apply_changes(batch(spark, [("c", None, (1, "a"), 1)]), str(target), ["id"], format="delta")
    wider = "struct<id:int,name:string,email:string>"
    apply_changes(batch(spark, [("c", None, (2, "b", "b@x"), 2), ("u", None, (1, "a", "a@x"), 3)], wider),
                  str(target), ["id"], format="delta")
    assert rows(spark, target, "delta", "id", "name", "email") == [(1, "a", "a@x"), (2, "b", "b@x")]


@pytest.mark.parametrize("fmt", ["parquet", "delta"])
def test_scd1_batches_with_each_key_once_and_with_repeated_composite_keys(spark: Any, tmp_path: Path,
                                                                         fmt: str) -> None:
    """A batch that changes each key once is applied without looking for the latest event per key; one
    where a composite key comes twice (and one with a NULL key part) still takes the latest."""
    from cdc.spark.apply import apply_changes

    if fmt not in formats(spark):
        pytest.skip("no Delta jars")
    row = "struct<a:int,b:int,name:string>"
    target = tmp_path / "t"
    apply_changes(batch(spark, [("r", None, (1, 1, "x"), 0), ("r", None, (1, 2, "y"), 0), ("r", None, (2, 1, "z"), 0)],
                        row), str(target), ["a", "b"], format=fmt)
    once = batch(spark, [("u", None, (1, 1, "x2"), 1), ("d", (1, 2, "y"), None, 2), ("c", None, (3, 3, "w"), 3)], row)
    apply_changes(once, str(target), ["a", "b"], format=fmt)
    assert rows(spark, target, fmt, "a", "b", "name") == [(1, 1, "x2"), (2, 1, "z"), (3, 3, "w")]
    # (1, 1) twice: same a, different b elsewhere, so a count of `a` alone would be fooled too
    twice = batch(spark, [("u", None, (1, 1, "x3"), 4), ("c", None, (1, 5, "v"), 5), ("u", None, (1, 1, "x4"), 6),
                          ("c", None, (4, None, "n"), 7)], row)
    apply_changes(twice, str(target), ["a", "b"], format=fmt)
    assert rows(spark, target, fmt, "a", "b", "name") == [(1, 1, "x4"), (1, 5, "v"), (2, 1, "z"), (3, 3, "w"),
                                                          (4, None, "n")]


def test_a_new_delta_target_from_snapshot_rows_is_written_in_one_pass_and_a_mixed_first_batch_is_merged(
        spark: Any, tmp_path: Path) -> None:
    """The first batch into a new Delta target: snapshot rows only are written as they come (one Delta
    commit, a WRITE); a first batch with changes (a key twice, a delete, a truncate) is undone and MERGEd,
    leaving what the usual way leaves: the latest event per key."""
    from delta.tables import DeltaTable

    from cdc.spark.apply import apply_changes

    if "delta" not in formats(spark):
        pytest.skip("no Delta jars")
    snapshot = tmp_path / "snapshot"
    apply_changes(batch(spark, [("r", None, (i, f"n{i}"), i) for i in range(1, 6)]), str(snapshot), ["id"])
    assert rows(spark, snapshot, "delta", "id", "name") == [(i, f"n{i}") for i in range(1, 6)]
    history = DeltaTable.forPath(spark, str(snapshot)).history().select("operation").collect()
    assert [h[0] for h in history] == ["WRITE"]

    mixed = tmp_path / "mixed"
    apply_changes(batch(spark, [("r", None, (1, "a"), 1), ("r", None, (2, "b"), 2), ("u", None, (1, "a2"), 3),
                                ("d", (2, "b"), None, 4), ("c", None, (3, "c"), 5)]), str(mixed), ["id"])
    assert rows(spark, mixed, "delta", "id", "name") == [(1, "a2"), (3, "c")]
    history = DeltaTable.forPath(spark, str(mixed)).history().orderBy("version").select("operation").collect()
    assert [h[0] for h in history] == ["WRITE", "WRITE", "MERGE"]  # written, undone (overwritten empty), merged
    truncated = tmp_path / "truncated"
    apply_changes(batch(spark, [("r", None, (1, "a"), 1), ("t", None, None, 2), ("r", None, (2, "b"), 3)]),
                  str(truncated), ["id"])
    assert rows(spark, truncated, "delta", "id", "name") == [(2, "b")]


def test_a_new_delta_target_never_gets_a_value_the_source_did_not_send(spark: Any, tmp_path: Path) -> None:
    """Snapshot rows and an update that lacks a TOASTed value (marked in _unavailable) as the first batch: the
    one-pass write is undone, and the usual way carries the value from the key's snapshot row."""
    from cdc.spark.apply import apply_changes

    if "delta" not in formats(spark):
        pytest.skip("no Delta jars")
    schema = f"op string, before {ROW}, after {ROW}, _position long, _unavailable array<string>"
    events = spark.createDataFrame([("r", None, (1, "long text"), 1, []),
                                    ("u", None, (1, "__debezium_unavailable_value"), 2, ["name"])], schema)
    target = tmp_path / "t"
    apply_changes(events, str(target), ["id"])
    assert rows(spark, target, "delta", "id", "name") == [(1, "long text")]
