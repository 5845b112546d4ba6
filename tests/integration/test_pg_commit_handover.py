"""The PostgreSQL source hands its rows over whenever the replication socket is drained, mostly
inside a transaction; the rows up to the last commit among them then go first, with that commit's
offset. A bounded reader (Spark's micro-batches) can end only there, so under a backlog it finds
an end after about every transaction, and the offset resumes exactly after that commit. The same with
the rows in runs the codec encodes in one call (encoded batches), where a COMMIT leaves no event."""
from __future__ import annotations

import time
from typing import Any

import orjson
import psycopg
import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.sources.postgres.source import PostgresSource

TRANSACTIONS, ROWS = 20, 300


def _source(db: dict[str, str], encoded: bool) -> PostgresSource:
    props = {k: v for k, v in db.items() if k != "dsn"}
    source = PostgresSource(Config({**props, "topic.prefix": "dbz", "slot.name": "handover_slot",
                                    "slot.takeover": "true", "publication.name": "handover_pub",
                                    "snapshot.mode": "no_data"}).declare(CORE_OPTIONS))
    source.native_rows = source.encoded_batches = encoded
    return source


def _read(db: dict[str, str], offset: dict[str, Any] | None, rows: int,
          encoded: bool) -> list[tuple[list[int], dict[str, Any]]]:
    """(ids of the batch's inserted rows, its offset) per batch, until ``rows`` rows came."""
    source = _source(db, encoded)
    batches: list[tuple[list[int], dict[str, Any]]] = []
    deadline = time.monotonic() + 60
    try:
        for batch in source.stream(offset):
            ids = [e.value["after"]["id"] for e in batch.events
                   if e.value is not None and e.table_id and e.value.get("op") == "c"]
            if batch.encoded is not None:
                ids += [orjson.loads(row)["id"] for row in batch.encoded.rows]
            if batch.offset is not None:
                batches.append((ids, batch.offset))
            if sum(len(i) for i, _ in batches) >= rows:
                return batches
            assert time.monotonic() < deadline, f"{rows} rows expected, {sum(len(i) for i, _ in batches)} came"
    finally:
        source.stop()
        source.close()
    return batches


@pytest.mark.parametrize("encoded", [False, True], ids=["events", "encoded runs"])
def test_a_backlog_of_transactions_gives_a_committed_offset_after_each(pg_db: dict[str, str], encoded: bool) -> None:
    with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        conn.execute("CREATE PUBLICATION handover_pub FOR TABLE t")
        conn.execute("SELECT pg_create_logical_replication_slot('handover_slot', 'pgoutput')")
        for n in range(TRANSACTIONS):  # all in the log before the stream starts: a backlog
            conn.execute("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(%s::int, %s::int) g",
                         (n * ROWS + 1, (n + 1) * ROWS))
    batches = _read(pg_db, None, TRANSACTIONS * ROWS, encoded)
    ids = [i for batch_ids, _ in batches for i in batch_ids]
    assert ids == list(range(1, TRANSACTIONS * ROWS + 1))
    committed = [(sum(len(i) for i, _ in batches[:n + 1]), offset) for n, (_, offset) in enumerate(batches)
                 if PostgresSource.committed_key(offset) is not None]
    # every committed offset falls after a whole transaction, and most transactions have one (two
    # commits drained together share one; before, only a drain between transactions gave one: 1 here)
    assert all(rows_before % ROWS == 0 for rows_before, _ in committed), [r for r, _ in committed]
    assert len({rows for rows, _ in committed}) >= TRANSACTIONS // 2, [r for r, _ in committed]
    if encoded:  # a COMMIT that ended a run hands its offset over alone: every transaction has one
        transaction = None
        for batch_ids, offset in batches:
            if batch_ids:
                assert transaction in (None, offset["txId"]), f"{offset['txId']}'s rows came before {transaction} ended"
                transaction = offset["txId"]
            if PostgresSource.committed_key(offset) is not None:
                transaction = None

    # resumed from one of them, the stream goes on with the next transaction, nothing lost or doubled
    rows_before, offset = committed[len(committed) // 2]
    again = [i for batch_ids, _ in _read(pg_db, offset, TRANSACTIONS * ROWS - rows_before, encoded) for i in batch_ids]
    assert again == list(range(rows_before + 1, TRANSACTIONS * ROWS + 1))


def test_a_transaction_of_runs_hands_over_its_committed_offset_when_the_stream_drains(
        pg_db: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction whose rows all went in a run leaves no event at its COMMIT: the offset after it
    (where Spark's micro-batch may end, and the source says it caught up) still goes out when the
    socket drains, not only when the stream has been idle (here made 60 s)."""
    from cdc.sources.postgres import streamer

    monkeypatch.setattr(streamer, "IDLE_S", 60)
    with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        conn.execute("CREATE PUBLICATION handover_pub FOR TABLE t")
        conn.execute("SELECT pg_create_logical_replication_slot('handover_slot', 'pgoutput')")
        conn.execute("INSERT INTO t SELECT g, 'n' || g FROM generate_series(1, 5) g")
    source = _source(pg_db, encoded=True)
    began = time.monotonic()
    seen: list[Any] = []
    try:
        for batch in source.stream(None):
            seen.append(batch)
            if batch.caught_up and any(b.encoded is not None for b in seen):
                break
            assert time.monotonic() - began < 30, seen
    finally:
        source.stop()
        source.close()
    assert sum(len(b.encoded.rows) for b in seen if b.encoded is not None) == 5  # (in two runs if the socket drained)
    last = seen[-1]
    assert last.offset is not None and "lsn_proc" not in last.offset and last.encoded is None
    assert time.monotonic() - began < 30
