"""What flows from a source, through the converter, into a sink.

``ChangeEvent`` is structured (schemas and payloads as Python values) so that the Spark
reader can use it without JSON; ``SinkRecord`` is the serialized form every byte-oriented sink
writes (files, stdout, Kafka). ``Batch`` carries the source offset that becomes safe to store
once every record of the batch (and before it) has been acknowledged by the sink.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc.core.connect import ConnectSchema


@dataclass(slots=True)
class ChangeEvent:
    """One Kafka-Connect-style record: key and value, each a schema plus a payload.

    ``value`` None is a tombstone. ``headers`` values are (schema, payload) pairs serialized by
    the header converter (``__debezium.newkey`` / ``__debezium.oldkey``; cdc.core.header_converters).
    """

    topic: str
    key_schema: ConnectSchema | None
    key: Any
    value_schema: ConnectSchema | None
    value: dict[str, Any] | None
    headers: list[tuple[str, ConnectSchema | None, Any]] | None = None
    # Where the event came from, for ordering in Spark: monotonically increasing per source.
    position: tuple[int, ...] = ()
    # Which captured table ("schema.table" / "db.table"), for filters and Spark; "" otherwise.
    table_id: str = ""
    # Whether Debezium's __debezium.context.* headers go on it: data, tombstones and schema changes
    # carry them; transaction BEGIN/END and logical decoding messages do not.
    context_headers: bool = True


# Serialized headers: (name, bytes); a None value is a header without a value, as Kafka allows.
Headers = list[tuple[str, bytes | None]]


@dataclass(slots=True)
class SinkRecord:
    """A serialized record: what lands in a file line or a Kafka message."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: Headers | None = None


@dataclass(slots=True)
class EncodedRows:
    """Rows of one table the compiled codec already wrote as JSON (a snapshot's bulk): each is the
    event ``template`` with ``rows[i]`` for its ``after`` and ``keys[i]`` for its key (``keys`` None:
    the table has no key). Only a JSON converter without transforms gets them; the engine splices
    them into records around the template's serialized pieces (:mod:`cdc.core.encoded_rows`). A
    snapshot's bulk, and a stream's runs of inserts or updates of one table in one transaction."""

    template: ChangeEvent
    rows: list[bytes]
    keys: list[bytes] | None
    # More per-row parts of the value (a stream's ``source.lsn`` and ``source.sequence``): the template
    # holds a placeholder with this mark where each goes (cdc.core.encoded_rows.Placeholder).
    more: dict[bytes, list[bytes]] = field(default_factory=dict)


@dataclass(slots=True)
class Batch:
    """Events handed from a source to the engine.

    ``offset`` is the source offset to persist once these events (and all before them) are
    acknowledged; ``None`` when the batch ends inside a transaction that must not be committed
    yet. An empty batch with no offset is a heartbeat that lets the engine flush on time.
    """

    events: list[ChangeEvent] = field(default_factory=list)
    offset: dict[str, Any] | None = None
    # More events, after ``events``, already encoded (sources do this only when told to: native_rows).
    encoded: EncodedRows | None = None
    # True when the source has handed over everything the log held when it looked: a bounded
    # reader (Spark's micro-batches) may end its batch here.
    caught_up: bool = False
    # The engine stores this batch's offset at once, not at the next flush interval (a marker that
    # must be durable before what follows it is written: cdc.core.snapshot_restart).
    commit_now: bool = False
