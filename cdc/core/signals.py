"""Signals: instructions to a running pipeline, as Debezium defines them.

A signal is ``(id, type, data)``; ``data`` is a JSON object. They arrive through channels
named by ``signal.enabled.channels``:

    source   rows inserted into the signal table (``signal.data.collection``), read from the
             change stream itself, so a signal is ordered with the data around it
    file     ``signal.file``: one JSON object a line ({"id", "type", "data"}); the byte position
             read so far lives in the offset, so a line is acted on once
    kafka    ``signal.kafka.topic``: messages keyed by the pipeline's ``topic.prefix``, value
             {"type", "data"} (Debezium's Kafka channel); the next offset to read lives in ours

Types: ``execute-snapshot`` (``type`` incremental | blocking, ``data-collections`` regular
expressions, ``additional-conditions`` [{data-collection, filter}]), ``stop-snapshot``,
``pause-snapshot``, ``resume-snapshot``, ``log``. The source's own watermarks
(``snapshot-window-open`` / ``snapshot-window-close``) travel through the signal table too but
are not user signals. A malformed signal is logged with the reason and skipped: never fatal.
"""
from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol

from cdc.core.config import Config, Option
from cdc.core.errors import ConfigError

log = logging.getLogger(__name__)

EXECUTE_SNAPSHOT = "execute-snapshot"
STOP_SNAPSHOT = "stop-snapshot"
PAUSE_SNAPSHOT = "pause-snapshot"
RESUME_SNAPSHOT = "resume-snapshot"
LOG = "log"
WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"

SIGNAL_TYPES = (EXECUTE_SNAPSHOT, STOP_SNAPSHOT, PAUSE_SNAPSHOT, RESUME_SNAPSHOT, LOG)
WATERMARKS = (WINDOW_OPEN, WINDOW_CLOSE)
SNAPSHOT_TYPES = ("incremental", "blocking")
CHANNELS = ("source", "file", "kafka")
CHANNEL_PLUGINS = "cdc.signal_channels"  # entry point group of polled channels beyond the file (kafka)


def _channels(value: list[str]) -> str | None:
    known = [*CHANNELS, *(ep.name for ep in entry_points(group=CHANNEL_PLUGINS) if ep.name not in CHANNELS)]
    unknown = [c for c in value if c not in known]
    return f"unknown channel(s) {unknown}; known: {', '.join(known)}" if unknown else None


def _positive(value: int) -> str | None:
    return None if value > 0 else "must be greater than 0"


SIGNAL_OPTIONS: tuple[Option, ...] = (
    Option("signal.enabled.channels", list, ["source"], "Where signals are read from: source (the signal table), file.",
           validator=_channels),
    Option("signal.data.collection", str, None,
           "Signal table 'schema.table' with columns id, type, data; needed for incremental snapshots (watermarks)."),
    Option("signal.file", str, None, "File of signals, one JSON object {id, type, data} a line (channel 'file')."),
    Option("signal.kafka.topic", str, None,
           "Topic of signals (channel 'kafka'): key = topic.prefix, value {type, data}; "
           "one partition."),
    Option("signal.kafka.bootstrap.servers", str, None,
           "Brokers of the signal topic (default: kafka.bootstrap.servers)."),
    Option("incremental.snapshot.chunk.size", int, 1024, "Rows read per chunk of an incremental snapshot.",
           validator=_positive),
    Option("snapshot.resumable", bool, False,
           "Take the initial snapshot in primary-key chunks with its progress in the offset, so a killed "
           "process resumes from the last stored chunk; tables without a primary key are read whole."),
)


class SignalError(ValueError):
    """A signal that cannot be acted on; the message is the reason."""


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    data: dict[str, Any]
    channel: str = "source"


@dataclass(frozen=True)
class SnapshotRequest:
    """A parsed ``execute-snapshot``."""

    kind: str  # incremental | blocking
    patterns: tuple[str, ...]
    conditions: tuple[tuple[str, str], ...] = ()  # (data-collection regex, filter)
    surrogate_key: str | None = None

    def condition_for(self, table: str) -> str | None:
        filters = [f"({flt})" for pattern, flt in self.conditions if _full_match(pattern, table)]
        return " AND ".join(filters) if filters else None


def _full_match(pattern: str, name: str) -> bool:
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:
        return pattern == name


