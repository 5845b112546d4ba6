"""Key-ordered chunks of a table (keyset pagination by primary key), one reader for every source.

An incremental snapshot (:mod:`cdc.core.incremental`) asks for the largest key and then for chunks:

    SELECT key FROM t WHERE (<condition>) ORDER BY key DESC LIMIT 1                -> max_key
    SELECT cols FROM t WHERE (<condition>) AND key > last AND key <= max ORDER BY key LIMIT n

:class:`KeysetChunkReader` does what is the same everywhere: the key (primary key or the signal's
surrogate), the errors a table's read turns into (:class:`ChunkError`: the table is skipped), the
``op: r`` events and the key values kept in the offset. A :class:`ChunkDialect` gives what is the
database's own: where a table is, the SQL of the two queries, how a query runs, how a key value
reads back and is stored.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from cdc.core.envelope import OP_READ, TableEnvelope
from cdc.core.incremental import ChunkError, TableTask
from cdc.core.records import ChangeEvent

H = TypeVar("H")  # the source's handle on a table (catalog entry, name parts, capture state...)

# SQL (text, or psycopg's Composable) and its parameters
Query = tuple[Any, Sequence[Any]]
# (seconds, milliseconds, microseconds or nanoseconds) as the source's envelopes take them
Stamp = tuple[int, int, int]


class RowState(Protocol):
    """A table's decoding state at the stream's position: a chunk's events have the streamed shape."""

    @property
    def envelope(self) -> TableEnvelope: ...

    def row(self, values: Any) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ChunkTable(Generic[H]):
    name: str  # as the messages name it
    handle: H
    columns: Sequence[str]  # the key must be among them
    primary_key: Sequence[str]


class ChunkDialect(ABC, Generic[H]):
    """What a database gives the core chunk reader: its SQL and the few things really its own."""

    errors: tuple[type[Exception], ...] = ()  # the driver's errors a read turns into ChunkError
    missing_column = "column"  # SQL Server says "captured column": only captured columns are read

    @abstractmethod
    def table(self, name: str) -> ChunkTable[H]:
        """The captured table ``name``; ChunkError when it is not (or cannot be read here)."""

    @abstractmethod
    def max_key_query(self, table: H, key: Sequence[str], condition: str | None) -> Query:
        """The largest key under the additional condition, one row of the key's columns."""

    @abstractmethod
    def chunk_query(self, table: H, columns: Sequence[str], key: Sequence[str], condition: str | None,
                    after: Sequence[Any] | None, upto: Sequence[Any] | None, limit: int) -> Query:
        """Up to ``limit`` rows, key > ``after`` and <= ``upto`` (None: unbounded), in key order."""

    @abstractmethod
    def query(self, query: Query, table: H) -> Sequence[Any]:
        """The rows of a query; raises one of :attr:`errors`."""

    def read_chunk(self, query: Query, table: H, limit: int) -> Sequence[Any]:
        """A chunk's rows (PostgreSQL reads them through COPY, in a snapshot of its own)."""
        return self.query(query, table)

    @abstractmethod
    def state(self, table: H) -> tuple[RowState, Sequence[str]]:
        """The table's decoding state and the columns a chunk reads, in its rows' order."""

    @abstractmethod
    def stamp(self, table: H) -> tuple[Stamp, dict[str, Any]]:
        """The time of a chunk just read and the source block of its events."""

    def key_value(self, row: Any, index: int, column: str) -> Any:
        """A key value of a row as the offset keeps it (rows are sequences unless a dialect says)."""
        return self.offset_value(row[index])

    def offset_value(self, value: Any) -> Any:
        """A key value as JSON, which the database converts back to the column's type."""
        return value

    @abstractmethod
    def error_text(self, exc: Exception) -> str: ...

    def close(self) -> None:
        """After a failed read (a connection in an unknown state is not used again)."""


def chunk_key(table: ChunkTable[Any], surrogate: str | None, missing_column: str = "column") -> list[str]:
    """The key columns: the surrogate key the signal names, else the primary key."""
    key = [surrogate] if surrogate else list(table.primary_key)
    if not key:
        raise ChunkError(f"table {table.name} has no primary key; name a unique column as "
                         "\"surrogate-key\" in the signal's data")
    missing = [k for k in key if k not in table.columns]
    if missing:
        raise ChunkError(f"table {table.name} has no {missing_column} {', '.join(missing)} (surrogate-key)")
    return key


class KeysetChunkReader(Generic[H]):
    """The :class:`cdc.core.incremental.ChunkReader` of every source, one query a chunk."""

    def __init__(self, dialect: ChunkDialect[H]) -> None:
        self.dialect = dialect

    def close(self) -> None:
        self.dialect.close()

    def _run(self, read: Any, query: Query, what: str) -> Sequence[Any]:
        try:
            rows: Sequence[Any] = read(query)
            return rows
        except self.dialect.errors as exc:
            self.dialect.close()
            raise ChunkError(f"{what} failed: {self.dialect.error_text(exc)}") from None

    def bounds(self, task: TableTask) -> tuple[list[str], list[Any] | None]:
        d = self.dialect
        table = d.table(task.table)
        key = chunk_key(table, task.surrogate_key, d.missing_column)
        rows = self._run(lambda q: d.query(q, table.handle), d.max_key_query(table.handle, key, task.condition),
                         f"additional condition {task.condition!r}" if task.condition else "reading its largest key")
        return key, ([d.key_value(rows[0], i, k) for i, k in enumerate(key)] if rows else None)

    def read(self, task: TableTask, limit: int) -> list[tuple[list[Any], ChangeEvent]]:
        d = self.dialect
        table = d.table(task.table)
        key = chunk_key(table, task.surrogate_key, d.missing_column)
        state, columns = d.state(table.handle)
        positions = [list(columns).index(k) for k in key]
        query = d.chunk_query(table.handle, columns, key, task.condition, task.last_key, task.max_key, limit)
        rows = self._run(lambda q: d.read_chunk(q, table.handle, limit), query, "reading a chunk")
        ts, shared = d.stamp(table.handle)
        return [([d.key_value(values, i, k) for i, k in zip(positions, key, strict=True)],
                 state.envelope.event(OP_READ, None, state.row(values), shared, ts=ts)) for values in rows]
