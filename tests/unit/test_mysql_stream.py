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
from cdc.sources.mysql import binlog as bl
from cdc.sources.mysql.ddl import MySqlSchema
from cdc.sources.mysql.gtids import DeliveredGtids
from cdc.sources.mysql.native_rows import YearAdjuster
from cdc.sources.mysql.position import BinlogPosition
from cdc.sources.mysql.source_info import source_schema
from cdc.sources.mysql.stream import BinlogChanges, Step, StreamSettings

STREAM = SimpleNamespace(_BinLogStreamReader__use_checksum=False, table_map={})


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


# ---- a restart inside a transaction: what was delivered is skipped, in the right transaction ------------

def _event(cls: type, end: int, size: int = 30, **attributes: Any) -> Any:
    """A binlog event of the library's class (handle() dispatches on it), with only what the stream reads."""
    event = object.__new__(cls)
    event.__dict__.update(packet=SimpleNamespace(log_pos=end, server_id=1), event_size=size, timestamp=1,
                          schema="lab", table="t", table_id=1, **attributes)
    return event


class _Read:
    """Feeds events to a BinlogChanges, recording (rows event, first row) of each rows event it emits."""

    def __init__(self, changes: BinlogChanges) -> None:
        self.changes = changes
        self.emitted: list[tuple[str, int]] = []
        self.end = 100
        changes._row_events = lambda event, stream, events, first_row: (  # type: ignore[method-assign]
            self.emitted.append((event.name, first_row)))

    def __call__(self, cls: type, **attributes: Any) -> None:
        self.end += 50
        self.changes.handle(_event(cls, self.end, **attributes), STREAM, [])

    def mariadb_tx(self, gtid: str, *rows_events: str) -> None:
        self(bl.MariadbGtidEvent, gtid=gtid)
        for name in rows_events:
            self(bl.TableMapEvent)
            self(bl.WriteRowsEvent, name=name)
        self(bl.XidEvent)


def _resumed(flavor: str, offset: dict[str, Any]) -> BinlogChanges:
    changes = _changes(flavor)
    start = BinlogPosition.from_offset(offset)
    return BinlogChanges(start=start, schema=changes.schema, emitter=changes.emitter,
                         schema_events=changes.schema_events, gtids=DeliveredGtids(flavor == "mariadb", start.gtids),
                         settings=changes.settings, hooks=changes.hooks)


def test_a_resume_by_gtid_skips_inside_the_transaction_its_offset_names() -> None:
    """By GTID the server may send another domain's transaction first (a replica orders domains its own way):
    the delivered rows events are skipped in the transaction the offset names, not in the first one read."""
    read = _Read(_resumed("mariadb", {"file": "b.000003", "pos": 400, "event": 1, "gtids": "0-1-9,1-2-4",
                                      "gtid": "0-1-10", "server_identity": "mariadb:1:0:/data/"}))
    read.mariadb_tx("1-2-5", "x1", "x2")
    read.mariadb_tx("0-1-10", "a1", "a2")
    read.mariadb_tx("0-1-11", "b1")
    assert read.emitted == [("x1", 0), ("x2", 0), ("a2", 0), ("b1", 0)]
    assert read.changes.gtids.text() == "0-1-11,1-2-5"


def test_a_resume_by_file_skips_inside_the_first_transaction() -> None:
    read = _Read(_resumed("mariadb", {"file": "b.000003", "pos": 400, "event": 1, "row": 2, "gtids": "0-1-9",
                                      "server_identity": "mariadb:1:0:/data/"}))
    read.mariadb_tx("0-1-10", "a1", "a2", "a3")
    assert read.emitted == [("a2", 2), ("a3", 0)]


def test_debeziums_offset_counts_every_event_from_the_transactions_start() -> None:
    """Debezium's MariaDB offset after two rows of the first rows event: event=2 (the GTID and TABLE_MAP events),
    row=2; MySQL's counts from BEGIN, not from the GTID event before it."""
    read = _Read(_resumed("mariadb", {"file": "b.000003", "pos": 400, "event": 2, "row": 2, "gtids": "0-1-9"}))
    read.mariadb_tx("0-1-10", "a1", "a2")
    assert read.emitted == [("a1", 2), ("a2", 0)]
    read = _Read(_resumed("mariadb", {"file": "b.000003", "pos": 400, "event": 4, "row": 0, "gtids": "0-1-9"}))
    read.mariadb_tx("0-1-10", "a1", "a2")  # GTID, TABLE_MAP, ROWS a1, TABLE_MAP: a1 delivered whole
    assert read.emitted == [("a2", 0)]
    sid = bytes.fromhex("3e11fa4771ca11e19e33c80aa9429562")
    read = _Read(_resumed("mysql", {"file": "b.000003", "pos": 400, "event": 2, "row": 1,
                                    "gtids": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9"}))
    read(bl.GtidEvent, sid=sid, gno=10)
    read(bl.QueryEvent, query="BEGIN", slave_proxy_id=7)
    read(bl.TableMapEvent)
    read(bl.WriteRowsEvent, name="a1")
    read(bl.XidEvent)
    assert read.emitted == [("a1", 1)]
    assert read.changes.gtids.text() == "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-10"


def test_gtid_source_filter_leaves_out_rows_of_other_sources() -> None:
    read = _Read(_changes("mariadb"))
    read.changes.dml_wanted = lambda source: source == "0-1"
    read.mariadb_tx("0-2-1", "theirs")
    read.mariadb_tx("0-1-2", "ours")
    assert read.emitted == [("ours", 0)]
    assert read.changes.gtids.text() == "0-1-2"  # delivered all the same: a resume does not ask for it again


def test_a_reader_reopened_while_skipping_keeps_the_skip() -> None:
    read = _Read(_resumed("mariadb", {"file": "b.000003", "pos": 400, "event": 2, "gtids": "0-1-9", "gtid": "0-1-10",
                                      "server_identity": "mariadb:1:0:/data/"}))
    read(bl.MariadbGtidEvent, gtid="0-1-10")
    read(bl.TableMapEvent)
    read(bl.WriteRowsEvent, name="a1")  # skipped; then the connection breaks
    start = read.changes.resume_point()
    assert (start.file, start.pos, start.gtids) == ("b.000003", 150 - 30 - 19, "0-1-9")
    read.changes.reopened("b.000003")
    read.mariadb_tx("0-1-10", "a1", "a2", "a3")
    assert read.emitted == [("a3", 0)]
