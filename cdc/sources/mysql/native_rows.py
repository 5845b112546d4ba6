"""The compiled row codec (``native/src/binlog.rs``, ``cdc_native.BinlogRowCodec``) behind the binlog.

For a table version whose rows go straight to the JSON converter and whose every output column has
a kind the codec writes (integers but unsigned BIGINT, TINYINT(1) booleans, UTF-8 text, DECIMAL up
to 38 digits in precise mode, DATE, DATETIME(n), TIMESTAMP(n)), a rows event's images become the
JSON bytes of Debezium's row struct and the event's key in one call, without a Python object per
value. Any other table, and any event the codec does not take (columns left out of the image, text
that is not UTF-8, a decimal past 127 bits), goes through ``rows.read_images`` and the converters:
the reference, which the tests compare byte for byte (tests/integration/test_native_rows.py).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import orjson

from cdc.core.native_row import NativeRow, native_module
from cdc.sources.mysql import rows
from cdc.sources.mysql import types as my_types
from cdc.sources.mysql.tables import TableState

_FIXED = {rows.TINY: 1, rows.SHORT: 2, rows.INT24: 3, rows.LONG: 4, rows.LONGLONG: 8, rows.FLOAT: 4,
          rows.DOUBLE: 8, rows.YEAR: 1, rows.DATE: 3, rows.NEWDATE: 3, rows.TIME: 3, rows.DATETIME: 8,
          rows.TIMESTAMP: 4}
_INTEGERS = (rows.TINY, rows.SHORT, rows.INT24, rows.LONG, rows.LONGLONG)
_TEXTS = (rows.VARCHAR, rows.VAR_STRING, rows.STRING)
_BLOBS = (rows.BLOB, rows.TINY_BLOB, rows.MEDIUM_BLOB, rows.LONG_BLOB)


def _layout(storage: int, column: Any) -> tuple[str, int] | None:
    """How to step over a value of this storage type (``rows.reader``'s sizes), or None."""
    if storage in _FIXED:
        return "fixed", _FIXED[storage]
    fraction = (getattr(column, "fsp", 0) + 1) // 2
    if storage == rows.TIME2:
        return "fixed", 3 + fraction
    if storage == rows.DATETIME2:
        return "fixed", 5 + fraction
    if storage == rows.TIMESTAMP2:
        return "fixed", 4 + fraction
    if storage == rows.NEWDECIMAL:
        return "fixed", rows.decimal_size(column.precision, column.decimals)
    if storage in (rows.ENUM, rows.SET):
        return "fixed", column.size
    if storage == rows.BIT:
        return "fixed", column.bytes
    if storage in _TEXTS:
        return "prefixed", 2 if column.max_length > 255 else 1
    if storage in (*_BLOBS, rows.GEOMETRY, rows.JSON):
        return "prefixed", column.length_size
    return None


def binlog_kind(storage: int, mapped: Any, kind: my_types.ValueKind) -> str | None:
    """The codec's writer for an output column: derived from the column's value kind (the one the
    converter is made from) and how the binlog stores it; None: the table goes the Python way."""
    name, param = kind.name, kind.param
    if storage in _INTEGERS:
        if name == "int" or (name == "unsigned" and param <= 32):
            return "int:" + ("u" if name == "unsigned" else "s")
        return "bool" if name == "bool" and storage == rows.TINY else None
    if storage in (*_TEXTS, *_BLOBS) and name == "text":
        return "text" if param == "utf-8" else None
    if storage == rows.NEWDECIMAL and name == "decimal" and param == mapped.decimals and mapped.precision <= 38:
        return f"decimal:{mapped.precision}:{mapped.decimals}"
    if storage in (rows.DATE, rows.NEWDATE) and name == "date":
        return "date"
    if storage == rows.DATETIME2 and name == "timestamp":
        return f"datetime2:{mapped.fsp}:{param}"
    if storage == rows.TIMESTAMP2 and name == "zoned_timestamp" and param <= 6:
        return f"timestamp2:{mapped.fsp}:{max(param, 0)}"
    return None


def binlog_codec(state: TableState, mapped_columns: Sequence[Any], modes: my_types.TypeModes) -> Any:
    """A ``cdc_native.BinlogRowCodec`` for a table version (its TABLE_MAP columns), or None when the
    module is missing, a column is of a kind it does not write, or the column options change the rows (the
    codec writes them as they come)."""
    module = native_module()
    if module is None or state.stage.changes_rows:
        return None
    outputs = {index: (name, missing) for index, name, _, missing in state.spec}
    columns = []
    kinds: dict[int, str] = {}
    for index, (mapped, column) in enumerate(zip(mapped_columns, state.table.columns, strict=True)):
        layout = _layout(mapped.type, mapped)
        if layout is None:
            return None
        kind = None
        if index in outputs:
            kind = binlog_kind(mapped.type, mapped, my_types.value_kind(column, modes))
            if kind is None:
                return None
            kinds[index] = kind
        name, missing = outputs.get(index, ("", None))
        columns.append((*layout, kind, orjson.dumps(name), orjson.dumps(missing)))
    index_of = {column.name: index for index, column in enumerate(state.table.columns)}
    keys = [(index_of[name], name) for name in state.envelope.key_fields]
    if any(not kinds.get(index, "").startswith(("int:", "text")) for index, _ in keys):
        return None  # the key is read back from the row the Python way
    return module.BinlogRowCodec(columns, keys)


_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
# Epoch days from 0001-01-01 up to 0100-01-01: the DATE/DATETIME values the time adjuster moves
# (the codec writes year 0 as a missing value, as the Python way does).
_EARLY_DAYS = (date(1, 1, 1).toordinal() - _EPOCH_ORDINAL, date(100, 1, 1).toordinal() - _EPOCH_ORDINAL)


class YearAdjuster:
    """The codec writes DATE and DATETIME as stored; with ``enable.time.adjuster`` (Debezium's
    default) years 0001-0099 are two-digit years (``types.two_digit_year``). This moves such values
    in the codec's JSON, found by their field names, so that those rows stay on the codec's way."""

    __slots__ = ("_units", "_pattern")

    def __init__(self, units: dict[bytes, int]) -> None:
        self._units = units  # the JSON of a field name -> its value's units per day
        names = b"|".join(re.escape(name) for name in units)
        self._pattern = re.compile(rb"(?<=[{,])(" + names + rb"):(-\d+)")

    @classmethod
    def of(cls, state: TableState) -> YearAdjuster | None:
        """The adjuster of a table version, or None: no such columns, or the adjuster is off."""
        if not state.modes.enable_time_adjuster:
            return None
        units: dict[bytes, int] = {}
        for index, name, convert, _ in state.spec:
            kind = my_types.value_kind(state.table.columns[index], state.modes).name
            if kind == "date":
                units[orjson.dumps(name)] = 1
            elif kind == "timestamp":  # milliseconds or microseconds, as its converter writes them
                units[orjson.dumps(name)] = convert(datetime(1970, 1, 2))
        return cls(units) if units else None

    def __call__(self, encoded: list[tuple[bytes, Any]]) -> list[tuple[bytes, Any]]:
        return [(self._moved(json), key) for json, key in encoded]

    def json(self, structs: list[bytes]) -> list[bytes]:
        """Row or key structs' JSON, each with its early years moved."""
        return [self._moved(json) for json in structs]

    def _moved(self, json: bytes) -> bytes:
        return self._pattern.sub(self._adjust, json) if b":-" in json else json

    def _adjust(self, match: re.Match[bytes]) -> bytes:
        unit = self._units[match.group(1)]
        days, rest = divmod(int(match.group(2)), unit)
        if not _EARLY_DAYS[0] <= days < _EARLY_DAYS[1]:
            return match.group(0)
        stored = date.fromordinal(days + _EPOCH_ORDINAL)
        moved = my_types.civil_days(my_types.two_digit_year(stored.year), stored.month, stored.day)
        return match.group(1) + b":" + str(moved * unit + rest).encode()


class EventRows:
    """One rows event through the codec: ``row(i)`` is image i as a :class:`NativeRow` (its Python
    form decoded, for every image at once, only if something asks)."""

    __slots__ = ("_encoded", "_decode", "_decoded", "_keyed")

    def __init__(self, encoded: list[tuple[bytes, dict[str, Any]]], decode: Any, keyed: bool) -> None:
        self._encoded = encoded
        self._decode = decode  # () -> the rows' dicts, the Python way
        self._decoded: list[dict[str, Any]] | None = None
        self._keyed = keyed

    def __len__(self) -> int:
        return len(self._encoded)

    def row(self, index: int) -> NativeRow:
        json, key = self._encoded[index]
        return NativeRow(json, key if self._keyed else None, self._python_row, index)

    def _python_row(self, index: int) -> dict[str, Any]:
        if self._decoded is None:
            self._decoded = self._decode()
        return self._decoded[index]