def parse_signal(id_: Any, type_: Any, data: Any, channel: str = "source") -> Signal:
    """Build a Signal from raw column values; raise SignalError naming what is wrong."""
    if not isinstance(type_, str) or not type_.strip():
        raise SignalError("the signal has no type")
    type_ = type_.strip()
    if type_ not in SIGNAL_TYPES and type_ not in WATERMARKS:
        raise SignalError(f"unknown signal type {type_!r}; known: {', '.join(SIGNAL_TYPES)}")
    if data is None or data == "":
        payload: Any = {}
    elif isinstance(data, (dict, list)):
        payload = data
    else:
        try:
            payload = json.loads(data)
        except (TypeError, ValueError) as exc:
            raise SignalError(f"data is not valid JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise SignalError(f"data must be a JSON object, got {type(payload).__name__}")
    return Signal(str(id_ if id_ is not None else ""), type_, payload, channel)


def parse_snapshot_request(signal: Signal) -> SnapshotRequest:
    data = signal.data
    kind = str(data.get("type") or "incremental").lower()
    if kind not in SNAPSHOT_TYPES:
        raise SignalError(f"snapshot type {data.get('type')!r} is not one of {', '.join(SNAPSHOT_TYPES)}")
    collections = data.get("data-collections")
    if isinstance(collections, str):
        collections = [collections]
    if not collections or not isinstance(collections, list) or not all(isinstance(c, str) and c for c in collections):
        raise SignalError("data-collections must be a non-empty list of table names or regular expressions")
    for pattern in collections:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SignalError(f"data-collections entry {pattern!r} is not a valid regular expression ({exc})") from None
    conditions: list[tuple[str, str]] = []
    raw = data.get("additional-conditions")
    if raw is not None:
        if not isinstance(raw, list):
            raise SignalError("additional-conditions must be a list of {data-collection, filter}")
        for entry in raw:
            if not isinstance(entry, dict) or not isinstance(entry.get("data-collection"), str) \
                    or not isinstance(entry.get("filter"), str) or not entry["filter"].strip():
                raise SignalError(f"additional-conditions entry {entry!r} needs data-collection and filter strings")
            conditions.append((entry["data-collection"], entry["filter"]))
    legacy = data.get("additional-condition")  # Debezium 1.x/2.0: one condition for every table
    if isinstance(legacy, str) and legacy.strip():
        conditions.extend((pattern, legacy) for pattern in collections)
    surrogate = data.get("surrogate-key")
    if surrogate is not None and (not isinstance(surrogate, str) or not surrogate):
        raise SignalError("surrogate-key must be a column name")
    return SnapshotRequest(kind, tuple(collections), tuple(conditions), surrogate)


def stop_patterns(signal: Signal) -> tuple[str, ...]:
    """Tables a stop-snapshot names; empty: all of them."""
    collections = signal.data.get("data-collections") or ()
    if isinstance(collections, str):
        collections = [collections]
    if not isinstance(collections, (list, tuple)) or not all(isinstance(c, str) for c in collections):
        raise SignalError("data-collections must be a list of table names or regular expressions")
    return tuple(collections)


def matching(patterns: tuple[str, ...], tables: list[str]) -> list[str]:
    """Captured tables matching any pattern, in the order of the patterns (then by name)."""
    out: list[str] = []
    for pattern in patterns:
        for table in sorted(tables):
            if table not in out and _full_match(pattern, table):
                out.append(table)
    return out


def new_id() -> str:
    return uuid.uuid4().hex


def watermark_data(kind: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A watermark row's data as Debezium writes it (the window's time), plus ``extra``."""
    key = "openWindowTimestamp" if kind == WINDOW_OPEN else "closeWindowTimestamp"
    return {key: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **(extra or {})}


# ---- file channel -----------------------------------------------------------------------------

class PolledChannel(Protocol):
    """A channel read between transactions; ``position`` (stored in the offset under ``offset_key``)
    says how far it was read, so a signal is acted on once."""

    offset_key: str
    position: int

    def poll(self) -> list[Signal]: ...

    def send(self, id_: str, type_: str, data: dict[str, Any]) -> str: ...

    def close(self) -> None: ...


def polled_channels(config: Config) -> list[PolledChannel]:
    """The file and Kafka channels that ``signal.enabled.channels`` names."""
    channels = config.get("signal.enabled.channels") or []
    out: list[PolledChannel] = []
    if "file" in channels:
        if config.get("signal.file"):
            out.append(FileChannel(Path(config.get("signal.file"))))
        else:
            log.warning("signal.enabled.channels names 'file' but signal.file is not set: no file signals")
    if "kafka" in channels and not config.get("signal.kafka.topic"):
        raise ConfigError("signal.enabled.channels names 'kafka' but signal.kafka.topic is not set",
                          fix="set signal.kafka.topic (and kafka.bootstrap.servers), or drop 'kafka' from the channels")
    plugins = {ep.name: ep for ep in entry_points(group=CHANNEL_PLUGINS)}
    for name in channels:
        if name in ("source", "file"):
            continue  # the source reads its signal table; the file channel is above
        if name not in plugins:
            raise ConfigError(f"signal.enabled.channels names {name!r}, which no installed plugin provides "
                              f"(installed: source, file, {', '.join(sorted(plugins)) or 'none'})",
                              fix=f"install the package that provides it (entry point group {CHANNEL_PLUGINS})")
        out.append(plugins[name].load()(config))  # e.g. kafka: cdc.kafka.signals (needs confluent-kafka)
    return out


@dataclass
class FileChannel:
    """Reads whole new lines of ``path`` from ``position`` (bytes); each is one signal."""

    path: Path
    position: int = 0
    offset_key: str = "signal_file_pos"
    _warned: bool = field(default=False, repr=False)

    def poll(self) -> list[Signal]:
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return []
        if size < self.position:
            log.warning("signal file %s shrank; reading it again from the start", self.path)
            self.position = 0
        if size == self.position:
            return []
        with open(self.path, "rb") as handle:
            handle.seek(self.position)
            chunk = handle.read(size - self.position)
        end = chunk.rfind(b"\n")
        if end < 0:
            return []  # a line still being written
        self.position += end + 1
        signals: list[Signal] = []
        for line in chunk[:end].splitlines():
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise SignalError("a line must be a JSON object {id, type, data}")
                signals.append(parse_signal(obj.get("id"), obj.get("type"), obj.get("data"), "file"))
            except (ValueError, SignalError) as exc:
                log.warning("skipping malformed signal in %s: %s: %r", self.path, exc, line[:200])
        return signals


    def send(self, id_: str, type_: str, data: dict[str, Any]) -> str:
        append_to_file(self.path, id_, type_, data)
        return f"signal file {self.path}"

    def close(self) -> None:
        pass


def append_to_file(path: str | Path, id_: str, type_: str, data: dict[str, Any]) -> None:
    line = json.dumps({"id": id_, "type": type_, "data": data}) + "\n"
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
