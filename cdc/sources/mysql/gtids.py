"""The set of transactions delivered so far, as each flavour writes it, for the offset's ``gtids``.

MariaDB's GTIDs are ``domain-server-sequence`` and its position is the last GTID per domain
(``gtid_binlog_pos``: ``0-1-12,1-2-7``). MySQL's are ``uuid:n`` and its set is intervals per
source uuid (``gtid_executed``: ``uuid:1-12``), merged by python-mysql-replication's ``GtidSet``.
Resuming is by file and position; the set tells users (and Debezium tooling) where we are.
"""
from __future__ import annotations

from pymysqlreplication.gtid import Gtid, GtidSet


class DeliveredGtids:
    def __init__(self, mariadb: bool, initial: str | None) -> None:
        self.mariadb = mariadb
        self._domains: dict[str, str] = {}
        self._set: GtidSet | None = None
        if mariadb:
            for part in (initial or "").split(","):
                part = part.strip()
                if part.count("-") >= 2:
                    self._domains[part.split("-", 1)[0]] = part
        else:
            self._set = GtidSet(initial or "")

    def add(self, gtid: str) -> None:
        if self.mariadb:
            self._domains[gtid.split("-", 1)[0]] = gtid
        else:
            assert self._set is not None
            self._set.merge_gtid(Gtid(gtid))

    def __str__(self) -> str:
        if self.mariadb:
            return ",".join(self._domains[d] for d in sorted(self._domains, key=int))
        return str(self._set)

    def text(self) -> str | None:
        return str(self) or None
