"""A PostgreSQL stream resumed inside a transaction (its first part delivered before a restart) keeps
its resume position in every batch it hands over until it delivers a change of that transaction:
an offset "after the last whole transaction" handed over meanwhile (while the server decodes its way
to the transaction, or while the delivered part is skipped) would make the next restart deliver that
part again. Found by the exactly-once kill storm (tests/integration/test_kafka_exactly_once.py): one
duplicate in 22,000 changes when a run resumed inside and was killed before the rest came."""
from __future__ import annotations

import struct
from typing import Any

from cdc.core.emitter import ChangeEmitter
from cdc.core.records import ChangeEvent
from cdc.sources.postgres.position import PgPosition
from cdc.sources.postgres.replication import XLogData
from cdc.sources.postgres.stream import ChangeStream


class NoHooks:
    def before_transaction(self, final_lsn: int, events: list[ChangeEvent], where: tuple[int, int]) -> None:
        pass

    def watching(self, table: str, xid: int) -> bool:
        return False

    def observe(self, events: Any) -> None:
        pass


def stream(resume: PgPosition) -> ChangeStream:
    return ChangeStream(resume=resume, prefix="p", dbname="db", relations={}, describe=lambda r: None,
                        emitter=ChangeEmitter(tombstones=False, skipped=frozenset(), tracker=None),
                        forget_type=lambda oid: None, signal_table=None, hooks=NoHooks())  # type: ignore[arg-type]


def message(lsn: int, payload: bytes) -> XLogData:
    return XLogData(lsn, lsn, memoryview(payload))


def begin(final_lsn: int, xid: int = 7) -> bytes:
    return b"B" + struct.pack(">QqI", final_lsn, 0, xid)


def insert(relid: int = 16384) -> bytes:
    return b"I" + struct.pack(">I", relid) + b"N" + struct.pack(">H", 1) + b"t" + struct.pack(">I", 1) + b"1"


def commit(commit_lsn: int, end_lsn: int) -> bytes:
    return b"C" + struct.pack(">bQQq", 0, commit_lsn, end_lsn, 0)


def test_the_resume_position_is_kept_until_a_change_of_its_transaction_is_delivered() -> None:
    resume = PgPosition(lsn=1000, lsn_commit=5000, lsn_proc=3000, tx_id=7)
    changes = stream(resume)
    events: list[ChangeEvent] = []
    assert changes.position(inside=True) == resume  # idle before the server sent anything
    assert changes.position() == resume
    changes.handle(message(1100, begin(5000)), events)
    changes.handle(message(2000, insert()), events)  # delivered before the restart: skipped
    assert changes.position(inside=True) == resume
    changes.handle(message(3000, insert()), events)
    assert changes.position(inside=True) == resume
    changes.handle(message(3500, insert()), events)  # the first change not delivered yet
    assert changes.position(inside=True) == PgPosition(1000, 5000, 3500, 7, changes.tx.commit_us)
    changes.handle(message(5000, commit(5000, 5100)), events)
    assert changes.position() == PgPosition(5100, tx_id=7, ts_usec=changes.tx.commit_us)


def test_a_resume_position_taken_over_from_debezium_survives_being_handed_over_again() -> None:
    """Debezium's offset names the change delivered last, in the first transaction committed after lsn
    (whose commit LSN it does not hold): cdc's offset of that position reads back the same."""
    taken = PgPosition.from_offset({"lsn": 3000, "lsn_commit": 1000, "lsn_proc": 3000, "messageType": "INSERT",
                                    "txId": 7, "ts_usec": 1})
    assert taken.proc_in_next and taken.lsn == 1000 and taken.lsn_commit is None
    changes = stream(taken)
    again = PgPosition.from_offset(changes.position(inside=True).to_offset())
    assert again == taken
    changes.handle(message(1100, begin(5000)), events := [])
    changes.handle(message(2000, insert()), events)  # up to lsn_proc: skipped
    assert PgPosition.from_offset(changes.position(inside=True).to_offset()) == taken
