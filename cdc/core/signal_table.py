"""The signal table (``signal.data.collection``), once for every source: the check of its columns,
the watermarks of incremental snapshots, and a signal sent with ``cdc signal``.

Rows inserted there come back through the source's change stream, in log order with the changes
around them: that is what orders a chunk's watermarks (:mod:`cdc.core.incremental`). A source
gives a :class:`SignalTable`: its name in messages, the SQL reading its column names and inserting
a row, and the connections these run on.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, Generic, Protocol, TypeVar

from cdc.core.errors import SourceError
from cdc.core.incremental import ChunkError
from cdc.core.signals import watermark_data

SIGNAL_COLUMNS = ("id", "type", "data")


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)  # the driver's connection


class SignalTable(ABC, Generic[C]):
    """Where a source keeps its signal table and the SQL that reads and writes it."""

    errors: tuple[type[Exception], ...] = ()  # the driver's errors a watermark's write turns into ChunkError
    where: str  # its name in messages: database.table, or database.schema.table
    label: str  # how the check's messages name it (PostgreSQL and MySQL quote it)

    @abstractmethod
    def column_names(self, conn: C) -> list[str]:
        """Its columns in order ([] when it does not exist)."""

    @abstractmethod
    def insert(self, conn: C, id_: str, type_: str, data: str) -> None:
        """One row; ``data`` is JSON."""

    @abstractmethod
    def watermark_connection(self) -> C | None:
        """Where watermarks are written (None: the signal table's database is not streaming)."""

    @abstractmethod
    def connect(self) -> C:
        """A connection of its own, closed after a signal is sent (the source's may be streaming)."""

    @abstractmethod
    def error_text(self, exc: Exception) -> str: ...

    @abstractmethod
    def fixes(self) -> tuple[str, str]:
        """What the check's messages suggest when the table is absent, when it lacks a column."""

    def send_failed(self, exc: Exception) -> Exception | None:
        """The error ``cdc signal`` reports for a driver's error (None: the driver's own)."""
        return None

    def check(self, conn: C) -> None:
        """It exists with columns id, type, data; else say how to create it."""
        names = self.column_names(conn)
        absent_fix, columns_fix = self.fixes()
        if not names:
            raise SourceError(f"signal table {self.label} (signal.data.collection) does not exist", fix=absent_fix)
        missing = [c for c in SIGNAL_COLUMNS if c not in names]
        if missing:
            raise SourceError(f"signal table {self.label} lacks column(s) {', '.join(missing)}; it has "
                              f"{', '.join(names)}", fix=columns_fix)

    def watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        """A chunk's window opening or closing: ``<chunk id>-open`` / ``-close`` rows (Debezium's ids)."""
        suffix = "open" if kind.endswith("open") else "close"
        try:
            conn = self.watermark_connection()
            if conn is None:
                raise ChunkError("the signal table's database is not streaming")
            self.insert(conn, f"{chunk_id}-{suffix}", kind, json.dumps(watermark_data(kind, data)))
        except self.errors as exc:
            raise ChunkError(f"cannot write the {suffix} watermark into {self.where}: {self.error_text(exc)}") from None

    def send(self, id_: str, type_: str, data: dict[str, Any]) -> str:
        """A signal sent with ``cdc signal``, on a connection of its own; where it went."""
        conn = self.connect()
        try:
            self.check(conn)
            self.insert(conn, id_, type_, json.dumps(data))
        except self.errors as exc:
            failure = self.send_failed(exc)
            if failure is None:
                raise
            raise failure from None
        finally:
            conn.close()
        return f"signal table {self.where}"
