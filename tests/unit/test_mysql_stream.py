"""BinlogChanges on hand-made binlog events (no server): XA groups; and the two-digit years the stream
moves in the compiled codec's rows."""
from __future__ import annotations

from datetime import date
from types import SimpleNamespace
from typing import Any

from cdc.core.emitter import ChangeEmitter
from cdc.core.records import ChangeEvent
from cdc.core.schema_change import SchemaChangeEvents
from cdc.core.transactions import TransactionTracker
from cdc.sources.mysql.ddl import MySqlSchema
from cdc.sources.mysql.gtids import DeliveredGtids
from cdc.sources.mysql.native_rows import YearAdjuster
from cdc.sources.mysql.position import BinlogPosition
from cdc.sources.mysql.source_info import source_schema
from cdc.sources.mysql.stream import BinlogChanges, Step, StreamSettings

STREAM = SimpleNamespace(_BinLogStreamReader__use_checksum=False)


class Hooks:
    def table_state(self, database: str, table: str) -> None:
        return None

    def schema_changed(self) -> None:
        pass

    def record_ddl(self, position: dict[str, Any], database: str | None, ddl: str,
                   changes: list[dict[str, Any]]) -> None:
        pass

    def signal_row(self, row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, ...]) -> None:
        pass

    def observe(self, table: str, events: Any) -> None:
        pass

    def transaction_starts(self, position: tuple[int, str, int], events: list[ChangeEvent]) -> None:
        pass


def _changes(flavor: str) -> BinlogChanges:
    settings = StreamSettings(prefix="dbz", flavor=flavor, include_query=False, include_schema_changes=True,
                              only_captured_tables_ddl=False, only_captured_databases_ddl=False, signal_table=None,
                              captured=lambda d, t: True, captured_database=lambda d: True)
    emitter = ChangeEmitter(tombstones=True, skipped=frozenset(), tracker=TransactionTracker("dbz.transaction"))
    return BinlogChanges(start=BinlogPosition("bin.000001", 4), schema=MySqlSchema(), emitter=emitter,
                         schema_events=SchemaChangeEvents("dbz", flavor, source_schema(flavor)),
                         gtids=DeliveredGtids(flavor == "mariadb", None), settings=settings, hooks=Hooks())


def _query(text: str, end: int, size: int = 40) -> Any:
    return SimpleNamespace(query=text, schema=b"lab", timestamp=1, slave_proxy_id=7, event_size=size,
                           packet=SimpleNamespace(log_pos=end, server_id=1))


def test_xa_end_ends_the_prepared_group() -> None:
    """MySQL without GTIDs: XA START opens the group, XA END closes it (the XA_PREPARE event after
    it is not read), the later XA COMMIT only moves the position."""
    changes = _changes("mysql")
    events: list[ChangeEvent] = []
    assert changes._on_query(_query("XA START X'31',X'',1", 100), STREAM, events) is Step.NONE
    assert changes.tx.active and changes.tx.pos == 100 - 40 - 19
    changes.emitter.begin(events, "bin.000001:41", 1000)  # what the first rows event does
    assert changes._on_query(_query("XA END X'31',X'',1", 200), STREAM, events) is Step.COMMITTED
    assert [e.value["status"] for e in events] == ["BEGIN", "END"]  # type: ignore[index]
    assert not changes.tx.active and changes.position.pos == 200
    assert changes._on_query(_query("XA COMMIT X'31',X'',1", 300), STREAM, events) is Step.COMMITTED
    assert len(events) == 2 and changes.position.pos == 300
    assert not changes.emitter.in_transaction


def test_xa_rollback_and_recover_are_not_ddl() -> None:
    changes = _changes("mariadb")
    events: list[ChangeEvent] = []
    assert changes._on_query(_query("XA ROLLBACK X'31',X'',1", 120), STREAM, events) is Step.COMMITTED
    assert changes._on_query(_query("XA RECOVER", 160), STREAM, events) is Step.NONE
    assert events == [] and changes.position.pos == 120


def _epoch(day: date) -> int:
    return (day - date(1970, 1, 1)).days


def test_two_digit_years_in_the_codecs_rows() -> None:
    """The codec writes dates as stored; the adjuster moves years 0001-0099 of the date and
    datetime fields it names, as enable.time.adjuster reads them, and nothing else."""
    adjust = YearAdjuster({b'"d"': 1, b'"dt"': 86_400_000, b'"dt6"': 86_400_000_000})
    stored, moved = _epoch(date(50, 5, 5)), _epoch(date(2050, 5, 5))
    rows = [(b'{"id":-3,"d":%d,"dt":%d,"dt6":%d,"n":%d,"s":"x,\\"d\\":%d"}'
             % (stored, stored * 86_400_000 + 1, stored * 86_400_000_000 - 1, stored, stored), {"id": -3})]
    [(json, key)] = adjust(rows)
    assert json == (b'{"id":-3,"d":%d,"dt":%d,"dt6":%d,"n":%d,"s":"x,\\"d\\":%d"}'
                    % (moved, moved * 86_400_000 + 1, (moved - 1) * 86_400_000_000 + (86_400_000_000 - 1), stored,
                       stored))
    assert key == {"id": -3}
    century = b'{"d":%d,"dt":-1,"dt6":null}' % _epoch(date(100, 1, 1))
    assert adjust([(century, None)]) == [(century, None)]
    seventies = b'{"d":%d}' % _epoch(date(85, 8, 5))
    assert adjust([(seventies, None)]) == [(b'{"d":%d}' % _epoch(date(1985, 8, 5)), None)]
