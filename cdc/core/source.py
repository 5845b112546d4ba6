"""The contract every source plugin fulfils.

A source is built from a :class:`cdc.config.Config`; ``stream(offset)`` yields
:class:`Batch` es in log order, starting after ``offset`` (None: start per ``snapshot.mode``).
It must yield at least every ``idle`` interval, even an empty batch, so the engine can flush
on time and stop promptly. ``acknowledge(offset)`` tells it that everything up to that
offset is durable in the sink and stored, so it may release the log (PostgreSQL confirms the
slot's flush LSN). ``stop()`` may be called from a signal handler; ``close()`` frees
connections.
"""
from __future__ import annotations

from typing import Any, ClassVar, Iterator, Protocol, runtime_checkable

from cdc.config import Option
from cdc.core.records import Batch


@runtime_checkable
class Source(Protocol):
    name: ClassVar[str]
    options: ClassVar[tuple[Option, ...]]

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]: ...

    def acknowledge(self, offset: dict[str, Any]) -> None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...
