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

# Written into every offset cdc stores, beside Debezium's own keys (which Debezium reads by name, so it
# ignores this one): an offset without it was written by another connector -- a Debezium connector
# whose offsets file or topic this pipeline was pointed at -- and resuming from it moves that
# connector's position, so it is only taken with offset.takeover (cdc.pipeline.SourceOffsetStore).
WRITER_KEY = "writer"
WRITER = "cdc"
# Offsets that cdc wrote before WRITER_KEY existed carry the server's identity (PostgreSQL, MySQL).
_OWN_KEYS = (WRITER_KEY, "server_identity")


def written_by_cdc(offset: dict[str, Any]) -> bool:
    return any(key in offset for key in _OWN_KEYS)


def without_writer(offset: dict[str, Any] | None) -> dict[str, Any] | None:
    """The offset as its source wrote it (the writer mark is the store's business, not the source's)."""
    if offset is None or WRITER_KEY not in offset:
        return offset
    return {k: v for k, v in offset.items() if k != WRITER_KEY}


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


_MOVE_AWAY = ("restore it from a backup, or move it away to start over "
              "(a new start follows snapshot.mode and may re-read or skip changes)")


class FileOffsetStore:
    """Offsets of one or more pipelines in one JSON file, keyed by pipeline name."""

    def __init__(self, path: str | Path, name: str) -> None:
        self.path = Path(path)
        self.name = name

    def check(self) -> None:
        """Before a pipeline starts: the file can be read, and its folder takes new files (the offset is
        replaced by a rename), so a pipeline does not read its source only to fail at the first flush."""
        self._read_all()
        check_folder_writable(self.path)

    def _read_all(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            blocking = _file_in_the_way(self.path)
            if blocking is not None:
                raise OffsetStoreError(
                    f"cannot keep offsets in {self.path}: {blocking} is a file, not a folder", fix=_PATH_FIX) from None
            fix = ("offset.storage.file.filename names a folder: give it the path of a file in it"
                   if isinstance(exc, IsADirectoryError) else "make the file readable by the user running cdc")
            raise OffsetStoreError(f"cannot read offset file {self.path}: {exc.strerror or exc}", fix=fix) from None
        if not raw.strip():
            raise OffsetStoreError(f"offset file {self.path} is empty (cdc writes it whole or not at all)",
                                   fix=_MOVE_AWAY)
        if raw.startswith(b"\xac\xed"):  # a Java serialization stream
            raise OffsetStoreError(
                f"offset file {self.path} is Kafka Connect's (Debezium's FileOffsetBackingStore), not cdc's JSON",
                fix="set offset.storage=org.apache.kafka.connect.storage.FileOffsetBackingStore to resume from it "
                    "and keep it in Connect's format, or point offset.storage.file.filename at another file")
        try:
            data = orjson.loads(raw)
            if not isinstance(data, dict) or not isinstance(data.get("offsets"), dict):
                raise ValueError("expected {\"version\": 1, \"offsets\": {...}}")
            bad = [name for name, offset in data["offsets"].items() if not isinstance(offset, dict)]
            if bad:
                raise ValueError(f"the offset of {bad[0]!r} is not a JSON object")
        except ValueError as exc:
            raise OffsetStoreError(f"offset file {self.path} is corrupt ({exc})", fix=_MOVE_AWAY) from None
        version = data.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise OffsetStoreError(
                f"offset file {self.path} has format version {version!r}; this cdc reads version {FORMAT_VERSION}",
                fix="run the cdc version that wrote it, or move the file away to start over",
            )
        return data["offsets"]

    def load(self) -> dict[str, Any] | None:
        return self._read_all().get(self.name)

    def save(self, offset: dict[str, Any]) -> None:
        offsets = self._read_all()
        offsets[self.name] = offset
        write_atomically(self.path, orjson.dumps({"version": FORMAT_VERSION, "offsets": offsets},
                                                 option=orjson.OPT_INDENT_2))

    def close(self) -> None:
        pass


def check_folder_writable(path: Path) -> None:
    """The folder of an offset file takes new files (the file is replaced by a rename)."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=path.name + ".", suffix=".check", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OffsetStoreError(f"cannot write offsets next to {path}: {folder} does not take new files "
                               f"({exc.strerror or exc})", fix=_WRITE_FIX) from None


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: a temporary file, fsynced, renamed over it, the folder fsynced,
    so that a crash leaves the old or the new content, never half of either."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        tmp = None
        _fsync_dir(path.parent)
    except OSError as exc:
        raise OffsetStoreError(f"cannot store the offset in {path}: {exc.strerror or exc}", fix=_WRITE_FIX) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


_WRITE_FIX = ("make that folder writable by the user running cdc and check its disk has space, or move the "
              "offset file to a writable folder and point offset.storage.file.filename at it; what was not "
              "stored yet is read again on the next start")


_PATH_FIX = ("point offset.storage.file.filename (default: <sink.files.directory>/offsets.json) at a file in a "
             "folder, or sink.files.directory (--output) at a folder")


def _file_in_the_way(path: Path) -> Path | None:
    """The first folder of ``path`` that is a file, if any."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return parent
    return None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
