"""A real consumer of our topics: Debezium's JDBC sink connector (3.5.0.Final) in a Kafka Connect
4.1.1 standalone worker at Connect's defaults, replicating a PostgreSQL workload into a fresh
database, once from cdc's topics and once from real Debezium's (the PostgreSQL connector 3.6.1.Final
run beside cdc on the same source). Every target table is compared with its source table row for
row, value for value.

The workload: every common PostgreSQL type, a composite primary key, inserts, updates, deletes, a
primary-key change, a TOASTed value an update leaves unchanged (REPLICA IDENTITY DEFAULT), and
``ALTER TABLE ... ADD COLUMN`` with a constant default and then NOT NULL expression defaults, with
rows before and after. The first rows are snapshotted, the rest streamed.

Sink settings: Debezium's own topics need ``header.converter=StringConverter`` on the sink
connector (with the worker's default SimpleHeaderConverter the sink fails on the key-change
header: ``No schema defined for value of map field: "__debezium.newkey"``); cdc's run gets that
setting too, and no other.

What the comparison normalises (:data:`NORMALISED`, each with why) is where the sink maps a type
differently; :func:`expected_losses` lists the values no change event carries, which the target
therefore cannot hold (the same for both producers).
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from cdc.config import CORE_OPTIONS, Config
from tests.conftest import _drop_database
from tests.integration.connect_fixtures import (
    ConnectWorker,
    connect_plugins,
    env_timeout,
    jdbc_sink,
    postgres_source,
    run_jdbc_sink,
)
from tests.integration.harness import Pipeline
from tests.integration.kafka_fixtures import read_topic

pytestmark = [pytest.mark.postgres, pytest.mark.kafka]

# Debezium's topics need it (see the module's docstring); cdc's run gets the same.
SINK_SETTINGS = {"header.converter": "org.apache.kafka.connect.storage.StringConverter"}

SETUP = [
    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
    """CREATE TABLE types (
        id int PRIMARY KEY, c_int2 int2, c_int4 int4, c_int8 int8, c_num numeric(10,3), c_numu numeric,
        c_real real, c_double double precision, c_bool bool, c_text text, c_varchar varchar(20), c_char char(5),
        c_bytea bytea, c_date date, c_time time, c_timetz timetz, c_ts timestamp, c_tstz timestamptz,
        c_interval interval, c_uuid uuid, c_json json, c_jsonb jsonb, c_inet inet, c_int_arr int[],
        c_text_arr text[], c_enum mood)""",
    "CREATE TABLE pairs (a int, b text, v text, PRIMARY KEY (a, b))",
    "CREATE TABLE docs (id int PRIMARY KEY, body text, n int)",  # REPLICA IDENTITY DEFAULT
    "CREATE TABLE orders (id int PRIMARY KEY, item text)",
    "CREATE TABLE marker (id int PRIMARY KEY)",  # its row is the workload's last change
]
ROW = """INSERT INTO types VALUES ({id}, {i2}, 2147483647, -9223372036854775808, -1234567.891, 1e-20,
    1.5, 0.1, true, 'héllo ☃ ''q''', 'ab', 'xy', '\\x00ff10', '1999-12-31', '23:59:59.999999', '12:00:00-08:00',
    '2000-01-01 00:00:00.123456', '2021-06-01 12:00:00+03', '1 year 2 mons 3 days 04:05:06.789',
    'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{{"k": [1, 2]}}', '{{"b": 1, "a": [true, null]}}', '10.0.0.1/8',
    '{{1,NULL,3}}', '{{"x y",NULL,"q\\"t"}}', 'happy')"""
BIG = "(SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 400) i)"  # 12,800 chars: TOASTed
SNAPSHOT = [
    ROW.format(id=1, i2=-32768), ROW.format(id=2, i2=32767), "INSERT INTO types (id) VALUES (3)",
    "INSERT INTO pairs VALUES (1, 'a', 'one'), (1, 'b', 'two'), (2, 'a', 'three')",
    f"INSERT INTO docs SELECT g, {BIG}, g FROM generate_series(1, 3) g",
    "INSERT INTO orders VALUES (1, 'pen'), (2, 'ink'), (3, 'nib')",
]
STREAM = [
    ROW.format(id=4, i2=0),
    "INSERT INTO types (id, c_text, c_varchar, c_int_arr, c_text_arr) VALUES (5, '', 'x', '{}', '{}')",
    """INSERT INTO types (id, c_num, c_numu, c_real, c_double, c_time, c_timetz, c_ts, c_tstz, c_interval, c_inet,
           c_date, c_enum) VALUES (6, 0, -0.000001, -3.25e-10, 1e300, '00:00:00', '23:59:59.5+05:30',
           '1970-01-01 00:00:00', '1969-12-31 23:59:59.999999+00', '-3 mons 2 days -01:00:00.5', '::1', '0001-01-01',
           'sad')""",
    "UPDATE types SET c_text = 'changed', c_num = 0.001, c_numu = 12345678901234567890.5, c_bool = false WHERE id = 1",
    "UPDATE types SET id = 20 WHERE id = 2",  # a primary-key change
    "DELETE FROM types WHERE id = 3",
    "INSERT INTO pairs VALUES (3, 'c', 'four')",
    "UPDATE pairs SET v = 'TWO' WHERE a = 1 AND b = 'b'",
    "UPDATE pairs SET b = 'z' WHERE a = 1 AND b = 'a'",  # a change of one column of a composite key
    "DELETE FROM pairs WHERE a = 2",
    "UPDATE docs SET n = n + 100 WHERE id = 1",  # body TOASTed and unchanged: not in the WAL record
    "UPDATE docs SET n = n + 100, body = body || '!' WHERE id = 3",
    "DELETE FROM docs WHERE id = 2",
    "INSERT INTO orders VALUES (4, 'cap')",
    "ALTER TABLE orders ADD COLUMN qty int DEFAULT 5",
    "INSERT INTO orders (id, item) VALUES (5, 'nib')",
    "INSERT INTO orders VALUES (6, 'pad', 7)",
    "UPDATE orders SET item = 'pen2' WHERE id = 1",
    "ALTER TABLE orders ADD COLUMN placed_at timestamptz NOT NULL DEFAULT now()",
    "ALTER TABLE orders ADD COLUMN u uuid NOT NULL DEFAULT gen_random_uuid()",
    "INSERT INTO orders (id, item) VALUES (7, 'ruler')",
    "INSERT INTO orders (id, item, qty, placed_at, u) "
    "VALUES (8, 'clip', 2, '2020-01-01 00:00:00+00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12')",
    "UPDATE orders SET qty = 9 WHERE id = 2",
    "DELETE FROM orders WHERE id = 3",
    "INSERT INTO marker VALUES (1)",
]
# The source's rows at the end. Each table's last change is a delete, so a target equal to the
# source has read every topic to its end (but for that delete's tombstone, which the sink skips).
EXPECTED_ROWS = {"docs": 2, "marker": 1, "orders": 7, "pairs": 3, "types": 5}
PLACEHOLDER = "__debezium_unavailable_value"  # Debezium's unavailable.value.placeholder, at its default


def expected_losses(column: str, table: str, key: tuple[Any, ...]) -> tuple[Any, str] | None:
    """The target value where no change event carries the source's, and why (None elsewhere)."""
    if (table, column, key) == ("docs", "body", (1,)):
        # pgoutput leaves a TOASTed value an update did not change out of the row (REPLICA IDENTITY
        # DEFAULT); both producers send the placeholder, and the sink writes it as the value.
        return PLACEHOLDER, "unchanged TOASTed value: the placeholder"
    if table == "orders" and column in ("placed_at", "u") and key in ((1,), (4,), (5,), (6,)):
        # ADD COLUMN ... NOT NULL DEFAULT now() / gen_random_uuid() fills the existing rows without a
        # change event. The field is required and has no default in the schema, so the sink adds the
        # column NOT NULL with its type's zero as the default, which the rows not changed since keep.
        zero = {"placed_at": "1970-01-01T00:00:00+00:00", "u": "00000000-0000-0000-0000-000000000000"}[column]
        return zero, "a row not changed since the expression-default column was added: the sink's default"
    return None


