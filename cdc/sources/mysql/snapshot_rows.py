"""A snapshot's rows through the compiled codec (``cdc_native.RowCodec.encode_text_rows``).

``SELECT *`` returns each row as one packet of length-encoded texts (MySQL's text protocol); pymysql
splits and decodes them a value at a time in Python, which decides a wide table's speed. With encoded
batches (``encoded_batches``: nothing but the JSON converter reads the rows), the row packets are taken
as they came (:class:`TextRows`) and the codec writes the rows between a batch's first and last as the
JSON of Debezium's row struct and key in one call: integers, UTF-8 text, decimals (precise), floats,
DATE and DATETIME from their texts, every other column through its Python converter inside the same
call. The first and last row of a batch (which the snapshot marks may flag), and a batch the codec
does not take, are decoded the Python way, which stays the reference: the tests compare both byte for
byte (tests/integration/test_native_rows_mysql.py).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from cdc.core.envelope import now_ts
from cdc.core.native_row import native_module
from cdc.core.snapshot_runner import RowBatch
from cdc.sources.mysql import types as my_types
from cdc.sources.mysql.native_rows import YearAdjuster
from cdc.sources.mysql.snapshot import ResultColumns, TextRows
from cdc.sources.mysql.tables import TableState


def text_kind(kind: my_types.ValueKind, encoding: str | None) -> str:
    """The codec's writer for a column's text in the result (what ``cdc_native.RowCodec`` takes),
    derived from the column's value kind as its converter is: the texts MySQL sends for these kinds
    are the forms the writers read (PostgreSQL's), and text is in the connection's utf8mb4 whatever
    the column's character set. ``python``: the converter, given the text; ``python:bytes``: given the
    bytes of a value pymysql does not decode (binary columns)."""
    name, param = kind.name, kind.param
    if encoding is None:
        return "python:bytes"
    if name == "unsigned" and param <= 32:
        return "int"  # the text is the unsigned value already
    if name in ("decimal", "timestamp"):
        return f"{name}:{param}"
    return _TEXT_WRITERS.get(name, "python")


# value kinds whose writer takes no parameter -> that writer
_TEXT_WRITERS = {"int": "int", "text": "text", "float32": "float4", "float64": "float8", "date": "date"}


def _from_text(decode: Callable[[Any], Any] | None, convert: Callable[[Any], Any], missing: Any
               ) -> Callable[[Any], Any]:
    """A column's Python way from its text: pymysql's decoder, then the column's converter."""
    if decode is None:
        return convert
    return lambda text: missing if (value := decode(text)) is None else convert(value)


class TextRowEncoder:
    """One table's rows of a ``SELECT *`` through the codec."""

    def __init__(self, state: TableState, columns: ResultColumns) -> None:
        module = native_module()
        assert module is not None
        self._fallback = module.Fallback
        names = [name for _, name, _, _ in state.spec]
        key_names = list(state.envelope.key_fields)
        # A key column left out of the row (column.exclude.list) cannot be copied from it: no batches.
        self.batchable = len(columns) == state.column_count and all(name in names for name in key_names)
        specs = []
        for index, name, convert, missing in state.spec:
            encoding, decode = columns[index]
            kind = text_kind(my_types.value_kind(state.table.columns[index], state.modes), encoding)
            specs.append((index, orjson.dumps(name), kind, _from_text(decode, convert, missing)))
        self._codec = module.RowCodec(specs, len(columns), [], orjson.dumps, None,
                                      [names.index(name) for name in key_names] if self.batchable else None)
        self._keyed = bool(key_names)  # else the events have no key (not an empty one)
        self._adjust = YearAdjuster.of(state)

    def encode(self, packets: list[bytes]) -> tuple[list[bytes], list[bytes] | None] | None:
        """The rows' row structs' JSON and their keys' JSON (None: the table has no key), or None when any
        of them is for the Python way."""
        if not self.batchable:
            return None
        try:
            rows, keys = self._codec.encode_text_rows(packets)
        except self._fallback:
            return None
        if self._adjust is not None:
            rows = self._adjust.json(rows)
            keys = self._adjust.json(keys) if keys is not None else None
        return rows, keys if self._keyed else None


def row_batch(rows: TextRows, state: TableState, encoder: TextRowEncoder, source: dict[str, Any],
              position: tuple[int, ...]) -> RowBatch:
    """A batch of a snapshot's rows: those between the first and the last through the codec (the two
    stay events, which the marks may flag), else all of them the Python way."""
    ts = now_ts()
    packets = rows.packets
    middle = encoder.encode(packets[1:-1]) if len(packets) > 2 else None
    if middle is not None:
        return RowBatch(state.rows(rows.decoded((packets[0], packets[-1]))), source, position, ts, middle=middle)
    return RowBatch(state.rows(rows.decoded(packets)), source, position, ts)
