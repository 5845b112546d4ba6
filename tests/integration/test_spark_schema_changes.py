"""Schema changes at the source reach a Delta target while the stream runs (cdc.spark.supervisor.run_changes,
cdc.spark.evolve): columns added, dropped, renamed and widened in PostgreSQL (in one transaction with rows,
and across transactions) under a concurrent writer, and a column added in MariaDB; then one test per policy
showing what the target holds. After each change the target is compared with the source, row by row."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from tests.conftest import LONG

pytestmark = pytest.mark.spark

PG_KEYS = ("database.hostname", "database.port", "database.user", "database.dbname", "database.password")
TRIGGER = {"processingTime": "500 milliseconds"}
Rows = dict[int, dict[str, Any]]


def pg_options(db: dict[str, str], table: str, slot: str) -> dict[str, str]:
    return {"source": "postgres", "table": table, "slot.name": slot, "publication.name": f"{slot}_pub",
            **{k: db[k] for k in PG_KEYS if k in db}}


def pg_rows(db: dict[str, str], table: str = "items") -> Rows:
    with psycopg.connect(db["dsn"], row_factory=dict_row) as conn:
        return {r["id"]: r for r in conn.execute(f"SELECT * FROM {table}").fetchall()}


def delta_rows(spark: Any, path: Path) -> Rows:
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, str(path)):
        return {}
    return {r["id"]: r.asDict() for r in spark.read.format("delta").load(str(path)).collect()}


def delta_types(spark: Any, path: Path) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in spark.read.format("delta").load(str(path)).schema}


def wait_equal(got: Callable[[], Rows], want: Callable[[], Rows], query: Any, timeout: float = 120) -> None:
    """Until the target holds the expected rows, with exactly the expected columns (polled; fails at
    once if the supervised query stopped)."""
    deadline = time.monotonic() + timeout
    while True:
        target, expected = got(), want()
        if target == expected:
            return
        if query.exception() is not None or not query.isActive:
            raise AssertionError(f"the query stopped: {query.exception()}")
        if time.monotonic() > deadline:  # (polled each second: each poll is a Spark job on the same cores)
            differ = sorted(k for k in set(target) | set(expected) if target.get(k) != expected.get(k))
            assert target == expected, [(k, _difference(target.get(k), expected.get(k))) for k in differ[:5]]
        time.sleep(1)


def _difference(got: dict[str, Any] | None, want: dict[str, Any] | None) -> Any:
    if got is None or want is None:
        return got, want
    return {c: (got.get(c, "-"), want.get(c, "-")) for c in set(got) | set(want) if got.get(c, "-") != want.get(c, "-")}


class Writer:
    """Autocommitted inserts, updates and deletes of its own rows (ids from 1000, column name only),
    while the test alters the table."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.stop = threading.Event()
        self.written = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            n = 1000
            while not self.stop.is_set():
                conn.execute("INSERT INTO items (id, name) VALUES (%s, 'w')", (n,))
                conn.execute("UPDATE items SET name = %s WHERE id = %s", (f"u{n % 10}", n - 3))
                if n % 5 == 0:
                    conn.execute("DELETE FROM items WHERE id = %s", (n - 2,))
                n += 1
                self.written = n - 1000
                self.stop.wait(0.05)  # a paced writer: a few hundred changes over the test

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


