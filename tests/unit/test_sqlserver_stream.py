"""The SQL Server source end to end against recorded change-table rows (a fake query layer).

Everything between the rows and the events is the real source: ordering across tables,
update pairs, primary-key changes, transactions, resume inside a commit, instance switches.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from cdc.config import Config
from cdc.core.records import Batch, ChangeEvent
from cdc.sources.sqlserver.source import SqlServerSource
from cdc.version import VERSION
from tests.fixtures.sqlserver.fake import FakeServer
from tests.fixtures.sqlserver.testdb import (
    T1,
    RecordedDatabase,
    change_table_columns,
    ct_row,
    customers_and_orders,
    with_second_instance,
)

NOW_NS = 1_700_000_000_123_456_789
BEFORE_A = {"databases": {"testDB": {"commit_lsn": "00000027:00000700:0001", "change_lsn": None,
                                     "event_serial_no": None, "snapshot_completed": True}}}
A, B, C, D = ("00000027:00000758:0005", "00000027:00000ac0:0007", "00000027:00000db0:0007",
              "00000027:00000e00:0009")
T1_MS, T2_MS, T3_MS, T4_MS = 1559729468470, 1559729995937, 1559730445243, 1559730600000


class Clock:
    def __init__(self, ns: int = NOW_NS) -> None:
        self.ns = ns

    def __call__(self) -> int:
        return self.ns


def make_source(*dbs: RecordedDatabase, clock: Clock | None = None, **props: Any) -> tuple[SqlServerSource, FakeServer]:
    server = FakeServer(*dbs)
    names = ",".join(db.name for db in dbs)
    config = Config({"topic.prefix": "server1", "database.names": names, **props})
    return SqlServerSource(config, connect=server.connect, clock=clock or Clock(), sleep=lambda s: None), server


def run(source: SqlServerSource, offset: dict[str, Any] | None, polls: int = 1) -> tuple[list[ChangeEvent],
        list[Batch]]:
    """Events of ``polls`` rounds of the stream (a round ends with a caught-up batch)."""
    events: list[ChangeEvent] = []
    batches: list[Batch] = []
    stream: Iterator[Batch] = source.stream(offset)
    for batch in stream:
        batches.append(batch)
        events.extend(batch.events)
        if batch.caught_up:
            polls -= 1
            if polls == 0:
                break
    stream.close()
    return events, batches


def summary(event: ChangeEvent) -> tuple[Any, ...]:
    """(topic, op|status|None for a tombstone, key, change_lsn, event_serial_no)."""
    value = event.value
    if value is None:
        return (event.topic, None, event.key)
    if "status" in value:
        return (event.topic, value["status"], value["id"], value["event_count"])
    if "tableChanges" in value:
        return (event.topic, value["tableChanges"][0]["type"], value["tableChanges"][0]["id"])
    source = value["source"]
    return (event.topic, value["op"], event.key, source["change_lsn"], source["event_serial_no"])


CUST, ORD, TX = "server1.testDB.dbo.customers", "server1.testDB.dbo.orders", "server1.transaction"


def test_interleaved_transactions_replay_in_commit_order_with_boundaries() -> None:
    source, _ = make_source(customers_and_orders(), **{"provide.transaction.metadata": "true"})
    events, batches = run(source, BEFORE_A)
    assert [summary(e) for e in events] == [
        (TX, "BEGIN", A, None),
        (CUST, "c", {"id": 1005}, "00000027:00000758:0003", 1),
        (ORD, "c", {"id": 1}, "00000027:00000758:0004", 1),
        (CUST, "c", {"id": 1006}, "00000027:00000758:0006", 1),
        (TX, "END", A, 3),  # emitted when the next transaction begins
        (TX, "BEGIN", B, None),
        (CUST, "u", {"id": 1005}, "00000027:00000ac0:0002", 2),
        (ORD, "u", {"id": 1}, "00000027:00000ac0:0003", 2),
        (TX, "END", B, 2),
        (TX, "BEGIN", C, None),
        (CUST, "d", {"id": 1005}, "00000027:00000db0:0005", 1),
        (CUST, None, {"id": 1005}),
        (TX, "END", C, 1),
        (TX, "BEGIN", D, None),
        (CUST, "d", {"id": 1006}, "00000027:00000e00:0003", 1),
        (CUST, None, {"id": 1006}),
        (CUST, "c", {"id": 2006}, "00000027:00000e00:0003", 2),
        (ORD, "d", {"id": 1}, "00000027:00000e00:0004", 1),
        (ORD, None, {"id": 1}),
    ]
    end_a = events[4].value
    assert end_a == {"status": "END", "id": A, "event_count": 3, "ts_ms": T2_MS, "data_collections": [
        {"data_collection": "testDB.dbo.customers", "event_count": 2},
        {"data_collection": "testDB.dbo.orders", "event_count": 1}]}
    assert events[0].value["ts_ms"] == T1_MS
    assert events[3].value["transaction"] == {"id": A, "total_order": 3, "data_collection_order": 2}
    # the window is delivered: the stored position is the max LSN, D's transaction still open
    assert batches[-1].offset == {"databases": {"testDB": {
        "commit_lsn": "00000027:00000f00:0001", "change_lsn": None, "event_serial_no": None,
        "snapshot_completed": True, "transaction_id": D, "transaction_event_count": 3,
        "transaction_data_collection_order": {"testDB.dbo.customers": 2, "testDB.dbo.orders": 1}}}}


def test_create_event_is_the_references_example() -> None:
    source, _ = make_source(customers_and_orders())
    events, _ = run(source, BEFORE_A)
    create = events[0]
    assert create.topic == CUST and create.key == {"id": 1005}
    assert create.value == {
        "before": None,
        "after": {"id": 1005, "first_name": "john", "last_name": "doe", "email": "john.doe@example.org"},
        "source": {"version": VERSION, "connector": "sqlserver", "name": "server1", "ts_ms": T1_MS,
                   "snapshot": "false", "db": "testDB", "sequence": None, "ts_us": T1_MS * 1000,
                   "ts_ns": T1_MS * 1_000_000, "schema": "dbo", "table": "customers",
                   "change_lsn": "00000027:00000758:0003", "commit_lsn": A, "event_serial_no": 1},
        "transaction": None, "op": "c",
        "ts_ms": NOW_NS // 1_000_000, "ts_us": NOW_NS // 1000, "ts_ns": NOW_NS,
    }
    assert create.key_schema.definition == {"type": "struct", "fields": [
        {"type": "int32", "optional": False, "field": "id"}], "optional": False,
        "name": "server1.testDB.dbo.customers.Key"}
    row_fields = create.value_schema.fields[0]["fields"]
    assert [f["type"] for f in row_fields] == ["int32", "string", "string", "string"]
    assert create.value_schema.name == "server1.testDB.dbo.customers.Envelope"
    source_schema = create.value_schema.fields[2]
    assert source_schema["name"] == "io.debezium.connector.sqlserver.Source"
    assert [f["field"] for f in source_schema["fields"]][-3:] == ["change_lsn", "commit_lsn", "event_serial_no"]


def test_update_pair_becomes_one_update_with_both_images() -> None:
    source, _ = make_source(customers_and_orders())
    events, _ = run(source, BEFORE_A)
    update = next(e for e in events if e.value and e.value.get("op") == "u")
    assert update.value["before"]["email"] == "john.doe@example.org"
    assert update.value["after"]["email"] == "noreply@example.org"
    assert update.value["source"]["ts_ms"] == T2_MS
    assert (update.value["source"]["commit_lsn"], update.value["source"]["event_serial_no"]) == (B, 2)
    order_update = next(e for e in events if e.topic == ORD and e.value and e.value["op"] == "u")
    assert order_update.value["before"] == {"id": 1, "customer_id": 1005, "quantity": 3, "price": "B88="}
    assert order_update.value["after"]["quantity"] == 4


def test_primary_key_update_is_delete_tombstone_create_with_key_headers() -> None:
    source, _ = make_source(customers_and_orders())
    events, _ = run(source, BEFORE_A)
    start = next(i for i, e in enumerate(events) if e.key == {"id": 1006} and e.value and e.value["op"] == "d")
    delete, tombstone, create = events[start:start + 3]
    assert delete.value["before"]["id"] == 1006 and delete.value["after"] is None
    assert [(name, payload) for name, _, payload in delete.headers] == [("__debezium.newkey", {"id": 2006})]
    assert tombstone.value is None and tombstone.key == {"id": 1006}
    assert create.key == {"id": 2006} and create.value["after"]["id"] == 2006
    assert [(name, payload) for name, _, payload in create.headers] == [("__debezium.oldkey", {"id": 1006})]
    assert (delete.value["source"]["event_serial_no"], create.value["source"]["event_serial_no"]) == (1, 2)
    assert delete.value["source"]["ts_ms"] == T4_MS


def test_keyless_table_gets_null_keys_and_no_key_headers() -> None:
    db = customers_and_orders()
    db.instances[0].key = []
    events, _ = run(make_source(db)[0], BEFORE_A)
    customers = [e for e in events if e.topic == CUST]
    assert all(e.key is None and e.key_schema is None and not e.headers for e in customers)
    data = [e for e in customers if e.value is not None]
    assert [summary(e)[1:] for e in data][-2:] == [("d", None, "00000027:00000e00:0003", 1),
                                                  ("c", None, "00000027:00000e00:0003", 2)]
    # as Debezium does on every connector: the delete is followed by a tombstone, here with a null key
    assert customers[-2].value is None and customers[-3].value["op"] == "d"


def test_tombstones_can_be_switched_off() -> None:
    source, _ = make_source(customers_and_orders(), **{"tombstones.on.delete": "false"})
    events, _ = run(source, BEFORE_A)
    assert all(e.value is not None for e in events)


@pytest.mark.parametrize("stored, first_expected", [
    # crashed after the order insert of A: resume with customer 1006 of A
    ({"commit_lsn": A, "change_lsn": "00000027:00000758:0004", "event_serial_no": 1},
     (CUST, "c", {"id": 1006}, "00000027:00000758:0006", 1)),
    # crashed after the customer update of B (serial 2 covers both rows of the pair)
    ({"commit_lsn": B, "change_lsn": "00000027:00000ac0:0002", "event_serial_no": 2},
     (ORD, "u", {"id": 1}, "00000027:00000ac0:0003", 2)),
    # crashed after the delete half of the key change in D: only the create follows
    ({"commit_lsn": D, "change_lsn": "00000027:00000e00:0003", "event_serial_no": 1},
     (CUST, "c", {"id": 2006}, "00000027:00000e00:0003", 2)),
    # A delivered completely
    ({"commit_lsn": A, "change_lsn": None, "event_serial_no": None},
     (CUST, "u", {"id": 1005}, "00000027:00000ac0:0002", 2)),
])
def test_resume_inside_a_commit_repeats_nothing(stored: dict[str, Any], first_expected: tuple[Any, ...]) -> None:
    source, server = make_source(customers_and_orders())
    events, _ = run(source, {"databases": {"testDB": {**stored, "snapshot_completed": True}}})
    assert summary(events[0]) == first_expected
    # every window read starts at the stored commit LSN (inclusive) and ends at the max LSN
    reads = [params for _, sql, params in server.log if "_CT]" in sql]
    assert reads and all(p[0] == bytes.fromhex(stored["commit_lsn"].replace(":", "")) for p in reads)


def test_resume_mid_commit_keeps_the_transaction_numbering_and_ends_it() -> None:
    full, _ = run(make_source(customers_and_orders(), **{"provide.transaction.metadata": "true"})[0], BEFORE_A)
    # crash after the order insert of A, with the offset that batch carried
    stored = {"commit_lsn": A, "change_lsn": "00000027:00000758:0004", "event_serial_no": 1,
              "snapshot_completed": True, "transaction_id": A, "transaction_event_count": 2,
              "transaction_data_collection_order": {"testDB.dbo.customers": 1, "testDB.dbo.orders": 1}}
    source, _ = make_source(customers_and_orders(), **{"provide.transaction.metadata": "true"})
    resumed, _ = run(source, {"databases": {"testDB": stored}})
    assert [summary(e) for e in resumed] == [summary(e) for e in full[3:]]
    assert resumed[0].value["transaction"] == {"id": A, "total_order": 3, "data_collection_order": 2}
    assert resumed[1].value["event_count"] == 3


def test_batches_split_a_window_with_resumable_offsets() -> None:
    source, _ = make_source(customers_and_orders(), **{"max.batch.size": "2"})
    _, batches = run(source, BEFORE_A)
    offsets = [b.offset["databases"]["testDB"] for b in batches if b.events]
    assert offsets[0] == {"commit_lsn": A, "change_lsn": "00000027:00000758:0004", "event_serial_no": 1,
                          "snapshot_completed": True}
    # each batch's offset resumes exactly after its last event
    all_events, _ = run(make_source(customers_and_orders())[0], BEFORE_A)
    delivered = 0
    for batch in batches:
        if not batch.events:
            continue
        delivered += len(batch.events)
        rest, _ = run(make_source(customers_and_orders())[0], batch.offset)
        assert [summary(e) for e in rest] == [summary(e) for e in all_events[delivered:]]


def test_end_after_a_quiet_interval() -> None:
    clock = Clock()
    source, _ = make_source(customers_and_orders(), clock=clock,
                            **{"provide.transaction.metadata": "true", "transaction.end.idle.ms": "1000"})
    stream = source.stream(BEFORE_A)
    seen: list[ChangeEvent] = []
    for batch in stream:
        seen.extend(batch.events)
        if batch.caught_up:
            break
    assert summary(seen[-6]) == (TX, "BEGIN", D, None)
    clock.ns += 2_000_000_000  # two quiet seconds
    quiet: list[ChangeEvent] = []
    for batch in stream:
        quiet.extend(batch.events)
        if batch.caught_up:
            break
    stream.close()
    assert [summary(e) for e in quiet] == [(TX, "END", D, 3)]
    assert quiet[0].value["ts_ms"] == clock.ns // 1_000_000


def test_capture_instance_switch_with_an_added_column() -> None:
    db = with_second_instance(customers_and_orders())
    source, _ = make_source(db)
    events, _ = run(source, {"databases": {"testDB": {"commit_lsn": D, "change_lsn": None, "event_serial_no": None}}})
    assert [summary(e) for e in events] == [
        (CUST, "c", {"id": 1007}, "00000028:00000008:0002", 1),
        ("server1", "ALTER", '"testDB"."dbo"."customers"'),
        (CUST, "c", {"id": 1008}, "00000028:00000020:0002", 1),
    ]
    alter = events[1].value
    assert alter["ddl"] is None and alter["databaseName"] == "testDB" and alter["schemaName"] == "dbo"
    assert alter["source"]["commit_lsn"] == "00000028:00000010:0002"
    columns = alter["tableChanges"][0]["table"]["columns"]
    assert [c["name"] for c in columns] == ["id", "first_name", "last_name", "email", "phone"]
    assert columns[4] == {"name": "phone", "jdbcType": -9, "nativeType": None, "typeName": "nvarchar",
                          "typeExpression": "nvarchar", "charsetName": None, "length": 20, "scale": None,
                          "position": 5, "optional": True, "autoIncremented": False, "generated": False,
                          "comment": None, "defaultValueExpression": None, "enumValues": None}
    new = events[2]
    assert new.value["after"]["phone"] == "+1 555 0100"
    assert [f["field"] for f in new.value_schema.fields[1]["fields"]][-1] == "phone"
    assert events[0].value_schema.fields[1]["fields"][-1]["field"] == "email"


def test_capture_instance_switch_noticed_while_running() -> None:
    db = customers_and_orders()
    source, _ = make_source(db)
    stream = source.stream(BEFORE_A)
    for batch in stream:
        if batch.caught_up:
            break
    with_second_instance(db)  # the DBA adds a column and a second instance meanwhile
    later: list[ChangeEvent] = []
    for batch in stream:
        later.extend(batch.events)
        if batch.caught_up:
            break
    stream.close()
    assert [summary(e)[:3] for e in later] == [(CUST, "c", {"id": 1007}),
                                               ("server1", "ALTER", '"testDB"."dbo"."customers"'),
                                               (CUST, "c", {"id": 1008})]


def test_table_enabled_while_running_is_captured_from_its_start() -> None:
    db = customers_and_orders()
    orders = db.instances.pop(1)
    source, _ = make_source(db)
    stream = source.stream(BEFORE_A)
    first: list[ChangeEvent] = []
    for batch in stream:
        first.extend(batch.events)
        if batch.caught_up:
            break
    assert {e.topic for e in first} == {CUST}
    orders.start_lsn = "00000027:00000f00:0001"
    orders.rows = [ct_row("00000027:00000f80:0002", "00000027:00000f80:0001", 2, b"\x0f", 1, T1, id=7,
                          customer_id=1, quantity=1, price=None)]
    db.instances.append(orders)
    db.max_lsn = "00000027:00000f90:0001"
    later: list[ChangeEvent] = []
    for batch in stream:
        later.extend(batch.events)
        if batch.caught_up:
            break
    stream.close()
    assert [summary(e)[:3] for e in later] == [("server1", "CREATE", '"testDB"."dbo"."orders"'),
                                               (ORD, "c", {"id": 7})]


def test_snapshot_then_stream(caplog: pytest.LogCaptureFixture) -> None:
    db = customers_and_orders()
    db.max_lsn = "00000027:00000758:0005"  # the snapshot point: A is in the snapshot
    source, server = make_source(db, **{"snapshot.isolation.mode": "exclusive"})
    stream = source.stream(None)
    events: list[ChangeEvent] = []
    offsets = []
    for batch in stream:
        events.extend(batch.events)
        offsets.append(batch.offset)
        if batch.caught_up:
            break
    assert [summary(e)[:3] for e in events] == [
        ("server1", "CREATE", '"testDB"."dbo"."customers"'), ("server1", "CREATE", '"testDB"."dbo"."orders"'),
        (CUST, "r", {"id": 1001}), (CUST, "r", {"id": 1002}), (ORD, "r", {"id": 10001})]
    assert [e.value["source"]["snapshot"] for e in events[2:]] == ["first", "last_in_data_collection", "last"]
    assert all(e.value["source"]["commit_lsn"] == A for e in events)
    # before the first row only the restart marker (cdc.core.snapshot_restart), then nothing until it completes
    assert offsets[:-2] == [None, {"databases": {"testDB": {"snapshot_attempt": 1}}}] + [None] * (len(offsets) - 4)
    assert offsets[-1]["databases"]["testDB"]["commit_lsn"] == A
    snap = [sql for _, sql, _ in server.log
            if sql.startswith(("<isolation", "SET LOCK", "BEGIN", "COMMIT", "SELECT TOP"))
            or "fn_cdc_get_max_lsn" in sql or sql.startswith("SELECT [id]")]
    assert snap[:8] == ["<isolation exclusive>", "SET LOCK_TIMEOUT 10000", "BEGIN TRANSACTION",
                        "SELECT TOP (0) * FROM [dbo].[customers] WITH (TABLOCKX)",
                        "SELECT TOP (0) * FROM [dbo].[orders] WITH (TABLOCKX)",
                        "SELECT sys.fn_cdc_get_max_lsn() AS max_lsn",
                        "SELECT [id], [first_name], [last_name], [email] FROM [dbo].[customers]",
                        "SELECT [id], [customer_id], [quantity], [price] FROM [dbo].[orders]"]
    assert snap[8] == "COMMIT"
    db.max_lsn = "00000027:00000f00:0001"
    later: list[ChangeEvent] = []
    for batch in stream:
        later.extend(batch.events)
        if batch.caught_up:
            break
    stream.close()
    assert summary(later[0]) == (CUST, "u", {"id": 1005}, "00000027:00000ac0:0002", 2)  # B: A is not repeated


@pytest.mark.parametrize("mode, locks, release", [
    ("repeatable_read", "WITH (TABLOCK, HOLDLOCK)", True),
    ("snapshot", None, False),
    ("read_committed", None, False),
    ("read_uncommitted", None, False),
])
def test_snapshot_isolation_modes(mode: str, locks: str | None, release: bool) -> None:
    source, server = make_source(customers_and_orders(), **{"snapshot.isolation.mode": mode})
    run(source, None)
    log = server.statements()
    assert f"<isolation {mode}>" in log
    lock_statements = [s for s in log if s.startswith("SELECT TOP (0)")]
    assert (lock_statements[0].endswith(locks) if locks else lock_statements == [])
    begin = log.index("BEGIN TRANSACTION")
    commits = [i for i, s in enumerate(log) if s == "COMMIT"]
    assert len(commits) == (2 if release else 1) and commits[0] > begin


def test_no_data_streams_after_the_structure_and_initial_only_stops() -> None:
    db = customers_and_orders()
    db.max_lsn = A
    events, _ = run(make_source(db, **{"snapshot.mode": "no_data"})[0], None)
    assert [summary(e)[1] for e in events] == ["CREATE", "CREATE"]
    source, _ = make_source(customers_and_orders(), **{"snapshot.mode": "initial_only"})
    batches = list(source.stream(None))
    assert [summary(e)[1] for b in batches for e in b.events] == ["CREATE", "CREATE", "r", "r", "r"]
    assert batches[-1].offset["databases"]["testDB"]["snapshot_only"] is True
    again = list(make_source(customers_and_orders(), **{"snapshot.mode": "initial_only"})[0].stream(batches[-1].offset))
    assert [e for b in again for e in b.events] == []


def test_several_databases_have_their_own_topics_and_offsets() -> None:
    first = customers_and_orders()
    second = customers_and_orders()
    second.name = "salesDB"
    source, _ = make_source(first, second, **{"table.include.list": "dbo.orders"})
    stored = {"databases": {"testDB": BEFORE_A["databases"]["testDB"],
                            "salesDB": {"commit_lsn": C, "change_lsn": None, "event_serial_no": None}}}
    events, batches = run(source, stored)
    assert [summary(e)[:3] for e in events] == [
        (ORD, "c", {"id": 1}), (ORD, "u", {"id": 1}), (ORD, "d", {"id": 1}), (ORD, None, {"id": 1}),
        ("server1.salesDB.dbo.orders", "d", {"id": 1}), ("server1.salesDB.dbo.orders", None, {"id": 1})]
    assert events[-2].value["source"]["db"] == "salesDB"
    assert set(batches[-1].offset["databases"]) == {"testDB", "salesDB"}


def test_column_exclude_and_decimal_string_mode() -> None:
    source, _ = make_source(customers_and_orders(), **{"column.exclude.list": "dbo.customers.email",
                                                       "decimal.handling.mode": "string"})
    events, _ = run(source, BEFORE_A)
    assert events[0].value["after"] == {"id": 1005, "first_name": "john", "last_name": "doe"}
    assert events[1].value["after"]["price"] == "19.99"


def test_function_query_mode_reads_from_the_instance_start() -> None:
    source, server = make_source(customers_and_orders(), **{"data.query.mode": "function"})
    stored = {"databases": {"testDB": {"commit_lsn": "00000010:00000000:0001", "change_lsn": None}}}
    events, _ = run(source, stored)
    assert len([e for e in events if e.value is not None]) == 9
    reads = [p for _, sql, p in server.log if "fn_cdc_get_all_changes_dbo_customers" in sql]
    assert reads[0][0] == bytes.fromhex("00000020000001000001")


def test_commit_time_with_offset_is_the_instant() -> None:
    assert T1.endswith("+02:00")  # 12:11:08.47 at +02:00 is 10:11:08.47 UTC
    source, _ = make_source(customers_and_orders())
    events, _ = run(source, BEFORE_A)
    assert events[0].value["source"]["ts_ms"] == T1_MS


def test_change_table_columns_fixture_shape() -> None:
    cols = change_table_columns([{"name": "x", "column_id": 1, "type_name": "int", "max_length": 4, "precision": 10,
                                  "scale": 0, "is_nullable": False, "is_identity": True, "is_computed": False,
                                  "default_definition": None}])
    assert [c["name"] for c in cols] == ["__$start_lsn", "__$end_lsn", "__$seqval", "__$operation",
                                         "__$update_mask", "x", "__$command_id"]


def test_heartbeats_while_the_change_tables_are_quiet() -> None:
    source, _ = make_source(customers_and_orders(), **{"heartbeat.interval.ms": "1", "poll.interval.ms": "1"})
    time.sleep(0.01)
    events, _ = run(source, None, polls=4)
    beats = [e for e in events if e.topic == "__debezium-heartbeat.server1"]
    assert beats and beats[0].key == {"serverName": "server1"} and isinstance(beats[0].value["ts_ms"], int)