# How a source column's values are compared where the sink creates another type:
# (source type, target type) -> (source SQL, target SQL, why). "{}" is the quoted column.
NORMALISED: dict[tuple[str, str], tuple[str, str, str]] = {
    ("numeric", "double precision"): (
        "{}::float8", "{}",
        "numeric without precision and scale is Debezium's VariableScaleDecimal; the sink creates double "
        "precision, so it is compared as a double (digits past 15-17 significant ones are lost in the target)"),
    ("interval", "interval"): (
        "CASE WHEN {0} IS NOT NULL THEN ARRAY[extract(year from {0}) * 12 + extract(month from {0}), "
        "extract(day from {0}), extract(hour from {0}), extract(minute from {0}), extract(second from {0})] END",
        "extract(epoch from {})",
        "interval is Debezium's MicroDuration (months as 30.4375 days); the sink binds it as whole seconds "
        "(cast('<n> seconds' as interval), the fraction truncated), so both sides are compared as those seconds"),
    ("time with time zone", "time(6) with time zone"): (
        "{} AT TIME ZONE 'UTC'", "{}",
        "timetz is Debezium's ZonedTime, converted to UTC (the offset is not kept)"),
    ("jsonb", "json"): (
        "{}", "{}", "jsonb and json are both io.debezium.data.Json; the sink creates json; compared parsed"),
}
# varchar(n), char(n), inet and enums arrive as strings (an enum as io.debezium.data.Enum) and the
# sink creates text: compared with the source value's output text, which is what the source sends
# (char(n) padded; inet without a /32).
AS_TEXT = ("character varying", "character", "inet", "USER-DEFINED")


