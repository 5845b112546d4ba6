"""Timelines: how an offset written before a failover is read on the promoted standby.

A standby shares its primary's system identifier; promoted, it starts a new timeline, and its history
file says where each earlier timeline left off (the switch point: the end of the WAL it replayed from the
old primary). An LSN of the old primary up to that point is the same WAL here; past it, the old primary
wrote WAL this server never received, and the same LSNs here hold other transactions.

So offsets are stamped with the primary's timeline (``server_timeline``; none while reading a standby,
whose timeline may change under the stream), and an offset of another timeline is read here only if
that timeline is an ancestor of this server's:
    at or before the switch point   continued as it is (the failover slot's normal case)
    past it                         resumed at the switch point: nothing this server wrote is skipped;
                                    what cdc read from the old primary past it was lost in the failover
    not an ancestor                 refused: another branch of the cluster (the old primary after a
                                    failover, another promoted standby), whose LSNs mean other WAL
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import psycopg

from cdc.core.errors import OffsetStoreError
from cdc.sources.postgres.pgoutput import format_lsn, parse_lsn

log = logging.getLogger(__name__)

OFFSET_KEY = "server_timeline"
_INSIDE_KEYS = ("lsn_commit", "lsn_proc")  # a transaction delivered in part (position.py)


@dataclass(frozen=True)
class Timelines:
    current: int
    ends: dict[int, int] = field(default_factory=dict)  # ancestor timeline -> its switch point in this history

    @classmethod
    def parse_history(cls, current: int, content: str) -> Timelines:
        """A timeline history file: ``<timeline> <switch point> <reason>`` a line, ancestors first."""
        ends: dict[int, int] = {}
        for line in content.splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0].isdigit():
                ends[int(fields[0])] = parse_lsn(fields[1])
        return cls(current, ends)


def read(conn: psycopg.Connection) -> Timelines | None:
    """This server's timeline and its history, over a replication connection (IDENTIFY_SYSTEM, TIMELINE_HISTORY);
    None when the server does not answer them (offsets are then not stamped with a timeline)."""
    try:
        current = int(_first_row(conn, "IDENTIFY_SYSTEM")[1])
        if current == 1:
            return Timelines(1)
        content = _first_row(conn, f"TIMELINE_HISTORY {current}")[1]
    except (psycopg.Error, ValueError, IndexError) as exc:
        log.info("cannot read the server's timeline (%s): offsets are not tied to a timeline", exc)
        return None
    return Timelines.parse_history(current, content)


def _first_row(conn: psycopg.Connection, command: str) -> list[str]:
    result = conn.pgconn.exec_(command.encode())
    if result.status != psycopg.pq.ExecStatus.TUPLES_OK or result.ntuples < 1:
        raise psycopg.OperationalError(result.error_message.decode(errors="replace").strip() or command)
    return [(result.get_value(0, i) or b"").decode(errors="replace") for i in range(result.nfields)]


def resume_point(offset: dict[str, Any], timelines: Timelines | None) -> dict[str, Any]:
    """``offset``, or where it continues on this server after a failover (module docstring)."""
    stored = offset.get(OFFSET_KEY)
    if stored is None or timelines is None or int(stored) == timelines.current:
        return offset
    stored = int(stored)
    end = timelines.ends.get(stored)
    if end is None:
        raise OffsetStoreError(
            f"the stored offset was written on timeline {stored} of this cluster, which is not in the history of "
            f"this server (timeline {timelines.current}): this server is another branch of the cluster (the old "
            "primary after a failover, or another promoted standby), where the offset's LSN is other WAL",
            fix="point database.hostname at the server that was promoted from the one the pipeline read (the "
                "current primary); or, if this server is meant to replace it, take a new snapshot: move the offsets "
                "away (or give the pipeline a new name)")
    furthest = max(int(offset.get(key) or 0) for key in ("lsn", *_INSIDE_KEYS))
    if furthest <= end:
        log.info("the stored offset was written on timeline %d, which this server's history continues from %s "
                 "(a promoted standby): streaming on from it", stored, format_lsn(end))
        return offset
    log.warning(
        "the stored offset (%s, timeline %d) is past %s, where this server left timeline %d (it was promoted): the "
        "old primary wrote WAL this server never received. Streaming resumes at %s, so nothing this server wrote "
        "since is skipped; changes cdc read from the old primary past that point, if any, were lost in the failover "
        "and their events may be in the target. fix: set synchronized_standby_slots on the primary to the standby's "
        "physical slot, so that cdc never reads what the standby lacks", format_lsn(furthest), stored,
        format_lsn(end), stored, format_lsn(end))
    resumed = {key: value for key, value in offset.items() if key not in _INSIDE_KEYS}
    resumed.update(lsn=end, txId=None, ts_usec=None)
    return resumed
