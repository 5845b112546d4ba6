"""GTIDs of MySQL (``uuid:1-5`` sets) and MariaDB (``domain-server-seq`` positions), how positions are ordered
across servers, and where a stored offset resumes (cdc/sources/mysql/gtids.py, position.py, resume.py). No
server: MySQL 8 cannot run here, so its GTID behaviour is pinned by these tests."""
from __future__ import annotations

import pytest

from cdc.core.errors import OffsetStoreError
from cdc.core.filters import NameFilter
from cdc.sources.mysql.connection import ServerInfo
from cdc.sources.mysql.gtids import DeliveredGtids, MariaDbGtids, MySqlGtids, covers, parse_gtids, source_of
from cdc.sources.mysql.position import BinlogPosition, at_or_before
from cdc.sources.mysql.resume import LACKING_FIX, PURGED_FIX, ServerGtids, plan, reopen_gtids

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "5a2c1b90-0000-11e1-9e33-c80aa9429562"
C = "77777777-0000-11e1-9e33-c80aa9429562"
ALL = NameFilter()


# ---- MySQL's sets ----------------------------------------------------------------------------------------

def test_mysql_set_parses_merges_and_prints_as_mysql_does() -> None:
    gtids = MySqlGtids.parse(f"{B}:3,\n{A.upper()}:1-5:7-9:6")
    assert str(gtids) == f"{A}:1-9,{B}:3"  # sorted by uuid, lower case, adjacent intervals merged
    gtids.add(f"{B}:4")
    gtids.add(f"{B}:4")  # again: nothing changes (the library's GtidSet raises here)
    gtids.add(f"{C}:1")
    assert str(gtids) == f"{A}:1-9,{B}:3-4,{C}:1"
    assert str(MySqlGtids.parse("")) == "" and not MySqlGtids.parse(None)


@pytest.mark.parametrize("text", ["nope", f"{A}", f"{A}:x", f"{A}:tag:1-5", "0-1-5"])
def test_mysql_set_refuses_what_is_not_one(text: str) -> None:
    with pytest.raises(ValueError):
        MySqlGtids.parse(text)


def test_mysql_set_containment_difference_and_sources() -> None:
    executed = MySqlGtids.parse(f"{A}:1-100,{B}:1-20")
    assert executed.contains(MySqlGtids.parse(f"{A}:5-10:50,{B}:20"))
    assert not executed.contains(MySqlGtids.parse(f"{A}:99-101"))
    assert not executed.contains(MySqlGtids.parse(f"{C}:1"))
    assert str(executed.minus(MySqlGtids.parse(f"{A}:10-20:30,{B}:1-20"))) == f"{A}:1-9:21-29:31-100"
    assert str(executed.only(lambda source: source == B)) == f"{B}:1-20"
    assert str(MySqlGtids.parse(f"{A}:1-3").union(MySqlGtids.parse(f"{A}:4-6,{B}:9"))) == f"{A}:1-6,{B}:9"


def test_delivered_gtids_of_both_flavours() -> None:
    mysql = DeliveredGtids(False, f"{A}:1-5")
    mysql.add(f"{A}:6")
    mysql.add(f"{B}:1")
    assert mysql.text() == f"{A}:1-6,{B}:1"
    mariadb = DeliveredGtids(True, "0-1-5,1-2-7")
    mariadb.add("0-2-6")  # a new primary in domain 0: the domain's position moves to its GTID
    mariadb.add("2-3-1")
    assert mariadb.text() == "0-2-6,1-2-7,2-3-1"
    assert DeliveredGtids(True, None).text() is None


# ---- MariaDB's positions ---------------------------------------------------------------------------------

