"""PostgreSQL source: logical replication with pgoutput, after an optional snapshot.

This class wires the parts, none of which holds another, and hands them (change_sources.py, Debezium's
PostgresChangeEventSourceFactory) to the core's coordinator (cdc.core.coordinator), which runs the start-up
sequence every source shares: it reads the stored offset, asks decide() what to do and runs the parts that do it:

    connect, check the server (wal_level, privileges)          server.py
    the captured tables, the publication that holds them       publication.py
    decide: snapshot?  (snapshot.mode, stored offset, slot present)   cdc.core.snapshot_mode, coordinator
      yes: CREATE_REPLICATION_SLOT ... (SNAPSHOT 'export')     slot.py        -> consistent point C
           read every table inside that snapshot                snapshotter.py -> op r events
    START_REPLICATION from C (or from the stored offset)       streamer.py
        pgoutput messages -> events, batched; a batch carries the offset after its last event
        between transactions: signals, incremental and blocking snapshots   signals.py
    acknowledge(offset) -> standby status update: the server may release WAL before it

Offsets (Debezium's shape): ``lsn`` the end of the last committed transaction delivered,
``txId``, ``ts_usec``, and inside a large transaction ``lsn_commit`` + ``lsn_proc`` (the commit
LSN of that transaction and the last change delivered), so a restart skips what was delivered.
Also, when present: ``incremental`` (the incremental snapshot's queue and last key per table),
``blocking`` (blocking snapshots not finished), ``signal_file_pos`` / ``signal_kafka_pos``, and during a resumable
initial snapshot (snapshot.resumable) ``snapshot_progress`` (tables left, last key read).
"""
from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg

from cdc.config import CORE_OPTIONS, Config, Option
from cdc.core import signals as sig
from cdc.core.coordinator import Coordinator, StartSettings
from cdc.core.emitter import ChangeEmitter
from cdc.core.errors import CdcError, SourceError
from cdc.core.heartbeat import Heartbeat
from cdc.core.incremental import IncrementalSnapshot
from cdc.core.post_processors import TableLookup
from cdc.core.records import Batch, ChangeEvent
from cdc.core.snapshot_mode import Plan, decide
from cdc.core.snapshot_selection import OVERRIDES_FIX, PARALLEL_SNAPSHOT
from cdc.core.source import CloudEventsMaker, JdbcChunks, SourceSettings
from cdc.core.topics import POSTGRES_LAYOUT
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import jdbc_chunks, parallel
from cdc.sources.postgres.blocking import BlockingReads
from cdc.sources.postgres.change_sources import PostgresChangeEventSources
from cdc.sources.postgres.config import POSTGRES_OPTIONS, message_prefix_filter
from cdc.sources.postgres.connection import Connections, ConnectionSettings
from cdc.sources.postgres.parallel_reads import ParallelSnapshot
from cdc.sources.postgres.publication import Publication
from cdc.sources.postgres.relations import Relations
from cdc.sources.postgres.replica_identity import ReplicaIdentities
from cdc.sources.postgres.reselect import table_lookup
from cdc.sources.postgres.server import ServerInfo
from cdc.sources.postgres.signals import Signals, SignalSettings
from cdc.sources.postgres.slot import ReplicationSlot
from cdc.sources.postgres.snapshotter import Snapshotter
from cdc.sources.postgres.source_info import CLOUD_EVENTS
from cdc.sources.postgres.streamer import Streamer, StreamSettings
from cdc.sources.postgres.tables import RowFormat, TableStates
from cdc.sources.postgres.types import TypeModes, TypeRegistry

if TYPE_CHECKING:  # what the operating methods hand out (cdc.core.source: ReportsLag, ReportsStatus)
    from cdc.metrics.lag import LagReport, Watch
    from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)


