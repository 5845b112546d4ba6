"""Schema history: every DDL a source saw, with its position and resulting ``tableChanges``.

Sources whose log does not describe its own rows (MySQL's binlog) rebuild their schema on
start by replaying this history up to the stored offset. One record per line, in Debezium's
shape: ``{"source": {...}, "position": {...}, "databaseName": ..., "ddl": ..., "tableChanges": [...]}``.
The file store appends and fsyncs each record; a line that cannot be parsed is an error naming
the file and line (a wrong schema would decode rows into the wrong columns).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import orjson

from cdc.core.errors import SchemaHistoryError
from cdc.core.private_files import open_append

# Debezium's class names for schema history stores -> our plugin names.
HISTORY_CLASSES = {
    "io.debezium.storage.file.history.FileSchemaHistory": "file",
    "io.debezium.relational.history.FileDatabaseHistory": "file",
    "io.debezium.storage.kafka.history.KafkaSchemaHistory": "kafka",
    "io.debezium.relational.history.KafkaDatabaseHistory": "kafka",
    "io.debezium.relational.history.MemorySchemaHistory": "memory",
}


def history_kind(name: str) -> str:
    """``schema.history.internal`` as a store's name: file, memory, or a plugin's (cdc.schema_histories)."""
    return HISTORY_CLASSES.get(name, name)


class SchemaHistory(Protocol):
    # After entries(): the last record if a crash cut it short (a file store only), else None. Whether
    # it may be left out depends on the stored offset, which only the source knows.
    torn_tail: bytes | None

    def record(self, entry: dict[str, Any]) -> None: ...

    def entries(self) -> Iterator[dict[str, Any]]: ...

    def exists(self) -> bool: ...

    def close(self) -> None: ...


class MemorySchemaHistory:
    torn_tail: bytes | None = None

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def record(self, entry: dict[str, Any]) -> None:
        self.records.append(entry)

    def entries(self) -> Iterator[dict[str, Any]]:
        return iter(list(self.records))

    def exists(self) -> bool:
        return bool(self.records)

    def close(self) -> None:
        pass


class FileSchemaHistory:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._tail_checked = False
        self.torn_tail: bytes | None = None

    def record(self, entry: dict[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self._tail_checked:
                _drop_torn_tail(self.path)  # else the new record would be glued to a half-written one
                self._tail_checked = True
            with open_append(self.path) as handle:  # 0600: DDL can name what is private
                handle.write(orjson.dumps(entry) + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise SchemaHistoryError(
                f"cannot write the schema history {self.path}: {exc.strerror or exc}",
                fix="make its folder writable by the user running cdc and check the disk has space, or set "
                    "schema.history.internal.file.filename to a file in a writable folder (moving the history there "
                    "with it)",
            ) from None

    def entries(self) -> Iterator[dict[str, Any]]:
        self.torn_tail = None
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SchemaHistoryError(f"cannot read the schema history {self.path}: {exc.strerror or exc}",
                                     fix=_READ_FIX if not isinstance(exc, IsADirectoryError) else
                                     "schema.history.internal.file.filename names a folder: give it the path "
                                     "of the history file") from None
        with handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    entry = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    if not line.endswith(b"\n"):
                        # A torn last line from a crash mid-write: left out only if its DDL lies after the
                        # stored offset (then it is read from the log again); the source decides.
                        self.torn_tail = line
                        return
                    raise SchemaHistoryError(f"schema history {self.path} line {number} is corrupt: {exc}",
                                             fix=_CORRUPT_FIX) from None
                if not isinstance(entry, dict) or not isinstance(entry.get("position"), dict):
                    raise SchemaHistoryError(
                        f"schema history {self.path} line {number} is no schema history record (a JSON object "
                        "with source, position, ddl and tableChanges): "
                        f"{line[:80].decode(errors='replace').rstrip()!r}",
                        fix=_CORRUPT_FIX,
                    )
                yield entry

    def exists(self) -> bool:
        try:
            return self.path.stat().st_size > 0
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise SchemaHistoryError(f"cannot read the schema history {self.path}: {exc.strerror or exc}",
                                     fix=_READ_FIX) from None

    def close(self) -> None:
        pass


_READ_FIX = "make the file and its folder readable by the user running cdc"
_CORRUPT_FIX = ("restore the file from a backup (rows cannot be decoded without it); or move it away and set "
                "snapshot.mode=recovery to rebuild it from the tables as they are now (right only if no DDL ran "
                "since the stored offset); or move the offsets away too, to start over with a new snapshot")


def _drop_torn_tail(path: Path) -> None:
    """Before appending: a last line without its newline is ended if it is a whole record (an edited
    file), and cut if it is not (a crash mid-write: its DDL is read from the log again)."""
    try:
        with open(path, "r+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            end = size
            start = 0
            while end > 0:
                chunk_start = max(0, end - (1 << 16))
                handle.seek(chunk_start)
                newline = handle.read(end - chunk_start).rfind(b"\n")
                if newline >= 0:
                    start = chunk_start + newline + 1
                    break
                end = chunk_start
            handle.seek(start)
            tail = handle.read()
            try:
                orjson.loads(tail)
            except orjson.JSONDecodeError:
                handle.truncate(start)
                return
            handle.seek(0, os.SEEK_END)
            handle.write(b"\n")
    except FileNotFoundError:
        return


def torn_position(torn: bytes) -> dict[str, Any] | None:
    """The position of a cut-off history record, if the cut left its ``position`` object whole."""
    start = torn.find(b'"position":{')
    end = torn.find(b"}", start) if start >= 0 else -1
    if end < 0:
        return None
    try:
        position = orjson.loads(torn[start + len(b'"position":'):end + 1])
    except orjson.JSONDecodeError:
        return None
    return position if isinstance(position, dict) else None
