"""Reading the binlog with python-mysql-replication, by GTID or by file and position.

By GTID (``gtids`` given) the server sends every transaction the set lacks, whichever binlog files it
keeps them in: MySQL's COM_BINLOG_DUMP_GTID (``auto_position``), MariaDB's dump with
``@slave_connect_state`` (``is_mariadb=True``: the library then ignores ``log_file``/``log_pos``,
FACTS.md). By file and position, ``is_mariadb=False`` with ``resume_stream=True`` serves MariaDB too.
Heartbeats from the server make an idle stream return regularly, so the pipeline can flush and stop.
The library decodes a rows event only when its ``rows`` are read, so events of tables that
are not captured cost little.
"""
from __future__ import annotations

from typing import Any

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    GtidEvent,
    HeartbeatLogEvent,
    MariadbAnnotateRowsEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    RowsQueryLogEvent,
    XidEvent,
)
from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

from cdc.sources.mysql.binlog_compat import annotating, leave_reconnects_to_cdc, patch_query_event_status_vars
from cdc.sources.mysql.tls import CheckedConnection  # TLS as database.ssl.mode says

patch_query_event_status_vars()  # MariaDB 11's query-event status variables (binlog_compat.py)
leave_reconnects_to_cdc()  # a lost connection reopened where the delivered events end (binlog_compat.py)

ROW_EVENTS = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)
EVENTS = [
    QueryEvent, XidEvent, GtidEvent, MariadbGtidEvent, RotateEvent, HeartbeatLogEvent, RowsQueryLogEvent,
    MariadbAnnotateRowsEvent, TableMapEvent, *ROW_EVENTS,
]
# The library reports an event's body size; the header (19 bytes) and, with binlog_checksum, a
# CRC32 (4 bytes) frame it.
_HEADER = 19


def open_stream(connection: dict[str, Any], server_id: int, file: str, pos: int,
                heartbeat_s: float, *, statements: bool = False, gtids: str | None = None,
                mariadb: bool = False) -> BinLogStreamReader:
    """``statements``: also MariaDB's Annotate_rows events (include.query); ``gtids``: by GTID from that set
    (``mariadb``: a MariaDB position), else by ``file`` and ``pos``."""
    by_gtid = gtids is not None
    return BinLogStreamReader(
        connection_settings=connection,
        pymysql_wrapper=annotating(CheckedConnection) if statements and not by_gtid else CheckedConnection,
        server_id=server_id,
        log_file=None if by_gtid else file,
        log_pos=None if by_gtid else pos,
        resume_stream=True,
        auto_position=gtids,
        is_mariadb=by_gtid and mariadb,
        annotate_rows_event=statements,
        blocking=True,
        only_events=EVENTS,
        slave_heartbeat=heartbeat_s,
        enable_logging=False,
    )


def event_end(event: Any) -> int:
    """Position just after the event (where the next one starts)."""
    return int(event.packet.log_pos)


def event_start(event: Any, stream: BinLogStreamReader, default: int = 0) -> int:
    """Where the event starts in its file. MariaDB 11.4 writes end_log_pos 0 in the events of a transaction
    that went through the binlog cache (Annotate_rows, Table_map, Rows): for those ``default`` is taken
    (the transaction's start, as Debezium reports them there)."""
    end = int(event.packet.log_pos)
    if end == 0:
        return default
    checksum = 4 if getattr(stream, "_BinLogStreamReader__use_checksum", True) else 0
    return end - int(event.event_size) - _HEADER - checksum
