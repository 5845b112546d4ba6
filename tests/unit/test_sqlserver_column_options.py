"""Debezium's column options on the SQL Server source, over recorded change-table rows (no SQL Server runs
here; the same core rules are checked against Debezium on PostgreSQL and MariaDB in tests/conformance):
masking and hashing character columns, truncation, the include list, source types in the schema, a key
column left out of the rows staying in the key."""
from __future__ import annotations

import hashlib

from tests.fixtures.sqlserver.testdb import customers_and_orders
from tests.unit.test_sqlserver_stream import BEFORE_A, CUST, ORD, make_source, run


def _v1(salt: str, text: str) -> str:
    data = text.encode()
    return hashlib.sha256(salt.encode() + b"\xac\xed\x00\x05t" + len(data).to_bytes(2, "big") + data).hexdigest()


def test_masks_hashes_and_truncation_in_values_never_in_keys() -> None:
    source, _ = make_source(customers_and_orders(), **{
        "column.mask.with.6.chars": r"dbo\.customers\.email",
        "column.mask.hash.SHA-256.with.salt.pepper": r"dbo\.customers\.last_name",
        "column.truncate.to.2.chars": r"dbo\.customers\.first_name"})
    events, _ = run(source, BEFORE_A)
    create = next(e for e in events if e.topic == CUST and e.value and e.value["op"] == "c")
    assert create.key == {"id": 1005}
    # last_name is a varchar(255): its 64-character digest is not cut
    assert create.value["after"] == {"id": 1005, "first_name": "jo", "last_name": _v1("pepper", "doe"),
                                     "email": "******"}
    fields = {f["field"]: f for f in create.value_schema.fields[0]["fields"]}
    assert fields["email"]["parameters"] == {"masked": "true"}
    assert fields["last_name"]["parameters"] == {"masked": "true"}
    assert fields["first_name"]["parameters"] == {"truncateLength": "2"}
    delete = next(e for e in events if e.topic == CUST and e.value and e.value["op"] == "d")
    assert delete.value["before"]["email"] == "******"


def test_include_list_keeps_the_key_and_propagates_types() -> None:
    source, _ = make_source(customers_and_orders(), **{
        "column.include.list": r"dbo\.orders\.(quantity|price)",
        "column.propagate.source.type": r"dbo\.orders\.price"})
    events, _ = run(source, BEFORE_A)
    order = next(e for e in events if e.topic == ORD and e.value and e.value["op"] == "c")
    assert order.key == {"id": 1}  # the key column is left out of the rows, not out of the key
    assert set(order.value["after"]) == {"quantity", "price"}
    price = next(f for f in order.value_schema.fields[0]["fields"] if f["field"] == "price")
    assert price["parameters"]["__debezium.source.column.name"] == "price"
    assert price["parameters"]["__debezium.source.column.type"] == "DECIMAL"
    customer = next(e for e in events if e.topic == CUST and e.value)
    assert customer.value["after"] == {}  # no column of customers is listed
