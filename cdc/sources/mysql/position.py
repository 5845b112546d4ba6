"""Where the binlog reader stands: a value object, its order, and its offset form (Debezium's).

    file, pos   where to reopen the binlog by file and position: after the last transaction delivered
                whole, or the start of a transaction delivered in part
    event, row  inside that transaction: rows events already delivered, rows of the next one (an offset
                without ``server_identity`` is Debezium's: ``event`` counts every event from the
                transaction's BEGIN or MariaDB GTID event on, as Debezium's connector does)
    gtid        cdc's: the GTID of that transaction, so that a resume by GTID skips inside the right one
    gtids       the transactions delivered whole (MariaDB gtid_binlog_pos / MySQL GTID set): where a
                resume by GTID starts, on whichever server of the topology
    server_id, ts_sec   of the last event, as Debezium writes them

An offset of another connector (an LSN) or of a newer cdc is refused before anything is read.
:func:`at_or_before` orders two positions as Debezium's history record comparator does: by GTIDs when
both have them (whichever server logged them), else by file and position (one server's).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from cdc.core.errors import OffsetStoreError
from cdc.sources.mysql.gtids import covers, parse_gtids

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
    gtid: str | None = None  # of the transaction event/row count into
    # Of a position read from a stored offset: the server whose file and position these are (None: Debezium's
    # offset, whose event counts are Debezium's); handed on until the first transaction read here.
    carried_identity: str | None = None
    carried: bool = False

    def key(self) -> tuple[int, str, int, int, int]:
        """Total order of positions: file number, position, then how far into the transaction."""
        index, file, pos = position_key(self.file, self.pos)
        return index, file, pos, self.event, self.row

    def __lt__(self, other: BinlogPosition) -> bool:
        return self.key() < other.key()

    @property
    def inside_transaction(self) -> bool:
        return bool(self.event or self.row)

    @property
    def debezium_counts(self) -> bool:
        """``event`` counts every event of the transaction (Debezium's offset), not its rows events."""
        return self.carried and self.carried_identity is None and self.inside_transaction

    def inside(self, file: str, pos: int, event: int, gtid: str | None = None) -> BinlogPosition:
        """The position after ``event`` rows events of the transaction ``gtid`` starting at ``file:pos``."""
        return replace(self, file=file, pos=pos, event=event, row=0, gtid=gtid, carried=False,
                       carried_identity=None)

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
            gtids = str(offset.get("gtids") or "").replace("\n", "").strip() or None
            parse_gtids(gtids)  # a set that cannot be read is refused here, not halfway through the stream
            return cls(file=str(offset["file"]), pos=int(offset.get("pos") or 4), event=int(offset.get("event") or 0),
                       row=int(offset.get("row") or 0), gtids=gtids, gtid=offset.get("gtid") or None,
                       server_id=int(offset["server_id"]) if offset.get("server_id") is not None else None,
                       ts_sec=int(offset["ts_sec"]) if offset.get("ts_sec") is not None else None,
                       carried_identity=offset.get("server_identity"), carried=True)
        except (TypeError, ValueError) as exc:
            raise OffsetStoreError(f"the stored offset {offset!r} is not a binlog position: {exc}",
                                   fix="restore the offset file, or delete it to start over") from None

    def to_offset(self) -> dict[str, Any]:
        offset = {"file": self.file, "pos": self.pos, "gtids": self.gtids, "event": self.event, "row": self.row,
                  "server_id": self.server_id, "ts_sec": self.ts_sec}
        if self.gtid and self.inside_transaction:
            offset["gtid"] = self.gtid
        if self.carried:  # not read here yet: the file, position and counts are still those of the stored offset
            offset["server_identity"] = self.carried_identity
        return offset

    def __str__(self) -> str:
        text = f"{self.file}:{self.pos}"
        return text + (f" (+{self.event} rows events, row {self.row})" if self.inside_transaction else "")


def at_or_before(recorded: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Whether position ``recorded`` (a schema history record's) is at or before ``desired`` (an offset), as
    Debezium's BinlogHistoryRecordComparator decides: by GTIDs when both have them; a position without GTIDs
    is older than one with (servers turn GTIDs on, rarely off); else by binlog file and position."""
    recorded_gtids, desired_gtids = recorded.get("gtids"), desired.get("gtids")
    if desired_gtids:
        return not recorded_gtids or covers(str(desired_gtids), str(recorded_gtids))
    if recorded_gtids:
        return False
    return position_key(str(recorded.get("file") or ""), int(recorded.get("pos") or 0)) <= \
        position_key(str(desired.get("file") or ""), int(desired.get("pos") or 0))
