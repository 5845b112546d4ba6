"""JSON-lines files, one per topic, under an output folder.

Each line is ``{"topic", "key", "value", "headers"}`` with key and value as the converter wrote
them (embedded JSON, not strings), so ``jq`` and Spark read them directly; headers as the header
converter wrote them: JSON embedded (``header.converter=...JsonConverter``), else as JSON strings
of their text (Connect's default SimpleHeaderConverter: ``"__debezium.newkey": "{\"id\":10}"``). ``flush`` writes
and fsyncs every file written since the last flush: only then may the engine store the offset.
"""
from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from cdc.config import Config, Option, positive
from cdc.core.encoded_rows import RecordPieces, write_spliced
from cdc.core.errors import SinkError
from cdc.core.header_converters import header_converter, headers_json
from cdc.core.private_files import file_mode, open_append
from cdc.core.records import EncodedRows, SinkRecord

_FOLDER_FIX = ("make sink.files.directory (--output) a folder the user running cdc can create and write, "
               "or point it at another one")

# Past this many files to sync in one flush, they are synced by a few threads at once: fsync releases the
# GIL and the file system commits concurrent syncs together (800 files: 0.14-0.34 s one after another,
# 0.1 s with 8 threads, on this machine's ext4). syncfs would be quicker still but syncs every file on
# the disk, a database's too, so its cost is not ours to choose.
_PARALLEL_SYNC_FROM = 8
_SYNC_THREADS = 8

_DISK_FIX = ("free space on that disk or make the folder writable, then run again: the events not yet stored are "
             "read again from the stored offset")

FILE_OPTIONS: tuple[Option, ...] = (
    Option("sink.files.directory", str, "out", "Folder of the JSON-lines files, one per topic."),
    Option("sink.files.fsync", bool, True, "fsync on every flush (turn off only for throw-away runs)."),
    Option("sink.files.max.open", int, 256, "Most event files kept open; past it those idle longest are closed "
           "(and opened again when their topic has records), so thousands of tables need no thousands of handles.",
           validator=positive),
    Option("sink.files.mode", str, "600", "File mode of the event files cdc creates (octal): readable by their owner "
           "only, as they hold the captured rows; 640 or 644 to share them.", validator=file_mode),
)


