"""MariaDB 11.4's query-event status variables through python-mysql-replication 1.0.17, patched by
cdc.sources.mysql.binlog_compat. The events are real: copied byte for byte (header, body, CRC32) from
the binlog of a MariaDB 11.4.5 started by ``CDC_MARIADB_VERSION=11.4 scripts/mariadb.sh``, database
``shop``:

- ``CREATE TABLE plain (id int primary key)``: only codes the library knows (0, 1, 6, 4, 129).
- ``SET character_set_collations='utf8mb4=utf8mb4_uca1400_ai_ci'`` then ``CREATE TABLE items (...)
  CHARACTER SET utf8mb4``: code 131 (Q_CHARACTER_SET_COLLATIONS, 45 -> 2304) *before* code 4.
- ``SET binlog_alter_two_phase=ON`` then ``ALTER TABLE items ADD COLUMN qty int``: START ALTER
  (code 130, flags 2) and COMMIT ALTER (code 130, flags 4 + the START ALTER's sequence number 75).
- then ``ALTER TABLE items ADD UNIQUE KEY u (name)`` over duplicates: START ALTER and ROLLBACK ALTER
  (code 130, flags 8 + sequence number 77, error code 1062).
"""
from __future__ import annotations

import struct
import subprocess
import sys
from typing import Any

from pymysql.protocol import MysqlPacket
from pymysqlreplication.event import QueryEvent
from pymysqlreplication.packet import BinLogPacketWrapper

import cdc.sources.mysql.binlog  # noqa: F401 - applies the patch, as the MySQL source does
from cdc.sources.mysql import binlog_compat

PLAIN_DDL = bytes.fromhex(
    "d5d1076b0201000000730000007f3e000000002700000000000000040000230000000000010100002054000000000603"
    "737464042d002d002d0081440100000000000073686f7000435245415445205441424c4520706c61696e202869642069"
    "6e74207072696d617279206b657929f8d6439f"
)
CHARACTER_SET_COLLATIONS = bytes.fromhex(
    "d5d1076b0201000000a10000004a3f000000002700000000000000040000290000000000010100002054000000000603"
    "73746483012d000009042d002d002d0081460100000000000073686f7000435245415445205441424c45206974656d73"
    "2028696420696e74207072696d617279206b65792c206e616d6520766172636861722832302929204348415241435445"
    "522053455420757466386d6234fce6fbec"
)
START_ALTER = bytes.fromhex(
    "d5d1076b020100000069000000df400000000027000000000000000400001c0000000000010100002054000000000603"
    "737464042d002d002d00820273686f7000414c544552205441424c45206974656d732041444420434f4c554d4e207174"
    "7920696e74ff214cfd"
)
COMMIT_ALTER = bytes.fromhex(
    "d5d1076b02010000007a00000086410000000027000000000000000400002d0000000000010100002054000000000603"
    "737464042d002d002d00814a0100000000000082044b0000000000000073686f7000414c544552205441424c45206974"
    "656d732041444420434f4c554d4e2071747920696e742c3fbab6"
)
ROLLBACK_ALTER = bytes.fromhex(
    "d5d1076b020100000076000000c142000000002700000000000000042604240000000000010100002054000000000603"
    "737464042d002d002d0082084d0000000000000073686f7000414c544552205441424c45206974656d73204144442055"
    "4e49515545204b4559207520286e616d6529ba68874a"
)
CREATE_ITEMS = "CREATE TABLE items (id int primary key, name varchar(20)) CHARACTER SET utf8mb4"
ADD_QTY = "ALTER TABLE items ADD COLUMN qty int"
ADD_UNIQUE = "ALTER TABLE items ADD UNIQUE KEY u (name)"
_STATUS_LEN_AT = 19 + 11  # header, then thread id (4), exec time (4), db length (1), error code (2)


class _Ctl:
    charset = "utf8mb4"

    def _get_dbms(self) -> str:
        return "mariadb"


def parse(event: bytes) -> Any:
    """The event as the library builds it from the replication stream (an OK byte, then the event as
    the binlog holds it, CRC32 included)."""
    wrapper = BinLogPacketWrapper(
        MysqlPacket(b"\x00" + event, "utf8mb4"), {}, _Ctl(), (11, 4, 5), True, frozenset([QueryEvent]),
        None, None, None, None, False, False, False, False, False, False, None)
    return wrapper.event


def status_block(event: bytes) -> bytes:
    (length,) = struct.unpack_from("<H", event, _STATUS_LEN_AT)
    return event[19 + 13:19 + 13 + length]


def with_status_block(event: bytes, block: bytes) -> bytes:
    """The same event with another status block (lengths in the header and post-header fixed; the
    CRC32 is left stale: the stream does not verify it unless asked)."""
    old = status_block(event)
    body = event[19:19 + 11] + struct.pack("<H", len(block)) + block + event[19 + 13 + len(old):]
    return event[:9] + struct.pack("<I", 19 + len(body)) + event[13:19] + body


def test_the_recordings_hold_the_codes_the_library_does_not_know() -> None:
    assert status_block(CHARACTER_SET_COLLATIONS)[19:25] == bytes([131, 1, 45, 0, 0x00, 0x09])
    assert status_block(START_ALTER)[-2:] == bytes([130, 2])
    assert status_block(COMMIT_ALTER)[-10:] == bytes([130, 4]) + (75).to_bytes(8, "little")
    assert status_block(ROLLBACK_ALTER)[-10:] == bytes([130, 8]) + (77).to_bytes(8, "little")