def same_type(source: str, target: str) -> bool:
    """time, timetz, timestamp and timestamptz come back as time(6) ... timestamp(6) ...: 6 is
    PostgreSQL's default (and greatest) precision for them, so the values are the same."""
    return source == target or source == target.replace("(6)", "")


@dataclass
class Column:
    name: str
    source_type: str  # format_type(), e.g. numeric(10,3)
    data_type: str  # information_schema's, e.g. numeric, USER-DEFINED
    target_type: str | None = None


def interval_seconds(parts: list[Decimal]) -> int:
    """Debezium's MicroDuration.durationMicros (PostgreSQL: 365.25 / 12 days a month) in IEEE doubles
    as Java computes it, then the sink's truncation to whole seconds."""
    months, days, hours, minutes, seconds = parts
    number_of_days = float(int(months)) * 30.4375 + float(int(days))
    total = ((number_of_days * 24 + float(int(hours))) * 60 + float(int(minutes))) * 60 + float(seconds)
    micros = int(total * 1e6)  # (long) truncates toward zero, as int() does
    return int(micros / 1e6)


def columns(conn: psycopg.Connection[Any], table: str) -> list[Column]:
    return [Column(*row) for row in conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), c.data_type FROM pg_attribute a "
        "JOIN information_schema.columns c ON c.table_schema = 'public' AND c.table_name = %s "
        "AND c.column_name = a.attname WHERE a.attrelid = format('public.%%I', %s::text)::regclass "
        "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", (table, table))]


