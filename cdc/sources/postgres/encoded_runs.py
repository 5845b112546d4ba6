"""A stream's runs of rows through the compiled codec in one call (encoded batches, as a snapshot's).

Inside a transaction, consecutive Inserts (or Updates without an old tuple) of one table differ only in
their row, their key and their ``source.lsn`` and ``source.sequence``: every other byte of their records
(schemas, the rest of ``source``, ``op``, headers) is the same. With encoded batches (nothing but the JSON
converter reads the rows), the stream collects such a run as the messages came, and when it ends (another
message, the run's size limit, or the stream draining) the codec encodes all its rows and keys in one call
(``RowCodec.encode_tuples``); the engine splices them into records around the run's template, serialized
once (:mod:`cdc.core.encoded_rows`). Per row, Python only appends the message and its LSN to the run.

A run the codec does not take (an unchanged TOAST value...) is decoded the Python way, row by row, where
it stood: the same events, in the same order. Not used when transaction metadata is on (each event has
its own transaction block), for operations that are skipped, nor while an incremental snapshot watches
the table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc.core.encoded_rows import Placeholder, template
from cdc.core.envelope import OP_CREATE, OP_UPDATE, now_ts
from cdc.core.records import EncodedRows
from cdc.sources.postgres.tables import TableState

LSN = Placeholder(b"\x01")  # source.lsn, a number
SEQUENCE = Placeholder(b"\x02")  # source.sequence, a JSON string

INSERT, UPDATE = 0x49, 0x55  # pgoutput's message kinds ('I', 'U')
TUPLE_AT = 6  # the new tuple's TupleData in an Insert or an Update without an old tuple: kind, relid, 'N'


@dataclass
class EncodedRun:
    """Rows of one table and one kind of message in one transaction, one after the other."""

    relid: int
    kind: int  # INSERT or UPDATE
    state: TableState
    source: dict[str, Any]  # the first row's source block
    last_commit_lsn: int | None  # source.sequence's first LSN, the same for the whole transaction
    final_lsn: int
    payloads: list[bytes] = field(default_factory=list)
    lsns: list[int] = field(default_factory=list)

    def add(self, payload: bytes, lsn: int) -> None:
        self.payloads.append(payload)
        self.lsns.append(lsn)

    def encoded(self) -> EncodedRows | None:
        """The run's records' parts, or None when the codec leaves any of its rows to Python."""
        batch = self.state.native.tuple_batch(self.payloads, TUPLE_AT)
        if batch is None:
            return None
        rows, keys = batch
        source = {**self.source, "lsn": LSN, "sequence": SEQUENCE}
        last = b"null" if self.last_commit_lsn is None else b'\\"%d\\"' % self.last_commit_lsn
        more = {LSN.json: [b"%d" % lsn for lsn in self.lsns],
                SEQUENCE.json: [b'"[%s,\\"%d\\"]"' % (last, lsn) for lsn in self.lsns]}
        op = OP_CREATE if self.kind == INSERT else OP_UPDATE
        return EncodedRows(template(self.state.envelope, source, keyed=keys is not None,
                                    position=(self.final_lsn, self.lsns[0]), ts=now_ts(), op=op), rows, keys, more)


def run_row(payload: bytes, kind: int) -> int | None:
    """The relation id of an Insert or Update message with a new tuple and no old one (what a run holds,
    and what the codec encodes a row at a time), else None."""
    if (kind != INSERT and kind != UPDATE) or len(payload) < 8 or payload[5] != 0x4E:  # 'N'
        return None
    return int.from_bytes(payload[1:5], "big")