class Mirror:
    """A supervised query (evolve) from PostgreSQL's ``items`` into Delta, a writer, and what the target
    should hold: the source's rows, plus the columns the source lost (dropped, or renamed from) with
    their values from before (NULL in rows changed since), and a rename's new column NULL in rows not
    changed since."""

    def __init__(self, spark: Any, db: dict[str, str], tmp_path: Path, slot: str) -> None:
        from cdc.spark.supervisor import run_changes

        self.spark, self.db, self.target = spark, db, tmp_path / "items"
        with psycopg.connect(db["dsn"], autocommit=True) as conn:
            conn.execute("CREATE TABLE items (id int PRIMARY KEY, name varchar(10), n int, k int, "
                         "old text, old2 text, r1 text, r2 text)")
            conn.execute("INSERT INTO items SELECT g, 'r' || g, g, g, 'o' || g, 'p' || g, 'a' || g, 'b' || g "
                         "FROM generate_series(1, 20) g")
        self.kept: dict[str, dict[int, Any]] = {}  # columns the source lost: id -> value before
        self.unseen: dict[str, set[int]] = {}  # a rename's new column: ids not changed since
        self.query = run_changes(spark, pg_options(db, "public.items", slot), str(self.target), ["id"],
                                 checkpoint=str(tmp_path / "checkpoint"), trigger=TRIGGER)
        self.began = time.monotonic()

    def touch(self, *ids: int) -> None:
        """Rows changed after a drop or rename: NULL in the column the source lost, a renamed column's value."""
        for values in self.kept.values():
            for i in ids:
                values.pop(i, None)
        for before in self.unseen.values():
            before.difference_update(ids)

    def keep(self, conn: psycopg.Connection[Any], column: str, renamed_to: str | None = None) -> None:
        """Before ``column`` is dropped or renamed (in the same transaction, or just before it)."""
        self.kept[column] = dict(conn.execute(f"SELECT id, {column} FROM items").fetchall())
        if renamed_to:
            self.unseen[renamed_to] = set(self.kept[column])

    def expected(self, rows: Rows) -> Rows:
        for column, values in self.kept.items():
            for i, row in rows.items():
                row[column] = values.get(i)
        for column, before in self.unseen.items():
            for i in before & set(rows):
                rows[i][column] = None
        return rows

    def converge(self, writer_too: bool = False) -> None:
        """The test's rows (ids below 1000) equal; ``writer_too``: every row (once the writer stopped)."""
        ours = (lambda rows: rows) if writer_too else (lambda rows: {i: r for i, r in rows.items() if i < 1000})
        wait_equal(lambda: ours(delta_rows(self.spark, self.target)),
                   lambda: self.expected(ours(pg_rows(self.db))), self.query)
        print(f"converged in {time.monotonic() - self.began:.1f} s, {self.query.restarts} restarts")  # the steps
        self.began = time.monotonic()


def test_columns_added_and_dropped_reach_delta_while_the_stream_runs(delta: Any, pg_db: dict[str, str],
                                                                     tmp_path: Path, supervised: list[Any]) -> None:
    """evolve (the default): an added column is added to Delta (the rows it held get the source's default),
    a dropped one stays (NULL in rows changed since); each in a transaction with row changes, and
    alone then rows, under a writer; an added column restarts the query by itself, a drop needs no restart."""
    mirror = Mirror(delta, pg_db, tmp_path, "add_drop_slot")
    supervised.append(mirror.query)
    mirror.converge()  # the snapshot
    with Writer(pg_db["dsn"]) as writer, psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        # ADD COLUMN with a default, in one transaction with rows before and after it
        with conn.transaction():
            conn.execute("UPDATE items SET name = 'pre-add' WHERE id = 1")
            conn.execute("INSERT INTO items (id, name, n, k) VALUES (21, 'pre-add', 21, 21)")
            conn.execute("ALTER TABLE items ADD COLUMN tag text DEFAULT 'new'")
            conn.execute("INSERT INTO items (id, name, tag) VALUES (22, 'post-add', 'tagged')")
            conn.execute("UPDATE items SET tag = 'changed' WHERE id = 2")
        mirror.converge()
        assert mirror.query.restarts == 1
        held = delta_rows(delta, mirror.target)
        assert held[21]["tag"] == held[3]["tag"] == "new"  # inserted before the ALTER in its transaction; older
        # ADD COLUMN with a default, then rows in the next transactions
        conn.execute("ALTER TABLE items ADD COLUMN score int DEFAULT 5")
        conn.execute("UPDATE items SET score = 7 WHERE id = 3")
        conn.execute("INSERT INTO items (id, name) VALUES (23, 'post-add2')")
        mirror.converge()
        assert mirror.query.restarts == 2
        # DROP COLUMN in one transaction with rows: the target keeps it, NULL in rows changed after it
        with conn.transaction():
            conn.execute("UPDATE items SET old = 'pre-drop' WHERE id = 4")
            mirror.keep(conn, "old")
            conn.execute("ALTER TABLE items DROP COLUMN old")
            conn.execute("UPDATE items SET name = 'post-drop' WHERE id = 5")
            conn.execute("INSERT INTO items (id, name) VALUES (24, 'post-drop')")
            mirror.touch(5, 24)
        mirror.converge()
        # DROP COLUMN, then rows
        mirror.keep(conn, "old2")
        conn.execute("ALTER TABLE items DROP COLUMN old2")
        conn.execute("UPDATE items SET name = 'post-drop2' WHERE id = 6")
        mirror.touch(6)
        mirror.converge()
        assert mirror.query.restarts == 2  # a drop needs no new schema
        held = delta_rows(delta, mirror.target)
        assert held[4]["old"] == "pre-drop" and held[6]["old2"] is None and held[7]["old2"] == "p7"
        assert writer.written > 0
    mirror.converge(writer_too=True)
    assert mirror.query.restarts == 2 and mirror.query.exception() is None and mirror.query.isActive


