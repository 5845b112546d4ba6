"""The compiled binlog row codec (native/src/binlog.rs) writes the bytes the Python path writes.

One workload over the types the codec takes (integers of every width and signedness, booleans,
UTF-8 text with escapes and four-byte characters, decimals, dates with zero dates, DATETIME and
TIMESTAMP at every precision), with NULLs, defaults, updates, deletes and a key change, and tables
the codec must leave to Python (a latin1 column, a 65-digit decimal, an unsigned BIGINT), is read
from the same binlog by two pipelines, with and without the codec: every record must be
byte-identical but for the processing time stamps.
"""
from __future__ import annotations

import re
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cdc.sources.mysql.source import MySqlSource
from tests.conftest import require_native
from tests.integration.harness import Pipeline
from tests.integration.test_mysql_stream import sql
from tests.integration.test_native_rows import RawSink, _scrub, same_files, streaming, wait_for_file

pytestmark = pytest.mark.mysql

TABLES = [
    """CREATE TABLE t (id int PRIMARY KEY, ti tinyint, tu tinyint unsigned, si smallint, su smallint unsigned,
       mi mediumint, mu mediumint unsigned, i int, iu int unsigned, bi bigint, flag boolean, b2 tinyint(2),
       v varchar(300) CHARACTER SET utf8mb4, c char(4), tx text, d decimal(12,2), d0 decimal(5,0),
       d38 decimal(38,10), dt date, dt0 datetime, dt3 datetime(3), dt6 datetime(6), ts0 timestamp NULL,
       ts3 timestamp(3) NULL, ts6 timestamp(6) NULL, nn int NOT NULL DEFAULT 7, nd date NOT NULL DEFAULT '2020-01-02')
       CHARACTER SET utf8mb4""",
    "CREATE TABLE k (name varchar(20), n int, v int, PRIMARY KEY (name, n)) CHARACTER SET utf8mb4",
    "CREATE TABLE nokey (a int, b varchar(10)) CHARACTER SET utf8mb4",
    "CREATE TABLE py1 (id int PRIMARY KEY, l varchar(10) CHARACTER SET latin1)",
    "CREATE TABLE py2 (id int PRIMARY KEY, big decimal(65,30), ub bigint unsigned)",
]
ROWS = [
    "SET SESSION sql_mode = ''",  # zero dates
    "INSERT INTO t (id) VALUES (1)",
    "INSERT INTO t VALUES (2, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, "
    "-9223372036854775808, true, 5, 'quote \" backslash \\\\ nl \\n tab \\t żółw 🐢 \\0 end', 'ab', "
    "REPEAT('x', 300), -1234567890.12, -99999, 1234567890123456789012345678.9012345678, '0000-00-00', "
    "'0000-00-00 00:00:00', '1969-12-31 23:59:59.999', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', "
    "'2038-01-19 03:14:07.120', '2024-02-29 13:45:30.000001', 0, '0000-00-00')",
    "INSERT INTO t VALUES (3, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, false, -1, '', "
    "'', '', 0, 0, -0.0000000001, '2024-02-29', '2024-02-29 13:45:30', '2024-02-29 13:45:30.5', "
    "'0001-01-01 00:00:00.000001', '2024-02-29 13:45:30', '2024-02-29 13:45:30', '2024-02-29 13:45:30', 1, "
    "'1000-01-01')",
    "UPDATE t SET v = 'changed', d = d + 1 WHERE id = 2",
    "UPDATE t SET id = 4 WHERE id = 3",
    "DELETE FROM t WHERE id = 1",
    "INSERT INTO k VALUES ('a', 1, 1), ('żółw', -2, NULL)",
    "UPDATE k SET n = 3 WHERE name = 'a'",
    "INSERT INTO nokey VALUES (1, 'x'), (NULL, NULL)",
    "INSERT INTO py1 VALUES (1, 'caf\\xe9')",
    "INSERT INTO py2 VALUES (1, 12345678901234567890123456789012345.123456789012345678901234567890, "
    "18446744073709551615)",
]
EXPECTED_RECORDS = 18  # 3 inserts, an update, a key change (delete, tombstone, create), a delete and its
# tombstone; two inserts and a key change (delete, tombstone, create) in k; two in nokey; py1; py2


