"""The contract every source plugin fulfils.

A source is built from a :class:`cdc.core.config.Config`; ``stream(offset)`` yields
:class:`Batch` es in log order, starting after ``offset`` (None: start per ``snapshot.mode``).
It must yield at least every ``idle`` interval, even an empty batch, so the engine can flush
on time and stop promptly. ``acknowledge(offset)`` tells it that everything up to that
offset is durable in the sink and stored, so it may release the log (PostgreSQL confirms the
slot's flush LSN). ``stop()`` may be called from a signal handler; ``close()`` frees
connections.

Beyond that contract a source may offer capabilities, each declared below as a protocol and checked
with ``isinstance`` (a class-level one with :func:`offers`), never by probing attribute names:

    ReportsStreaming         says when it reads its log (tests, the metrics' Connected)
    NamesItsConnector        source.connector of its events (the context header)
    TakesSignals             cdc signal writes a signal where the running pipeline reads it
    DescribesTables          the captured tables and one table's row schema (cdc signal, Spark)
    Replayable, ChecksReplay Spark's micro-batches replay it between two offsets
    SnapshotsInParallel      Spark's executors read its initial snapshot in key-range chunks
    SnapshotsIncrementally   its incremental snapshot, whose runs Spark's reader names and replays
    NativeRows, EncodedBatches   rows (and snapshot batches) the compiled codec encoded
    ReportsLag               the running pipeline's monitor: where the log stands against the
                             pipeline's position, what is wrong there (metrics, status page)
    ReportsStatus            ``cdc status``: the same, from outside the pipeline
    Guarded                  guards on what the server keeps for the pipeline (WAL, binlogs)
    ExplainsErrors           a clearer error for what the server says (a slot it invalidated)
    HasSlots                 ``cdc slots``: the server's replication slots, dropping one
    NamesItsMetrics          the ``plugin`` label of its Debezium metrics
    MakesCloudEvents         what Debezium's CloudEvents converter makes its events' id and data of

A fourth database gets ``cdc status``, the lag metrics and status page, guards and Spark's parallel
snapshot by implementing these; ``tests/fixtures/plugin_dist`` shows the smallest complete one.
"""
from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from cdc.core.columns import ColumnStage
from cdc.core.config import Config, Option
from cdc.core.errors import ConfigError
from cdc.core.filters import TableFilter, parse_key_columns
from cdc.core.notifications import SILENT, Notifier
from cdc.core.records import Batch
from cdc.core.snapshot_selection import SnapshotSelection
from cdc.core.topics import POSTGRES_LAYOUT, ConnectorLayout, TopicNaming
from cdc.core.transactions import TransactionTracker

if TYPE_CHECKING:
    from cdc.core.errors import CdcError
    from cdc.core.incremental import IncrementalSnapshot
    from cdc.core.records import ChangeEvent
    from cdc.core.snapshot_mode import Decision
    from cdc.metrics.findings import Finding
    from cdc.metrics.lag import LagReport
    from cdc.metrics.registry import PipelineMetrics


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


# ---- the parts a source hands the core's coordinator (cdc.core.coordinator) ------------------------

Offset = dict[str, Any]


@runtime_checkable
class ChangeEventSources(Protocol):
    """A source's parts, which :class:`cdc.core.coordinator.Coordinator` runs in the start-up sequence written
    once there (Debezium's ``ChangeEventSourceFactory``): a source's ``stream(offset)`` is the coordinator's
    ``run(offset)``. Each step yields batches and returns the offset the next one starts from (the position
    type stays the source's own: an offset is its Debezium-shaped dict). A plugin may subclass it to take the
    defaults of ``prepare``, ``locate`` and ``log_gone`` (a log that reaches every offset)."""

    # SCHEMA (snapshot.mode=no_data, recovery) reads the structure as a snapshot (snapshot.delay.ms and
    # streaming.delay.ms apply, ``snapshot`` runs it); False: it only starts the log (``start_log`` runs it).
    schema_is_snapshot: bool

    def prepare(self, offset: Offset | None) -> None:
        """Connect and check the server and the captured tables, before anything is decided (``offset``:
        the stored one, markers included: whether the server-side state of its names is this pipeline's)."""

    def locate(self, offset: Offset) -> tuple[Offset, bool]:
        """The stored offset checked (another connector's or server's refused with a ConfigError or
        OffsetStoreError), as it continues here, and whether the server's log still reaches it."""
        return offset, True

    def log_gone(self, offset: Offset) -> CdcError:
        """The error, with its fix, for a stored offset the log no longer reaches (Plan.LOG_GONE)."""
        from cdc.core.errors import SourceError

        return SourceError("the stored offset is no longer in the source's log",
                           fix="set snapshot.mode=when_needed to take a new snapshot, or delete the offset")

    def snapshot(self, decision: Decision, offset: Offset | None,
                 attempt: int) -> Generator[Batch, None, Offset | None]:
        """Plan.SNAPSHOT, RESUME_SNAPSHOT (and SCHEMA where ``schema_is_snapshot``): the snapshot's batches, the
        last one with the offset after it; returns the offset streaming starts at, None to stop here
        (initial_only, or stopped). ``attempt``: the interrupted attempt before it (0: none)."""
        ...

    def start_log(self, decision: Decision, offset: Offset | None) -> Generator[Batch, None, Offset | None]:
        """Plan.STREAM, LOG_START (and SCHEMA where not ``schema_is_snapshot``): what the stream needs before it
        starts (a slot, the schema from the history); returns the offset it starts at."""
        ...

    def stream_from(self, start: Offset) -> Iterator[Batch]:
        """The log from ``start`` on: batches in log order, each ending between transactions carrying the
        offset to hand over after it, at least one every idle interval; signals (blocking and incremental
        snapshots) between transactions."""
        ...