def test_mariadb_state_and_position() -> None:
    state = MariaDbGtids.parse("0-1-100,0-2-105,1-1-7")  # gtid_binlog_state: per (domain, server)
    assert str(state) == "0-2-105,1-1-7"  # the position: one GTID per domain, the latest
    assert state.holds((0, 1, 100)) and state.holds((0, 1, 99)) and not state.holds((0, 1, 101))
    assert not state.holds((0, 3, 1))  # no transaction of server 3 in domain 0 here
    assert state.contains(MariaDbGtids.parse("0-1-104,1-1-7"))  # sequence numbers grow within a domain
    assert not state.contains(MariaDbGtids.parse("0-2-106"))
    assert not state.contains(MariaDbGtids.parse("2-1-1"))
    assert str(MariaDbGtids.parse("[0-1-487]")) == "0-1-487"  # as a Gtid_list event shows it
    with pytest.raises(ValueError):
        MariaDbGtids.parse(f"{A}:1")


def test_the_source_gtid_filters_match() -> None:
    assert source_of(f"{A.upper()}:12") == A
    assert source_of("0-1-12") == "0-1"
    assert source_of("10-2000-3") == "10-2000"


def test_flavour_read_from_the_text() -> None:
    assert isinstance(parse_gtids("0-1-5"), MariaDbGtids)
    assert isinstance(parse_gtids(f"{A}:1-5"), MySqlGtids)
    assert not covers("0-1-5", f"{A}:1")  # two flavours never cover each other


# ---- positions ordered across servers (the schema history's comparator) ----------------------------------

def test_positions_compare_by_gtids_whichever_server_logged_them() -> None:
    record = {"file": "replica-bin.000009", "pos": 900, "gtids": "0-1-50"}
    assert at_or_before(record, {"file": "primary-bin.000002", "pos": 4, "gtids": "0-1-60"})
    assert at_or_before(record, {"file": "primary-bin.000002", "pos": 4, "gtids": "0-2-50"})  # a new primary
    assert not at_or_before(record, {"file": "primary-bin.000099", "pos": 4, "gtids": "0-1-49"})
    assert at_or_before({"file": "x.000001", "pos": 4, "gtids": f"{A}:1-5"}, {"file": "y.000001", "gtids": f"{A}:1-9"})
    assert not at_or_before({"file": "x.000001", "gtids": f"{A}:1-5,{B}:1"}, {"file": "x.000001", "gtids": f"{A}:1-9"})


def test_positions_without_gtids_compare_by_file_and_position() -> None:
    assert at_or_before({"file": "b.000001", "pos": 4}, {"file": "b.000001", "pos": 4, "gtids": "0-1-1"})
    assert not at_or_before({"file": "b.000001", "pos": 4, "gtids": "0-1-1"}, {"file": "b.000009", "pos": 4})
    assert at_or_before({"file": "b.000002", "pos": 900}, {"file": "b.000010", "pos": 4})
    assert not at_or_before({"file": "b.000010", "pos": 5}, {"file": "b.000010", "pos": 4})


# ---- offsets ----------------------------------------------------------------------------------------------

def test_offset_carries_the_transactions_gtid_and_the_server_of_its_file() -> None:
    offset = {"file": "b.000003", "pos": 120, "event": 2, "row": 0, "gtids": "0-1-9", "gtid": "0-1-10",
              "server_identity": "mariadb:1:0:/data/"}
    position = BinlogPosition.from_offset(offset)
    assert position.gtid == "0-1-10" and not position.debezium_counts
    assert position.to_offset()["server_identity"] == "mariadb:1:0:/data/"  # not read here yet: its own server
    inside = position.inside("r.000001", 400, 3, "0-1-10")
    assert inside.to_offset()["gtid"] == "0-1-10" and "server_identity" not in inside.to_offset()
    assert "gtid" not in BinlogPosition("b.000001", 4, gtids="0-1-9").to_offset()


def test_a_debezium_offset_counts_every_event_of_its_transaction() -> None:
    debezium = BinlogPosition.from_offset({"file": "b.000003", "pos": 120, "event": 2, "row": 1, "gtids": "0-1-9"})
    assert debezium.debezium_counts and debezium.to_offset()["server_identity"] is None
    assert not BinlogPosition.from_offset({"file": "b.000003", "pos": 120}).debezium_counts


