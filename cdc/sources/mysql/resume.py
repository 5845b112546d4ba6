"""Where a stored offset continues on the server at hand: by GTID, or by binlog file and position.

    the server has GTIDs (MariaDB always; MySQL with gtid_mode=ON), the offset holds some, and
    gtid.ignore.on.recovery is off:
        by GTID. The server sends every transaction the offset's set lacks, so the offset names the
        replication topology's transactions, not one server's files: a replica promoted in a failover
        (log_slave_updates, so that its binlog holds what it replicated) continues it. It must hold
        every transaction already delivered (else it is not caught up, or they were lost in the
        failover) and must not have purged one not delivered yet.
    else:
        by file and position, on the very server that wrote the offset; its file must still be there.

``gtid.source.includes`` / ``excludes`` narrow both checks to the sources whose transactions are captured.
Nothing here reads the binlog: the checks use what the server says of its GTIDs (read_server_gtids).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import pymysql

from cdc.core.errors import OffsetStoreError, SourceError
from cdc.sources.mysql.connection import ServerInfo
from cdc.sources.mysql.gtids import MariaDbGtids, MySqlGtids, Wanted, parse_gtids

log = logging.getLogger(__name__)

PURGED_FIX = ("set snapshot.mode=when_needed to take a new snapshot, and keep binlogs longer "
              "(binlog_expire_logs_seconds / expire_logs_days)")
LACKING_FIX = ("point the pipeline at a server of the topology that has them, or let this one catch up first; if they "
               "were lost for good, the events already sent for them describe changes this database does not have: "
               "take a new snapshot (snapshot.mode=when_needed, or move the offsets away)")


@dataclass(frozen=True)
class ServerGtids:
    """What a server says of its GTIDs."""

    mariadb: bool
    executed: str  # MySQL gtid_executed; MariaDB gtid_binlog_state (the last GTID per domain and server)
    purged: str | None  # MySQL gtid_purged; MariaDB the Gtid_list its oldest binlog starts with (None: unknown)


@dataclass(frozen=True)
class Resume:
    """How a stored offset continues here."""

    gtids: str | None = None  # open the binlog by GTID from these; None: by the offset's file and position
    gone: str | None = None  # why this server cannot continue the offset; None: it can
    fix: str = PURGED_FIX

    @property
    def by_gtid(self) -> bool:
        return self.gtids is not None

    @property
    def reaches(self) -> bool:
        return self.gone is None


def read_server_gtids(conn: pymysql.connections.Connection, info: ServerInfo) -> ServerGtids | None:
    """The server's GTIDs, or None when it has none (MySQL without gtid_mode=ON)."""
    if not info.gtid_mode:
        return None
    with conn.cursor() as cur:
        if not info.mariadb:
            cur.execute("SELECT @@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged")
            executed, purged = cur.fetchone()
            return ServerGtids(False, executed or "", purged or "")
        cur.execute("SELECT @@GLOBAL.gtid_binlog_state")
        state = cur.fetchone()[0] or ""
    return ServerGtids(True, state, _oldest_gtid_list(conn))


def _oldest_gtid_list(conn: pymysql.connections.Connection) -> str | None:
    """The GTID state MariaDB's oldest binlog starts with (its Gtid_list event): what was purged before it."""
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            files = [row[0] for row in cur.fetchall()]
            if not files:
                return None
            cur.execute(f"SHOW BINLOG EVENTS IN '{files[0]}' LIMIT 6")  # a file name: no quote in it
            for row in cur.fetchall():
                if row[2] == "Gtid_list":
                    return str(row[5])
    except pymysql.MySQLError as exc:  # a privilege short of BINLOG MONITOR: the server itself will say
        log.info("cannot read the oldest binlog's GTID list (%s): the server checks what it purged", exc)
    return None