def primary_key(conn: psycopg.Connection[Any], table: str) -> list[str]:
    return [row[0] for row in conn.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
        "WHERE i.indrelid = format('public.%%I', %s::text)::regclass AND i.indisprimary "
        "ORDER BY array_position(i.indkey::int2[], a.attnum)",
        (table,))]


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def comparable(value: Any) -> Any:
    """A value as the comparison and its messages show it (JSON-like, exact)."""
    if isinstance(value, (bytes, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def short(value: Any, width: int = 100) -> str:
    text = repr(value)
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"


def read_table(dsn: str, table: str, selects: list[str], key: list[str]) -> dict[tuple[Any, ...], list[Any]]:
    with psycopg.connect(dsn, autocommit=True, options="-c TimeZone=UTC") as conn:
        names = ", ".join(map(quote, key))
        rows = conn.execute(f"SELECT {names}, {', '.join(selects)} FROM public.{quote(table)}").fetchall()
    return {tuple(comparable(v) for v in row[:len(key)]): list(row[len(key):]) for row in rows}


def compare(source_dsn: str, target_dsn: str, prefix: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """Differences between every source table and its target table (the sink's default name,
    ``<topic prefix>_public_<table>``), and per table (rows equal, rows in the source)."""
    problems: list[str] = []
    tally: dict[str, tuple[int, int]] = {}
    with psycopg.connect(source_dsn, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
        shapes = {t: (columns(conn, t), primary_key(conn, t)) for t in tables}
    with psycopg.connect(target_dsn, autocommit=True) as conn:
        present = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        for table in tables:
            target = f"{prefix}_public_{table}"
            if target in present:
                found = {c.name: c.source_type for c in columns(conn, target)}
                for column in shapes[table][0]:
                    column.target_type = found.pop(column.name, None)
                if found:
                    problems.append(f"{table}: columns only in the target: {sorted(found)}")
    for table in tables:
        cols, key = shapes[table]
        target = f"{prefix}_public_{table}"
        if target not in present:
            problems.append(f"{table}: no table {target} in the target")
            tally[table] = (0, -1)
            continue
        missing = [c.name for c in cols if c.target_type is None]
        if missing:
            problems.append(f"{table}: columns missing in the target: {missing}")
            cols = [c for c in cols if c.target_type is not None]
        source_sql, target_sql, convert = [], [], []
        for c in cols:
            ours, theirs, fn = quote(c.name), quote(c.name), comparable
            rule = NORMALISED.get((c.source_type.split("(")[0], c.target_type or ""))
            if rule is not None:
                ours, theirs = rule[0].format(ours), rule[1].format(theirs)
                if c.data_type == "interval":
                    fn = interval_seconds  # type: ignore[assignment]
            elif c.target_type == "text" and c.data_type in AS_TEXT:
                ours = f"CASE WHEN {ours} IS NULL THEN NULL ELSE format('%s', {ours}) END"  # the output text
            elif not same_type(c.source_type, c.target_type or ""):
                problems.append(f"{table}.{c.name}: {c.source_type} became {c.target_type} in the target, "
                                "with no normalisation written down for it")
            source_sql.append(ours)
            target_sql.append(theirs)
            convert.append(fn)
        expected = read_table(source_dsn, table, source_sql, key)
        got = read_table(target_dsn, target, target_sql, key)
        equal = 0
        for row_key in sorted(set(expected) | set(got), key=repr):
            if row_key not in got:
                problems.append(f"{table} {row_key}: missing in the target")
                continue
            if row_key not in expected:
                problems.append(f"{table} {row_key}: in the target only: {short(comparable(got[row_key]))}")
                continue
            diffs = []
            for c, fn, want, have in zip(cols, convert, expected[row_key], got[row_key], strict=True):
                want = fn(want) if want is not None else None
                have = int(have) if fn is interval_seconds and have is not None else comparable(have)
                loss = expected_losses(c.name, table, row_key)
                if loss is not None:
                    want = loss[0]
                if want != have:
                    diffs.append(f"{c.name}: source {short(want)}, target {short(have)}")
            if diffs:
                problems.append(f"{table} {row_key}: " + "; ".join(diffs))
            else:
                equal += 1
        tally[table] = (equal, len(expected))
    return problems, tally


# ---- the workload, captured once by cdc and by Debezium --------------------------------------------


@dataclass
class Captured:
    source: dict[str, str]  # pg_db-like
    admin_dsn: str
    bootstrap: str
    cdc_prefix: str
    debezium_prefix: str
    workdir: Path


def _sql(dsn: str, statements: list[str]) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _new_database(admin_dsn: str, prefix: str) -> dict[str, str]:
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(admin_dsn)
    db = {"database.hostname": str(params.get("host", "127.0.0.1")), "database.port": str(params.get("port", 5432)),
          "database.user": str(params.get("user", "postgres")), "database.dbname": name,
          "dsn": make_conninfo(admin_dsn, dbname=name)}
    if params.get("password"):
        db["database.password"] = str(params["password"])
    return db


def _wait_for_topic(bootstrap: str, topic: str, what: str, timeout: float,
                    failure: Callable[[], str | None] = lambda: None) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        failed = failure()
        if failed:
            raise AssertionError(f"{what}: {failed}")
        if topic in admin.list_topics(timeout=10).topics and read_topic(bootstrap, topic):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: nothing in {topic} after {timeout:.0f} s")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def captured(pg_admin_dsn: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Captured]:
    """The workload on a fresh source database, snapshotted and streamed at once by cdc (into
    ``c<hex>.public.*``) and by Debezium's PostgreSQL connector (``d<hex>.public.*``)."""
    from cdc.sinks.kafka import KafkaSink

    plugins = connect_plugins()
    source = _new_database(pg_admin_dsn, "jdbc_src")
    workdir = tmp_path_factory.mktemp("jdbc_sink")
    tag = uuid.uuid4().hex[:8]
    run = Captured(source, pg_admin_dsn, kafka_bootstrap, f"c{tag}", f"d{tag}", workdir)
    try:
        _sql(source["dsn"], SETUP + SNAPSHOT)
        debezium = postgres_source("source", source, run.debezium_prefix)
        props = {**source, "snapshot.mode": "initial", "topic.prefix": run.cdc_prefix, "slot.name": f"cdc_{tag}",
                 "publication.name": f"cdc_{tag}", "kafka.bootstrap.servers": kafka_bootstrap}
        config = Config({k: v for k, v in props.items() if k != "dsn"}).declare(CORE_OPTIONS)
        timeout = env_timeout(120)
        with ConnectWorker(workdir / "debezium-source", kafka_bootstrap, [debezium], plugins) as worker, \
                Pipeline(props, workdir / "cdc-offsets.json", sink=KafkaSink(config)) as pipeline:  # type: ignore[arg-type]
            pipeline.wait_ready(timeout)

            def slot_made() -> bool:  # created before its snapshot: later changes are streamed
                with psycopg.connect(source["dsn"], autocommit=True) as conn:
                    return conn.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s",
                                        (debezium["slot.name"],)).fetchone()[0] == 1  # type: ignore[index]

            worker.wait_for(slot_made, "Debezium's replication slot", timeout)
            _sql(source["dsn"], STREAM)
            _wait_for_topic(kafka_bootstrap, f"{run.cdc_prefix}.public.marker", "cdc", timeout,
                            lambda: repr(pipeline.error) if pipeline.error else None)
            _wait_for_topic(kafka_bootstrap, f"{run.debezium_prefix}.public.marker", "Debezium", timeout,
                            worker.failure)
        yield run
    finally:
        _drop_database(pg_admin_dsn, source["database.dbname"])


def _replicate(run: Captured, prefix: str, label: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """One worker running the JDBC sink on ``prefix``'s topics into a fresh database, until the
    target equals the source (see EXPECTED_ROWS) or the worker logs an ERROR."""
    target = _new_database(run.admin_dsn, "jdbc_dst")
    try:
        connector = jdbc_sink(f"sink-{label}", target, rf"{prefix}\.public\..*", SINK_SETTINGS)
        outcome: list[Any] = []

        def replicated() -> bool:
            outcome[:] = compare(run.source["dsn"], target["dsn"], prefix)
            return not outcome[0]

        def describe() -> str:
            return "differences left:\n" + "\n".join(outcome[0][:40]) if outcome else ""

        run_jdbc_sink(run.workdir / f"sink-{label}", run.bootstrap, connector, replicated,
                      f"the target to equal the source ({label}'s topics)", env_timeout(90), describe)
        return outcome[0], outcome[1]
    finally:
        _drop_database(run.admin_dsn, target["database.dbname"])


def _report(tally: dict[str, tuple[int, int]]) -> str:
    return ", ".join(f"{table} {equal}/{total}" for table, (equal, total) in tally.items())


def _check(label: str, problems: list[str], tally: dict[str, tuple[int, int]]) -> None:
    assert not problems, "\n".join(problems)
    assert {table: total for table, (_, total) in tally.items()} == EXPECTED_ROWS
    assert all(equal == total for equal, total in tally.values()), _report(tally)
    print(f"{label}'s topics through the JDBC sink: {_report(tally)} rows equal")


def test_debezium_topics_replicate_through_jdbc_sink(captured: Captured) -> None:
    _check("Debezium", *_replicate(captured, captured.debezium_prefix, "debezium"))


def test_cdc_topics_replicate_through_jdbc_sink(captured: Captured) -> None:
    """Fails (today) with the sink worker's ERROR lines when it cannot apply cdc's records."""
    _check("cdc", *_replicate(captured, captured.cdc_prefix, "cdc"))
