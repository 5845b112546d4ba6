"""The pipeline's logical replication slot: looked at, waited for while another process releases it,
created (exporting a snapshot, or not; a failover slot with slot.failover), dropped.

A slot that exists although the pipeline has no stored offset may be another consumer's (Debezium's
default slot is named 'debezium'): it is refused unless ``slot.takeover``, since dropping it, or
confirming positions on it, would take that consumer's changes away.
"""
from __future__ import annotations

import logging
import select
import time

import psycopg
from psycopg import pq

from cdc.core.errors import SourceError
from cdc.core.quoting import sql_literal
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import pgoutput as po
from cdc.sources.postgres.connection import Connections, translate
from cdc.sources.postgres.replication import SlotInUseError, replication_error

log = logging.getLogger(__name__)


class ReplicationSlot:
    def __init__(self, name: str, connections: Connections, *, takeover: bool, max_retries: int,
                 retry_delay_s: float, failover: bool = False) -> None:
        self.name = name
        self.failover = failover  # slot.failover: standbys keep a copy (PostgreSQL 17+, checked in failover.py)
        self._connections = connections
        self._takeover = takeover
        self._max_retries = max_retries
        self._retry_delay_s = retry_delay_s

    def inspect(self, ours: bool) -> cat.SlotInfo:
        """The slot as the server has it; refused when it is not pgoutput's, or (``ours`` False: no stored
        offset says it is this pipeline's) when it may be another consumer's."""
        slot = cat.slot_info(self._connections.catalog(), self.name)
        if slot.exists and slot.plugin != "pgoutput":
            raise SourceError(f"slot {self.name!r} uses plugin {slot.plugin!r}, not pgoutput",
                              fix="give this pipeline another slot.name (that slot belongs to another consumer)")
        if slot.exists and not ours:
            self._refuse_foreign(slot)
        return slot

    def _refuse_foreign(self, slot: cat.SlotInfo) -> None:
        if self._takeover:
            log.warning("slot %s exists but this pipeline has no stored offset: taking it over (slot.takeover=true; "
                        "%s)", self.name, slot.describe())
            return
        raise SourceError(
            f"replication slot {self.name!r} exists ({slot.describe()}), but this pipeline has no stored offset, so "
            "it is not known to be this pipeline's: it may be another consumer's, such as a Debezium connector's",
            fix=f"give this pipeline its own slot.name; or, if the slot is this pipeline's and its offsets were lost, "
                f"drop it (SELECT pg_drop_replication_slot({sql_literal(self.name)});) or set slot.takeover=true "
                "to have cdc use it")

    def wait_free(self, slot: cat.SlotInfo) -> None:
        """A previous run of this pipeline may still be releasing the slot: wait a little."""
        info = slot
        for _ in range(self._max_retries):
            if info.active_pid is None:
                return
            log.warning("slot %s is active for PID %s; waiting %.1f s", self.name, info.active_pid,
                        self._retry_delay_s)
            time.sleep(self._retry_delay_s)
            info = cat.slot_info(self._connections.catalog(), self.name)
        if info.active_pid is not None:
            raise SlotInUseError(
                f"replication slot {self.name!r} is in use by another process (PID {info.active_pid})",
                fix="stop the other pipeline using it, or give this one another slot.name",
            )

    def acquire(self, slot: cat.SlotInfo) -> None:
        """The slot streamed from: once free, made a failover slot with slot.failover."""
        self.wait_free(slot)
        if self.failover:
            self.make_failover()

    def drop_for_snapshot(self, slot: cat.SlotInfo, why: str) -> None:
        """A snapshot needs a new slot, exporting it: the existing one goes, once free."""
        self.wait_free(slot)
        log.warning("slot %s exists but a snapshot is needed: %s", self.name, why)
        cat.drop_slot(self._connections.catalog(), self.name)

    def create(self, *, export: bool, temporary: bool, standby: bool = False) -> tuple[int, str | None]:
        """The slot made now: its consistent point, and the name of the snapshot it exports (``export``).
        A temporary slot cannot be a failover slot (initial_only's: it goes with the run anyway)."""
        conn = self._connections.replication()
        kind = "TEMPORARY " if temporary else ""
        options = [f"SNAPSHOT '{'export' if export else 'nothing'}'"]
        if self.failover and not temporary:
            options.append("FAILOVER")
        command = f'CREATE_REPLICATION_SLOT "{self.name}" {kind}LOGICAL pgoutput ({", ".join(options)})'
        result = _exec_waiting(conn, command, standby)
        if result.status != psycopg.pq.ExecStatus.TUPLES_OK:
            message = result.error_message.decode(errors="replace")
            if "already exists" in message:
                raise SourceError(f"replication slot {self.name!r} already exists: {message.strip()}",
                                  fix="another pipeline may use this slot.name; choose another")
            raise replication_error(message, self.name)
        lsn = po.parse_lsn((result.get_value(0, 1) or b"").decode())
        snapshot = result.get_value(0, 2)
        log.info("created replication slot %s at %s%s", self.name, po.format_lsn(lsn),
                 " (a failover slot)" if self.failover and not temporary else "")
        return lsn, snapshot.decode() if snapshot else None

    def make_failover(self) -> None:
        """slot.failover on a slot of this pipeline made without it (before the option was set): altered, once
        free (PostgreSQL 17+, on the primary: failover.check said so)."""
        conn = self._connections.catalog()
        found = conn.execute("SELECT failover FROM pg_replication_slots WHERE slot_name = %s", (self.name,)).fetchone()
        if found is None or found[0]:
            return
        result = self._connections.replication().pgconn.exec_(
            f'ALTER_REPLICATION_SLOT "{self.name}" (FAILOVER true)'.encode())
        if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
            raise replication_error(result.error_message.decode(errors="replace"), self.name)
        log.info("replication slot %s is now a failover slot (slot.failover=true)", self.name)

    def drop(self) -> None:
        """slot.drop.on.stop: the slot goes with the pipeline (its replication connection first, which holds it)."""
        self._connections.close_replication()
        cat.drop_slot(self._connections.catalog(), self.name)
        log.info("dropped replication slot %s (slot.drop.on.stop)", self.name)


# How long a slot's creation may wait for its consistent point before the log says why: until the transactions
# running now end; on a standby, also until the primary logs its running transactions (every 15 s while it writes,
# never while it is idle).
WAIT_NOTICE_S = 10.0


def _exec_waiting(conn: psycopg.Connection, command: str, standby: bool) -> pq.abc.PGresult:
    """``command``'s result, with a note in the log if it waits long."""
    pgconn = conn.pgconn
    pgconn.send_query(command.encode())
    started = time.monotonic()
    noticed = False
    while True:
        try:
            pgconn.consume_input()
        except psycopg.OperationalError as exc:  # the connection broke
            raise translate(exc) from None
        if not pgconn.is_busy():
            break
        if not noticed and time.monotonic() - started > WAIT_NOTICE_S:
            noticed = True
            if standby:
                log.warning("creating the slot on a standby waits for the primary to log its running transactions "
                            "(every 15 s while it writes); fix: run SELECT pg_log_standby_snapshot(); on the primary")
            else:
                log.warning("creating the slot waits for the transactions running now to end (see pg_stat_activity: "
                            "state 'idle in transaction' or a long query)")
        select.select([pgconn.socket], [], [], 1.0)
    result = pgconn.get_result()
    while pgconn.get_result() is not None:  # a command's results end with None
        pass
    if result is None:
        raise SourceError(f"the server did not answer {command}", fix="check the server's log")
    return result
