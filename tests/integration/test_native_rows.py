"""The compiled row codec (native/, cdc_native) writes the bytes the Python path writes.

One workload over every common type with edge values (escapes, unicode, extremes, NULLs, an
unchanged TOASTed value that must fall back to Python) is streamed through two slots at once, one
pipeline with the codec and one without; every record must be byte-identical but for the
processing time stamps (ts_ms, ts_us, ts_ns). The codec must really have taken the rows.
"""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc.core.records import SinkRecord
from tests.conftest import require_native
from tests.integration.harness import Pipeline
from tests.integration.test_pg_stream import sql

TABLE = """CREATE TABLE t (
    id bigint PRIMARY KEY, i2 smallint, i4 int, i8 bigint, b boolean, t text, v varchar(20), c char(3),
    u uuid, j json, jb jsonb, n numeric(12,3), nu numeric, f4 real, f8 double precision, d date,
    ts timestamp, tstz timestamptz, tm time, by bytea, arr int[], e mood, big text, x xml, ip inet)"""
VALUES = [
    "(1, 0, 0, 0, true, '', '', 'a', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{}', '{}', 0, 0, 0, 0, '2024-02-29', "
    "'2024-02-29 13:45:30.123456', '2024-02-29 13:45:30+02', '13:45:30', '\\x00ff', '{1,2}', 'happy', 'x', "
    "'<a/>', '10.0.0.1')",
    "(-9223372036854775808, -32768, -2147483648, 9223372036854775807, false, "
    "E'quote \" backslash \\\\ newline \\n tab \\t cr \\r bell \\x07 esc \\x1b del \\x7f', 'żółw 🐢', 'é', "
    "NULL, '{\"a\": [1, 2.5, null], \"b\": \"x\\\\ny\"}', '{\"k\": \"v\", \"n\": 1e3}', -123456789.125, "
    "'NaN', 'Infinity', '-1e-300', 'infinity', '0001-01-01 00:00:00', '1969-12-31 23:59:59.999999+00', "
    "'24:00:00', '\\x', '{}', 'sad', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 500) g), NULL, "
    "'::1')",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]


class RawSink:
    def __init__(self) -> None:
        self.records: list[SinkRecord] = []
        self.lock = threading.Lock()

    def write(self, records: Sequence[SinkRecord]) -> None:
        with self.lock:
            self.records.extend(records)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


_STAMPS = re.compile(rb'"ts_(ms|us|ns)":\d+')


@contextmanager
def streaming(source: str, props: dict[bool, dict[str, str]], timeout_s: float = 60) -> Iterator[None]:
    """A pipeline per entry of ``props`` (with and without the codec), built as the CLI builds them
    (cdc.pipeline.build) and each run in a thread; the block runs once all of them stream, and they
    are stopped after it."""
    from cdc.pipeline import build

    engines = [build(source, p) for p in props.values()]
    threads = [threading.Thread(target=engine.run) for engine in engines]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + timeout_s
        while not all(engine.source_streaming() for engine in engines):
            assert all(t.is_alive() for t in threads) and time.monotonic() < deadline
            time.sleep(0.1)
        yield
    finally:
        for engine, thread in zip(engines, threads, strict=True):
            engine.stop()
            thread.join(30)


