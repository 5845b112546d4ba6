"""Schema history: every DDL a source saw, with its position and resulting ``tableChanges``.

Sources whose log does not describe its own rows (MySQL's binlog) rebuild their schema on
start by replaying this history up to the stored offset. One record per line, in Debezium's
shape: ``{"source": {...}, "position": {...}, "databaseName": ..., "ddl": ..., "tableChanges": [...]}``.
The file store appends and fsyncs each record; a line that cannot be parsed is an error naming
the file and line (a wrong schema would decode rows into the wrong columns).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, Protocol

import orjson

from cdc.core.errors import SchemaHistoryError


class SchemaHistory(Protocol):
    def record(self, entry: dict[str, Any]) -> None: ...

    def entries(self) -> Iterator[dict[str, Any]]: ...

    def exists(self) -> bool: ...

    def close(self) -> None: ...


class MemorySchemaHistory:
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

    def record(self, entry: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as handle:
            handle.write(orjson.dumps(entry) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())

    def entries(self) -> Iterator[dict[str, Any]]:
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            return
        with handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    yield orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    if not line.endswith(b"\n"):
                        # A torn last line from a crash mid-write: the DDL it described was not
                        # acknowledged, so it will be read again from the log.
                        return
                    raise SchemaHistoryError(
                        f"schema history {self.path} line {number} is corrupt: {exc}",
                        fix="restore the file from a backup; a source cannot decode rows without it",
                    ) from None

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def close(self) -> None:
        pass