def test_unpatched_library_dies_on_them() -> None:
    """What the patch is for: the library alone raises StatusVariableMismatch on 130 and 131 and
    reads the plain DDL (in a fresh interpreter, where cdc has not patched it)."""
    out = subprocess.run([sys.executable, "-c", _unpatched_script()], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.splitlines() == ["CREATE TABLE plain (id int primary key)"] + ["mismatch"] * 4


def _unpatched_script() -> str:
    """A child process that knows only the library and these bytes."""
    events = {"PLAIN_DDL": PLAIN_DDL, "CHARACTER_SET_COLLATIONS": CHARACTER_SET_COLLATIONS,
              "START_ALTER": START_ALTER, "COMMIT_ALTER": COMMIT_ALTER, "ROLLBACK_ALTER": ROLLBACK_ALTER}
    lines = [f"{name} = bytes.fromhex({data.hex()!r})" for name, data in events.items()]
    return "\n".join([
        "from pymysql.protocol import MysqlPacket",
        "from pymysqlreplication.event import QueryEvent",
        "from pymysqlreplication.exceptions import StatusVariableMismatch",
        "from pymysqlreplication.packet import BinLogPacketWrapper",
        "class Ctl:",
        "    charset = 'utf8mb4'",
        "    def _get_dbms(self): return 'mariadb'",
        "def parse(e):",
        "    return BinLogPacketWrapper(MysqlPacket(b'\\x00' + e, 'utf8mb4'), {}, Ctl(), (11, 4, 5), True,",
        "        frozenset([QueryEvent]), None, None, None, None, False, False, False, False, False, False,",
        "        None).event",
        *lines,
        "print(parse(PLAIN_DDL).query)",
        "for e in (CHARACTER_SET_COLLATIONS, START_ALTER, COMMIT_ALTER, ROLLBACK_ALTER):",
        "    try:",
        "        parse(e)",
        "        print('read')",
        "    except StatusVariableMismatch:",
        "        print('mismatch')",
    ])


def test_plain_ddl_reads_as_before() -> None:
    event = parse(PLAIN_DDL)
    assert (event.schema, event.query) == (b"shop", "CREATE TABLE plain (id int primary key)")
    assert (event.character_set_client, event.collation_connection, event.xid) == (45, 45, 0x144)
    assert not hasattr(event, "gtid_flags3") and not hasattr(event, "character_set_collations")


def test_character_set_collations_then_the_variables_after_it() -> None:
    event = parse(CHARACTER_SET_COLLATIONS)
    assert (event.schema, event.query) == (b"shop", CREATE_ITEMS)
    assert event.character_set_collations == [(45, 2304)]  # utf8mb4_general_ci -> utf8mb4_uca1400_ai_ci
    assert (event.character_set_client, event.collation_server, event.xid) == (45, 45, 0x146)


def test_two_phase_alter_start_commit_rollback() -> None:
    start, commit = parse(START_ALTER), parse(COMMIT_ALTER)
    assert start.query == commit.query == ADD_QTY and start.schema == commit.schema == b"shop"
    assert start.gtid_flags3 == binlog_compat.FL_START_ALTER_E1 and not hasattr(start, "start_alter_seq_no")
    assert (commit.gtid_flags3, commit.start_alter_seq_no, commit.xid) == (binlog_compat.FL_COMMIT_ALTER_E1, 75, 0x14A)
    rollback = parse(ROLLBACK_ALTER)
    assert (rollback.query, rollback.error_code) == (ADD_UNIQUE, 1062)
    assert (rollback.gtid_flags3, rollback.start_alter_seq_no) == (binlog_compat.FL_ROLLBACK_ALTER_E1, 77)


def test_an_unknown_code_skips_the_rest_of_the_status_block() -> None:
    block = status_block(CHARACTER_SET_COLLATIONS)
    assert block[19] == 131
    unknown = with_status_block(CHARACTER_SET_COLLATIONS, block[:19] + b"\xc8" + block[20:])
    event = parse(unknown)
    assert (event.schema, event.query) == (b"shop", CREATE_ITEMS)
    assert event.sql_mode == 0x54200000  # read before the unknown code (STRICT_TRANS_TABLES, ...)
    assert not hasattr(event, "character_set_client")  # after it: skipped, as MariaDB's reader does


def test_an_unknown_code_last_and_values_cut_short() -> None:
    block = status_block(PLAIN_DDL)
    for tail in (b"\xfe\x01\x02\x03",               # unknown, with a value
                 b"\x82\x04\x4b\x00",               # COMMIT ALTER flags, sequence number cut short
                 b"\x83\x02\x2d\x00\x00\x09",       # two collation pairs announced, one there
                 b"\x82"):                             # a code and nothing after it
        event = parse(with_status_block(PLAIN_DDL, block + tail))
        assert (event.schema, event.query) == (b"shop", "CREATE TABLE plain (id int primary key)"), tail
        assert event.xid == 0x144, tail


def test_patch_is_applied_once() -> None:
    read, advance = QueryEvent._read_status_vars_value_for_key, QueryEvent._advance_to_payload
    binlog_compat.patch_query_event_status_vars()
    assert (QueryEvent._read_status_vars_value_for_key, QueryEvent._advance_to_payload) == (read, advance)