def plan(offset: dict[str, object], server: ServerGtids | None, files: Callable[[], list[str]], wanted: Wanted, *,
         ignore_gtids: bool = False) -> Resume:
    """How ``offset`` continues on a server with these GTIDs (None: it has none) and binlog ``files``."""
    gtids = str(offset.get("gtids") or "").replace("\n", "").strip()
    if server is not None and gtids and not ignore_gtids:
        try:
            parse_gtids(gtids, server.mariadb)
        except ValueError as exc:
            raise OffsetStoreError(f"the GTIDs of the stored offset are not this server's kind: {exc}",
                                   fix="point the pipeline at the server it was capturing, or restore the offset "
                                       "file") from None
        try:
            resume = _mariadb(gtids, server, wanted) if server.mariadb else _mysql(gtids, server, wanted)
        except ValueError as exc:
            raise SourceError(f"cannot read the server's GTIDs: {exc}",
                              fix="set gtid.ignore.on.recovery=true to resume by binlog file and position (on the "
                                  "server that wrote the offset only)") from None
        if resume.gone is not None:  # where the offset stood, for the operator
            where = f"binlog {offset.get('file')}:{offset.get('pos')} of the server it was read from, GTIDs {gtids}"
            return Resume(resume.gtids, f"{resume.gone} (the stored offset: {where})", resume.fix)
        return resume
    file = offset.get("file")
    if file in files():
        return Resume()
    return Resume(gone=f"the binlog file {file} of the stored offset is no longer on the server (purged): changes "
                       f"since then cannot be read")


def _lacking(what: str) -> str:
    return (f"the server does not have transactions this pipeline delivered already ({what}): it has not caught up "
            "with the server the offset was written on, or they were lost when it took over")


def _purged(what: str) -> str:
    return (f"the server has purged binlogs holding transactions this pipeline has not delivered yet ({what}): "
            "changes since the stored offset cannot be read")


def _mysql(text: str, server: ServerGtids, wanted: Wanted) -> Resume:
    delivered = MySqlGtids.parse(text)
    executed, purged = MySqlGtids.parse(server.executed), MySqlGtids.parse(server.purged)
    lacking = delivered.only(wanted).minus(executed)
    if lacking:
        return Resume(text, gone=_lacking(f"GTIDs {lacking}"), fix=LACKING_FIX)
    missing = purged.only(wanted).minus(delivered)
    if missing:
        return Resume(text, gone=_purged(f"GTIDs {missing}"))
    # Sources not captured: only what the server has (it refuses a set with more of its own uuid than it
    # has); what it purged is asked for as read, as Debezium does for sources the offset does not know.
    unwanted = delivered.only(lambda source: not wanted(source))
    start = delivered.only(wanted).union(unwanted.minus(unwanted.minus(executed))).union(purged)
    return Resume(str(start))


def _mariadb(text: str, server: ServerGtids, wanted: Wanted) -> Resume:
    delivered = MariaDbGtids.parse(text).domains()
    state = MariaDbGtids.parse(server.executed)
    oldest = MariaDbGtids.parse(server.purged).domains() if server.purged is not None else {}
    known = {domain for domain, _ in state.last}
    start: list[str] = []
    lacking: list[str] = []
    purged: list[str] = []
    for domain, (source_server, seq) in sorted(delivered.items()):
        gtid = f"{domain}-{source_server}-{seq}"
        captured = wanted(f"{domain}-{source_server}")
        if not state.holds((domain, source_server, seq)):
            if captured:
                lacking.append(gtid)
            elif domain not in known:
                continue  # a domain this server never had, of a source not captured: not asked for
        first = oldest.get(domain)
        if captured and first is not None and first[1] > seq:
            purged.append(f"{gtid}, the oldest binlog starts after {domain}-{first[0]}-{first[1]}")
        start.append(gtid)
    for domain, (source_server, seq) in sorted(oldest.items()):
        if domain not in delivered and wanted(f"{domain}-{source_server}"):
            purged.append(f"domain {domain} up to {domain}-{source_server}-{seq}, none delivered")
    position = ",".join(start)
    if lacking:
        return Resume(position, gone=_lacking("GTIDs " + ",".join(lacking)), fix=LACKING_FIX)
    if purged:
        return Resume(position, gone=_purged("; ".join(purged)))
    return Resume(position)


def reopen_gtids(start: str, read: str | None, mariadb: bool) -> str:
    """The GTIDs to reopen a stream by, once ``read`` were read whole: MariaDB's position moves on to them; MySQL's
    set keeps what the plan added to the offset's (sources not captured, what the server purged)."""
    if mariadb:
        return read or start
    return str(MySqlGtids.parse(start).union(MySqlGtids.parse(read)))
