"""The core keyset chunk reader and signal table over an in-memory dialect (cdc.core.chunk_reader,
cdc.core.signal_table): what every source shares, without a server."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from cdc.core.chunk_reader import ChunkDialect, ChunkTable, KeysetChunkReader, Query, Stamp
from cdc.core.errors import SourceError
from cdc.core.incremental import ChunkError, TableTask
from cdc.core.signal_table import SignalTable


class _Failure(Exception):
    pass


class _Envelope:
    def event(self, op: str, before: Any, after: Any, source: dict[str, Any], *, ts: Stamp) -> Any:
        return (op, after, source["table"], ts)


class _State:
    envelope = _Envelope()

    def row(self, values: Any) -> dict[str, Any]:
        return {"id": values[0], "v": values[1]}


class _Dialect(ChunkDialect[str]):
    errors = (_Failure,)

    def __init__(self, rows: list[tuple[int, str]], *, fail: bool = False) -> None:
        self.rows = rows
        self.fail = fail
        self.closed = 0
        self.queries: list[Query] = []

    def table(self, name: str) -> ChunkTable[str]:
        if name != "db.t":
            raise ChunkError(f"table {name} does not exist or is not captured")
        return ChunkTable(name, "t", ["id", "v"], ["id"])

    def max_key_query(self, table: str, key: Sequence[str], condition: str | None) -> Query:
        return ("max", [condition])

    def chunk_query(self, table: str, columns: Sequence[str], key: Sequence[str], condition: str | None,
                    after: Sequence[Any] | None, upto: Sequence[Any] | None, limit: int) -> Query:
        return ("chunk", [after, upto, limit])

    def query(self, query: Query, table: str) -> Sequence[Any]:
        self.queries.append(query)
        if self.fail:
            raise _Failure("boom")
        if query[0] == "max":
            return [(max(r[0] for r in self.rows),)] if self.rows else []
        after, upto, limit = query[1]
        picked = [r for r in self.rows if (after is None or r[0] > after[0]) and (upto is None or r[0] <= upto[0])]
        return picked[:limit]

    def state(self, table: str) -> tuple[_State, Sequence[str]]:
        return _State(), ["id", "v"]

    def stamp(self, table: str) -> tuple[Stamp, dict[str, Any]]:
        return (1, 1000, 1_000_000), {"table": table}

    def offset_value(self, value: Any) -> Any:
        return str(value)

    def error_text(self, exc: Exception) -> str:
        return f"said {exc}"

    def close(self) -> None:
        self.closed += 1


def test_bounds_and_chunks_in_key_order() -> None:
    reader = KeysetChunkReader(_Dialect([(1, "a"), (2, "b"), (3, "c")]))
    task = TableTask("db.t")
    key, top = reader.bounds(task)
    assert (key, top) == (["id"], ["3"])
    task.max_key, task.last_key = [3], [1]
    rows = reader.read(task, 1)
    assert rows == [(["2"], ("r", {"id": 2, "v": "b"}, "t", (1, 1000, 1_000_000)))]


def test_an_empty_table_has_no_bound() -> None:
    assert KeysetChunkReader(_Dialect([])).bounds(TableTask("db.t")) == (["id"], None)


def test_key_errors_name_the_table() -> None:
    reader = KeysetChunkReader(_Dialect([]))
    with pytest.raises(ChunkError, match="table db.t has no column nope \\(surrogate-key\\)"):
        reader.bounds(TableTask("db.t", surrogate_key="nope"))
    with pytest.raises(ChunkError, match="does not exist or is not captured"):
        reader.read(TableTask("db.x"), 5)


def test_a_failed_query_closes_and_becomes_a_chunk_error() -> None:
    dialect = _Dialect([(1, "a")], fail=True)
    reader = KeysetChunkReader(dialect)
    with pytest.raises(ChunkError, match="^additional condition 'v > 1' failed: said boom$"):
        reader.bounds(TableTask("db.t", condition="v > 1"))
    with pytest.raises(ChunkError, match="^reading a chunk failed: said boom$"):
        reader.read(TableTask("db.t"), 5)
    assert dialect.closed == 2


class _Conn:
    def __init__(self, columns: list[str]) -> None:
        self.columns = columns
        self.rows: list[tuple[str, str, str]] = []
        self.closed = False

    def close(self) -> None:
        self.closed = True


class _Table(SignalTable[_Conn]):
    errors = (_Failure,)

    def __init__(self, conn: _Conn | None, *, fail: bool = False) -> None:
        self.where = "db.signals"
        self.label = "'db.signals'"
        self.conn = conn
        self.fail = fail

    def column_names(self, conn: _Conn) -> list[str]:
        return conn.columns

    def insert(self, conn: _Conn, id_: str, type_: str, data: str) -> None:
        if self.fail:
            raise _Failure("denied")
        conn.rows.append((id_, type_, data))

    def watermark_connection(self) -> _Conn | None:
        return self.conn

    def connect(self) -> _Conn:
        assert self.conn is not None
        return self.conn

    def error_text(self, exc: Exception) -> str:
        return str(exc)

    def fixes(self) -> tuple[str, str]:
        return "create it", "add the columns"


def test_watermarks_and_their_errors() -> None:
    conn = _Conn(["id", "type", "data"])
    _Table(conn).watermark("snapshot-window-open", "c1")
    assert conn.rows[0][:2] == ("c1-open", "snapshot-window-open")
    assert isinstance(json.loads(conn.rows[0][2]), dict)
    with pytest.raises(ChunkError, match="^cannot write the close watermark into db.signals: denied$"):
        _Table(conn, fail=True).watermark("snapshot-window-close", "c1")
    with pytest.raises(ChunkError, match="database is not streaming"):
        _Table(None).watermark("snapshot-window-close", "c1")


def test_a_signal_sent_checks_the_table_and_closes_its_connection() -> None:
    conn = _Conn(["id", "type", "data"])
    assert _Table(conn).send("s1", "log", {"message": "hi"}) == "signal table db.signals"
    assert conn.rows == [("s1", "log", '{"message": "hi"}')] and conn.closed
    with pytest.raises(SourceError, match="lacks column\\(s\\) data; it has id, type"):
        _Table(_Conn(["id", "type"])).send("s2", "log", {})
    with pytest.raises(SourceError, match="does not exist"):
        _Table(_Conn([])).send("s3", "log", {})
