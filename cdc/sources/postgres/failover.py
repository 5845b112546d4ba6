"""Failover slots (slot.failover, PostgreSQL 17+) and reading from a standby (PostgreSQL 16+): what the server
must offer, checked at the start, with the fix.

    slot.failover=true    the slot is created with FAILOVER (an existing one of this pipeline is altered), so
                          that standbys with sync_replication_slots keep a copy and a promoted one carries on;
                          warned while the primary names no standby in synchronized_standby_slots, or one
                          listed there is missing or disconnected (the stream then waits for it)
    a standby             slot and snapshot on it; hot_standby_feedback warned about (without it the primary
                          may vacuum catalog rows the slot needs, and the standby invalidates it); failover
                          slots are the primary's only; a slot synchronised from the primary is usable once
                          the standby is promoted (retried until then)
"""
from __future__ import annotations

import json
import logging

import psycopg

from cdc.core.errors import RetriableSourceError, SourceError
from cdc.core.quoting import sql_literal
from cdc.sources.postgres.connection import one
from cdc.sources.postgres.server import ServerInfo

log = logging.getLogger(__name__)

FAILOVER_SINCE = 170000
STANDBY_SINCE = 160000


def synced_copy(conn: psycopg.Connection, slot: str) -> bool:
    """Whether ``slot`` is the copy a standby keeps of its primary's failover slot (pg_replication_slots.synced,
    PostgreSQL 17; to_jsonb: the columns each version has)."""
    row = conn.execute("SELECT to_jsonb(s)::text FROM pg_replication_slots s WHERE slot_name = %s",
                       (slot,)).fetchone()
    return row is not None and bool(json.loads(row[0]).get("synced"))


def version_text(version: int) -> str:
    return f"{version // 10000}.{version % 10000}"


def check(conn: psycopg.Connection, server: ServerInfo, slot: str, *, failover: bool) -> None:
    """The server can serve this pipeline's slot as configured (module docstring); warnings logged."""
    if server.standby:
        _check_standby(conn, server, slot, failover=failover)
    elif failover:
        _check_failover(conn, server)


def _check_standby(conn: psycopg.Connection, server: ServerInfo, slot: str, *, failover: bool) -> None:
    if server.version < STANDBY_SINCE:
        raise SourceError(
            f"database.hostname names a standby (in recovery) of PostgreSQL {version_text(server.version)}: logical "
            "decoding on a standby needs PostgreSQL 16 or later",
            fix="point database.hostname at the primary, or upgrade the standby (and its primary) to 16 or later")
    if synced_copy(conn, slot):
        raise RetriableSourceError(
            f"replication slot {slot!r} on this standby is the copy it keeps of the primary's failover slot: it "
            "can be read once the standby is promoted (cdc retries meanwhile)",
            fix="promote the standby (pg_ctl promote, or SELECT pg_promote();) if the primary failed; else point "
                "database.hostname back at the primary")
    if failover:
        raise SourceError(
            "slot.failover=true, but database.hostname names a standby: failover slots are created on the primary "
            "(the standbys keep copies of them)",
            fix="point database.hostname at the primary to have a failover slot; or set slot.failover=false to read "
                "from this standby (its slot lives on this standby only)")
    feedback = one(conn, "SHOW hot_standby_feedback")[0]
    primary_slot = one(conn, "SHOW primary_slot_name")[0]
    if feedback != "on" or not primary_slot:
        log.warning(
            "reading from a standby with hot_standby_feedback=%s and primary_slot_name=%s: the primary may remove "
            "catalog rows that slot %s still needs, and the standby then invalidates the slot (the pipeline stops "
            "and must snapshot again); fix: on the standby ALTER SYSTEM SET hot_standby_feedback = on; and set "
            "primary_slot_name to a physical slot of the primary (SELECT pg_create_physical_replication_slot(...) "
            "there), then SELECT pg_reload_conf();", feedback, sql_literal(primary_slot or ""), slot)
    log.info("reading from a standby (PostgreSQL %s): slot %s and the snapshot are this standby's; the publication "
             "is the primary's", version_text(server.version), slot)


def _check_failover(conn: psycopg.Connection, server: ServerInfo) -> None:
    if server.version < FAILOVER_SINCE:
        raise SourceError(
            f"slot.failover=true needs PostgreSQL 17 or later (failover slots); this server is "
            f"{version_text(server.version)}",
            fix="set slot.failover=false (after a failover the pipeline then needs a new snapshot), or upgrade to 17")
    listed = [name.strip() for name in one(conn, "SHOW synchronized_standby_slots")[0].split(",") if name.strip()]
    setup = ("on the standby: sync_replication_slots = on, hot_standby_feedback = on, primary_slot_name = a "
             "physical slot of this primary, and dbname in primary_conninfo; on this primary: "
             "synchronized_standby_slots = that physical slot")
    if not listed:
        log.warning("slot.failover=true, but this primary lists no standby in synchronized_standby_slots: cdc may "
                    "read changes no standby has yet, and after a failover the promoted standby's copy of the slot "
                    "may lag behind them (or not exist); fix: %s", setup)
        return
    rows = conn.execute("SELECT slot_name, active FROM pg_replication_slots WHERE slot_type = 'physical' "
                        "AND slot_name = ANY(%s)", (listed,)).fetchall()
    found: dict[str, bool] = {str(name): bool(active) for name, active in rows}
    problems = [f"{name} (no such physical slot)" if name not in found else f"{name} (no standby streams from it)"
                for name in listed if not found.get(name)]
    if problems:
        log.warning("slot.failover=true: synchronized_standby_slots lists %s: the stream waits until every standby "
                    "listed has received the changes; fix: %s (or take a standby that is gone out of "
                    "synchronized_standby_slots)", ", ".join(problems), setup)
        return
    log.info("slot.failover=true: standbys synchronise the slot through %s (check on each: SELECT slot_name, synced "
             "FROM pg_replication_slots)", ", ".join(listed))