@dataclass(frozen=True)
class Partition:
    """One part of a source's offset decided and snapshotted on its own (Debezium's partitions: SQL Server's
    databases): its name, its stored offset (None: none), how the log names it (``database testDB``)."""

    name: str
    offset: Offset | None
    label: str = ""


@runtime_checkable
class PartitionedChangeEventSources(Protocol):
    """ChangeEventSources of a source whose offset holds one entry per partition (SQL Server: per database of
    database.names). The coordinator decides each partition in turn (its stored offset, snapshot.mode) and
    runs its snapshot or log start, then one stream reads every partition that streams: ``stream_from`` gets
    the start offset of each (none: the run ends, initial_only)."""

    schema_is_snapshot: bool

    def partitions(self, offset: Offset | None) -> list[Partition]: ...

    def prepare(self, partition: str, offset: Offset | None) -> None: ...

    def locate(self, partition: str, offset: Offset) -> tuple[Offset, bool]: ...

    def log_gone(self, partition: str, offset: Offset) -> CdcError: ...

    def hold(self, partition: str, offset: Offset | None) -> None:
        """Plan.NOTHING: the partition does not stream; its offset is kept as it is."""
        ...

    def snapshot(self, partition: str, decision: Decision, offset: Offset | None,
                 attempt: int) -> Generator[Batch, None, Offset | None]: ...

    def start_log(self, partition: str, decision: Decision,
                  offset: Offset | None) -> Generator[Batch, None, Offset | None]: ...

    def stream_from(self, starts: dict[str, Offset]) -> Iterator[Batch]: ...


# ---- what some sources offer beyond the contract (checked with isinstance, not hasattr) ----------

@runtime_checkable
class ReportsStreaming(Protocol):
    """Says when it reads its log: changes committed from then on are captured (tests, tools, the
    metrics' Connected, the guards). A source without it is taken as reading its log all along."""

    @property
    def streaming(self) -> bool: ...


@runtime_checkable
class NamesItsConnector(Protocol):
    """``source.connector`` of its events and the context header (postgresql, mysql or mariadb as the
    server says, sqlserver); without it, the source's name."""

    @property
    def connector_name(self) -> str: ...


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



@runtime_checkable
class ChecksReplay(Protocol):
    """A configuration Spark cannot replay is refused at ``load()`` with a ConfigError (the SQL Server
    source: several databases, whose LSNs do not compare)."""

    @staticmethod
    def check_replayable(config: Config) -> None: ...


@runtime_checkable
class SnapshotsInParallel(Protocol):
    """Spark's ``format("cdc")`` reads the initial snapshot in key-range chunks, in parallel on its
    executors (cdc.spark.datasource). ``plan_parallel_snapshot`` runs on the driver: it fixes the
    consistent point (an exported snapshot, a binlog position, an LSN) and cuts the captured tables
    into chunks; None when snapshot.mode takes no snapshot. The plan is JSON: ``chunks`` (each a dict
    with at least ``table``), ``ts_us``, and ``stream_from`` (the offset the stream starts at). Each
    executor builds the source from the same options and reads one chunk, as events or, where it can,
    as Arrow tables of the row struct's columns with the source block they share, a piece at a time,
    where lists of events may stand for rows it cannot read so (None: use the events).
    ``release_parallel_snapshot`` once every chunk is read."""

    def plan_parallel_snapshot(self, chunk_rows: int) -> dict[str, Any] | None: ...

    def release_parallel_snapshot(self) -> None: ...

    def parallel_chunk_events(self, plan: dict[str, Any], chunk: Any) -> Iterator[list[ChangeEvent]]: ...

    def parallel_chunk_arrow(self, plan: dict[str, Any], chunk: Any) -> tuple[Iterator[Any], dict[str, Any]] | None: ...