def test_same_bytes_with_and_without_the_codec(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_native()
    from cdc.sources.mysql import native_rows

    encoded: list[str] = []
    real = native_rows.EventRows.row

    def counting(self: Any, index: int) -> Any:
        row = real(self, index)
        encoded.append(row.json.decode())
        return row

    monkeypatch.setattr(native_rows.EventRows, "row", counting)
    # with encoded batches, a rows event of inserts goes whole (BinlogChanges._segment): counted there
    from cdc.sources.mysql import stream
    real_segment = stream.BinlogChanges._segment

    def counting_segment(self: Any, events: Any, state: Any, rows: list[tuple[bytes, Any]], *args: Any) -> None:
        encoded.extend(json.decode() for json, _ in rows)
        real_segment(self, events, state, rows, *args)

    monkeypatch.setattr(stream.BinlogChanges, "_segment", counting_segment)
    db = mysql_db["db"]
    sql(mysql_server, db, *TABLES)
    sinks = {True: RawSink(), False: RawSink()}
    pipelines = []
    for native in (True, False):
        props = {**mysql_db, "topic.prefix": "dbz", "snapshot.mode": "no_data",
                 "database.server.id": str(int(mysql_db["database.server.id"]) + native),
                 "schema.history.internal.file.filename": str(tmp_path / f"history-{native}.jsonl"),
                 "native.rows": str(native).lower()}
        pipeline = Pipeline(props, tmp_path / f"o{native}.json", sink=sinks[native],  # type: ignore[arg-type]
                            source_cls=MySqlSource)
        pipelines.append(pipeline.__enter__())
    try:
        for p in pipelines:
            p.wait_ready()
        sql(mysql_server, db, *ROWS)
        deadline = time.monotonic() + 60
        # until both have the last statement's record (py2's insert): the binlog's order is kept
        while not all(any(r.topic.endswith(".py2") for r in list(sink.records)) for sink in sinks.values()):
            assert time.monotonic() < deadline, (len(sinks[True].records), len(sinks[False].records))
            time.sleep(0.1)
        time.sleep(0.5)  # anything more would show as a difference in length
    finally:
        for p in pipelines:
            p.__exit__(None, None, None)
    ours, reference = sinks[True].records, sinks[False].records
    data = [r for r in ours if r.topic.startswith("dbz.")]
    assert len(ours) == len(reference) and len(data) >= EXPECTED_RECORDS
    for mine, theirs in zip(ours, reference, strict=True):
        assert _scrub(mine) == _scrub(theirs)
    # the codec took the rows of t, k and nokey (not py1's latin1, nor py2's 65 digits and unsigned BIGINT)
    assert len(encoded) >= 12 and not any('"l":' in json or '"big":' in json for json in encoded), encoded
    row2 = next(json for json in encoded if json.startswith('{"id":2,'))
    assert re.search(r'"v":"quote \\" backslash \\\\ nl \\n tab \\t żółw 🐢 \\u0000 end"', row2), row2


SNAPSHOT_TABLES = [
    *TABLES,
    # what the codec leaves to each column's Python converter inside the same call (binary values given
    # as bytes), and the time adjuster's two-digit years, in a key too
    """CREATE TABLE other (id int PRIMARY KEY, bn binary(4), vb varbinary(10), bl blob, e enum('x','y'),
       s set('p','q'), j json, bt bit(10), b1 bit(1), y year, tm time(3), f float, db double, ub bigint unsigned,
       nv decimal(5,2) NOT NULL DEFAULT 1.5) CHARACTER SET utf8mb4""",
    "CREATE TABLE early (d date PRIMARY KEY, dt datetime(6), n int) CHARACTER SET utf8mb4",
    "CREATE TABLE hidden (id int, secret varchar(10), PRIMARY KEY (id)) CHARACTER SET utf8mb4",
]
SNAPSHOT_ROWS = [
    "SET SESSION sql_mode = ''",
    *[statement for statement in ROWS if statement.startswith("INSERT")],
    "INSERT INTO t (id, i, v) SELECT seq, seq * 3, CONCAT('row ', seq) FROM seq_10_to_30",
    "INSERT INTO k SELECT CONCAT('n', seq), seq, NULL FROM seq_1_to_9",
    "INSERT INTO nokey SELECT seq, 'z' FROM seq_1_to_7",
    "INSERT INTO other VALUES (1, 'ab', x'00ff10', x'deadbeef', 'y', 'p,q', '{\"a\": [1, 2.5]}', b'1010101010', "
    "b'1', 2024, '-838:59:59.000', 1.1, 2.2250738585072014e-308, 18446744073709551615, 9.99)",
    *[f"INSERT INTO other (id, bn, e, j, f, db) VALUES ({n}, x'0102', 'x', 'null', {n}.5, -{n}e10)"
      for n in range(2, 8)],
    "INSERT INTO early VALUES ('0005-01-01', '0069-12-31 23:59:59.5', 1), ('0070-01-01', '0099-01-01', 2), "
    "('2024-01-01', '0000-00-00 00:00:00', 3), ('0100-01-01', NULL, 4), ('1999-12-31', '1999-12-31', 5)",
    "INSERT INTO hidden SELECT seq, 's' FROM seq_1_to_6",
]


def test_snapshot_files_same_bytes_with_and_without_the_codec(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot's row packets the codec encodes in batches (all but each batch's first and last row,
    cdc.sources.mysql.snapshot_rows), written by the file sink in one go: through cdc.pipeline.build, as
    the CLI runs it, the files are those of the Python path, byte for byte but for time stamps, with each
    table's first and last marks; the codec took most rows, of every table."""
    require_native()
    import orjson

    from cdc.pipeline import build
    from cdc.sources.mysql import snapshot_rows

    encoded: list[int] = []
    real = snapshot_rows.TextRowEncoder.encode

    def counting(self: Any, packets: list[bytes]) -> Any:
        result = real(self, packets)
        encoded.append(len(packets) if result is not None else 0)
        return result

    monkeypatch.setattr(snapshot_rows.TextRowEncoder, "encode", counting)
    db = mysql_db["db"]
    sql(mysql_server, db, *SNAPSHOT_TABLES, *SNAPSHOT_ROWS)
    outs = {native: tmp_path / f"out-{native}" for native in (True, False)}
    for native, out in outs.items():
        props = {**{k: v for k, v in mysql_db.items() if k != "db"}, "topic.prefix": "dbz",
                 "snapshot.mode": "initial_only", "native.rows": str(native).lower(), "snapshot.fetch.size": "4",
                 "sink.files.directory": str(out), "offset.storage.file.filename": str(tmp_path / f"o{native}.json"),
                 "schema.history.internal.file.filename": str(tmp_path / f"history-{native}.jsonl"),
                 "message.key.columns": f"{db}.hidden:secret", "column.exclude.list": f"{db}.hidden.secret"}
        build("mysql", props).run()
    lines = same_files(outs, f"dbz.{db}.*.jsonl")
    assert len(lines) == 24 + 11 + 9 + 1 + 1 + 7 + 5 + 6, len(lines)
    by_table = {path.name.split(".")[2]: sum(1 for _ in path.read_bytes().splitlines())
                for path in (tmp_path / "out-True").glob(f"dbz.{db}.*.jsonl")}
    assert set(by_table) == {"t", "k", "nokey", "py1", "py2", "other", "early", "hidden"}, by_table
    # every batch of 4 gives its 2 middle rows to the codec (a batch of 3 its middle one): t, k, nokey, other,
    # early; hidden's never (its key column is left out of its rows, which the codec does not do)
    assert sum(encoded) >= 12 + 5 + 4 + 3 + 2, encoded
    events = [orjson.loads(line)["value"]["payload"] for line in lines]
    early = {e["after"]["n"]: e["after"] for e in events if e["source"]["table"] == "early"}
    # two-digit years moved by the time adjuster (0005 -> 2005, 0069 -> 2069, 0070 -> 1970), 0100 kept
    assert [early[n]["d"] for n in (1, 2, 4)] == [(date(y, 1, 1) - date(1970, 1, 1)).days for y in (2005, 1970, 100)]
    assert early[1]["dt"] == (datetime(2069, 12, 31, 23, 59, 59, 500_000) - datetime(1970, 1, 1)) // timedelta(
        microseconds=1)
    marks = [e["source"]["snapshot"] for e in events if e["source"]["table"] == "t"]
    assert marks[0] in ("first", "first_in_data_collection") and marks[-1] in ("last_in_data_collection", "last")
    assert set(marks[1:-1]) == {"true"}