class PostgresSource:
    name: ClassVar[str] = "postgres"
    title: ClassVar[str] = "PostgreSQL source"  # in the docs' option reference
    connector_classes: ClassVar[tuple[str, ...]] = ("io.debezium.connector.postgresql.PostgresConnector",)
    connector_name: ClassVar[str] = "postgresql"  # source.connector and the context header
    metrics_plugin: ClassVar[str] = "postgres"  # Debezium's metrics label (cdc.core.source.NamesItsMetrics)
    # Debezium's CloudEvents makers by connector (cdc.core.source.MakesCloudEvents)
    cloud_events: ClassVar[Mapping[str, CloudEventsMaker]] = CLOUD_EVENTS
    options: ClassVar[tuple[Option, ...]] = POSTGRES_OPTIONS  # with the slot guards' (guards.GUARD_OPTIONS)
    # For readers that replay between two offsets (Spark): what locates an offset, and the sort
    # key of one between transactions (events' ``position`` starts with their commit LSN).
    POSITION_KEYS: ClassVar[tuple[str, ...]] = ("lsn", "lsn_proc", "lsn_commit")

    @staticmethod
    def committed_key(offset: dict[str, Any]) -> tuple[int, ...] | None:
        return None if "lsn_proc" in offset else (int(offset.get("lsn") or 0),)

    def __init__(self, config: Config) -> None:
        config.declare(CORE_OPTIONS).declare(POSTGRES_OPTIONS)
        self.config = config
        self.settings = ConnectionSettings.from_config(config)
        common = SourceSettings.from_config(config, POSTGRES_LAYOUT)
        self._snapshot_mode: str = config.get("snapshot.mode")
        self._resumable: bool = config.get("snapshot.resumable")
        modes = TypeModes.from_config(config)
        # Rows as the compiled codec's JSON, and a snapshot's also in encoded batches: set by the pipeline
        # (native_rows, encoded_batches) after the source is made.
        self._rows = RowFormat()
        self._stopping = False
        self._stopping_on_error = False  # a failed run keeps its slot, whatever slot.drop.on.stop says
        self._connections = Connections(self.settings, lambda: self._stopping)
        types = TypeRegistry(self._connections.catalog)
        self._states = TableStates(topics=common.topics, types=types, modes=modes,
                                   columns=common.columns, key_spec=common.key_spec,
                                   unavailable_placeholder=config.get("unavailable.value.placeholder"))
        signals = SignalSettings.from_config(config)
        self._publication = Publication(
            config.get("publication.name"), self._connections.catalog, table_filter=common.table_filter,
            autocreate_mode=config.get("publication.autocreate.mode"), takeover=config.get("publication.takeover"),
            signal_table=signals.signal_table, signal_source=signals.signal_source,
            via_root=config.get("publish.via.partition.root"))
        self._slot = ReplicationSlot(config.get("slot.name"), self._connections, takeover=config.get("slot.takeover"),
                                     max_retries=config.get("slot.max.retries"),
                                     retry_delay_s=config.get("slot.retry.delay.ms") / 1000,
                                     failover=config.get("slot.failover"))
        self._replica_identities = ReplicaIdentities(config.get("replica.identity.autoset.values"))
        self._relations = Relations(self._states, common.table_filter, self._connections.catalog, self._rows)
        self._signals = self._make_signals(signals, common)
        self._signals.incremental.notifier = common.notifier
        self._snapshotter = Snapshotter(
            self.settings.connect, self._states, self._rows, prefix=common.prefix, dbname=self.settings.dbname,
            order_key=common.table_filter.order_key, fetch_size=config.get("snapshot.fetch.size"),
            progress=config.get("snapshot.progress"), stopping=lambda: self._stopping, selection=common.snapshot)
        self._selection = common.snapshot
        self._delays = (common.snapshot_delay_ms, common.streaming_delay_ms)
        self._snapshotter.notifier = common.notifier
        self._streamer = self._make_streamer(common, types)
        self._parts = PostgresChangeEventSources(
            catalog=self._connections.catalog, read_server=self._read_server, publication=self._publication,
            replica_identities=self._replica_identities, relations=self._relations, slot=self._slot,
            snapshotter=self._snapshotter, streamer=self._streamer, resumable=self._resumable)
        self._coordinator = Coordinator(self._parts, StartSettings(self._snapshot_mode, *self._delays, common.notifier),
                                        lambda: self._stopping)
        self._parallel = ParallelSnapshot(
            self.settings, self._connections.catalog, self._states, prefix=common.prefix, modes=modes,
            order_key=common.table_filter.order_key, fetch_size=config.get("snapshot.fetch.size"))

    def _make_signals(self, settings: SignalSettings, common: SourceSettings) -> Signals:
        blocking = BlockingReads(self.settings.connect, self._publication.captured_table, self._states,
                                 prefix=common.prefix, dbname=self.settings.dbname,
                                 fetch_size=self.config.get("snapshot.fetch.size"))
        return Signals(settings, sig.polled_channels(self.config), connect=self.settings.connect,
                       catalog=self._connections.catalog, captured_table=self._publication.captured_table,
                       captured_keys=self._publication.captured_keys, table_state=self._states,
                       open_blocking=blocking.reader, prefix=common.prefix, dbname=self.settings.dbname)

    def _make_streamer(self, common: SourceSettings, types: TypeRegistry) -> Streamer:
        config = self.config
        settings = StreamSettings(
            slot=self._slot.name, publication=self._publication.name,
            status_interval_s=config.get("status.update.interval.ms") / 1000, prefix=common.prefix,
            dbname=self.settings.dbname, max_batch=common.max_batch,
            per_event_ids=config.get("transaction.id.mode") == "debezium",
            binary_mode=self._states.modes.binary_handling_mode, signal_table=self._signals.settings.signal_table,
            heartbeat_query=config.get("heartbeat.action.query"), message_prefixes=message_prefix_filter(config))
        heartbeat = Heartbeat(common.prefix, common.topics.heartbeat_topic(), config.get("heartbeat.interval.ms"))
        return Streamer(settings, self._connections, describe=self._relations.describe,
                        forget_type=types.invalidate, emitter=ChangeEmitter.from_settings(common),
                        heartbeat=heartbeat, signals=self._signals, retry=self.settings.retry,
                        stopping=lambda: self._stopping, rows=self._rows, read_server=self._read_server)

    # ---- rows as the compiled codec's (cdc.core.source.NativeRows, EncodedBatches) -----------------

    @property
    def native_rows(self) -> bool:
        """Rows as the compiled codec's JSON (cdc.sources.postgres.native_rows): set by the pipeline when
        nothing but the JSON converter reads them, and by the Spark reader."""
        return self._rows.native

    @native_rows.setter
    def native_rows(self, value: bool) -> None:
        self._rows.native = value

    @property
    def encoded_batches(self) -> bool:
        """With native_rows, a snapshot's rows and the stream's runs also in batches the codec encoded
        (EncodedRows), which the engine and Spark's reader take: set by them."""
        return self._rows.encoded

    @encoded_batches.setter
    def encoded_batches(self, value: bool) -> None:
        self._rows.encoded = value

    # ---- the Source contract ----------------------------------------------------------------

    @property
    def streaming(self) -> bool:
        """True once the replication stream is open: changes committed from now on are captured."""
        return self._streamer.streaming

    def stop(self) -> None:
        self._stopping = True

    def acknowledge(self, offset: dict[str, Any]) -> None:
        self._streamer.acknowledge(offset)

    def close(self) -> None:
        self._streamer.close()
        if self.config.get("slot.drop.on.stop") and not self._stopping_on_error:
            try:
                self._slot.drop()
            except (CdcError, psycopg.Error) as exc:
                log.warning("could not drop slot %s: %s", self._slot.name, exc)
        self._signals.close()
        self._connections.close()

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        """The core's start-up sequence (cdc.core.coordinator) over this source's parts (change_sources.py)."""
        try:
            yield from self._coordinator.run(offset)
        except GeneratorExit:
            # The consumer let go of the stream: after stop() a clean stop (slot.drop.on.stop applies),
            # else it failed downstream (a sink error), and the slot keeps what was not delivered.
            if not self._stopping:
                self._stopping_on_error = True
            raise
        except BaseException:
            self._stopping_on_error = True
            raise

    def _read_server(self) -> ServerInfo:
        return ServerInfo.read(self._connections.catalog(), self.settings.user, self.settings.dbname,
                               self._connections.replication)

    # ---- the snapshot in parallel chunks (Spark's executors: cdc.spark.parallel) -------------

    def plan_parallel_snapshot(self, chunk_rows: int) -> dict[str, Any] | None:
        """Create the slot exporting its snapshot and cut the captured tables into key chunks in it
        (parallel.py). The snapshot lives until :meth:`release_parallel_snapshot`. None when
        snapshot.mode takes no snapshot here: the stream starts as it would without Spark. A query starts
        without an offset, so an existing slot is refused as another consumer's, unless slot.takeover."""
        tables, slot = self._parts.captured(ours=False)
        decision = decide(self._snapshot_mode, None, log_reaches=slot.exists)
        if decision.plan is not Plan.SNAPSHOT or decision.then_stop:
            return None
        self._selection.refuse_overrides(PARALLEL_SNAPSHOT, OVERRIDES_FIX)
        if slot.exists:
            self._slot.drop_for_snapshot(slot, "recreating it")
        lsn, snapshot = self._slot.create(export=True, temporary=False, standby=self._parts.standby)
        read = [t for t in tables if self._selection.snapshots((None, t.schema, t.name))]
        return self._parallel.plan(read, lsn, snapshot, chunk_rows)

    def release_parallel_snapshot(self) -> None:
        """Every chunk is read: the replication connection that holds the exported snapshot may go."""
        self._connections.close_replication()

    def parallel_chunk_events(self, plan: dict[str, Any], chunk: parallel.Chunk) -> Iterator[list[ChangeEvent]]:
        """One chunk's rows as read events (the reference path), in the plan's snapshot if it still exists."""
        return self._parallel.events(plan, chunk)

    def parallel_chunk_arrow(self, plan: dict[str, Any], chunk: parallel.Chunk
                             ) -> tuple[Iterator[Any], dict[str, Any]] | None:
        """One chunk's rows as Arrow tables of the row struct's columns (and lists of read events for rows
        holding a value only the Python converters read), with the source block they share; None when the
        table needs the Python converters (then use the events)."""
        return self._parallel.arrow(plan, chunk)

    def jdbc_chunks(self, plan: dict[str, Any], table: str) -> JdbcChunks | None:
        """One table's chunks of the plan as Spark's JDBC reader reads them (jdbc_chunks.py); None when the
        source's converters must read it."""
        return self._parallel.jdbc(plan, table, jdbc_chunks.connection(self.config))

    # ---- describing tables (cdc.core.source.DescribesTables) -----------------------------------

    def captured_tables(self) -> list[str]:
        """The tables this configuration captures (table.include.list ...), as they are now, by name."""
        conn = self._connections.catalog()
        cat.server_checks(conn, self.settings.user)
        return sorted(t.qualified for t in self._publication.included(cat.read_tables(conn)))

    def table_schema(self, qualified: str) -> dict[str, Any]:
        """The Connect struct schema of one captured table's rows (``before``/``after``)."""
        conn = self._connections.catalog()
        cat.server_checks(conn, self.settings.user)
        for table in cat.read_tables(conn):
            if table.qualified == qualified:
                return self._states(table).envelope.row_schema
        raise SourceError(f"table {qualified!r} does not exist in database {self.settings.dbname!r}",
                          fix="check the table option (schema.table)")

    def reselect_lookup(self, table_id: str) -> TableLookup | None:
        """A captured table, for the reselect post processor (cdc.core.post_processors.Reselects)."""
        conn = self._connections.catalog()
        table = next((t for t in cat.read_tables(conn) if t.qualified == table_id), None)
        return None if table is None else table_lookup(table, self._states(table), self._connections.catalog)

    # ---- signals (cdc.core.source.TakesSignals, SnapshotsIncrementally) -----------------------

    @property
    def incremental(self) -> IncrementalSnapshot:
        """The incremental snapshot's state machine (a replaying reader sets its run)."""
        return self._signals.incremental

    def send_signal(self, type_: str, data: dict[str, Any], id_: str | None = None) -> str:
        return self._signals.send(type_, data, id_)

    # ---- operating: lag, status, guards, slots (cdc.core.source's protocols; the code: lag.py) -----

    def lag_watch(self, metrics: PipelineMetrics) -> Watch:
        from cdc.sources.postgres.lag import PostgresWatch

        return PostgresWatch(self.settings.connect, metrics, self._slot.name,
                             self.config.get("slot.max.retained.wal.bytes") or 0,
                             self.config.get("slot.retained.wal.action") or "warn")

    def guards_on(self) -> bool:
        return bool(self.config.get("slot.max.retained.wal.bytes"))

    def explain_error(self, error: BaseException) -> CdcError | None:
        from cdc.sources.postgres.guards import explain

        return explain(error, self._slot.name)

    @classmethod
    def status_report(cls, config: Config, offset: dict[str, Any] | None) -> LagReport:
        from cdc.sources.postgres.lag import status_report

        return status_report(config, offset)

    @classmethod
    def slot_report(cls, config: Config, as_json: bool) -> str:
        from cdc.sources.postgres.lag import slot_report

        return slot_report(config, as_json)

    @classmethod
    def drop_slot(cls, config: Config, name: str) -> str:
        from cdc.sources.postgres.lag import drop_slot

        return drop_slot(config, name)