def record_line(record: SinkRecord, *, json_headers: bool) -> bytes:
    """One JSON line; key and value bytes are spliced in as they are (already JSON), headers as
    :func:`headers_json` writes them (``json_headers``: the header converter writes JSON)."""
    return (
        b'{"topic":"' + record.topic.encode() + b'","key":' + (record.key or b"null")
        + b',"value":' + (record.value if record.value is not None else b"null")
        + b',"headers":' + headers_json(record.headers, as_json=json_headers) + b"}\n"
    )


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line that a crash left half-written: it was never acknowledged, so its record
    is delivered again, and appending after it would glue two records into one line."""
    try:
        with open(path, "r+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            end = size
            while end > 0:
                start = max(0, end - (1 << 16))
                handle.seek(start)
                newline = handle.read(end - start).rfind(b"\n")
                if newline >= 0:
                    handle.truncate(start + newline + 1)
                    return
                end = start
            handle.truncate(0)
    except FileNotFoundError:
        return


class FileSink:
    name = "files"
    title = "File sink"
    options = FILE_OPTIONS

    def __init__(self, config: Config) -> None:
        config.declare(FILE_OPTIONS)
        self.directory = Path(config.get("sink.files.directory"))
        self.fsync = bool(config.get("sink.files.fsync"))
        self.mode = int(config.get("sink.files.mode"), 8)
        self.max_open: int = config.get("sink.files.max.open")
        self._dirty: set[str] = set()  # topics written since the last flush: only those are flushed and synced
        self._flushes = 0
        self._last_written: dict[str, int] = {}  # topic -> the flush that last synced it (which files are idle)
        self.json_headers = header_converter(config).writes_json
        self._files: dict[str, IO[bytes]] = {}
        self._syncers: ThreadPoolExecutor | None = None  # made on the first flush with many files to sync
        if self.directory.exists() and not self.directory.is_dir():
            raise SinkError(f"the output folder {self.directory} (sink.files.directory) is a file, not a folder",
                            fix="give sink.files.directory (--output) a folder's path; it is created when missing")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # Fail now, before anything is read from the source, rather than at the first event.
            probe, name = tempfile.mkstemp(prefix=".cdc-write-check.", dir=self.directory)
            os.close(probe)
            os.unlink(name)
        except OSError as exc:
            raise SinkError(f"cannot write to the output folder {self.directory} (sink.files.directory): "
                            f"{exc.strerror or exc}", fix=_FOLDER_FIX) from None

    def _file(self, topic: str) -> IO[bytes]:
        handle = self._files.get(topic)
        if handle is None:
            path = self.directory / f"{topic}.jsonl"
            try:
                _drop_torn_tail(path)
                handle = open_append(path, self.mode, buffering=1 << 20)
            except OSError as exc:
                if exc.errno == errno.ENAMETOOLONG:
                    raise SinkError(f"the topic {topic[:60]}... is {len(topic)} characters long: as a file name "
                                    f"({topic[:20]}....jsonl) it passes the file system's limit",
                                    fix="shorten topic.prefix, or route long topic names elsewhere with a transform "
                                        "(RegexRouter)") from None
                raise SinkError(f"cannot open {path}: {exc.strerror or exc}", fix=_FOLDER_FIX) from None
            self._files[topic] = handle
        return handle

    def write(self, records: Sequence[SinkRecord]) -> None:
        files = self._files
        dirty = self._dirty
        try:
            for record in records:
                handle = files.get(record.topic) or self._file(record.topic)
                dirty.add(record.topic)
                if record.headers is None and record.key is not None and record.value is not None:
                    # The common case, without concatenating the (schema-heavy) value first.
                    handle.write(b'{"topic":"' + record.topic.encode() + b'","key":' + record.key + b',"value":')
                    handle.write(record.value)
                    handle.write(b',"headers":null}\n')
                else:
                    handle.write(record_line(record, json_headers=self.json_headers))
        except OSError as exc:  # written past the file's buffer: a full disk shows here, not at flush
            raise SinkError(f"cannot write to {self.directory}: {exc.strerror or exc}", fix=_DISK_FIX) from None

    def write_encoded(self, pieces: RecordPieces, encoded: EncodedRows) -> None:
        """A batch of rows the codec encoded, as the lines ``write`` would give their records, in one write."""
        handle = self._files.get(pieces.topic) or self._file(pieces.topic)
        self._dirty.add(pieces.topic)
        line_end = b',"headers":' + headers_json(pieces.headers, as_json=self.json_headers) + b"}\n"
        start = b'{"topic":"' + pieces.topic.encode() + b'","key":'
        value_head, *value_middle, value_tail = pieces.value
        value_parts = pieces.value_parts(encoded)
        try:
            if pieces.key is None or encoded.keys is None:
                write_spliced(handle, [start + b'null,"value":' + value_head, *value_middle, value_tail + line_end],
                              value_parts)
                return
            key_head, key_tail = pieces.key
            write_spliced(handle, [start + key_head, key_tail + b',"value":' + value_head, *value_middle,
                                   value_tail + line_end], [encoded.keys, *value_parts])
        except OSError as exc:  # written past the file's buffer: a full disk shows here, not at flush
            raise SinkError(f"cannot write to {self.directory}: {exc.strerror or exc}",
                            fix=_DISK_FIX) from None

    def flush(self) -> None:
        """Flush and sync the files written since the last flush (not every file ever opened: with thousands
        of tables that cost grew with their number), then close the longest idle ones past sink.files.max.open."""
        self._flushes += 1
        handles = [self._files[topic] for topic in self._dirty]
        try:
            for handle in handles:
                handle.flush()
            if self.fsync:
                self._sync(handles)
        except OSError as exc:
            raise SinkError(f"cannot write to {self.directory}: {exc.strerror or exc}",
                            fix=_DISK_FIX) from None
        for topic in self._dirty:
            self._last_written[topic] = self._flushes
        self._dirty.clear()
        if len(self._files) > self.max_open:
            self._close_idle(len(self._files) - self.max_open // 2)

    def _sync(self, handles: list[IO[bytes]]) -> None:
        """fsync every handle; the first error is raised once all are done."""
        if len(handles) < _PARALLEL_SYNC_FROM:
            for handle in handles:
                os.fsync(handle.fileno())
            return
        if self._syncers is None:
            self._syncers = ThreadPoolExecutor(_SYNC_THREADS, thread_name_prefix="cdc-fsync")
        for _ in self._syncers.map(lambda handle: os.fsync(handle.fileno()), handles):
            pass

    def _close_idle(self, count: int) -> None:
        """Close the ``count`` files synced longest ago (all of them are clean after a flush)."""
        for topic in sorted(self._files, key=lambda t: self._last_written.get(t, 0))[:count]:
            self._files.pop(topic).close()

    def close(self) -> None:
        try:
            self._dirty.update(self._files)  # at the end, everything open is synced once more
            self.flush()
        finally:
            for handle in self._files.values():
                try:
                    handle.close()
                except OSError:
                    pass  # a full disk fails the buffered bytes again: flush() said so already
            self._files.clear()
            if self._syncers is not None:
                self._syncers.shutdown()
                self._syncers = None
