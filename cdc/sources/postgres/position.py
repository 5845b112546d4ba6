"""Where the PostgreSQL stream stands: a value object, its order, and its offset form.

    lsn         the end LSN of the last transaction delivered whole: streaming restarts there
    lsn_commit  inside a large transaction delivered in part: its commit LSN ...
    lsn_proc    ... and the LSN of the last change of it already delivered (skipped on restart)
    txId, ts_usec  the transaction's id and commit time (informative, as in Debezium)

An offset Debezium wrote (it has ``messageType``; cdc never writes that key) means something else by the
same keys: ``lsn_commit`` is the end LSN of the last transaction delivered whole (streaming restarts
there), ``lsn_proc`` the last change delivered, which belongs to the first transaction committed after
it unless that change was a COMMIT. Read so, cdc resumes where Debezium stopped, neither repeating its
last transaction nor skipping one (tests/integration/test_switch_from_debezium.py).

The offset is Debezium's shape plus what signals and snapshots keep next to it (``incremental``,
``blocking``, ``snapshot_progress``...), which this module leaves alone. An offset written by
another connector (a binlog position, an LSN of SQL Server) or by a newer cdc is refused here,
before anything is read with it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc.core.errors import OffsetStoreError
from cdc.sources.postgres.pgoutput import format_lsn

# Offsets carry no version key of their own (Debezium's shape); a future layout would add "v".
OFFSET_VERSION = 1
_FOREIGN_KEYS = {"file": "a MySQL/MariaDB binlog position", "commit_lsn": "a SQL Server LSN",
                 "databases": "a SQL Server position"}


@dataclass(frozen=True, order=True)
class PgPosition:
    lsn: int = 0
    lsn_commit: int | None = None
    lsn_proc: int | None = None
    tx_id: int | None = None
    ts_usec: int | None = None
    # Debezium's offset: lsn_proc lies in the first transaction committed after lsn (its commit LSN
    # is not in the offset), whose changes up to lsn_proc were delivered.
    proc_in_next: bool = False

    @property
    def inside_transaction(self) -> bool:
        return self.lsn_proc is not None

    @classmethod
    def from_offset(cls, offset: dict[str, Any]) -> PgPosition:
        for key, what in _FOREIGN_KEYS.items():
            if key in offset:
                raise OffsetStoreError(
                    f"the stored offset is {what} ({key}={offset[key]!r}), not a PostgreSQL LSN: it was written "
                    f"by another connector", fix="give this pipeline its own offset file (offset.storage.file."
                    "filename) or its own name")
        version = offset.get("v", OFFSET_VERSION)
        if not isinstance(version, int) or version > OFFSET_VERSION:
            raise OffsetStoreError(f"the stored offset has version {version!r}; this cdc reads version "
                                   f"{OFFSET_VERSION}", fix="upgrade cdc, or start over with a new offset file")
        if "messageType" in offset:
            return cls._from_debezium(offset)
        try:
            lsn_commit = int(offset["lsn_commit"]) if offset.get("lsn_commit") is not None else None
            lsn_proc = int(offset["lsn_proc"]) if offset.get("lsn_proc") is not None else None
            return cls(
                lsn=int(offset.get("lsn") or 0), lsn_commit=lsn_commit, lsn_proc=lsn_proc,
                tx_id=int(offset["txId"]) if offset.get("txId") is not None else None,
                ts_usec=int(offset["ts_usec"]) if offset.get("ts_usec") is not None else None,
                # handed over again before the transaction came (a Debezium offset taken over): see to_offset
                proc_in_next=lsn_proc is not None and lsn_commit is None,
            )
        except (TypeError, ValueError) as exc:
            raise OffsetStoreError(f"the stored offset {offset!r} is not a PostgreSQL position: {exc}",
                                   fix="restore the offset file, or delete it to start over") from None

    @classmethod
    def _from_debezium(cls, offset: dict[str, Any]) -> PgPosition:
        try:
            last = int(offset.get("lsn") or 0)
            commit = int(offset["lsn_commit"]) if offset.get("lsn_commit") is not None else None
            proc = int(offset["lsn_proc"]) if offset.get("lsn_proc") is not None else last
            tx_id = int(offset["txId"]) if offset.get("txId") is not None else None
            ts_usec = int(offset["ts_usec"]) if offset.get("ts_usec") is not None else None
        except (TypeError, ValueError) as exc:
            raise OffsetStoreError(f"the stored offset {offset!r} is not a PostgreSQL position: {exc}",
                                   fix="restore the offset file, or delete it to start over") from None
        if commit is None or offset.get("messageType") == "COMMIT" or proc <= commit:
            return cls(lsn=max(commit or 0, last), tx_id=tx_id, ts_usec=ts_usec)  # between transactions
        return cls(lsn=commit, lsn_proc=proc, tx_id=tx_id, ts_usec=ts_usec, proc_in_next=True)

    def to_offset(self) -> dict[str, Any]:
        offset: dict[str, Any] = {"lsn": self.lsn, "txId": self.tx_id, "ts_usec": self.ts_usec}
        if self.lsn_proc is not None:
            # lsn_commit None: the first transaction committed after lsn (proc_in_next), as read from Debezium
            offset["lsn_commit"] = self.lsn_commit
            offset["lsn_proc"] = self.lsn_proc
        return offset

    def __str__(self) -> str:
        text = format_lsn(self.lsn)
        if self.lsn_proc is not None and self.lsn_commit is not None:
            text += (f" (inside the transaction committed at {format_lsn(self.lsn_commit)}, "
                     f"after {format_lsn(self.lsn_proc)})")
        return text
