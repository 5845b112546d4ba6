"""One table with every type the PostgreSQL source supports, values checked through the real
server, in the snapshot and in the stream (both paths share the converters)."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from tests.integration.harness import Pipeline
from tests.integration.test_pg_stream import sql

SETUP = [
    "CREATE TYPE color AS ENUM ('red', 'green')",
    "CREATE DOMAIN price AS numeric(8,3)",
    """CREATE TABLE everything (
        id int PRIMARY KEY, c_bool bool, c_int2 int2, c_int8 int8, c_float4 float4, c_float8 float8,
        c_numeric numeric(6,1), c_numeric_u numeric, c_char char(3), c_varchar varchar(5), c_text text,
        c_bytea bytea, c_date date, c_time3 time(3), c_time time, c_timetz timetz, c_ts3 timestamp(3),
        c_ts timestamp, c_tstz timestamptz, c_interval interval, c_uuid uuid, c_json json, c_jsonb jsonb,
        c_inet inet, c_cidr cidr, c_macaddr macaddr, c_money money, c_enum color, c_price price,
        c_text_arr text[], c_enum_arr color[], c_num_arr numeric(4,2)[], c_xml xml)""",
]
ROW = """INSERT INTO everything VALUES ({id}, true, -7, 9000000000, 1.5, 0.1, -12345.6, 1e-20, 'ab', 'héllo',
    E'tab\\there', '\\x0001ff', '1999-12-31', '23:59:59.999', '00:00:00.000001', '12:00:00-08:00',
    '2000-01-01 00:00:00.123', '1900-01-01 00:00:00', '2021-06-01 12:00:00+03', '-3 mons 2 days -01:00:00',
    '00000000-0000-0000-0000-000000000001', '{{"k": [1]}}', '{{"k": [1]}}', '10.0.0.1', '10.0.0.0/8',
    '08:00:2b:01:02:03', '-1234.5', 'green', 12.345, '{{"x y", NULL, "q\\"t"}}', '{{red,green}}',
    '{{1.5,NULL}}', '<a>1</a>')"""


def b64int(text: str) -> int:
    return int.from_bytes(base64.b64decode(text), "big", signed=True)


def check(row: dict[str, Any], id_: int) -> None:
    assert row["id"] == id_
    assert (row["c_bool"], row["c_int2"], row["c_int8"], row["c_float4"], row["c_float8"]) == \
        (True, -7, 9000000000, 1.5, 0.1)
    assert b64int(row["c_numeric"]) == -123456
    assert row["c_numeric_u"]["scale"] == 20 and b64int(row["c_numeric_u"]["value"]) == 1
    assert (row["c_char"], row["c_varchar"], row["c_text"]) == ("ab ", "héllo", "tab\there")
    assert base64.b64decode(row["c_bytea"]) == b"\x00\x01\xff"
    assert row["c_date"] == 10956
    assert row["c_time3"] == 86399999  # time(3): milliseconds
    assert row["c_time"] == 1  # microseconds
    assert row["c_timetz"] == "20:00:00Z"
    assert row["c_ts3"] == 946684800123  # timestamp(3): milliseconds
    assert row["c_ts"] == -2208988800000000
    assert row["c_tstz"] == "2021-06-01T09:00:00.000000Z"
    assert row["c_interval"] == round(-3 * 30.4375 * 86400e6) + 2 * 86400_000000 - 3600_000000
    assert row["c_uuid"] == "00000000-0000-0000-0000-000000000001"
    assert row["c_json"] == '{"k": [1]}' and row["c_jsonb"] == '{"k": [1]}'
    assert (row["c_inet"], row["c_cidr"], row["c_macaddr"]) == ("10.0.0.1", "10.0.0.0/8", "08:00:2b:01:02:03")
    assert b64int(row["c_money"]) == -123450
    assert row["c_enum"] == "green"
    assert b64int(row["c_price"]) == 12345
    assert row["c_text_arr"] == ["x y", None, 'q"t']
    assert row["c_enum_arr"] == ["red", "green"]
    assert [b64int(v) if v else v for v in row["c_num_arr"]] == [150, None]
    assert row["c_xml"] == "<a>1</a>"


def test_every_type_in_snapshot_and_stream(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, *SETUP, ROW.format(id=1))
    with Pipeline({**pg_db, "snapshot.mode": "initial"}, tmp_path / "o.json") as p:
        p.wait_count(1)
        sql(pg_db, ROW.format(id=2))
        got = p.wait_count(2, topic="dbz.public.everything")
    snap, streamed = (r["value"] for r in got)
    assert snap["payload"]["op"] == "r" and streamed["payload"]["op"] == "c"
    check(snap["payload"]["after"], 1)
    check(streamed["payload"]["after"], 2)
    fields = {f["field"]: f for f in snap["schema"]["fields"][1]["fields"]}
    assert fields["c_price"]["parameters"] == {"scale": "3", "connect.decimal.precision": "8"}
    assert fields["c_enum_arr"]["items"]["parameters"] == {"allowed": "red,green"}
    assert fields["c_xml"]["name"] == "io.debezium.data.Xml"
    assert fields["c_time3"]["name"] == "io.debezium.time.Time"
    assert fields["c_ts3"]["name"] == "io.debezium.time.Timestamp"
    assert fields["id"]["optional"] is False and fields["c_text"]["optional"] is True