@LONG  # its sibling with columns added and dropped stays in the test command
def test_columns_renamed_and_widened_reach_delta_while_the_stream_runs(delta: Any, pg_db: dict[str, str],
                                                                       tmp_path: Path, supervised: list[Any]) -> None:
    """evolve: a rename is a new column (the old one kept as a drop), int -> bigint widens the Delta column
    (Delta's type widening), varchar(n) -> longer needs nothing; each in a transaction with row changes and
    alone then rows, under a writer."""
    mirror = Mirror(delta, pg_db, tmp_path, "rename_widen_slot")
    supervised.append(mirror.query)
    mirror.converge()
    with Writer(pg_db["dsn"]) as writer, psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        mirror.keep(conn, "old")
        conn.execute("ALTER TABLE items DROP COLUMN old")  # a column the target keeps, through every restart below
        # RENAME COLUMN in one transaction with rows: a new column; the old one kept as a drop
        with conn.transaction():
            conn.execute("UPDATE items SET r1 = 'pre-rename' WHERE id = 7")
            mirror.touch(7)  # (after the drops)
            mirror.keep(conn, "r1", "r1b")
            conn.execute("ALTER TABLE items RENAME COLUMN r1 TO r1b")
            conn.execute("UPDATE items SET r1b = 'post-rename' WHERE id = 8")
            mirror.touch(8)
        mirror.converge()
        # RENAME COLUMN, then rows
        mirror.keep(conn, "r2", "r2b")
        conn.execute("ALTER TABLE items RENAME COLUMN r2 TO r2b")
        conn.execute("UPDATE items SET r2b = 'post-rename2' WHERE id = 9")
        mirror.touch(9)
        mirror.converge()
        assert mirror.query.restarts == 2
        # int -> bigint in one transaction with rows, a value past int's range after it
        with conn.transaction():
            conn.execute("UPDATE items SET n = -10 WHERE id = 10")
            conn.execute("ALTER TABLE items ALTER COLUMN n TYPE bigint")
            conn.execute("UPDATE items SET n = 5000000000 WHERE id = 11")
            mirror.touch(10, 11)
        mirror.converge()
        # int -> bigint, then rows
        conn.execute("ALTER TABLE items ALTER COLUMN k TYPE bigint")
        conn.execute("INSERT INTO items (id, name, k) VALUES (25, 'wide', -6000000000)")
        mirror.converge()
        assert mirror.query.restarts == 4
        assert delta_types(delta, mirror.target)["n"] == delta_types(delta, mirror.target)["k"] == "bigint"
        # varchar(10) -> varchar(40) in one transaction with rows; then -> varchar(80) and rows: no new schema
        with conn.transaction():
            conn.execute("UPDATE items SET name = 'short' WHERE id = 12")
            conn.execute("ALTER TABLE items ALTER COLUMN name TYPE varchar(40)")
            conn.execute("UPDATE items SET name = %s WHERE id = 13", ("x" * 40,))
            mirror.touch(12, 13)
        conn.execute("ALTER TABLE items ALTER COLUMN name TYPE varchar(80)")
        conn.execute("UPDATE items SET name = %s WHERE id = 14", ("y" * 80,))
        mirror.touch(14)
        mirror.converge()
        assert writer.written > 0
    mirror.converge(writer_too=True)
    assert mirror.query.restarts == 4 and mirror.query.exception() is None and mirror.query.isActive