def test_an_offset_with_a_gtid_set_that_cannot_be_read_is_refused() -> None:
    with pytest.raises(OffsetStoreError, match="not a binlog position"):
        BinlogPosition.from_offset({"file": "b.000003", "pos": 4, "gtids": "0-1-x"})


# ---- where a stored offset resumes ---------------------------------------------------------------------

def _files() -> list[str]:
    return ["b.000002", "b.000003"]


def _offset(gtids: str | None, file: str = "b.000003") -> dict[str, object]:
    return {"file": file, "pos": 400, "gtids": gtids}


def test_mysql_resumes_by_gtid_on_a_server_holding_every_delivered_transaction() -> None:
    # the promoted replica's own transactions (C) came after the offset: all of them are sent
    server = ServerGtids(False, f"{A}:1-120,{C}:1-8", f"{A}:1-50")
    resume = plan(_offset(f"{A}:1-100"), server, _files, ALL)
    assert resume.by_gtid and resume.reaches and resume.gtids == f"{A}:1-100"


def test_mysql_refuses_a_server_that_lacks_or_purged_transactions() -> None:
    lacking = plan(_offset(f"{A}:1-100,{B}:1-5"), ServerGtids(False, f"{A}:1-90,{B}:1-5", ""), _files, ALL)
    assert not lacking.reaches and f"{A}:91-100" in str(lacking.gone) and lacking.fix == LACKING_FIX
    assert "does not have transactions this pipeline delivered" in str(lacking.gone)
    purged = plan(_offset(f"{A}:1-100"), ServerGtids(False, f"{A}:1-200", f"{A}:1-150"), _files, ALL)
    assert not purged.reaches and f"{A}:101-150" in str(purged.gone) and purged.fix == PURGED_FIX
    assert "b.000003:400" in str(purged.gone)  # where the offset stood
    new_source = plan(_offset(f"{A}:1-100"), ServerGtids(False, f"{A}:1-100,{B}:1-9", f"{B}:1-2"), _files, ALL)
    assert not new_source.reaches and f"{B}:1-2" in str(new_source.gone)  # purged before any was delivered


def test_mysql_gtid_source_filter_narrows_what_a_server_must_hold() -> None:
    only_a = NameFilter([A])
    # the new server never replicated B, and purged C's first transactions: neither is captured
    server = ServerGtids(False, f"{A}:1-100,{C}:1-9", f"{C}:1-4")
    resume = plan(_offset(f"{A}:1-100,{B}:1-5"), server, _files, only_a)
    assert resume.reaches and resume.gtids == f"{A}:1-100,{C}:1-4"  # B left out: the server has none of it
    assert not plan(_offset(f"{A}:1-100,{B}:1-5"), server, _files, ALL).reaches
    excluding = NameFilter(None, [f"{B[:8]}.*"])  # a regular expression, matched whole
    assert plan(_offset(f"{A}:1-100,{B}:1-5"), ServerGtids(False, f"{A}:1-100", ""), _files, excluding).reaches


def test_mariadb_resumes_on_a_promoted_replica() -> None:
    # the replica logged the primary's transactions (log_slave_updates) and, promoted, its own in domain 0
    server = ServerGtids(True, "0-1-100,0-2-130", "[0-1-20]")
    resume = plan(_offset("0-1-100"), server, _files, ALL)
    assert resume.reaches and resume.gtids == "0-1-100"


def test_mariadb_refuses_a_server_that_lacks_or_purged_transactions() -> None:
    behind = plan(_offset("0-1-100"), ServerGtids(True, "0-1-95,0-2-96", "[]"), _files, ALL)
    assert not behind.reaches and "0-1-100" in str(behind.gone) and behind.fix == LACKING_FIX
    purged = plan(_offset("0-1-100"), ServerGtids(True, "0-1-300", "[0-1-150]"), _files, ALL)
    assert not purged.reaches and "the oldest binlog starts after 0-1-150" in str(purged.gone)
    new_domain = plan(_offset("0-1-100"), ServerGtids(True, "0-1-100,1-3-40", "[0-1-90,1-3-12]"), _files, ALL)
    assert not new_domain.reaches and "domain 1 up to 1-3-12" in str(new_domain.gone)
    unknown = plan(_offset("0-1-100"), ServerGtids(True, "0-1-100,1-3-40", None), _files, ALL)
    assert unknown.reaches  # the oldest binlog's GTID list could not be read: the server itself will say


