"""The server a run talks to: its version (what the protocol may ask of it), whether it is a standby, and its
identity (what an offset is stamped with, since an LSN means nothing in another cluster or database).

The identity is the cluster's system identifier and the database: a standby shares its primary's, so an
offset stays valid on a standby promoted in a failover, while another cluster's is refused. The primary's
timeline is stamped too (timeline.py): it tells a promoted standby, where the offset continues, from
another branch of the same cluster, where it does not.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from cdc.core.errors import OffsetStoreError
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import timeline
from cdc.sources.postgres.connection import one


@dataclass(frozen=True)
class ServerInfo:
    version: int  # server_version_num
    identity: str | None  # None: this user may not read it (offsets are then neither stamped nor checked)
    standby: bool = False  # in recovery: logical decoding on a standby (PostgreSQL 16+)
    timelines: timeline.Timelines | None = None  # a primary's; None on a standby (its timeline may change)

    @classmethod
    def read(cls, conn: psycopg.Connection, user: str, dbname: str,
             replication: Callable[[], psycopg.Connection] | None = None) -> ServerInfo:
        """Checked first: a server that cannot serve logical replication fails here, with the fix.
        ``replication``: the replication connection, to read the timeline from."""
        version = cat.server_checks(conn, user)
        standby = bool(one(conn, "SELECT pg_is_in_recovery()")[0])
        timelines = timeline.read(replication()) if replication is not None and not standby else None
        return cls(version, cat.server_identity(conn, dbname), standby, timelines)

    def same_server(self, other: ServerInfo) -> bool:
        """Whether ``other`` (read again after a reconnection) is this server, as it was."""
        return (self.identity, self.standby, self.timelines) == (other.identity, other.standby, other.timelines)

    def describe(self) -> str:
        where = "a standby" if self.standby else "a primary"
        if self.timelines is not None:
            where += f" on timeline {self.timelines.current}"
        return f"{self.identity or 'a server of unknown identity'}, {where}"

    def stamp(self, offset: dict[str, Any]) -> dict[str, Any]:
        """``offset``, marked as this server's."""
        if self.identity is not None:
            offset["server_identity"] = self.identity
            if self.timelines is not None:
                offset[timeline.OFFSET_KEY] = self.timelines.current
        return offset

    def check(self, offset: dict[str, Any]) -> dict[str, Any]:
        """Refuse an offset another server's run stored; return where it continues here (after a failover,
        timeline.resume_point)."""
        stored = offset.get("server_identity")
        if stored is None or self.identity is None:
            return offset  # written before servers were named (or by Debezium): taken as it is
        if stored != self.identity:
            raise OffsetStoreError(
                f"the stored offset was written on another server ({stored}) than this one ({self.identity}): its "
                "LSN means nothing here",
                fix="point the pipeline at the database it was capturing; or, if this one replaced it (a restore, a "
                    "new cluster), take a new snapshot: move the offsets away (or give the pipeline a new name)")
        return timeline.resume_point(offset, self.timelines)