def test_mariadb_column_added_with_rows_around_it(delta: Any, mysql_server: dict[str, Any],
                                                  mysql_db: dict[str, str], tmp_path: Path,
                                                  supervised: list[Any]) -> None:
    """MariaDB: ADD COLUMN with a default between row changes of one client transaction (MySQL commits
    around a DDL statement by itself, so they are three in the binlog, read in one micro-batch)."""
    import pymysql

    from cdc.spark.supervisor import run_changes
    from tests.integration.test_mysql_stream import sql

    spark, db = delta, mysql_db["db"]
    sql(mysql_server, db, "CREATE TABLE items (id int PRIMARY KEY, name varchar(20))",
        "INSERT INTO items SELECT seq, CONCAT('n', seq) FROM seq_1_to_10")
    options = {"source": "mysql", "table": f"{db}.items",
               "schema.history.internal.file.filename": str(tmp_path / "history.jsonl"),
               **{k: mysql_db[k] for k in ("database.hostname", "database.port", "database.user",
                                           "database.password", "database.server.id", "database.include.list")}}

    def source() -> Rows:
        conn = pymysql.connect(**mysql_server, database=db, cursorclass=pymysql.cursors.DictCursor)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT * FROM items")
                return {r["id"]: r for r in cur.fetchall()}
        finally:
            conn.close()

    target = tmp_path / "items"
    query = run_changes(spark, options, str(target), ["id"], checkpoint=str(tmp_path / "checkpoint"), trigger=TRIGGER)
    supervised.append(query)
    wait_equal(lambda: delta_rows(spark, target), source, query)
    conn = pymysql.connect(**mysql_server, database=db)
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("UPDATE items SET name = 'pre-add' WHERE id = 1")
            cur.execute("INSERT INTO items VALUES (11, 'pre-add')")
            cur.execute("ALTER TABLE items ADD COLUMN tag varchar(10) DEFAULT 'new'")
            cur.execute("INSERT INTO items VALUES (12, 'post-add', 'tagged')")
            cur.execute("UPDATE items SET tag = 'changed' WHERE id = 2")
            cur.execute("COMMIT")
    finally:
        conn.close()
    wait_equal(lambda: delta_rows(spark, target), source, query)
    assert query.restarts == 1 and delta_rows(spark, target)[11]["tag"] == "new"


def _policy_table(db: dict[str, str]) -> None:
    with psycopg.connect(db["dsn"], autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, n int)")
        conn.execute("INSERT INTO items SELECT g, g FROM generate_series(1, 3) g")


def _start(spark: Any, db: dict[str, str], tmp_path: Path, policy: str, supervised: list[Any]) -> tuple[Any, Path]:
    from cdc.spark.supervisor import run_changes

    target = tmp_path / "items"
    query = run_changes(spark, pg_options(db, "public.items", f"{policy.replace('-', '_')}_slot"), str(target), ["id"],
                        checkpoint=str(tmp_path / "checkpoint"), schema_changes=policy, trigger=TRIGGER)
    supervised.append(query)
    wait_equal(lambda: delta_rows(spark, target), lambda: pg_rows(db), query)
    return query, target


