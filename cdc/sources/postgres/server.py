"""The server a run talks to: its version (what the protocol may ask of it) and its identity (what an
offset is stamped with, since an LSN means nothing in another cluster or database)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from cdc.core.errors import OffsetStoreError
from cdc.sources.postgres import catalog as cat


@dataclass(frozen=True)
class ServerInfo:
    version: int  # server_version_num
    identity: str | None  # None: this user may not read it (offsets are then neither stamped nor checked)

    @classmethod
    def read(cls, conn: psycopg.Connection, user: str, dbname: str) -> ServerInfo:
        """Checked first: a server that cannot serve logical replication fails here, with the fix."""
        version = cat.server_checks(conn, user)
        return cls(version, cat.server_identity(conn, dbname))

    def stamp(self, offset: dict[str, Any]) -> dict[str, Any]:
        """``offset``, marked as this server's."""
        if self.identity is not None:
            offset["server_identity"] = self.identity
        return offset

    def check(self, offset: dict[str, Any]) -> None:
        """Refuse an offset another server's run stored."""
        stored = offset.get("server_identity")
        if stored is None or self.identity is None or stored == self.identity:
            return  # written before servers were named (or by Debezium): taken as it is
        raise OffsetStoreError(
            f"the stored offset was written on another server ({stored}) than this one ({self.identity}): its "
            "LSN means nothing here",
            fix="point the pipeline at the database it was capturing; or, if this one replaced it (a restore, a new "
                "cluster), take a new snapshot: move the offsets away (or give the pipeline a new name)")
