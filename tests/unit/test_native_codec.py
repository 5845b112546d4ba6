"""The compiled codec's own rules, on hand-built pgoutput tuples: strings escaped exactly as orjson
escapes them, integers and booleans as the server's text, Python converters for the rest, and
Fallback (the Python path) for what it does not take."""
from __future__ import annotations

import struct
from typing import Any

import orjson
import pytest

from tests.conftest import require_native


@pytest.fixture(autouse=True)
def _native() -> None:
    require_native()


def tuple_data(*values: str | None, marker: bytes = b"t") -> bytes:
    out = struct.pack(">H", len(values))
    for v in values:
        if v is None:
            out += b"n"
        else:
            raw = v.encode()
            out += marker + struct.pack(">i", len(raw)) + raw
    return out


def codec(*kinds: str, converters: dict[int, Any] | None = None, keys: tuple[int, ...] = ()) -> Any:
    columns = [(i, orjson.dumps(f"c{i}"), kind, (converters or {}).get(i)) for i, kind in enumerate(kinds)]
    import cdc_native

    return cdc_native.RowCodec(columns, len(kinds), list(keys), orjson.dumps)


def test_strings_as_orjson_writes_them() -> None:
    texts = ["".join(chr(c) for c in range(0, 0x80)), "żółw 🐢 \u2028 é", "", "\\\"/"]
    c = codec("text")
    for text in texts:
        data = b"XX" + tuple_data(text)
        json, keys, end = c.encode(data, 2)
        assert json == orjson.dumps({"c0": text}) and end == len(data)


def test_integers_booleans_nulls_and_python_columns() -> None:
    c = codec("int", "bool", "bool", "text", "python", converters={4: float}, keys=(0, 3))
    data = tuple_data("-9223372036854775808", "t", "f", None, "12.50")
    json, keys, _ = c.encode(data, 0)
    assert json == orjson.dumps({"c0": -9223372036854775808, "c1": True, "c2": False, "c3": None, "c4": 12.5})
    assert keys == ("-9223372036854775808", None)


@pytest.mark.parametrize("data", [
    tuple_data("007", "t"),                  # not what int() then orjson would print
    tuple_data("1", "x"),                    # a boolean text other than t / f
    tuple_data("1"),                         # a tuple of another width
    tuple_data("1", "t", marker=b"b"),       # binary format
    struct.pack(">H", 2) + b"t\x00\x00\x00\x011u",  # an unchanged TOAST value
    struct.pack(">H", 2) + b"t\x00\x00\x00\x09",    # truncated
])
def test_what_goes_back_to_python(data: bytes) -> None:
    import cdc_native

    with pytest.raises(cdc_native.Fallback):
        codec("int", "bool").encode(data, 0)


@pytest.mark.parametrize("text", ["0.00", "-0.01", "0.01", "1.27", "1.28", "-1.28", "-1.29", "327.67", "-327.68",
                                  "92233720368547758.07", "-92233720368547758.08", "1" + "0" * 35 + ".00",
                                  "-" + "9" * 36 + ".99"])
def test_decimals_as_python_writes_them(text: str) -> None:
    from cdc.sources.postgres.types import decimal_bytes

    json, _, _ = codec("decimal:2").encode(tuple_data(text), 0)
    assert json == orjson.dumps({"c0": decimal_bytes(int(text.replace(".", "")))})


@pytest.mark.parametrize("text, scale", [("NaN", 2), ("1.5", 2), ("15", 2), ("1.50", 0), ("9" * 40 + ".00", 2)])
def test_decimals_that_go_back_to_python(text: str, scale: int) -> None:
    import cdc_native

    with pytest.raises(cdc_native.Fallback):
        codec(f"decimal:{scale}").encode(tuple_data(text), 0)


@pytest.mark.parametrize("text", ["2024-02-29 11:45:30+00", "2024-01-01 00:00:00.5+00", "1969-12-31 23:59:59.999999+00",
                                  "0001-01-01 00:00:00.000001+00"])
@pytest.mark.parametrize("width", [1, 3, 6])
def test_zoned_timestamps_as_python_writes_them(text: str, width: int) -> None:
    from cdc.sources.postgres.types import _timestamptz_converter

    json, _, _ = codec(f"tstz:{width}").encode(tuple_data(text), 0)
    assert json == orjson.dumps({"c0": _timestamptz_converter(width)(text)})


@pytest.mark.parametrize("text", ["infinity", "-infinity", "12024-01-01 00:00:00+00", "2024-01-01 00:00:00+02",
                                  "0044-03-15 00:00:00+00 BC"])
def test_zoned_timestamps_that_go_back_to_python(text: str) -> None:
    import cdc_native

    with pytest.raises(cdc_native.Fallback):
        codec("tstz:6").encode(tuple_data(text), 0)
