"""Offset stores: where a pipeline keeps the source position it may resume from.

An offset is a small JSON-able dict (Debezium-shaped). It is saved only after the sink has
acknowledged every event before it (the engine makes sure of that). The file store writes a
temporary file, fsyncs it and renames it over the old one, so a crash leaves the old or the new
offsets, never half of either; a file that cannot be parsed is an error naming it (we never
silently start from scratch, which would re-snapshot or lose the position).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

import orjson

from cdc.core.errors import OffsetStoreError

FORMAT_VERSION = 1


class OffsetStore(Protocol):
    def load(self) -> dict[str, Any] | None: ...

    def save(self, offset: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class MemoryOffsetStore:
    def __init__(self, offset: dict[str, Any] | None = None) -> None:
        self.offset = offset

    def load(self) -> dict[str, Any] | None:
        return self.offset

    def save(self, offset: dict[str, Any]) -> None:
        self.offset = dict(offset)

    def close(self) -> None:
        pass


class FileOffsetStore:
    """Offsets of one or more pipelines in one JSON file, keyed by pipeline name."""

    def __init__(self, path: str | Path, name: str) -> None:
        self.path = Path(path)
        self.name = name

    def _read_all(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise OffsetStoreError(f"cannot read offset file {self.path}: {exc.strerror}") from None
        try:
            data = orjson.loads(raw)
            if not isinstance(data, dict) or not isinstance(data.get("offsets"), dict):
                raise ValueError("expected {\"version\": 1, \"offsets\": {...}}")
        except ValueError as exc:
            raise OffsetStoreError(
                f"offset file {self.path} is corrupt ({exc})",
                fix=(
                    "restore it from a backup, or move it away to start over "
                    "(a new start follows snapshot.mode and may re-read or skip changes)"
                ),
            ) from None
        return data["offsets"]

    def load(self) -> dict[str, Any] | None:
        return self._read_all().get(self.name)

    def save(self, offset: dict[str, Any]) -> None:
        offsets = self._read_all()
        offsets[self.name] = offset
        data = orjson.dumps({"version": FORMAT_VERSION, "offsets": offsets}, option=orjson.OPT_INDENT_2)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            _fsync_dir(self.path.parent)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def close(self) -> None:
        pass


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