def test_try_evolve_keeps_a_type_delta_cannot_change_and_casts(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                                               supervised: list[Any]) -> None:
    """int -> text at the source: Delta cannot change the column's type; try-evolve logs it, keeps int and
    casts the values (NULL where they are not numbers); a widening in the same run is applied."""
    _policy_table(pg_db)
    query, target = _start(delta, pg_db, tmp_path, "try-evolve", supervised)
    from tests.integration.test_pg_stream import sql

    sql(pg_db, "ALTER TABLE items ALTER COLUMN n TYPE text USING n::text",
        "INSERT INTO items VALUES (10, '12'), (11, 'abc')", "UPDATE items SET n = '40' WHERE id = 1")
    want = {1: 40, 2: 2, 3: 3, 10: 12, 11: None}
    wait_equal(lambda: {i: r["n"] for i, r in delta_rows(delta, target).items()}, lambda: want, query)
    assert delta_types(delta, target) == {"id": "int", "n": "int"} and query.restarts == 1


def test_lenient_adds_columns_but_never_changes_a_type(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                                       supervised: list[Any]) -> None:
    _policy_table(pg_db)
    query, target = _start(delta, pg_db, tmp_path, "lenient", supervised)
    from tests.integration.test_pg_stream import sql

    sql(pg_db, "ALTER TABLE items ALTER COLUMN n TYPE bigint", "ALTER TABLE items ADD COLUMN tag text",
        "INSERT INTO items VALUES (10, 7, 't'), (11, 5000000000, 'too big')")
    want = {1: (1, None), 2: (2, None), 3: (3, None), 10: (7, "t"), 11: (None, "too big")}
    wait_equal(lambda: {i: (r["n"], r.get("tag")) for i, r in delta_rows(delta, target).items()}, lambda: want, query)
    assert delta_types(delta, target) == {"id": "int", "n": "int", "tag": "string"}


def test_ignore_keeps_the_target_schema(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                        supervised: list[Any]) -> None:
    _policy_table(pg_db)
    query, target = _start(delta, pg_db, tmp_path, "ignore", supervised)
    from tests.integration.test_pg_stream import sql

    sql(pg_db, "ALTER TABLE items ADD COLUMN tag text DEFAULT 'new'", "ALTER TABLE items ALTER COLUMN n TYPE bigint",
        "INSERT INTO items VALUES (10, 7, 'not written')", "UPDATE items SET n = 30 WHERE id = 3")
    want = {1: {"id": 1, "n": 1}, 2: {"id": 2, "n": 2}, 3: {"id": 3, "n": 30}, 10: {"id": 10, "n": 7}}
    wait_equal(lambda: delta_rows(delta, target), lambda: want, query)
    assert delta_types(delta, target) == {"id": "int", "n": "int"}


def test_fail_stops_at_the_first_change_with_the_clear_error(delta: Any, pg_db: dict[str, str], tmp_path: Path,
                                                             supervised: list[Any]) -> None:
    """fail: even a dropped column (which the other policies take without a restart) stops the query."""
    _policy_table(pg_db)
    query, target = _start(delta, pg_db, tmp_path, "fail", supervised)
    from tests.integration.test_pg_stream import sql

    sql(pg_db, "INSERT INTO items VALUES (4, 4)")
    wait_equal(lambda: delta_rows(delta, target), lambda: pg_rows(pg_db), query)
    sql(pg_db, "ALTER TABLE items DROP COLUMN n", "INSERT INTO items VALUES (5)")
    deadline = time.monotonic() + 120
    while query.isActive and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not query.isActive and query.restarts == 0
    assert "the columns of public.items changed from ['id', 'n'] to ['id']" in str(query.exception())
    with pytest.raises(Exception, match="the columns of public.items changed"):
        query.awaitTermination()
    assert delta_rows(delta, target) == {i: {"id": i, "n": i} for i in range(1, 5)}  # as before the change


# ---- without a server: the reader's fitting of older rows, and which type changes Delta widens ----------------

