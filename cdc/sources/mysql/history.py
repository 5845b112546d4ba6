"""The schema history of a MySQL / MariaDB pipeline: the binlog does not describe its rows, so every DDL is
recorded with its position, and a restart rebuilds the schema from the records up to the stored offset.

    record(position, ddl, tableChanges)    one record (cdc.core.schema_history), the server's identity in it
    replay(offset)                         the records up to the offset into a new model; a newer snapshot's
                                           records replace what came before them
    refused: a record of another pipeline (topic.prefix), or of another server where positions are binlog
    files (a record and an offset with GTIDs are ordered by them, so a history written on the servers of one
    replication topology, before and after a failover, is one history); a last record a crash cut short when
    it may lie before the offset (its DDL would be missing)
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdc import registry
from cdc.config import Config
from cdc.core.errors import SchemaHistoryError
from cdc.core.schema_history import FileSchemaHistory, MemorySchemaHistory, SchemaHistory, history_kind, torn_position
from cdc.sources.mysql.connection import ServerInfo
from cdc.sources.mysql.ddl import MySqlSchema, history_record
from cdc.sources.mysql.position import at_or_before

log = logging.getLogger(__name__)


def open_history(config: Config) -> SchemaHistory:
    """The schema history store named by ``schema.history.internal``."""
    raw = config.get("schema.history.internal")
    kind = history_kind(raw)
    if kind == "memory":
        return MemorySchemaHistory()
    if kind == "file":
        path = config.get("schema.history.internal.file.filename")
        if not path:
            offsets = config.get("offset.storage.file.filename")
            directory = config.properties.get("sink.files.directory")
            base = Path(offsets).parent if offsets else Path(directory) if directory else Path(".")
            path = str(base / "schema-history.jsonl")
        return FileSchemaHistory(path)
    return registry.load(registry.SCHEMA_HISTORIES, kind)(config)


def describe(history: SchemaHistory) -> str:
    path = getattr(history, "path", None)
    topic = getattr(history, "topic", None)
    return str(path) if path else f"topic {topic}" if topic else type(history).__name__


class SchemaHistoryRecords:
    """One pipeline's records in its store: writes them, replays them, and refuses what is not its own."""

    def __init__(self, store: SchemaHistory, prefix: str) -> None:
        self.store = store
        self.prefix = prefix  # the pipeline's topic.prefix, the records' source.server
        self.server: ServerInfo | None = None  # set on connecting: records carry its identity
        self.last: dict[str, Any] | None = None  # the last position recorded (a restart does not record it twice)

    def record(self, position: dict[str, Any], database: str | None, ddl: str, changes: list[dict[str, Any]]) -> None:
        source = {"server": self.prefix}
        if self.server is not None:
            source["server_identity"] = self.server.identity
        self.store.record(history_record(source, position, database, ddl, changes))
        self.last = position

    def covers(self, position: dict[str, Any]) -> bool:
        """Whether a record at ``position`` would be at or before the last one stored: recorded already."""
        return self.last is not None and at_or_before(position, self.last)

    def exists(self) -> bool:
        return self.store.exists()

    def close(self) -> None:
        self.store.close()

    def require(self, offset: dict[str, Any], mode: str) -> None:
        """An offset without its history cannot decode rows (snapshot.mode=recovery rebuilds one)."""
        if self.store.exists() or mode == "recovery":
            return
        raise SchemaHistoryError(
            f"an offset is stored (binlog {offset.get('file')}:{offset.get('pos')}) but the schema history "
            f"{describe(self.store)} is missing or empty: rows cannot be decoded without it",
            fix="restore the history; or set snapshot.mode=recovery to rebuild it from the current tables "
                "(right only if no DDL ran since that position); or delete the offsets to take a new snapshot",
        )

    def replay(self, offset: dict[str, Any], new_schema: Callable[[], MySqlSchema], *,
               by_gtid: bool = False) -> MySqlSchema | None:
        """The schema at ``offset`` from the records before it; None without a history. ``by_gtid``: the stream
        resumes by GTID, so records of another server of the topology belong to the pipeline too."""
        if not self.store.exists():
            return None
        schema = new_schema()
        records = 0
        for entry in self.store.entries():
            position = entry.get("position") or {}
            self._check_owner(entry, offset, by_gtid)
            self.last = position  # records are appended in the order they were read
            if not at_or_before(position, offset):
                continue  # recorded, but after the offset: it will be read from the binlog again
            if position.get("snapshot_start"):
                schema = new_schema()  # a newer snapshot replaces what came before it
            schema.replay(entry)
            records += 1
        self._check_torn_tail(offset)
        log.info("schema rebuilt from %d history records up to %s:%s", records, offset["file"], offset["pos"])
        return schema

    def _check_torn_tail(self, offset: dict[str, Any]) -> None:
        """A history whose last record a crash cut short: harmless when that record lies after the stored
        offset (its DDL is read from the binlog again), else its DDL would be missing from the schema."""
        torn = self.store.torn_tail
        if torn is None:
            return
        position = torn_position(torn)
        if position is not None and not at_or_before(position, offset):
            log.info("the last record of the schema history %s is cut off (a crash while writing it); it lies "
                     "after the stored offset, so its DDL is read from the binlog again", describe(self.store))
            return
        where = (f"at {position.get('file')}:{position.get('pos')}, not after the stored offset"
                 if position is not None else "at a position that cannot be read")
        raise SchemaHistoryError(
            f"the last record of the schema history {describe(self.store)} is cut off, {where}: the DDL it holds "
            f"may already be behind the pipeline, and rows decoded without it would get the wrong columns",
            fix="restore the history file from a backup; or, if no DDL ran since the stored offset, move it away "
                "and set snapshot.mode=recovery; or move the offsets away too, to take a new snapshot")

    def _check_owner(self, entry: dict[str, Any], offset: dict[str, Any], by_gtid: bool) -> None:
        """A history written by another pipeline (another topic.prefix) would decode rows with the wrong
        tables: refuse it; and one of another server, unless the stream goes by GTID, which a promoted replica
        continues. (Server ids alone may differ legitimately: a replica's binlog carries the ids of the
        servers its events came from.)"""
        source = entry.get("source") or {}
        if self.server is not None:
            self.server.check_written_here(f"schema history {describe(self.store)}", source.get("server_identity"),
                                           SchemaHistoryError, topology=by_gtid)
        server = source.get("server")
        if server is not None and server != self.prefix:
            raise SchemaHistoryError(
                f"the schema history {describe(self.store)} was written for server {server!r} (server id "
                f"{(entry.get('position') or {}).get('server_id')}), but this pipeline is {self.prefix!r} reading "
                f"server id {offset.get('server_id')}",
                fix="give each pipeline its own schema.history.internal.file.filename, or delete the offsets to "
                    "take a new snapshot")
