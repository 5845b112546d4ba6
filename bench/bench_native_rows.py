"""Micro-benchmark: the compiled row codec against the Python path on the same pgoutput tuples.

    python bench/bench_native_rows.py [--rows 100000] [--runs 5] [--table narrow|wide|all]

Python path: pgoutput.py's ``_Reader.tuple_data()``, ``TableState.row()``, ``orjson.dumps``.
Codec: ``cdc_native.RowCodec.encode`` (as ``native_rows.row_codec`` builds it, with the Python
converters for the rare values it does not write), and the stream's ``RowEncoder.encode`` (the
codec plus the key columns' values and a NativeRow). Each run times every path over all rows;
printed: rows/s per path (median of the runs, and the best) and the ratio to Python. No server.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdc.core.columns import ColumnStage  # noqa: E402
from cdc.core.topics import TopicNaming
from cdc.sources.postgres import native_rows  # noqa: E402
from cdc.sources.postgres.catalog import CatalogColumn, CatalogTable  # noqa: E402
from cdc.sources.postgres.pgoutput import _Reader  # noqa: E402
from cdc.sources.postgres.tables import TableState  # noqa: E402
from cdc.sources.postgres.types import TypeModes, TypeRegistry  # noqa: E402

OIDS = {"bool": 16, "bytea": 17, "int8": 20, "int4": 23, "text": 25, "float4": 700, "float8": 701,
        "varchar": 1043, "date": 1082, "timestamp": 1114, "timestamptz": 1184, "numeric": 1700, "uuid": 2950,
        "jsonb": 3802}
NUMERIC_12_2 = ((12 << 16) | 2) + 4


def _rng_text(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz éü\"\\") for _ in range(rng.randint(5, 40)))


def _timestamp(rng: random.Random) -> str:
    return (f"{rng.randint(1990, 2030):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}")


# (name, type, typmod, value generator)
GENERATORS: dict[str, list[tuple[str, str, int, Callable[[random.Random, int], str | None]]]] = {
    # bench/bench_postgres.py's table: bigint, text, numeric(12,2), timestamptz, boolean, varchar
    "narrow": [
        ("id", "int8", -1, lambda r, i: str(i)),
        ("name", "text", -1, lambda r, i: _rng_text(r)),
        ("amount", "numeric", NUMERIC_12_2, lambda r, i: f"{r.randint(-10**9, 10**9)}.{r.randint(0, 99):02d}"),
        ("created", "timestamptz", -1, lambda r, i: _timestamp(r) + "+00"),
        ("active", "bool", -1, lambda r, i: r.choice("tf")),
        ("tag", "varchar", 20, lambda r, i: None if r.random() < 0.2 else _rng_text(r)[:20]),
    ],
    "wide": [
        ("id", "int8", -1, lambda r, i: str(i)),
        ("n", "int4", -1, lambda r, i: str(r.randint(-2**31, 2**31 - 1))),
        ("f4", "float4", -1, lambda r, i: f"{r.uniform(-1e6, 1e6):.7g}"),
        ("f8", "float8", -1, lambda r, i: repr(r.uniform(-1e9, 1e9))),
        ("price", "numeric", NUMERIC_12_2, lambda r, i: f"{r.randint(0, 10**8)}.{r.randint(0, 99):02d}"),
        ("ratio", "numeric", -1, lambda r, i: f"{r.randint(0, 999)}.{r.randint(0, 99999)}"),
        ("day", "date", -1, lambda r, i: _timestamp(r)[:10]),
        ("at", "timestamp", -1, lambda r, i: _timestamp(r)),
        ("atz", "timestamptz", -1, lambda r, i: _timestamp(r) + "+00"),
        ("u", "uuid", -1, lambda r, i: str(uuid.UUID(int=r.getrandbits(128)))),
        ("doc", "jsonb", -1, lambda r, i: orjson.dumps({"k": _rng_text(r)[:10], "n": i}).decode()),
        ("blob", "bytea", -1, lambda r, i: "\\x" + r.randbytes(r.randint(0, 24)).hex()),
        ("note", "text", -1, lambda r, i: None if r.random() < 0.3 else _rng_text(r)),
        ("ok", "bool", -1, lambda r, i: r.choice("tf")),
    ],
}


def _no_server() -> Any:
    raise AssertionError("built-in types only")


def table_state(columns: Sequence[tuple[str, str, int, Any]]) -> TableState:
    cat_columns = tuple(CatalogColumn(name, i + 1, OIDS[type_name], typmod, False, None, type_name)
                        for i, (name, type_name, typmod, _) in enumerate(columns))
    catalog = CatalogTable(1, "public", "t", "d", cat_columns, (columns[0][0],))
    return TableState(catalog, cat_columns, topics=TopicNaming("p"), types=TypeRegistry(_no_server), modes=TypeModes(),
                      columns_stage=ColumnStage({}), key_spec={},
                      unavailable_placeholder="__debezium_unavailable_value")


def tuple_data(values: Sequence[str | None]) -> bytes:
    out = [len(values).to_bytes(2, "big")]
    for value in values:
        if value is None:
            out.append(b"n")
        else:
            raw = value.encode()
            out.append(b"t" + len(raw).to_bytes(4, "big") + raw)
    return b"".join(out)


def python_path(state: TableState, tuples: list[bytes]) -> None:
    dumps, row = orjson.dumps, state.row
    for data in tuples:
        reader = _Reader(data, "I")
        reader.pos = 0
        dumps(row(reader.tuple_data()))


def codec_path(codec: Any, tuples: list[bytes]) -> None:
    encode = codec.encode
    for data in tuples:
        encode(data, 0)


def encoder_path(encoder: Any, tuples: list[bytes]) -> None:
    encode = encoder.encode
    for data in tuples:
        encode(data, 0)


def run(table: str, rows: int, runs: int) -> None:
    columns = GENERATORS[table]
    state = table_state(columns)
    rng = random.Random(42)
    tuples = [tuple_data([gen(rng, i) for _, _, _, gen in columns]) for i in range(rows)]
    codec = native_rows.row_codec(state, len(columns))
    if codec is None:
        sys.exit("cdc_native is not installed: pip install ./native")
    encoder = native_rows.RowEncoder(state, len(columns))
    # the same bytes, first
    for data in tuples[:1000]:
        reader = _Reader(data, "I")
        reader.pos = 0
        assert codec.encode(data, 0)[0] == orjson.dumps(state.row(reader.tuple_data()))
    paths: dict[str, Callable[[], None]] = {
        "python (tuple_data + row + orjson)": lambda: python_path(state, tuples),
        "cdc_native RowCodec.encode": lambda: codec_path(codec, tuples),
        "stream's RowEncoder.encode": lambda: encoder_path(encoder, tuples),
    }
    rates: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(runs):
        for name, path in paths.items():
            start = time.perf_counter()
            path()
            rates[name].append(rows / (time.perf_counter() - start))
    kinds = ", ".join(f"{name}:{kind}" for (name, *_), kind in zip(columns, native_rows.codec_kinds(state),
                                                                    strict=True))
    print(f"\n{table} table, {len(columns)} columns ({kinds}); {rows} rows, {runs} runs")
    base = statistics.median(rates["python (tuple_data + row + orjson)"])
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"  {name:38s} {median:>12,.0f} rows/s (best {max(values):,.0f})  x{median / base:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--table", choices=["narrow", "wide", "all"], default="all")
    args = parser.parse_args()
    for table in (["narrow", "wide"] if args.table == "all" else [args.table]):
        run(table, args.rows, args.runs)


if __name__ == "__main__":
    main()
