"""Where the binlog reader stands: a value object, its order, and its offset form (Debezium's).

    file, pos   where to reopen the binlog: after the last transaction delivered whole, or the
                start of a transaction delivered in part
    event, row  inside that transaction: rows events already delivered, rows of the next one
    gtids       the transactions delivered so far (MariaDB gtid_binlog_pos / MySQL GTID set)
    server_id, ts_sec   of the last event, as Debezium writes them

An offset of another connector (an LSN) or of a newer cdc is refused before anything is read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from cdc.core.errors import OffsetStoreError

OFFSET_VERSION = 1
_FOREIGN_KEYS = {"lsn": "a PostgreSQL LSN", "commit_lsn": "a SQL Server LSN", "databases": "a SQL Server position"}
_BINLOG_INDEX = re.compile(r"\.(\d+)$")


def position_key(file: str, pos: int) -> tuple[int, str, int]:
    """Sort key of a binlog position: files are numbered ``name.000042``."""
    match = _BINLOG_INDEX.search(file)
    return (int(match.group(1)) if match else 0, file, pos)


@dataclass(frozen=True)
class BinlogPosition:
    file: str
    pos: int
    event: int = 0
    row: int = 0
    gtids: str | None = None
    server_id: int | None = None
    ts_sec: int | None = None

    def key(self) -> tuple[int, str, int, int, int]:
        """Total order of positions: file number, position, then how far into the transaction."""
        index, file, pos = position_key(self.file, self.pos)
        return index, file, pos, self.event, self.row

    def __lt__(self, other: BinlogPosition) -> bool:
        return self.key() < other.key()

    @property
    def inside_transaction(self) -> bool:
        return bool(self.event or self.row)

    def inside(self, file: str, pos: int, event: int) -> BinlogPosition:
        """The position after ``event`` rows events of the transaction starting at ``file:pos``."""
        return replace(self, file=file, pos=pos, event=event, row=0)

    @classmethod
    def from_offset(cls, offset: dict[str, Any]) -> BinlogPosition:
        for key, what in _FOREIGN_KEYS.items():
            if key in offset:
                raise OffsetStoreError(
                    f"the stored offset is {what} ({key}={offset[key]!r}), not a binlog position: it was written "
                    "by another connector", fix="give this pipeline its own offset file (offset.storage.file."
                    "filename) or its own name")
        version = offset.get("v", OFFSET_VERSION)
        if not isinstance(version, int) or version > OFFSET_VERSION:
            raise OffsetStoreError(f"the stored offset has version {version!r}; this cdc reads version "
                                   f"{OFFSET_VERSION}", fix="upgrade cdc, or start over with a new offset file")
        if not offset.get("file"):
            raise OffsetStoreError(f"the stored offset {offset!r} names no binlog file",
                                   fix="restore the offset file, or delete it to start over")
        try:
            return cls(file=str(offset["file"]), pos=int(offset.get("pos") or 4), event=int(offset.get("event") or 0),
                       row=int(offset.get("row") or 0), gtids=offset.get("gtids") or None,
                       server_id=int(offset["server_id"]) if offset.get("server_id") is not None else None,
                       ts_sec=int(offset["ts_sec"]) if offset.get("ts_sec") is not None else None)
        except (TypeError, ValueError) as exc:
            raise OffsetStoreError(f"the stored offset {offset!r} is not a binlog position: {exc}",
                                   fix="restore the offset file, or delete it to start over") from None

    def to_offset(self) -> dict[str, Any]:
        return {"file": self.file, "pos": self.pos, "gtids": self.gtids, "event": self.event, "row": self.row,
                "server_id": self.server_id, "ts_sec": self.ts_sec}

    def __str__(self) -> str:
        text = f"{self.file}:{self.pos}"
        return text + (f" (+{self.event} rows events, row {self.row})" if self.inside_transaction else "")