@pytest.mark.parametrize("schemas", [True, False], ids=["schemas", "no-schemas"])
def test_stream_files_same_bytes_with_and_without_the_codec(mysql_server: dict[str, Any], mysql_db: dict[str, str],
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            schemas: bool) -> None:
    """Rows events of inserts encoded whole and spliced by the file sink (BinlogChanges._segment), through
    cdc.pipeline.build as the CLI runs it: the files are those of the Python path but for time stamps and
    context headers; updates, deletes, tables the codec leaves to Python and events of several hundred
    rows (several rows events a statement) among them."""
    require_native()
    import orjson

    from cdc.sources.mysql import stream

    segments: list[int] = []
    real_segment = stream.BinlogChanges._segment

    def counting_segment(self: Any, events: Any, state: Any, rows: list[tuple[bytes, Any]], *args: Any) -> None:
        segments.append(len(rows))
        real_segment(self, events, state, rows, *args)

    monkeypatch.setattr(stream.BinlogChanges, "_segment", counting_segment)
    db = mysql_db["db"]
    sql(mysql_server, db, *TABLES, "CREATE TABLE done (id int PRIMARY KEY)")
    outs = {native: tmp_path / f"out-{native}" for native in (True, False)}
    props = {native: {**{k: v for k, v in mysql_db.items() if k != "db"}, "topic.prefix": "dbz",
                      "snapshot.mode": "no_data",
                      "database.server.id": str(int(mysql_db["database.server.id"]) + native),
                      "native.rows": str(native).lower(), "sink.files.directory": str(outs[native]),
                      "offset.storage.file.filename": str(tmp_path / f"o{native}.json"),
                      "schema.history.internal.file.filename": str(tmp_path / f"history-{native}.jsonl"),
                      "key.converter.schemas.enable": str(schemas).lower(),
                      "value.converter.schemas.enable": str(schemas).lower()} for native in (True, False)}
    with streaming("mysql", props):
        sql(mysql_server, db, *ROWS,
            "INSERT INTO k SELECT CONCAT('row ', seq, REPEAT('x', 10)), seq, seq FROM seq_1_to_600",
            "INSERT INTO done VALUES (1)")
        wait_for_file(list(outs.values()), f"dbz.{db}.done.jsonl")
    lines = same_files(outs, f"dbz.{db}.*.jsonl")
    assert len(lines) >= EXPECTED_RECORDS + 600 + 1
    # the 600 rows of k came in several rows events, each encoded whole
    assert len(segments) >= 3 and sum(segments) >= 600, segments
    topic = f"dbz.{db}.k"
    values = [record["value"] for record in map(orjson.loads, lines) if record["topic"] == topic]
    rows = [(value["payload"] if schemas else value)["source"]["row"] for value in values if value is not None]
    assert rows.count(0) >= 3 and max(rows) > 0