@dataclass(frozen=True)
class JdbcChunks:
    """A table's snapshot chunks as a JDBC reader (Spark's ``spark.read.jdbc``) reads them: each chunk is
    ``SELECT ... FROM (query) WHERE predicate``, on a connection that ran ``session_init`` first (which
    joins the plan's exported snapshot); no predicate when the plan leaves the table out. ``columns``: per
    field of the row struct, in its order, the query's output column and how its value reaches the
    field's type (``value``: as JDBC reads it; ``epoch_days``: days since 1970-01-01; ``epoch_micros``:
    microseconds since 1970-01-01 UTC; ``local_text``/``utc_text``: ISO text of a local or a UTC time).
    ``properties``: the connection's (user, password, driver); never logged or written."""

    url: str
    properties: dict[str, str] = field(repr=False)
    query: str
    predicates: list[str]
    session_init: str
    columns: list[tuple[str, str, str]]  # (field, output column, kind)


@runtime_checkable
class SnapshotsOverJdbc(Protocol):
    """The plan of SnapshotsInParallel read by a JDBC reader in the JVM instead of by the source
    (cdc.spark.jdbc_snapshot): ``jdbc_chunks`` gives one table's chunks of the plan as queries that give
    Debezium's values; None when some column needs the source's own converters, or an option changes
    values (a mask, a custom converter) only the source applies."""

    def jdbc_chunks(self, plan: dict[str, Any], table: str) -> JdbcChunks | None: ...


@runtime_checkable
class SnapshotsIncrementally(Protocol):
    """Incremental snapshots (cdc.core.incremental): Spark's reader names each run of a stream (``run``)
    and, replaying a micro-batch, reads that run's chunks again (``replay_run``, ``replayed_chunks``)."""

    @property
    def incremental(self) -> IncrementalSnapshot: ...


@runtime_checkable
class NativeRows(Protocol):
    """Rows as the compiled codec's JSON (cdc.core.native_row): the pipeline sets ``native_rows`` when
    nothing but the JSON converter reads them and the ``native.rows`` option (which such a source
    declares) allows it; Spark's reader sets it too."""

    native_rows: bool


@runtime_checkable
class EncodedBatches(Protocol):
    """With ``native_rows``, a snapshot's rows (and a stream's runs) also in batches the codec encoded
    (:class:`~cdc.core.records.EncodedRows`), which the engine and Spark's reader take: set by them."""

    encoded_batches: bool


# ---- operating a pipeline: lag, status, guards (cdc.metrics, cdc.status) ---------------------------

class LagWatch(Protocol):
    """A source's lag query, on connections of its own (never the stream's), polled by the running
    pipeline's monitor every ``metrics.lag.interval.ms``: it sets the source's own gauges (declared
    with ``metrics.gauge``), the page's view (``metrics.lag``) and returns what is wrong. A finding of
    level error stops the pipeline (a guard's ``stop``, a lost slot, a purged binlog)."""

    def poll(self) -> list[Finding]: ...

    def close(self) -> None: ...


@runtime_checkable
class ReportsLag(Protocol):
    """Where the source's log stands against the running pipeline's position, and what is wrong there
    (a slot, a binlog, change tables): the metrics, the status page's headline lag, the guards."""

    def lag_watch(self, metrics: PipelineMetrics) -> LagWatch: ...


@runtime_checkable
class ReportsStatus(Protocol):
    """``cdc status``: the same, from outside the pipeline (it may run or not), for a stored offset
    (None: nothing stored yet). Class-level: no source is built, nothing of it is opened."""

    @classmethod
    def status_report(cls, config: Config, offset: dict[str, Any] | None) -> LagReport: ...


@runtime_checkable
class Guarded(Protocol):
    """Guards on what the server keeps for the pipeline (PostgreSQL: slot.max.retained.wal.bytes and
    slot.retained.wal.action, among the source's own options), applied by its lag watch with
    :class:`cdc.metrics.lag.BacklogGuard`. A guard that is on runs the monitor without metrics.port."""

    def guards_on(self) -> bool: ...


@runtime_checkable
class ExplainsErrors(Protocol):
    """A clearer error for what the server says (PostgreSQL: an invalidated slot), else None."""

    def explain_error(self, error: BaseException) -> CdcError | None: ...


@runtime_checkable
class HasSlots(Protocol):
    """``cdc slots``: the replication slots of the source's server (text, or JSON), and dropping one
    (refused while a process streams from it). Class-level, from the pipeline's config."""

    @classmethod
    def slot_report(cls, config: Config, as_json: bool) -> str: ...

    @classmethod
    def drop_slot(cls, config: Config, name: str) -> str: ...


@runtime_checkable
class NamesItsMetrics(Protocol):
    """The ``plugin`` label of its Debezium metrics, Debezium's MBean domain (debezium.<it>): postgres,
    mysql, sql_server. Without it, the source's name."""

    metrics_plugin: ClassVar[str]


