"""The contract every sink plugin fulfils.

The engine calls ``write`` with serialized records in source order, then ``flush``; when
``flush`` returns, every record written before it is durable (file fsync'd, Kafka delivery
report received). Only then does the engine store the source offset. A sink that cannot keep
a record raises :class:`cdc.core.errors.SinkError` from ``write`` or ``flush``.

Optionally, ``write_encoded(pieces, rows)`` takes a snapshot's rows the compiled codec encoded
(:mod:`cdc.core.encoded_rows`) in one go, as the file sink does; without it, the engine hands
them to ``write`` as records.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from cdc.core.records import SinkRecord


@runtime_checkable
class Sink(Protocol):
    def write(self, records: Sequence[SinkRecord]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class SinkFactory(Protocol):
    """What the ``cdc.sinks`` entry point returns: a class built from the config mapping."""

    def __call__(self, config: Any) -> Sink: ...
