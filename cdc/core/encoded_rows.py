"""Records from rows the compiled codec encoded (:class:`cdc.core.records.EncodedRows`).

A snapshot's rows differ only in ``after`` and the key: every other byte of their records (the
schemas, ``source``, ``op``, the time stamps, the headers) is the same within one batch. So the
converter serializes the batch's template event once, with a marker where the row and the key
go, and each record is the pieces around the markers with the row's JSON and the key's JSON put
in between: one native call for a whole batch (``cdc_native.splice``), no Python object per row.
A stream's run of rows differs in ``source.lsn`` and ``source.sequence`` too: more markers, each
with its own mark byte, and more parts (``EncodedRows.more``).
The bytes are the converter's own, by construction; tests/integration/test_native_rows.py checks
them against the Python path.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import IO, Any

from cdc.core.converters import Converter
from cdc.core.envelope import OP_READ, TableEnvelope
from cdc.core.native_row import native_module
from cdc.core.records import ChangeEvent, EncodedRows, Headers, SinkRecord

_MARK = b"\x00"  # never in a converter's JSON output: orjson writes control characters in strings escaped
_MARKS = re.compile(b"[\x00-\x07]")


class Placeholder:
    """Where a row's (or a key's, or another per-row part's) JSON goes in a template: spliced in as
    its mark (the JSON converter splices any value with ``json`` bytes, cdc.core.converters._default)."""

    __slots__ = ("json",)

    def __init__(self, mark: bytes = _MARK) -> None:
        assert _MARKS.fullmatch(mark)
        self.json = mark


ROW = Placeholder()
KEY = Placeholder()


def template(envelope: TableEnvelope, source: dict[str, Any], *, keyed: bool, position: tuple[int, ...],
             ts: tuple[int, int, int], op: str = OP_READ) -> ChangeEvent:
    """The event every row of an :class:`EncodedRows` is, but for its ``after``, its key and the
    placeholders ``source`` holds."""
    row: Any = ROW
    key: Any = KEY if keyed else None
    return envelope.event(op, None, row, source, key=key, position=position, ts=ts)


@dataclass(frozen=True, slots=True)
class RecordPieces:
    """One template serialized: the bytes before and after the key's JSON, and the value's bytes
    around its marks (``value_marks[i]`` between ``value[i]`` and ``value[i + 1]``)."""

    topic: str
    key: tuple[bytes, bytes] | None  # None: the records have no key
    value: tuple[bytes, ...]
    headers: Headers | None
    value_marks: tuple[bytes, ...] = (_MARK,)

    def value_parts(self, encoded: EncodedRows) -> list[list[bytes]]:
        """The per-row parts of the value, in the order its marks come."""
        return [encoded.rows if mark == _MARK else encoded.more[mark] for mark in self.value_marks]

    def records(self, encoded: EncodedRows) -> list[SinkRecord]:
        """The records one by one, for a sink without ``write_encoded``."""
        values = splice_each(list(self.value), self.value_parts(encoded))
        if self.key is None or encoded.keys is None:
            return [SinkRecord(self.topic, None, value, self.headers) for value in values]
        keys = splice_each(list(self.key), [encoded.keys])
        return [SinkRecord(self.topic, key, value, self.headers) for key, value in zip(keys, values, strict=True)]


def _split(serialized: bytes | None, what: str) -> tuple[bytes, bytes]:
    if serialized is None or serialized.count(_MARK) != 1:
        raise ValueError(f"the converter did not write the template's {what} where it goes")
    head, _, tail = serialized.partition(_MARK)
    return head, tail


def _split_value(serialized: bytes | None, more: dict[bytes, list[bytes]]
                 ) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The value's pieces around its marks, and the marks in order: the row's once, each of ``more``'s once."""
    if serialized is None:
        raise ValueError("the converter wrote no value for the template")
    marks = tuple(match.group() for match in _MARKS.finditer(serialized))
    if sorted(marks) != sorted([_MARK, *more]):
        raise ValueError("the converter did not write the template's row and parts where they go")
    return tuple(_MARKS.split(serialized)), marks


def record_pieces(converter: Converter, template: ChangeEvent, more: dict[bytes, list[bytes]] | None = None
                  ) -> RecordPieces:
    """``template`` (an event whose ``after`` is :data:`ROW`, whose key is :data:`KEY` or None, and
    which holds a placeholder for each of ``more``'s marks) through ``converter``, cut at the marks."""
    assert template.value is not None and template.value.get("after") is ROW
    record = converter.to_record(template)
    value, marks = _split_value(record.value, more or {})
    return RecordPieces(template.topic, None if template.key is None else _split(record.key, "key"), value,
                        record.headers, marks)


def splice(pieces: list[bytes], parts: list[list[bytes]]) -> bytes:
    """Record i is ``pieces[0] + parts[0][i] + pieces[1] + ... + pieces[-1]``; all of them, joined."""
    module: Any = native_module()
    if module is not None:
        return module.splice(pieces, parts)
    return b"".join(b"".join(_interleave(pieces, row)) for row in zip(*parts, strict=True))


def write_spliced(handle: IO[bytes], pieces: list[bytes], parts: list[list[bytes]]) -> None:
    """As :func:`splice`, written to the open file ``handle``; natively, a megabyte at a time, past
    the file's buffer (flushed first), without a bytes object of the whole batch."""
    module: Any = native_module()
    if module is None:
        handle.write(splice(pieces, parts))
        return
    handle.flush()
    module.write_spliced(handle.fileno(), pieces, parts)


def splice_each(pieces: list[bytes], parts: list[list[bytes]]) -> list[bytes]:
    """As :func:`splice`, each record its own bytes."""
    module: Any = native_module()
    if module is not None:
        return module.splice_each(pieces, parts)
    return [b"".join(_interleave(pieces, row)) for row in zip(*parts, strict=True)]


def _interleave(pieces: list[bytes], row: tuple[bytes, ...]) -> list[bytes]:
    out = [pieces[0]]
    for part, piece in zip(row, pieces[1:], strict=True):
        out += (part, piece)
    return out