@dataclass(frozen=True)
class CloudEventsMaker:
    """What Debezium's CloudEventsConverter takes from a connector (its ``CloudEventsMaker``): the fields of
    the events' ``source`` block their ``id`` is made of, in order (``name:<name>;lsn:<lsn>;...``), and the
    envelope fields ``data`` holds (None: every one, as MariaDB's maker)."""

    id_fields: tuple[str, ...]
    data_fields: tuple[str, ...] | None = ("before", "after")


@runtime_checkable
class MakesCloudEvents(Protocol):
    """``value.converter=io.debezium.converters.CloudEventsConverter`` (cdc.converters.cloudevents): the maker
    of each connector the source's events name in ``source.connector`` (the MySQL source writes mysql or
    mariadb, as the server is). Class-level; without it the converter is refused before the pipeline starts."""

    cloud_events: ClassVar[Mapping[str, CloudEventsMaker]]


def offers(plugin: Any, capability: type) -> bool:
    """Whether a source class or instance offers ``capability`` (one of the protocols above). A class
    is checked against the protocols it can be (issubclass); one declared by class attributes
    (Replayable's POSITION_KEYS) by those attributes on the class object."""
    if not isinstance(plugin, type):
        return isinstance(plugin, capability)
    try:
        return issubclass(plugin, capability)
    except TypeError:  # a protocol with data members: Python checks those on an object only
        return isinstance(plugin, capability)


def declared_options(plugin: Any) -> tuple[Option, ...]:
    """The options a plugin class declares (sources, sinks, offset stores: ``options``). Every built-in
    one declares them, and the Source protocol requires them; a third-party plugin written before
    they were part of the contract may have none, and is taken as declaring nothing rather than
    refused: the one tolerant look-up of a plugin's attributes, kept here."""
    return tuple(getattr(plugin, "options", ()))


@dataclass(frozen=True)
class SourceSettings:
    """The options every source reads the same way (``CORE_OPTIONS``), parsed once."""

    prefix: str
    tombstones: bool
    max_batch: int
    table_filter: TableFilter  # table.include/exclude.list, and schema.include/exclude.list where declared
    columns: ColumnStage  # column.include/exclude.list, the column mappers, name adjustment
    key_spec: dict[str, list[str]]
    include_schema_changes: bool
    topics: TopicNaming  # every topic's name (topic.naming.strategy and the other topic.* options)
    transaction_topic: str | None  # None: provide.transaction.metadata is off
    skipped_operations: frozenset[str]  # of c, u, d, t
    skip_unchanged: bool = False  # skip.messages.without.change
    notifier: Notifier = SILENT  # notification.enabled.channels
    snapshot: SnapshotSelection = SnapshotSelection()  # snapshot.include.collection.list, select overrides
    snapshot_delay_ms: int = 0  # snapshot.delay.ms (cdc.core.delays)
    streaming_delay_ms: int = 0  # streaming.delay.ms

    @classmethod
    def from_config(cls, config: Config, layout: ConnectorLayout = POSTGRES_LAYOUT) -> SourceSettings:
        """``layout``: how the source's connector names its tables (cdc.core.topics)."""
        try:
            key_spec = parse_key_columns(config.get("message.key.columns"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        prefix: str = config.get("topic.prefix")
        topics = TopicNaming.from_config(config, layout)
        return cls(
            prefix=prefix,
            tombstones=config.get("tombstones.on.delete"),
            max_batch=config.get("max.batch.size"),
            table_filter=TableFilter(config.get("table.include.list"), config.get("table.exclude.list"),
                                     schema_include=_declared(config, "schema.include.list"),
                                     schema_exclude=_declared(config, "schema.exclude.list")),
            columns=ColumnStage.from_config(config),
            key_spec=key_spec,
            include_schema_changes=config.get("include.schema.changes"),
            topics=topics,
            transaction_topic=topics.transaction_topic() if config.get("provide.transaction.metadata") else None,
            skipped_operations=frozenset(op.strip() for op in config.get("skipped.operations") or ()) - {"none", ""},
            skip_unchanged=config.get("skip.messages.without.change"),
            notifier=Notifier.from_config(config),
            snapshot=SnapshotSelection.from_config(config),
            snapshot_delay_ms=_declared(config, "snapshot.delay.ms") or 0,
            streaming_delay_ms=_declared(config, "streaming.delay.ms") or 0,
        )

    def transaction_tracker(self) -> TransactionTracker | None:
        return TransactionTracker(self.transaction_topic) if self.transaction_topic else None


def _declared(config: Config, name: str) -> Any:
    """An option some sources declare (schema lists: not MySQL's, whose Debezium connector does not have them;
    cdc.core.options): its value where the source declares it, else None."""
    return config.get(name) if name in config.options else None