def test_mariadb_gtid_source_filter() -> None:
    domain_0 = NameFilter(["0-.*"])
    # domain 5 came from a source not captured and this server never had it: left out of the position
    resume = plan(_offset("0-1-100,5-9-3"), ServerGtids(True, "0-1-100", "[5-9-1]"), _files, domain_0)
    assert resume.reaches and resume.gtids == "0-1-100"
    assert not plan(_offset("0-1-100,5-9-3"), ServerGtids(True, "0-1-100", "[]"), _files, ALL).reaches


def test_by_file_and_position_without_gtids_or_when_told() -> None:
    assert plan(_offset(None), ServerGtids(True, "0-1-5", None), _files, ALL) == plan(_offset(None), None, _files, ALL)
    by_file = plan(_offset("0-1-5"), ServerGtids(True, "0-1-5", None), _files, ALL, ignore_gtids=True)
    assert not by_file.by_gtid and by_file.reaches
    gone = plan(_offset(f"{A}:1-5", file="b.000001"), None, _files, ALL)  # MySQL without gtid_mode=ON
    assert not gone.by_gtid and "b.000001" in str(gone.gone) and "purged" in str(gone.gone)


def test_reopening_a_stream_by_gtid() -> None:
    assert reopen_gtids("0-1-100", "0-1-120,1-2-3", True) == "0-1-120,1-2-3"
    assert reopen_gtids("0-1-100", None, True) == "0-1-100"
    assert reopen_gtids(f"{A}:1-100,{C}:1-4", f"{A}:1-130", False) == f"{A}:1-130,{C}:1-4"


# ---- the server an offset or a history was written on ------------------------------------------------------

def _info(mariadb: bool, server_id: int, datadir: str = "/data/", uuid: str | None = None) -> ServerInfo:
    return ServerInfo(version="10.11.19-MariaDB" if mariadb else "8.0.36", mariadb=mariadb, server_id=server_id,
                      lower_case_table_names=0, charset="utf8mb4", row_metadata="FULL", gtid_mode=True,
                      server_uuid=uuid, datadir=datadir)


def test_another_server_of_the_topology_continues_an_offset_by_gtid() -> None:
    replica = _info(True, 2, "/replica/")
    replica.check_written_here("stored offset", "mariadb:1:0:/primary/", OffsetStoreError, topology=True)
    with pytest.raises(OffsetStoreError, match="written on another server"):  # by file and position: never
        replica.check_written_here("stored offset", "mariadb:1:0:/primary/", OffsetStoreError)
    alike = _info(True, 1, "/elsewhere/")  # two servers started alike both log 0-1-n: not one topology
    with pytest.raises(OffsetStoreError, match="written on another server") as raised:
        alike.check_written_here("stored offset", "mariadb:1:0:/primary/", OffsetStoreError, topology=True)
    assert "by GTID" in (raised.value.fix or "")
    _info(False, 7, uuid=B).check_written_here("stored offset", f"mysql:{A}", OffsetStoreError, topology=True)


def test_gtids_that_cannot_be_read_are_errors_with_a_fix() -> None:
    from cdc.core.errors import SourceError

    with pytest.raises(OffsetStoreError, match="not this server's kind"):
        plan(_offset(f"{A}:1-5"), ServerGtids(True, "0-1-5", None), _files, ALL)
    with pytest.raises(SourceError, match="cannot read the server's GTIDs") as raised:  # MySQL 8.4's tagged GTIDs
        plan(_offset(f"{A}:1-5"), ServerGtids(False, f"{A}:1-5,{B}:audit:1-3", ""), _files, ALL)
    assert "gtid.ignore.on.recovery=true" in (raised.value.fix or "")
