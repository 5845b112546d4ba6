"""Query-event status variables of newer MariaDB servers that python-mysql-replication 1.0.17 does
not know.

The library reads the status block of a query event one variable at a time and raises
``StatusVariableMismatch`` at the first code it does not know, which ends the stream. MariaDB 11.4
writes two such codes (seen in its binlog, see tests/unit/test_binlog_compat.py):

- 130 ``Q_GTID_FLAGS3``: one flags byte, and when it has ``FL_COMMIT_ALTER_E1`` (4) or
  ``FL_ROLLBACK_ALTER_E1`` (8) the 8-byte sequence number of the START ALTER it ends. Written for
  the START ALTER / COMMIT ALTER pair of an ALTER under ``binlog_alter_two_phase=ON`` (10.8+).
- 131 ``Q_CHARACTER_SET_COLLATIONS``: a count byte, then per entry the character set's default
  collation id and the collation ``@@character_set_collations`` maps it to (2 bytes each). Written
  (11.2+) when a statement resolves a character set through a non-empty
  ``@@character_set_collations``; MariaDB puts it *before* ``Q_CHARSET_CODE`` (4), not in code order.

Both are decoded (so that the variables after them, such as the charset, are still read); any other
code the library does not know makes the reader jump to the end of the status block, whose length the
event's post-header gives, as MariaDB's own reader does (``Query_log_event`` skips the rest of the
block at an unknown code). The schema and query after the block are then read by the library as
before. Nothing of the status block is used by cdc; only the stream must go on.
"""
from __future__ import annotations

from typing import Any

from pymysqlreplication import binlogstream
from pymysqlreplication.event import QueryEvent
from pymysqlreplication.exceptions import StatusVariableMismatch

Q_GTID_FLAGS3 = 130
Q_CHARACTER_SET_COLLATIONS = 131
FL_START_ALTER_E1 = 2
FL_COMMIT_ALTER_E1 = 4
FL_ROLLBACK_ALTER_E1 = 8

_PATCHED = "_cdc_status_vars_patched"


def _status_block_end(event: Any) -> int:
    return int(event._cdc_status_vars_end)


def _skip_to_end(event: Any) -> None:
    """Past the rest of the status block (the library's loop then stops there)."""
    remaining = _status_block_end(event) - event.packet.read_bytes
    if remaining > 0:
        event.packet.advance(remaining)


def _fits(event: Any, size: int) -> bool:
    return bool(event.packet.read_bytes + size <= _status_block_end(event))


def _read_mariadb_var(event: Any, key: int) -> bool:
    """Decode one of MariaDB's codes the library lacks; False if ``key`` is not one of them or its
    value would run past the block (then the caller skips the rest)."""
    if key == Q_GTID_FLAGS3:
        if not _fits(event, 1):
            return False
        flags = event.packet.read_uint8()
        event.gtid_flags3 = flags
        if flags & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
            if not _fits(event, 8):
                return False
            event.start_alter_seq_no = event.packet.read_uint64()
        return True
    if key == Q_CHARACTER_SET_COLLATIONS:
        if not _fits(event, 1):
            return False
        count = event.packet.read_uint8()
        if not _fits(event, 4 * count):
            return False
        event.character_set_collations = [
            (event.packet.read_uint16(), event.packet.read_uint16()) for _ in range(count)]
        return True
    return False


def patch_query_event_status_vars() -> None:
    """Teach ``QueryEvent`` MariaDB 11's status variables and to skip unknown ones. Idempotent."""
    if getattr(QueryEvent, _PATCHED, False):
        return
    advance_to_payload = QueryEvent._advance_to_payload
    read_known = QueryEvent._read_status_vars_value_for_key

    def _advance_to_payload(self: Any, known_post_header_len: int) -> int:
        # QueryEvent.__init__ reads status_vars_length, then calls this: the status block starts here.
        declared = advance_to_payload(self, known_post_header_len)
        self._cdc_status_vars_end = self.packet.read_bytes + self.status_vars_length
        return int(declared)

    def _read_status_vars_value_for_key(self: Any, key: int) -> None:
        if key in (Q_GTID_FLAGS3, Q_CHARACTER_SET_COLLATIONS):
            if not _read_mariadb_var(self, key):
                _skip_to_end(self)
            return
        try:
            read_known(self, key)
        except StatusVariableMismatch:  # raised before anything of the value is read
            _skip_to_end(self)

    QueryEvent._advance_to_payload = _advance_to_payload  # type: ignore[method-assign]
    QueryEvent._read_status_vars_value_for_key = _read_status_vars_value_for_key  # type: ignore[method-assign]
    setattr(QueryEvent, _PATCHED, True)


# ---- MariaDB's Annotate_rows events over a dump by file and position --------------------------------

COM_BINLOG_DUMP = 0x12
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02


def annotating(connection_class: type) -> type:
    """A pymysql connection class that asks for MariaDB's Annotate_rows events (the statement of each rows
    event, for include.query). MariaDB sends them only to a replica that sets this flag in its
    COM_BINLOG_DUMP request; python-mysql-replication sets it only when it dumps by GTID, so the request it
    writes by file and position gets the flag here (a MySQL server ignores it: it logs Rows_query events
    of its own, under binlog_rows_query_log_events)."""

    class AnnotatingConnection(connection_class):  # type: ignore[misc,valid-type]
        def _write_bytes(self, data: bytes) -> None:
            # the request: a 4-byte length, the command, the 4-byte position, then the 2-byte flags
            if len(data) > 10 and data[4] == COM_BINLOG_DUMP:
                flags = int.from_bytes(data[9:11], "little") | BINLOG_SEND_ANNOTATE_ROWS_EVENT
                data = data[:9] + flags.to_bytes(2, "little") + data[11:]
            super()._write_bytes(data)

    return AnnotatingConnection


def leave_reconnects_to_cdc() -> None:
    """Make a lost stream connection an error of the reader, which cdc's retry reopens itself.

    On a lost connection (2013, 2006) the library reconnects by itself, from the position it was opened
    at when it streams by GTID (``auto_position``): every event read since comes again (seen in the fault
    suite: each connection kill replayed the whole stream so far). cdc's reopen
    (streamer.Streamer._events) starts at the first transaction not read whole and skips the rows events
    of it already delivered, by GTID or by file and position alike."""
    binlogstream.MYSQL_EXPECTED_ERROR_CODES = []
