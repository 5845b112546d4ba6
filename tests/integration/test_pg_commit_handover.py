"""The PostgreSQL source hands its rows over whenever the replication socket is drained, mostly
inside a transaction; the rows up to the last commit among them then go first, with that commit's
offset. A bounded reader (Spark's micro-batches) can end only there, so under a backlog it finds
an end after about every transaction, and the offset resumes exactly after that commit."""
from __future__ import annotations

import time
from typing import Any

import psycopg

from cdc.config import CORE_OPTIONS, Config
from cdc.sources.postgres.source import PostgresSource

TRANSACTIONS, ROWS = 20, 300


def _source(db: dict[str, str]) -> PostgresSource:
    props = {k: v for k, v in db.items() if k != "dsn"}
    return PostgresSource(Config({**props, "topic.prefix": "dbz", "slot.name": "handover_slot", "slot.takeover": "true",
                                  "publication.name": "handover_pub", "snapshot.mode": "no_data"})
                          .declare(CORE_OPTIONS))


def _read(db: dict[str, str], offset: dict[str, Any] | None, rows: int) -> list[tuple[list[int], dict[str, Any]]]:
    """(ids of the batch's row events, its offset) per batch, until ``rows`` row events came."""
    source = _source(db)
    batches: list[tuple[list[int], dict[str, Any]]] = []
    deadline = time.monotonic() + 60
    try:
        for batch in source.stream(offset):
            ids = [e.value["after"]["id"] for e in batch.events
                   if e.value is not None and e.table_id and e.value.get("op") == "c"]
            if batch.offset is not None:
                batches.append((ids, batch.offset))
            if sum(len(i) for i, _ in batches) >= rows:
                return batches
            assert time.monotonic() < deadline, f"{rows} rows expected, {sum(len(i) for i, _ in batches)} came"
    finally:
        source.stop()
        source.close()
    return batches


def test_a_backlog_of_transactions_gives_a_committed_offset_after_each(pg_db: dict[str, str]) -> None:
    with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        conn.execute("CREATE PUBLICATION handover_pub FOR TABLE t")
        conn.execute("SELECT pg_create_logical_replication_slot('handover_slot', 'pgoutput')")
        for n in range(TRANSACTIONS):  # all in the log before the stream starts: a backlog
            conn.execute("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(%s::int, %s::int) g",
                         (n * ROWS + 1, (n + 1) * ROWS))
    batches = _read(pg_db, None, TRANSACTIONS * ROWS)
    ids = [i for batch_ids, _ in batches for i in batch_ids]
    assert ids == list(range(1, TRANSACTIONS * ROWS + 1))
    committed = [(sum(len(i) for i, _ in batches[:n + 1]), offset) for n, (_, offset) in enumerate(batches)
                 if PostgresSource.committed_key(offset) is not None]
    # every committed offset falls after a whole transaction, and most transactions have one (two
    # commits drained together share one; before, only a drain between transactions gave one: 1 here)
    assert all(rows_before % ROWS == 0 for rows_before, _ in committed), [r for r, _ in committed]
    assert len({rows for rows, _ in committed}) >= TRANSACTIONS // 2, [r for r, _ in committed]

    # resumed from one of them, the stream goes on with the next transaction, nothing lost or doubled
    rows_before, offset = committed[len(committed) // 2]
    again = [i for batch_ids, _ in _read(pg_db, offset, TRANSACTIONS * ROWS - rows_before) for i in batch_ids]
    assert again == list(range(rows_before + 1, TRANSACTIONS * ROWS + 1))
