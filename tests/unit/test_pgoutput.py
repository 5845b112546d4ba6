"""The pgoutput decoder on bytes recorded from a real PostgreSQL (tests/fixtures)."""
from __future__ import annotations

import struct

import pytest

from cdc.sources.postgres import pgoutput as po
from tests.fixtures.pgoutput_samples import BINARY, PROTO1, STREAMED


def decoded(samples: list[str], streamed: bool = False) -> list[po.Message]:
    out = []
    for sample in samples:
        data = bytes.fromhex(sample)
        out.append(po.decode(data, in_stream=streamed and chr(data[0]) not in "SEcA"))
    return out


def test_protocol_1_workload_decodes_exactly() -> None:
    messages = decoded(PROTO1)
    assert "".join(type(m).__name__[0] if not isinstance(m, po.TypeMessage) else "Y" for m in messages) == \
        "BYRICBUCBICBUCBRICBUCBDCBDCBYRRTCBLCL"
    begin, type_msg, relation, insert, commit = messages[:5]
    assert isinstance(begin, po.Begin) and isinstance(commit, po.Commit)
    assert commit.commit_lsn == begin.final_lsn and commit.end_lsn > commit.commit_lsn
    assert commit.commit_ts == begin.commit_ts and commit.flags == 0
    assert (type_msg.namespace, type_msg.name, type_msg.xid) == ("public", "mood", None)
    assert relation.namespace == "public" and relation.name == "t" and relation.replica_identity == "d"
    assert [(c.flags, c.name, c.type_oid, c.typmod) for c in relation.columns] == [
        (1, "id", 23, -1), (0, "name", 25, -1), (0, "m", type_msg.oid, -1), (0, "big", 25, -1)]
    assert insert == po.Insert(None, relation.relid, ("1", "a", "happy", None))
    # UPDATE t SET id = 2: the old key travels as a 'K' tuple, other columns null
    key_change = messages[6]
    assert key_change == po.Update(None, relation.relid, ("1", None, None, None), "K", ("2", "a", "happy", None))
    # a 12 kB TOASTed value, then an update that leaves it unchanged: 'u'
    toasted = messages[9]
    assert toasted.new[:3] == ("3", "x", "sad") and len(toasted.new[3]) == 12800
    assert messages[12] == po.Update(None, relation.relid, None, None, ("3", "y", "sad", po.UNCHANGED_TOAST))
    full = messages[15]
    assert full.name == "f" and full.replica_identity == "f" and [c.flags for c in full.columns] == [1, 1]
    assert messages[19] == po.Update(None, full.relid, ("1", "old"), "O", ("1", "new"))
    assert messages[22] == po.Delete(None, relation.relid, ("2", None, None, None), "K")
    assert messages[25] == po.Delete(None, full.relid, ("1", "new"), "O")
    assert messages[31] == po.Truncate(None, 3, (relation.relid, full.relid))  # CASCADE | RESTART IDENTITY
    transactional, non_transactional = messages[34], messages[36]
    assert (transactional.transactional, transactional.prefix, transactional.content) == (True, "pfx", b"hello")
    assert (non_transactional.transactional, non_transactional.prefix, non_transactional.content) == \
        (False, "pfx", b"bye")
    assert transactional.lsn == messages[33].final_lsn


def test_binary_tuple_values() -> None:
    begin, relation, insert, commit = decoded(BINARY)
    assert insert == po.Insert(None, relation.relid, (struct.pack("!i", 7), b"bin"))


def test_streamed_transactions_carry_their_xid() -> None:
    messages = decoded(STREAMED, streamed=True)
    start = messages[0]
    assert start == po.StreamStart(start.xid, True)
    relation, first = messages[1], messages[2]
    assert relation.xid == start.xid and relation.name == "f"
    assert first == po.Insert(start.xid, relation.relid, ("100", "z" * 50))
    commits = [m for m in messages if isinstance(m, po.StreamCommit)]
    aborts = [m for m in messages if isinstance(m, po.StreamAbort)]
    assert len(commits) == 1 and commits[0].xid == start.xid and commits[0].end_lsn > commits[0].commit_lsn
    assert len(aborts) == 1 and aborts[0].xid == aborts[0].subxid != start.xid
    assert (aborts[0].abort_lsn, aborts[0].abort_ts) == (None, None)  # protocol 2: no abort LSN
    assert all(m == po.StreamStop() for m in messages if isinstance(m, po.StreamStop))
    segments = [m for m in messages if isinstance(m, po.StreamStart) and m.xid == start.xid]
    assert len(segments) > 1 and not any(m.first_segment for m in segments[1:])


def test_origin_message() -> None:
    data = b"O" + struct.pack("!Q", 0x16B374D848) + b"node_a\x00"
    assert po.decode(data) == po.Origin(0x16B374D848, "node_a")


def test_memoryview_input() -> None:
    data = bytes.fromhex(PROTO1[3])
    assert po.decode(memoryview(data)) == po.decode(data)


@pytest.mark.parametrize("cut", [1, 5, 9, 12, 20])
def test_truncated_bytes_are_a_clear_error(cut: int) -> None:
    data = bytes.fromhex(PROTO1[3])[:cut]
    with pytest.raises(po.PgOutputError, match="pgoutput message 'I'"):
        po.decode(data)


def test_unknown_message_type() -> None:
    with pytest.raises(po.PgOutputError, match="unknown pgoutput message type 'Z'"):
        po.decode(b"Z\x00\x00")
    with pytest.raises(po.PgOutputError, match="empty"):
        po.decode(b"")


def test_unknown_tuple_kind() -> None:
    data = b"I" + struct.pack("!I", 1) + b"N" + struct.pack("!h", 1) + b"x"
    with pytest.raises(po.PgOutputError, match="unknown tuple column kind 'x'"):
        po.decode(data)


def test_lsn_text_round_trip() -> None:
    assert po.format_lsn(0x16B374D848) == "16/B374D848"
    assert po.parse_lsn("16/B374D848") == 0x16B374D848
    assert po.pg_timestamp_to_unix_micros(0) == 946_684_800_000_000