def wait_for_file(directories: Sequence[Path], name: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not all((directory / name).exists() for directory in directories):
        assert time.monotonic() < deadline, name
        time.sleep(0.1)


def same_files(outs: dict[bool, Path], pattern: str) -> list[bytes]:
    """The lines of the files ``pattern`` names, with and without the codec, are the same but for the
    processing time stamps and the context headers' values (each run has its own start and run id:
    compared by name); returns the codec's lines."""
    raw = {native: [line for path in sorted(out.glob(pattern)) for line in path.read_bytes().splitlines()]
           for native, out in outs.items()}
    lines = {native: [_STAMPS.sub(b'"ts":0', line.rpartition(b',"headers":')[0]) for line in raw[native]]
             for native in raw}
    assert lines[True] == lines[False]
    names = {native: [None if (headers := orjson.loads(line)["headers"]) is None else sorted(headers)
                      for line in raw[native]] for native in raw}
    assert names[True] == names[False]
    return raw[True]


def _scrub(record: SinkRecord) -> tuple[Any, ...]:
    return (record.topic, record.key, None if record.value is None else _STAMPS.sub(b'"ts":0', record.value),
            record.headers)


def test_same_bytes_with_and_without_the_codec(pg_db: dict[str, str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    require_native()
    from cdc.sources.postgres import native_rows

    encoded: list[int] = []
    real_encode = native_rows.RowEncoder.encode

    def counting(self: Any, payload: bytes, pos: int) -> Any:
        row = real_encode(self, payload, pos)
        encoded.append(row is not None)
        return row

    monkeypatch.setattr(native_rows.RowEncoder, "encode", counting)
    # with encoded batches, rows in runs go through the codec a run at a time (encoded_runs)
    from cdc.sources.postgres import encoded_runs
    real_run = encoded_runs.EncodedRun.encoded

    def counting_run(self: Any) -> Any:
        result = real_run(self)
        encoded.extend([result is not None] * len(self.lsns))
        return result

    monkeypatch.setattr(encoded_runs.EncodedRun, "encoded", counting_run)
    sql(pg_db, "CREATE TYPE mood AS ENUM ('happy', 'sad')", TABLE,
        "CREATE TABLE t2 (id int PRIMARY KEY, wide numeric(40,2), whole numeric(5,0), ms timestamptz(3))",
        # keys: composite, out of column order, text and numeric (converted in Python); no key at all
        "CREATE TABLE t3 (a int, b text, u uuid, n numeric(6,1), PRIMARY KEY (b, n, a))",
        "CREATE TABLE t4 (a int, b text)",
        "CREATE PUBLICATION native_pub FOR ALL TABLES")  # made here: two pipelines creating it at once race
    sinks = {True: RawSink(), False: RawSink()}
    pipelines = []
    for native in (True, False):
        props = {**pg_db, "snapshot.mode": "no_data", "slot.name": f"native_{native}".lower(),
                 "publication.name": "native_pub", "native.rows": str(native).lower()}
        pipeline = Pipeline(props, tmp_path / f"o{native}.json", sink=sinks[native])  # type: ignore[arg-type]
        pipelines.append(pipeline.__enter__())
    try:
        for p in pipelines:
            p.wait_ready()
        sql(pg_db, *[f"INSERT INTO t VALUES {v}" for v in VALUES],
            "UPDATE t SET t = 'changed', i4 = 7 WHERE id = 1",
            "UPDATE t SET i4 = 8 WHERE id = -9223372036854775808",  # big is TOASTed and unchanged: Python
            "DELETE FROM t WHERE id = 3", "UPDATE t SET id = 4 WHERE id = 1",
            # past 127 bits (Python), a scale of 0, a trimmed fraction, a year past 9999 (Python)
            "INSERT INTO t2 VALUES (1, 10 ^ 37, -99999, '2024-01-01 00:00:00.5+00'), "
            "(2, -0.01, 0, '10000-01-01 00:00:00+00'), (3, NULL, 12345, 'infinity')",
            "INSERT INTO t3 VALUES (1, 'x', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 2.5), (-5, 'żółw', NULL, -0.5)",
            "INSERT INTO t4 VALUES (1, 'a'), (NULL, NULL)")
        deadline = time.monotonic() + 30
        while len(sinks[True].records) < 17 or len(sinks[False].records) < len(sinks[True].records):
            assert time.monotonic() < deadline, (len(sinks[True].records), len(sinks[False].records))
            time.sleep(0.1)
    finally:
        for p in pipelines:
            p.__exit__(None, None, None)
    ours, reference = sinks[True].records, sinks[False].records
    assert len(ours) == len(reference)
    for mine, theirs in zip(ours, reference, strict=True):
        assert _scrub(mine) == _scrub(theirs)
    assert encoded.count(True) >= 8, encoded  # the inserts and the first update went through the codec
    keys = [r.key for r in ours if r.topic.endswith((".t3", ".t4"))]
    assert keys[0] is not None and b'"payload":{"b":"x","n":"' in keys[0] and keys[2:] == [None, None]
    assert False in encoded  # the unchanged TOAST value fell back to Python


def test_snapshot_same_bytes_with_and_without_the_codec(pg_db: dict[str, str], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The initial snapshot's COPY lines through the codec (escapes, NULLs, every type above)."""
    require_native()
    from cdc.sources.postgres import native_rows

    encoded: list[bool] = []
    real, real_batch = native_rows.RowEncoder.copy_row, native_rows.RowEncoder.copy_batch

    def counting(self: Any, line: bytes) -> Any:
        row = real(self, line)
        encoded.append(isinstance(row, native_rows.NativeRow))
        return row

    def counting_batch(self: Any, lines: list[bytes]) -> Any:
        rows = real_batch(self, lines)
        encoded.extend([rows is not None] * len(lines))
        return rows

    monkeypatch.setattr(native_rows.RowEncoder, "copy_row", counting)
    monkeypatch.setattr(native_rows.RowEncoder, "copy_batch", counting_batch)
    sql(pg_db, "CREATE TYPE mood AS ENUM ('happy', 'sad')", TABLE, *[f"INSERT INTO t VALUES {v}" for v in VALUES],
        "CREATE TABLE t2 (id int PRIMARY KEY, wide numeric(40,2), ms timestamptz(3))",
        "INSERT INTO t2 VALUES (1, 10 ^ 37, '2024-01-01 00:00:00.5+00'), (2, -0.01, '10000-01-01 00:00:00+00')",
        "CREATE PUBLICATION snap_pub FOR ALL TABLES")
    sinks = {True: RawSink(), False: RawSink()}
    for native in (True, False):
        props = {**pg_db, "snapshot.mode": "initial_only", "slot.name": f"snap_{native}".lower(),
                 "publication.name": "snap_pub", "native.rows": str(native).lower()}
        pipeline = Pipeline(props, tmp_path / f"s{native}.json", sink=sinks[native])  # type: ignore[arg-type]
        with pipeline:
            pipeline.thread.join(60)
        assert pipeline.error is None, pipeline.error
    ours, reference = sinks[True].records, sinks[False].records
    assert len(ours) == len(reference) == 5
    lsn = re.compile(rb'"lsn":\d+|\\"\d+\\"')  # each pipeline's slot (and so its snapshot) has its own LSN
    for mine, theirs in zip(ours, reference, strict=True):
        assert [lsn.sub(b"", v) if isinstance(v, bytes) else v for v in _scrub(mine)] == \
            [lsn.sub(b"", v) if isinstance(v, bytes) else v for v in _scrub(theirs)]
    assert encoded.count(True) >= 4 and len(encoded) == 5, encoded


@pytest.mark.parametrize("resumable", [False, True], ids=["initial", "resumable"])
def test_snapshot_files_same_bytes_with_and_without_the_codec(pg_db: dict[str, str], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch, resumable: bool) -> None:
    """Batches of COPY lines the codec encodes in one call (all but each batch's first and last row),
    written by the file sink in one go: through cdc.pipeline.build, as the CLI runs it (context
    headers on), the files are those of the Python path, with each table's first and last marks;
    for the initial snapshot and for the resumable one (key chunks, snapshot.resumable)."""
    require_native()
    from cdc.pipeline import build
    from cdc.sources.postgres import native_rows

    batches: list[int] = []
    real_batch = native_rows.RowEncoder.copy_batch

    def counting_batch(self: Any, lines: list[bytes]) -> Any:
        rows = real_batch(self, lines)
        batches.append(len(lines) if rows is not None else 0)
        return rows

    monkeypatch.setattr(native_rows.RowEncoder, "copy_batch", counting_batch)
    sql(pg_db, "CREATE TABLE a (id int PRIMARY KEY, t text, n numeric(6,2), at timestamptz)",
        "INSERT INTO a SELECT g, E'row\\t' || g, g / 7.0, '2024-01-01'::timestamptz + g * interval '1 s' "
        "FROM generate_series(1, 23) g",
        # a composite key out of column order; no key at all; a key column left out of the row
        "CREATE TABLE b (x int, y text, z uuid, PRIMARY KEY (y, x))",
        "INSERT INTO b SELECT g, 'y' || g, NULL FROM generate_series(1, 11) g",
        "CREATE TABLE c (p int, q text)", "INSERT INTO c SELECT g, NULL FROM generate_series(1, 9) g",
        "CREATE TABLE d (id int PRIMARY KEY, secret text)", "INSERT INTO d SELECT g, 's' FROM generate_series(1, 5) g",
        "CREATE PUBLICATION files_pub FOR ALL TABLES")
    lines: dict[bool, list[bytes]] = {}
    for native in (True, False):
        out = tmp_path / f"out-{native}"
        offsets = tmp_path / f"o{native}.json"
        props = {**{k: v for k, v in pg_db.items() if k != "dsn"}, "topic.prefix": "dbz",
                 "snapshot.mode": "initial" if resumable else "initial_only",
                 "slot.name": f"files_{int(resumable)}_{native}".lower(),
                 "publication.name": "files_pub", "native.rows": str(native).lower(), "snapshot.fetch.size": "4",
                 "sink.files.directory": str(out), "offset.storage.file.filename": str(offsets),
                 "message.key.columns": "public.d:secret", "column.exclude.list": "public.d.secret",
                 "snapshot.resumable": str(resumable).lower(), "slot.drop.on.stop": "true"}
        engine = build("postgres", props)
        if resumable:  # it streams on after the snapshot: stopped once streaming
            thread = threading.Thread(target=engine.run)
            thread.start()
            deadline = time.monotonic() + 60
            while not engine.source_streaming():
                assert thread.is_alive() and time.monotonic() < deadline
                time.sleep(0.1)
            engine.stop()
            thread.join(30)
        else:
            engine.run()
        lines[native] = [line for path in sorted(out.glob("*.jsonl")) for line in path.read_bytes().splitlines()]
    lsn = re.compile(rb'"lsn":\d+|\\"\d+\\"|"txId":\d+|"xmin":\d+')
    # each run has its own context headers (start time, process id): compared by name
    scrub = [[lsn.sub(b"", _STAMPS.sub(b'"ts":0', line.rpartition(b',"headers":')[0])) for line in lines[native]]
             for native in (True, False)]
    assert len(scrub[0]) == 23 + 11 + 9 + 5
    assert scrub[0] == scrub[1]
    assert [sorted(orjson.loads(line)["headers"]) for line in lines[True]] == \
        [sorted(orjson.loads(line)["headers"]) for line in lines[False]]
    # rows of a and b were encoded in batches: 2 of every 4 (all but each batch's ends), 16 in key chunks; d's go
    # the Python way (its key column is left out of its rows, which the codec does not do)
    assert sum(batches) >= 16, batches
    marks = [orjson.loads(line)["value"]["payload"]["source"]["snapshot"] for line in lines[True][:23]]
    assert marks[0] == "first" and marks[-1] == "last_in_data_collection" and set(marks[1:-1]) == {"true"}
    first = orjson.loads(lines[True][0])
    assert first["key"]["payload"] == {"id": 1} and first["headers"] is not None


@pytest.mark.parametrize("schemas", [True, False], ids=["schemas", "no-schemas"])
def test_stream_runs_same_files_with_and_without_the_codec(pg_db: dict[str, str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch, schemas: bool) -> None:
    """Runs of inserts or updates of one table in one transaction, encoded in one call and spliced by
    the file sink (cdc.sources.postgres.encoded_runs), through cdc.pipeline.build as the CLI runs it:
    the files are those of the Python path but for time stamps. Runs interleaved with other tables,
    deletes and key changes, a run cut at max.batch.size, a run the codec leaves to Python (an
    unchanged TOAST value), a table without a key, a key left out of the row."""
    require_native()
    from cdc.sources.postgres import encoded_runs

    runs: list[int] = []
    real = encoded_runs.EncodedRun.encoded

    def counting(self: Any) -> Any:
        result = real(self)
        runs.append(len(self.lsns) if result is not None else -len(self.lsns))
        return result

    monkeypatch.setattr(encoded_runs.EncodedRun, "encoded", counting)
    sql(pg_db, "CREATE TYPE mood AS ENUM ('happy', 'sad')", TABLE,
        "CREATE TABLE a (id int PRIMARY KEY, v text, n numeric(6,2))", "CREATE TABLE nokey (x int, y text)",
        "CREATE TABLE hidden (id int PRIMARY KEY, secret text)", "CREATE TABLE done (id int PRIMARY KEY)",
        "CREATE PUBLICATION runs_pub FOR ALL TABLES")
    outs = {native: tmp_path / f"out-{native}" for native in (True, False)}
    props = {native: {**{k: v for k, v in pg_db.items() if k != "dsn"}, "topic.prefix": "dbz",
                      "snapshot.mode": "no_data", "slot.name": f"runs_{native}_{schemas}".lower(),
                      "publication.name": "runs_pub", "native.rows": str(native).lower(), "max.batch.size": "7",
                      "sink.files.directory": str(outs[native]),
                      "offset.storage.file.filename": str(tmp_path / f"o{native}.json"), "slot.drop.on.stop": "true",
                      "message.key.columns": "public.hidden:secret", "column.exclude.list": "public.hidden.secret",
                      "key.converter.schemas.enable": str(schemas).lower(),
                      "value.converter.schemas.enable": str(schemas).lower()} for native in (True, False)}
    with streaming("postgres", props):
        sql(pg_db, f"INSERT INTO t VALUES {', '.join(VALUES)}",
            "BEGIN; INSERT INTO a SELECT g, 'v' || g, g / 3.0 FROM generate_series(1, 30) g; "
            "INSERT INTO nokey VALUES (1, 'x'); INSERT INTO a VALUES (31, 'after', NULL); "
            "UPDATE a SET v = v || '!' WHERE id <= 10; DELETE FROM a WHERE id = 5; UPDATE a SET id = 100 WHERE id = 6; "
            "UPDATE a SET n = 1 WHERE id > 20; COMMIT",
            "UPDATE t SET i4 = 9",  # the row with a TOASTed, unchanged value: that run goes the Python way
            "INSERT INTO nokey SELECT g, NULL FROM generate_series(1, 9) g",
            "INSERT INTO hidden SELECT g, 's' FROM generate_series(1, 4) g",
            "INSERT INTO done VALUES (1)")
        wait_for_file(list(outs.values()), "dbz.public.done.jsonl")
    same_files(outs, "dbz.public.*.jsonl")
    counts = {path.name: len(path.read_bytes().splitlines()) for path in outs[False].glob("dbz.public.*.jsonl")}
    # a: 31 inserts, 10 updates, a delete and its tombstone, a key change (delete, tombstone, create), 12 updates
    assert counts == {"dbz.public.t.jsonl": 3 + 3, "dbz.public.a.jsonl": 31 + 10 + 2 + 3 + 12,
                      "dbz.public.nokey.jsonl": 1 + 9, "dbz.public.hidden.jsonl": 4, "dbz.public.done.jsonl": 1}, counts
    # runs: t's three inserts; a's 30 in runs cut at 7; its updates; nokey's 9; the run of t's updates
    # with the TOASTed value went the Python way; hidden's key is not in its rows: never in a run
    assert sum(n for n in runs if n > 0) >= 3 + 28 + 10 + 10 + 9 and max(runs) <= 7, runs
    assert any(n < 0 for n in runs), runs
