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

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from cdc.config import Config, Option
from cdc.core.errors import ConfigError
from cdc.core.filters import NameFilter, parse_key_columns
from cdc.core.records import Batch
from cdc.core.topics import transaction_topic
from cdc.core.transactions import TransactionTracker


@runtime_checkable
class Source(Protocol):
    """What the engine needs of every source (the entry point ``cdc.sources`` names the class)."""

    name: ClassVar[str]  # the command: cdc <name>
    title: ClassVar[str]  # its section in the option reference
    options: ClassVar[tuple[Option, ...]]  # its own options (the core ones are CORE_OPTIONS)
    connector_classes: ClassVar[tuple[str, ...]]  # the Debezium connector.class values it stands in for

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]: ...

    def acknowledge(self, offset: dict[str, Any]) -> None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


# ---- what some sources offer beyond the contract (checked with isinstance, not hasattr) ----------

@runtime_checkable
class ReportsStreaming(Protocol):
    """Says when it reads its log: changes committed from then on are captured (tests, tools)."""

    @property
    def streaming(self) -> bool: ...

    @property
    def connector_name(self) -> str: ...  # source.connector and the context header


@runtime_checkable
class TakesSignals(Protocol):
    """``cdc signal``: writes a signal where the running pipeline reads it."""

    def send_signal(self, type_: str, data: dict[str, Any], id_: str | None = None) -> str: ...


@runtime_checkable
class DescribesTables(Protocol):
    """The captured tables by name (``cdc signal`` checks a signal's tables against them) and, for Spark's
    ``format("cdc")``, the Connect struct schema of one captured table's rows."""

    def captured_tables(self) -> list[str]: ...

    def table_schema(self, qualified: str) -> dict[str, Any]: ...


@runtime_checkable
class Replayable(Protocol):
    """Spark's micro-batches replay a source between two offsets: which offset fields locate it, and
    the sort key of an offset between transactions (None inside one)."""

    POSITION_KEYS: ClassVar[tuple[str, ...]]

    @staticmethod
    def committed_key(offset: dict[str, Any]) -> tuple[int, ...] | None: ...

    # Optional: ``check_replayable(config)`` raises a ConfigError for a configuration Spark cannot
    # replay (the SQL Server source: several databases, whose LSNs do not compare).


@dataclass(frozen=True)
class SourceSettings:
    """The options every source reads the same way (``CORE_OPTIONS``), parsed once."""

    prefix: str
    tombstones: bool
    max_batch: int
    table_filter: NameFilter
    column_filter: NameFilter
    key_spec: dict[str, list[str]]
    include_schema_changes: bool
    transaction_topic: str | None  # None: provide.transaction.metadata is off
    skipped_operations: frozenset[str]  # of c, u, d, t

    @classmethod
    def from_config(cls, config: Config) -> SourceSettings:
        try:
            key_spec = parse_key_columns(config.get("message.key.columns"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        prefix: str = config.get("topic.prefix")
        return cls(
            prefix=prefix,
            tombstones=config.get("tombstones.on.delete"),
            max_batch=config.get("max.batch.size"),
            table_filter=NameFilter(config.get("table.include.list"), config.get("table.exclude.list")),
            column_filter=NameFilter(None, config.get("column.exclude.list")),
            key_spec=key_spec,
            include_schema_changes=config.get("include.schema.changes"),
            transaction_topic=(transaction_topic(prefix, config.get("transaction.topic"))
                               if config.get("provide.transaction.metadata") else None),
            skipped_operations=frozenset(op.strip() for op in config.get("skipped.operations") or ()) - {"none", ""},
        )

    def transaction_tracker(self) -> TransactionTracker | None:
        return TransactionTracker(self.transaction_topic) if self.transaction_topic else None