def test_older_rows_get_the_default_and_their_values_cast_to_the_new_types() -> None:
    """What a restarted query does with rows written before the change (cdc.spark.versions): the schema is
    the table's now (n bigint, tag with a default); rows of the old version get the default, their int
    cast; a version newer than the schema stops the query; a column neither has is NULL."""
    from cdc.core import connect
    from cdc.core.envelope import TableEnvelope
    from cdc.core.errors import SourceError
    from cdc.spark.arrow_events import EventRows, arrow_schema
    from cdc.spark.schema import event_schema, struct_type_of

    source = connect.struct([connect.field("table", connect.OPTIONAL_STRING)], optional=False, name="source")
    tag = {**connect.OPTIONAL_STRING, "default": "new"}

    def version(**types: Any) -> TableEnvelope:
        return TableEnvelope(topic="t", table_id="public.t", schema_name_prefix="p.public.t",
                             key_fields=[connect.field("id", connect.INT32)],
                             value_fields=[connect.field(c, t) for c, t in types.items()], source_schema=source)

    old = version(id=connect.INT32, n=connect.OPTIONAL_INT32)
    now = version(id=connect.INT32, n=connect.OPTIONAL_INT64, tag=tag)
    newer = version(id=connect.INT32, n=connect.OPTIONAL_INT64, tag=tag, extra=connect.OPTIONAL_STRING)
    row_type, _ = struct_type_of(now.row_schema)
    assert row_type["tag"].metadata == {"cdc.default": "new"}
    rows = EventRows("public.t", row_type.fieldNames(), columns_now=lambda table: now.row_schema,
                     row_types={"public.t": row_type})
    wide = {"id": 2, "n": 5_000_000_000, "tag": None}
    batch = rows.batch([old.event("c", None, {"id": 1, "n": 7}, {"table": "t"}, position=(1,)),
                        now.event("c", None, wide, {"table": "t"}, position=(2,))],
                       lambda: 0, arrow_schema(event_schema(row_type)))
    assert batch is not None
    assert [r["after"] for r in batch.to_pylist()] == [{"id": 1, "n": 7, "tag": "new"},
                                                       {"id": 2, "n": 5_000_000_000, "tag": None}]
    with pytest.raises(SourceError, match=r"the columns of public.t changed"):
        EventRows("public.t", row_type.fieldNames(), columns_now=lambda table: newer.row_schema,
                  row_types={"public.t": row_type}).batch(
            [newer.event("c", None, {"id": 3, "n": 1, "tag": "x", "extra": "e"}, {"table": "t"}, position=(3,))],
            lambda: 0, arrow_schema(event_schema(row_type)))
    stale, _ = struct_type_of(old.row_schema)  # a query started before n became bigint: it must restart
    widened = version(id=connect.INT32, n=connect.OPTIONAL_INT64)
    with pytest.raises(SourceError, match=r"types of n: int -> bigint"):
        EventRows("public.t", stale.fieldNames(), columns_now=lambda table: widened.row_schema,
                  row_types={"public.t": stale}).batch(
            [widened.event("c", None, {"id": 4, "n": 1}, {"table": "t"}, position=(4,))],
            lambda: 0, arrow_schema(event_schema(stale)))


def test_which_type_changes_delta_widens() -> None:
    from pyspark.sql import types as T

    from cdc.spark.evolve import widens
    from cdc.spark.versions import caster

    assert widens(T.IntegerType(), T.LongType()) and widens(T.ShortType(), T.IntegerType())
    assert widens(T.IntegerType(), T.DoubleType()) and widens(T.FloatType(), T.DoubleType())
    assert widens(T.DecimalType(10, 2), T.DecimalType(12, 2)) and widens(T.IntegerType(), T.DecimalType(12, 0))
    assert widens(T.DateType(), T.TimestampNTZType())
    assert not widens(T.LongType(), T.IntegerType()) and not widens(T.IntegerType(), T.StringType())
    assert not widens(T.StringType(), T.IntegerType()) and not widens(T.DecimalType(10, 2), T.DecimalType(10, 3))
    to_int = caster(T.IntegerType())
    assert [to_int(v) for v in ("12", "abc", 5_000_000_000, 7, 1.5)] == [12, None, None, 7, None]
    assert caster(T.StringType())(12) == "12"
