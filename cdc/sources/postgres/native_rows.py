"""The compiled row codec (``native/``, module ``cdc_native``) behind the PostgreSQL stream.

For a table version whose rows go straight to the JSON converter, an Insert's (or an Update's
new) tuple becomes the JSON bytes of Debezium's row struct in one call, without a Python object
per value: integer, boolean, text-like, float, numeric (precise), date, time, timestamp,
timestamptz and bytea columns are written by the codec, every other column goes through its Python
converter and orjson inside the same call. Which, for the type modes in use, is derived from the
column's value kind (``types.value_kind``) as its converter is: ``types.codec_kind``. The result is
a :class:`NativeRow`: the JSON for the converter (spliced by orjson as a ``Fragment``) and the key
columns' values for the envelope. Anything else that reads a value gets the row decoded the Python
way, so nothing downstream can tell the difference but the time it took.

The Python path stays the reference: tests/unit/test_native_rows.py gives both the same tuples and
requires the same bytes. Without the compiled module (no Rust toolchain when cdc was installed),
one warning says so and everything runs in Python.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson

from cdc.core.native_row import NativeRow, native_module
from cdc.sources.postgres import types as pg_types
from cdc.sources.postgres.snapshot import parse_line

log = logging.getLogger(__name__)


def codec_kinds(state: Any) -> list[str]:
    """Per output field of a TableState (``state.spec`` order): the codec's kind for it, derived from
    the column's value kind as its converter is (``types.codec_kind``); ``python``: the codec calls
    the column's converter and orjson for it."""
    return [pg_types.codec_kind(pg_types.value_kind(pg_type, typmod, state.modes))
            for pg_type, typmod in state.spec_types]


def row_codec(state: Any, width: int | None = None, keys: list[int] | None = None, *,
              allow_python: bool = True, key_spec: list[tuple[int, str, str, Any]] | None = None,
              key_fields: list[int] | None = None) -> Any:
    """A ``cdc_native.RowCodec`` for a TableState, or None when the compiled module is missing.

    With ``allow_python`` (the default) the codec is given every column's Python converter: a
    ``python`` column always goes through it, any other column for the rare texts its kind does not
    write (infinity, BC, NaN...), inside the same call; ``encode`` then raises ``Fallback`` only for
    rows it cannot read at all (unchanged TOAST, binary, another width). Without it, a table with a
    ``python`` column gets None and any such text raises ``Fallback``: no per-value Python at all.
    ``width``: the tuple's column count (checked per row when given); ``keys``: tuple indexes whose
    texts ``encode`` also returns; ``key_spec``: instead, the key dict ``encode`` returns (key_spec_of);
    ``key_fields``: the key struct's fields as positions in ``state.spec``, for ``encode_copy_batch``."""
    module = native_module()
    if module is None:
        return None
    kinds = codec_kinds(state)
    if not allow_python and "python" in kinds:
        return None
    columns = [(index, orjson.dumps(name), kind, convert if allow_python else None)
               for (index, name, convert, _, _), kind in zip(state.spec, kinds, strict=True)]
    return module.RowCodec(columns, width, keys or [], orjson.dumps, key_spec, key_fields)


def key_spec_of(state: Any) -> list[tuple[int, str, str, Any]]:
    """The envelope's key columns, in its order, for the codec's ``key_spec``: ints parsed by the
    codec, text-like values as str, any other through the column's converter (as ``state.row``)."""
    by_name = {name: (index, convert, kind)
               for (index, name, convert, _, _), kind in zip(state.spec, codec_kinds(state), strict=True)}
    spec = []
    for name in state.key_names:
        index, convert, kind = by_name[name]
        mode = "int" if kind == "int" else "str" if kind == "text" else "python"  # text: the converter keeps it
        spec.append((index, name, mode, convert))
    return spec


class RowEncoder:
    """One table version's codec: ``encode(payload, pos)`` -> NativeRow, or None for the Python path."""

    def __init__(self, state: Any, width: int) -> None:
        module = native_module()
        assert module is not None
        self._fallback = module.Fallback
        names = [name for _, name, _, _, _ in state.spec]
        # A key column left out of the row (column.exclude.list) cannot be copied from it.
        self._batchable = all(name in names for name in state.key_names)
        self._codec = row_codec(state, width, key_spec=key_spec_of(state),
                                key_fields=[names.index(name) for name in state.key_names] if self._batchable else None)
        self._keyed = bool(state.key_names)  # else the event has no key (not an empty one)
        self._state = state

    @property
    def batchable(self) -> bool:
        """Whether rows can be encoded in batches: the key's columns are in the row (their JSON is copied)."""
        return self._batchable

    def tuple_batch(self, payloads: list[bytes], pos: int) -> tuple[list[bytes], list[bytes] | None] | None:
        """pgoutput messages' new tuples (at ``pos``) in one call: their row structs' JSON and their keys'
        JSON (None: the table has no key); None when any of them is for the Python path."""
        if not self._batchable:
            return None
        try:
            rows, keys = self._codec.encode_tuples(payloads, pos)
        except self._fallback:
            return None
        return rows, keys if self._keyed else None

    def encode(self, payload: bytes, pos: int) -> NativeRow | None:
        try:
            json, key, _ = self._codec.encode(payload, pos)
        except self._fallback:
            return None
        return NativeRow(json, key if self._keyed else None, self._decode, payload, pos)

    def copy_row(self, line: bytes) -> Mapping[str, Any]:
        """One row of a snapshot's ``COPY ... TO STDOUT`` (text, without its newline): a NativeRow, or
        the row decoded the Python way when the codec does not take it."""
        try:
            json, key = self._codec.encode_copy(line)
        except self._fallback:
            return self._copy_decode(line)
        return NativeRow(json, key if self._keyed else None, self._copy_decode, line)

    def copy_batch(self, lines: list[bytes]) -> tuple[list[bytes], list[bytes] | None] | None:
        """Rows of a snapshot's COPY in one call: their row structs' JSON and their keys' JSON (None:
        the table has no key), for :class:`cdc.core.records.EncodedRows`; None when any of them is
        for the Python path (then each goes through ``copy_row``)."""
        if not self._batchable:
            return None
        try:
            rows, keys = self._codec.encode_copy_batch(lines)
        except self._fallback:
            return None
        return rows, keys if self._keyed else None

    def _copy_decode(self, line: bytes) -> dict[str, Any]:
        return self._state.row(parse_line(line.decode()))

    def _decode(self, payload: bytes, pos: int) -> dict[str, Any]:
        from cdc.sources.postgres.pgoutput import _Reader

        reader = _Reader(payload, "I")
        reader.pos = pos
        return self._state.row(reader.tuple_data())


def encoder_for(state: Any, width: int) -> RowEncoder | None:
    """The codec for a table version, or None when the compiled module is missing or the column options
    change the table's rows (the codec writes them as they come)."""
    if native_module() is None or state.stage.changes_rows:
        return None
    return RowEncoder(state, width)
