"""PostgreSQL source: logical replication with pgoutput, after an optional snapshot.

    connect, check the server (wal_level, privileges), ensure the publication
    decide: snapshot?  (snapshot.mode, stored offset, slot present)
      yes: CREATE_REPLICATION_SLOT ... (SNAPSHOT 'export')   -> consistent point C
           read every table with COPY inside that snapshot   -> op r events
    START_REPLICATION from C (or from the stored offset)
    for each pgoutput message: Begin / Relation / Insert / Update / Delete / Truncate /
        Message / Commit -> events, batched; a batch carries the offset after its last event
        rows of the signal table (signal.data.collection) are signals, not events; on each
        drained socket: poll signal.file, run a queued blocking snapshot (streaming waits), or
        open the next incremental-snapshot chunk (cdc.core.incremental: watermark, read,
        watermark; the window's rows are emitted when the close watermark comes back)
    acknowledge(offset) -> standby status update: the server may release WAL before it

The snapshot and the stream meet at the slot's consistent point: every transaction committed
before it is in the snapshot, every one after it is streamed, none is in both.

Offsets (Debezium's shape): ``lsn`` the end of the last committed transaction delivered,
``txId``, ``ts_usec``, and inside a large transaction ``lsn_commit`` + ``lsn_proc`` (the commit
LSN of that transaction and the last change delivered), so a restart skips what was delivered.
Also, when present: ``incremental`` (the incremental snapshot's queue and last key per table),
``blocking`` (blocking snapshots not finished), ``signal_file_pos`` / ``signal_kafka_pos``, and during a resumable
initial snapshot (snapshot.resumable) ``snapshot_progress`` (tables left, last key read).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg

from cdc.config import CORE_OPTIONS, Config, Option
from cdc.core import signals as sig
from cdc.core.blocking_snapshot import ReadTable, blocking_snapshots
from cdc.core.emitter import ChangeEmitter
from cdc.core.encoded_rows import template
from cdc.core.envelope import OP_READ, now_ts
from cdc.core.errors import CdcError, OffsetStoreError, SourceError
from cdc.core.filters import warn_if_nothing_captured
from cdc.core.heartbeat import Heartbeat
from cdc.core.incremental import ChunkError, IncrementalSnapshot
from cdc.core.quoting import pg_identifier, pg_table, sql_literal
from cdc.core.records import Batch, ChangeEvent, EncodedRows
from cdc.core.signal_handler import SignalHandler
from cdc.core.snapshot_marks import snapshot_flag
from cdc.core.snapshot_mode import Plan, decide
from cdc.core.snapshot_restart import attempt_offset, interrupted_attempt
from cdc.core.snapshot_runner import RowBatch, SnapshotTable, read_event, read_tables
from cdc.core.source import SourceSettings
from cdc.sources.postgres import arrow_chunks, chunks, parallel
from cdc.sources.postgres import catalog as cat
from cdc.sources.postgres import pgoutput as po
from cdc.sources.postgres.config import POSTGRES_OPTIONS
from cdc.sources.postgres.connection import ConnectionSettings, one, with_retries
from cdc.sources.postgres.native_rows import encoder_for
from cdc.sources.postgres.position import PgPosition
from cdc.sources.postgres.replication import (
    IDLE,
    ReplicationStream,
    SlotInUseError,
    SlotMissingError,
    replication_error,
)
from cdc.sources.postgres.snapshot import copy_rows, copy_select, parse_line
from cdc.sources.postgres.source_info import source_block
from cdc.sources.postgres.stream import ChangeStream
from cdc.sources.postgres.tables import ColumnType, TableState
from cdc.sources.postgres.types import TypeModes, TypeRegistry

if TYPE_CHECKING:  # what the operating methods hand out (cdc.core.source: ReportsLag, ReportsStatus)
    from cdc.metrics.lag import LagReport, Watch
    from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)

IDLE_S = 0.5

class PostgresSource:
    name: ClassVar[str] = "postgres"
    title: ClassVar[str] = "PostgreSQL source"  # in the docs' option reference
    connector_classes: ClassVar[tuple[str, ...]] = ("io.debezium.connector.postgresql.PostgresConnector",)
    connector_name: ClassVar[str] = "postgresql"  # source.connector and the context header
    metrics_plugin: ClassVar[str] = "postgres"  # Debezium's metrics label (cdc.core.source.NamesItsMetrics)
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
        # Rows as the compiled codec's JSON (cdc.sources.postgres.native_rows): set by the pipeline
        # when nothing but the JSON converter reads them, and by the Spark reader.
        self.native_rows = False
        # With native_rows, a snapshot's rows also in batches the codec encoded (EncodedRows), which
        # only the engine takes: set by the pipeline.
        self.encoded_batches = False
        self.settings = ConnectionSettings.from_config(config)
        common = SourceSettings.from_config(config)
        self.prefix, self.max_batch = common.prefix, common.max_batch
        self.table_filter, self.column_filter = common.table_filter, common.column_filter
        self.key_spec = common.key_spec
        self.slot: str = config.get("slot.name")
        self.publication: str = config.get("publication.name")
        self.snapshot_mode: str = config.get("snapshot.mode")
        self.modes = TypeModes.from_config(config)
        self.emitter = ChangeEmitter.from_settings(common)
        self.tx_tracker = self.emitter.tracker
        self.heartbeat = Heartbeat(self.prefix, config.get("heartbeat.topics.prefix"),
                                   config.get("heartbeat.interval.ms"))
        self.heartbeat_query: str | None = config.get("heartbeat.action.query")
        self._conn: psycopg.Connection | None = None
        self._repl_conn: psycopg.Connection | None = None
        self._stream: ReplicationStream | None = None
        self._types = TypeRegistry(self._catalog_conn)
        self._relations: dict[int, TableState | None] = {}
        self._stopping = False
        self._position: dict[str, Any] | None = None  # offset after the last event handed out
        self._identity: str | None = None  # the server and database, stamped on every offset
        self._start_catalog: dict[int, cat.CatalogTable] = {}  # every table as read at the start, by oid
        self._stopping_on_error = False  # a failed run keeps its slot, whatever slot.drop.on.stop says
        # signals and incremental snapshots (cdc.core.signals, cdc.core.incremental)
        self.signal_table: str | None = config.get("signal.data.collection")
        channels = config.get("signal.enabled.channels")
        self.signal_source = "source" in channels and bool(self.signal_table)
        self.resumable: bool = config.get("snapshot.resumable")
        self.read_only: bool = config.get("read.only")
        self._read_only_window: tuple[str, chunks.Visibility] | None = None  # read.only: (chunk id, what it saw)
        self._signals = chunks.SignalTable(self._catalog_conn, self.signal_table) if self.signal_table else None
        self._reader = chunks.PgChunkReader(self)
        self._incr = IncrementalSnapshot(self._reader, self._write_watermark,
                                         config.get("incremental.snapshot.chunk.size"))
        self._signal_handler = SignalHandler(self._incr, captured_keys=self._captured_keys,
                                             watermarks_writable=self.signal_source or self.read_only,
                                             channels=sig.polled_channels(config))
        self._captured: dict[str, cat.CatalogTable] = {}
        self._changes: ChangeStream | None = None
        self._chunk_seq = 0
        self.stream_lsn = 0  # LSN of the change being decoded (the source block of incremental reads)

    # ---- connections ------------------------------------------------------------------------

    def _catalog_conn(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = with_retries(self.settings, "connecting to PostgreSQL", self.settings.connect,
                                      lambda: self._stopping)
        return self._conn

    def _replication_conn(self) -> psycopg.Connection:
        if self._repl_conn is None or self._repl_conn.closed:
            self._repl_conn = with_retries(
                self.settings, "opening a replication connection",
                lambda: self.settings.connect(replication=True), lambda: self._stopping,
            )
        return self._repl_conn

    # ---- the Source contract ----------------------------------------------------------------

    @property
    def streaming(self) -> bool:
        """True once the replication stream is open: changes committed from now on are captured."""
        return self._stream is not None

    def stop(self) -> None:
        self._stopping = True

    def acknowledge(self, offset: dict[str, Any]) -> None:
        if self._stream is not None and offset.get("lsn"):
            self._stream.confirm(int(offset["lsn"]))
            # Nothing handed out after this offset: keepalive positions may be confirmed too.
            self._stream.idle_flush_allowed = offset == self._position and "lsn_proc" not in offset

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self.config.get("slot.drop.on.stop") and not self._stopping_on_error:
            try:
                if self._repl_conn is not None:
                    self._repl_conn.close()
                    self._repl_conn = None
                cat.drop_slot(self._catalog_conn(), self.slot)
                log.info("dropped replication slot %s (slot.drop.on.stop)", self.slot)
            except (CdcError, psycopg.Error) as exc:
                log.warning("could not drop slot %s: %s", self.slot, exc)
        self._reader.close()
        self._signal_handler.close()
        for conn in (self._repl_conn, self._conn):
            if conn is not None and not conn.closed:
                conn.close()
        self._repl_conn = self._conn = None

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        try:
            yield from self._run(offset)
        except GeneratorExit:
            # The consumer let go of the stream: after stop() a clean stop (slot.drop.on.stop applies),
            # else it failed downstream (a sink error), and the slot keeps what was not delivered.
            if not self._stopping:
                self._stopping_on_error = True
            raise
        except BaseException:
            self._stopping_on_error = True
            raise

    # ---- start-up ---------------------------------------------------------------------------

    def _prepare(self, ours: bool = True) -> tuple[list[cat.CatalogTable], cat.SlotInfo]:
        """Check the server, find the captured tables, make sure the publication holds them; the slot.
        ``ours``: this pipeline has a stored offset, so the slot and publication of its names are its own."""
        conn = self._catalog_conn()
        version = cat.server_checks(conn, self.settings.user)
        self._server_version = version
        self._identity = cat.server_identity(conn, self.settings.dbname)
        everything = cat.read_tables(conn)
        self._start_catalog = {t.oid: t for t in everything}
        tables = [t for t in everything if self.table_filter(t.qualified) and t.qualified != self.signal_table]
        if not self.table_filter.is_open:
            warn_if_nothing_captured([t.qualified for t in tables], sorted(t.qualified for t in everything),
                                     "table.include.list / table.exclude.list")
        self._warn_about_keys(tables)
        to_publish = tables
        if self.signal_source:
            assert self.signal_table is not None
            chunks.check_signal_table(conn, self.signal_table)
            to_publish = tables + [t for t in everything if t.qualified == self.signal_table]
        cat.ensure_publication(conn, self.publication, self.config.get("publication.autocreate.mode"), to_publish,
                               may_alter=ours or self.config.get("publication.takeover"))
        published = cat.publication_tables(conn, self.publication) or set()
        if self.signal_source and self.signal_table not in published:
            schema, _, name = (self.signal_table or "").partition(".")
            raise SourceError(f"signal table {self.signal_table} is not in publication {self.publication}, so "
                              f"signals and watermarks written to it would never be read",
                              fix=f"ALTER PUBLICATION {pg_identifier(self.publication)} ADD TABLE "
                                  f"{pg_table(schema, name)};")
        tables = [t for t in tables if t.qualified in published]
        self._captured = {t.qualified: t for t in tables}
        slot = cat.slot_info(conn, self.slot)
        if slot.exists and slot.plugin != "pgoutput":
            raise SourceError(f"slot {self.slot!r} uses plugin {slot.plugin!r}, not pgoutput",
                              fix="give this pipeline another slot.name (that slot belongs to another consumer)")
        if slot.exists and not ours:
            self._refuse_foreign_slot(slot)
        return tables, slot

    def _refuse_foreign_slot(self, slot: cat.SlotInfo) -> None:
        """A slot of this name exists, but no offset of this pipeline says it is its own: another consumer's
        (Debezium's default slot is named 'debezium'), or one whose offsets were lost. Dropping it, or
        confirming positions on it, would take that consumer's changes away: refused unless slot.takeover."""
        if self.config.get("slot.takeover"):
            log.warning("slot %s exists but this pipeline has no stored offset: taking it over (slot.takeover=true; "
                        "%s)", self.slot, slot.describe())
            return
        raise SourceError(
            f"replication slot {self.slot!r} exists ({slot.describe()}), but this pipeline has no stored offset, so "
            "it is not known to be this pipeline's: it may be another consumer's, such as a Debezium connector's",
            fix=f"give this pipeline its own slot.name; or, if the slot is this pipeline's and its offsets were lost, "
                f"drop it (SELECT pg_drop_replication_slot({sql_literal(self.slot)});) or set slot.takeover=true "
                "to have cdc use it")

    def _run(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        tables, slot = self._prepare(ours=offset is not None)
        attempt = interrupted_attempt(offset)
        if attempt:
            log.warning("the snapshot of an earlier run was interrupted: taking it again (each table starts with a "
                        "truncate event, so consumers drop what they applied of the first attempt)")
            offset = None
        if offset is not None:
            PgPosition.from_offset(offset)  # refuse another connector's offset before anything else
            self._check_server(offset)
        decision = decide(self.snapshot_mode, offset, log_reaches=slot.exists)
        log.info("start: %s (%s)", decision.plan.value, decision.reason)
        if decision.plan is Plan.NOTHING:
            return
        if decision.plan is Plan.LOG_GONE:
            assert offset is not None
            raise SlotMissingError(
                f"replication slot {self.slot!r} is gone, but an offset is stored for this pipeline "
                f"(lsn {po.format_lsn(int(offset.get('lsn') or 0))}): changes since then cannot be read",
                fix="set snapshot.mode=when_needed to re-snapshot, or delete the offset file to start over",
            )
        if decision.plan is Plan.RESUME_SNAPSHOT:
            assert offset is not None
            self._wait_slot_free(slot)
            progress = offset["snapshot_progress"]
            log.info("resuming the initial snapshot (snapshot.resumable): %d table(s) left",
                     len(progress.get("tables") or ()))
            done = yield from self._resumable_snapshot(tables, None, int(offset["lsn"]), progress)
            if done:
                yield from self._stream_changes(self._position or offset)
            return
        if decision.plan is Plan.SNAPSHOT:
            if offset is not None and offset.get("snapshot_progress") is not None:
                log.warning("the stored offset is inside an initial snapshot but slot %s is gone: starting over",
                            self.slot)
            offset = yield from self._initial_snapshot(slot, tables, temporary=decision.then_stop, attempt=attempt)
            if offset is None:
                return
        elif not slot.exists:  # SCHEMA / LOG_START: a slot without a snapshot; STREAM has its slot
            start_lsn, _ = self._create_slot(export=False, temporary=False)
            offset = {"lsn": start_lsn, "txId": None, "ts_usec": None}
        else:
            self._wait_slot_free(slot)
            if not decision.uses_offset or offset is None:
                offset = {"lsn": slot.confirmed_flush_lsn or 0, "txId": None, "ts_usec": None}
        yield from self._stream_changes(offset)

    def _initial_snapshot(self, slot: cat.SlotInfo, tables: list[cat.CatalogTable], *, temporary: bool,
                          attempt: int = 0) -> Generator[Batch, None, dict[str, Any] | None]:
        """A new slot exporting its snapshot, the tables read in it; returns the offset streaming starts from
        (None: stop here: initial_only, or stopped half way through a resumable snapshot)."""
        if slot.exists and not temporary:
            self._wait_slot_free(slot)
            log.warning("slot %s exists but a snapshot is needed: recreating it so the snapshot and the "
                        "stream meet at one consistent point", self.slot)
            cat.drop_slot(self._catalog_conn(), self.slot)
        if not self.resumable or temporary:
            # Stored before the slot exists, not after: a run killed between the slot's creation and its first
            # stored offset would find a slot and no offset, and refuse its own slot as another consumer's.
            yield Batch([], attempt_offset(attempt), commit_now=True)
        start_lsn, snapshot_name = self._create_slot(export=True, temporary=temporary)
        if self.resumable and not temporary:
            done = yield from self._resumable_snapshot(tables, snapshot_name, start_lsn, None)
            return self._position if done else None
        if self.resumable:
            log.info("snapshot.resumable does not apply to snapshot.mode=initial_only (its slot is temporary)")
        yield from self._snapshot(tables, snapshot_name, start_lsn, final=temporary, attempt=attempt)
        return None if temporary else self._position

    # ---- the snapshot in parallel chunks (Spark's executors: cdc.spark.parallel) -------------

    def plan_parallel_snapshot(self, chunk_rows: int) -> dict[str, Any] | None:
        """Create the slot exporting its snapshot and cut the captured tables into key chunks in it
        (parallel.py). The snapshot lives until :meth:`release_parallel_snapshot`. None when
        snapshot.mode takes no snapshot here: the stream starts as it would without Spark. A query starts
        without an offset, so an existing slot is refused as another consumer's, unless slot.takeover."""
        tables, slot = self._prepare(ours=False)
        decision = decide(self.snapshot_mode, None, log_reaches=slot.exists)
        if decision.plan is not Plan.SNAPSHOT or decision.then_stop:
            return None
        if slot.exists:
            self._wait_slot_free(slot)
            log.warning("slot %s exists but a snapshot is needed: recreating it", self.slot)
            cat.drop_slot(self._catalog_conn(), self.slot)
        lsn, snapshot = self._create_slot(export=True, temporary=False)
        chunks_: list[parallel.Chunk] = []
        conn = self.settings.connect()
        try:
            with parallel.in_snapshot(conn, snapshot):
                for table in sorted(tables, key=lambda t: self.table_filter.order_key(t.qualified)):
                    chunks_ += parallel.table_chunks(table, parallel.chunk_bounds(conn, table, chunk_rows))
        finally:
            conn.close()
        log.info("snapshot of %d tables in %d chunks at %s", len(tables), len(chunks_), po.format_lsn(lsn))
        return {"snapshot": snapshot, "lsn": lsn, "chunks": chunks_, "ts_us": now_ts()[1],
                "stream_from": {"lsn": lsn, "txId": None, "ts_usec": None, "snapshot_completed": True}}

    def release_parallel_snapshot(self) -> None:
        """Every chunk is read: the replication connection that holds the exported snapshot may go."""
        if self._repl_conn is not None:
            self._repl_conn.close()
            self._repl_conn = None

    def _chunk_table(self, chunk: parallel.Chunk) -> cat.CatalogTable:
        schema, _, name = chunk["table"].partition(".")
        for table in cat.read_tables(self._catalog_conn()):
            if table.schema == schema and table.name == name:
                return table
        raise SourceError(f"table {chunk['table']} of the snapshot plan no longer exists",
                          fix="start the query again with a new checkpoint to take a new snapshot")

    def _chunk_source(self, table: cat.CatalogTable, plan: dict[str, Any]) -> dict[str, Any]:
        return source_block(self.prefix, self.settings.dbname, table.schema, table.name, ts_us=plan["ts_us"],
                            snapshot="true", lsn=plan["lsn"])

    def parallel_chunk_events(self, plan: dict[str, Any], chunk: parallel.Chunk) -> Iterator[list[ChangeEvent]]:
        """One chunk's rows as read events (the reference path), in the plan's snapshot if it still exists."""
        table = self._chunk_table(chunk)
        state = self.table_state(table)
        source = self._chunk_source(table, plan)
        ts = (plan["ts_us"] // 1000, plan["ts_us"], plan["ts_us"] * 1000)
        position = (plan["lsn"], 0, 0)
        select = parallel.select_chunk(table, chunk, [psycopg.sql.Identifier(c.name) for c in table.columns])
        conn = self.settings.connect()
        try:
            with parallel.in_snapshot(conn, plan["snapshot"]):
                for rows in copy_select(conn, select, chunk["table"], self.config.get("snapshot.fetch.size")):
                    yield [state.envelope.event(OP_READ, None, state.row(values), source, position=position, ts=ts)
                           for values in rows]
        finally:
            conn.close()

    def parallel_chunk_arrow(self, plan: dict[str, Any], chunk: parallel.Chunk) -> tuple[Any, dict[str, Any]] | None:
        """One chunk's rows as an Arrow table of the row struct's columns, with the source block they
        share; None when the table or a value needs the Python converters (then use the events)."""
        table = self._chunk_table(chunk)
        fields = self.table_state(table).envelope.row_schema["fields"]
        columns = arrow_chunks.columnar_select(table, fields, self.modes)
        if columns is None:
            return None
        try:
            result = arrow_chunks.read_chunk(self.settings.conninfo(), table, chunk, columns, plan["snapshot"],
                                             lambda query: query.as_string(self._catalog_conn()))
        except ImportError:
            log.warning("adbc-driver-postgresql is not installed: snapshot chunks are converted in Python "
                        "(pip install 'cdc-debezium[spark]')")
            return None
        return None if result is None else (result, self._chunk_source(table, plan))

    def _warn_about_keys(self, tables: list[cat.CatalogTable]) -> None:
        for table in tables:
            if not table.primary_key and table.replica_identity in ("d", "n"):
                log.warning(
                    "table %s has no primary key and REPLICA IDENTITY %s: its events get a null key, and "
                    "UPDATE/DELETE on it fail once it is published; fix: ALTER TABLE %s REPLICA IDENTITY FULL; "
                    "(or add a primary key)", table.qualified,
                    "DEFAULT" if table.replica_identity == "d" else "NOTHING", pg_table(table.schema, table.name),
                )

    def _wait_slot_free(self, slot: cat.SlotInfo) -> None:
        """A previous run of this pipeline may still be releasing the slot: wait a little."""
        attempts = self.config.get("slot.max.retries")
        delay = self.config.get("slot.retry.delay.ms") / 1000
        info = slot
        for _ in range(attempts):
            if info.active_pid is None:
                return
            log.warning("slot %s is active for PID %s; waiting %.1f s", self.slot, info.active_pid, delay)
            time.sleep(delay)
            info = cat.slot_info(self._catalog_conn(), self.slot)
        if info.active_pid is not None:
            raise SlotInUseError(
                f"replication slot {self.slot!r} is in use by another process (PID {info.active_pid})",
                fix="stop the other pipeline using it, or give this one another slot.name",
            )

    def _create_slot(self, *, export: bool, temporary: bool) -> tuple[int, str | None]:
        conn = self._replication_conn()
        kind = "TEMPORARY " if temporary else ""
        option = "(SNAPSHOT 'export')" if export else "(SNAPSHOT 'nothing')"
        command = f'CREATE_REPLICATION_SLOT "{self.slot}" {kind}LOGICAL pgoutput {option}'
        result = conn.pgconn.exec_(command.encode())
        if result.status != psycopg.pq.ExecStatus.TUPLES_OK:
            message = result.error_message.decode(errors="replace")
            if "already exists" in message:
                raise SourceError(f"replication slot {self.slot!r} already exists: {message.strip()}",
                                  fix="another pipeline may use this slot.name; choose another")
            raise replication_error(message, self.slot)
        lsn = po.parse_lsn((result.get_value(0, 1) or b"").decode())
        snapshot = result.get_value(0, 2)
        log.info("created replication slot %s at %s", self.slot, po.format_lsn(lsn))
        return lsn, snapshot.decode() if snapshot else None

    def captured_tables(self) -> list[str]:
        """The tables this configuration captures (table.include.list ...), as they are now, by name."""
        conn = self._catalog_conn()
        cat.server_checks(conn, self.settings.user)
        return sorted(t.qualified for t in cat.read_tables(conn)
                      if self.table_filter(t.qualified) and t.qualified != self.signal_table)

    def table_schema(self, qualified: str) -> dict[str, Any]:
        """The Connect struct schema of one captured table's rows (``before``/``after``)."""
        conn = self._catalog_conn()
        cat.server_checks(conn, self.settings.user)
        for table in cat.read_tables(conn):
            if table.qualified == qualified:
                state = self._table_state(table, table.columns)
                return state.envelope.row_schema
        raise SourceError(f"table {qualified!r} does not exist in database {self.settings.dbname!r}",
                          fix="check the table option (schema.table)")

    # ---- snapshot ---------------------------------------------------------------------------

    def _snapshot(self, tables: list[cat.CatalogTable], snapshot_name: str | None, lsn: int,
                  final: bool, attempt: int = 0) -> Iterator[Batch]:
        conn = self.settings.connect()  # the attempt is stored already (_initial_snapshot), before any row goes out
        try:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            if snapshot_name:
                conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
            xmin = one(conn, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")[0] \
                if self._server_version >= 130000 else None
            estimates = cat.row_estimates(conn, tables)
            ordered = sorted(tables, key=lambda t: self.table_filter.order_key(t.qualified))
            log.info("snapshot of %d tables at %s", len(ordered), po.format_lsn(lsn))
            last = yield from read_tables(
                [self._snapshot_table(conn, t, lsn, xmin, estimates.get(t.oid)) for t in ordered],
                progress=self.config.get("snapshot.progress"), stopping=lambda: self._stopping, restarted=attempt > 0)
            conn.execute("COMMIT")
        finally:
            conn.close()
        self._position = self._stamp({"lsn": lsn, "txId": None, "ts_usec": time.time_ns() // 1000,
                                      "snapshot_completed": True, **({"snapshot_only": True} if final else {})})
        yield Batch([last] if last is not None else [], dict(self._position))

    def _snapshot_table(self, conn: psycopg.Connection, table: cat.CatalogTable, lsn: int, xmin: int | None,
                        estimated: int | None) -> SnapshotTable:
        """One table of the initial snapshot: its rows by COPY, through the compiled codec where it can."""
        state = self._table_state(table, table.columns)
        names = [c.name for c in table.columns]

        def source(ts_us: int) -> dict[str, Any]:
            return source_block(self.prefix, self.settings.dbname, table.schema, table.name, ts_us=ts_us,
                                snapshot="true", tx_id=xmin, lsn=lsn)

        def batches() -> Iterator[RowBatch]:
            native = encoder_for(state, len(names)) if self.native_rows else None
            row: Any = native.copy_row if native is not None else state.row
            for rows in copy_rows(conn, table.schema, table.name, names, batch_rows=self.config.get(
                    "snapshot.fetch.size"), raw=native is not None):
                ts = now_ts()
                if native is not None and self.encoded_batches and len(rows) > 2:
                    # the codec encodes the rows between the batch's first and last in one call
                    yield RowBatch([row(rows[0]), row(rows[-1])], source(ts[1]), (lsn, 0), ts,
                                   middle=native.copy_batch(rows[1:-1]))
                else:
                    yield RowBatch([row(values) for values in rows], source(ts[1]), (lsn, 0), ts)

        return SnapshotTable(state.envelope, batches, lambda: estimated, source(now_ts()[1]), (lsn, 0, 0))

    # ---- streaming --------------------------------------------------------------------------

    def table_state(self, table: cat.CatalogTable) -> TableState:
        return self._table_state(table, table.columns)

    def _table_state(self, table: cat.CatalogTable, columns: Sequence[ColumnType]) -> TableState:
        return TableState(
            table, columns, topic_prefix=self.prefix, types=self._types, modes=self.modes,
            column_filter=self.column_filter, key_spec=self.key_spec,
            unavailable_placeholder=self.config.get("unavailable.value.placeholder"),
        )

    def _describe(self, message: po.Relation) -> TableState | None:
        """A captured table as the catalog describes it now, with the columns the relation message lists."""
        qualified = f"{message.namespace}.{message.name}"
        if not self.table_filter(qualified):
            return None
        # The first Relation of each table after a start is answered from the catalog read at the start (one
        # query for every table, where a round trip per table cost seconds with thousands); a later one (a
        # DDL) reads the catalog again, as does a first one whose columns differ from that read.
        cached = self._start_catalog.pop(message.relid, None)
        same = cached is not None and [(c.name, c.type_oid) for c in cached.columns] == \
            [(c.name, c.type_oid) for c in message.columns]
        found = [cached] if same and cached is not None else cat.read_tables(self._catalog_conn(), message.relid)
        if found:
            # The message names the table as it was when the rows were written (a backlog read after
            # RENAME TABLE): their topic is that name's, as Debezium's; the rest comes from the catalog.
            table = dataclasses.replace(found[0], schema=message.namespace, name=message.name)
        else:  # dropped since: describe it from the message alone
            table = cat.CatalogTable(message.relid, message.namespace, message.name, message.replica_identity, (), ())
        state = self._table_state(table, message.columns)
        if self.native_rows:
            state.native = encoder_for(state, len(message.columns))
        return state

    def _start_replication(self, lsn: int) -> ReplicationStream:
        options = {"proto_version": "1", "publication_names": self.publication}
        if self._server_version >= 140000:
            options["messages"] = "true"
        stream = ReplicationStream(self._replication_conn(), self.slot,
                                   options, self.config.get("status.update.interval.ms") / 1000)
        stream.start(lsn)
        return stream

    def _stream_changes(self, offset: dict[str, Any]) -> Iterator[Batch]:
        """Stream from ``offset``; reconnect on transient errors without repeating delivered events."""
        self._position = dict(offset)
        yield from self.settings.retry.resumed("streaming from the replication slot", self._stream_once,
                                               self._drop_connections, lambda: self._stopping)

    def _drop_connections(self) -> None:
        for conn in (self._repl_conn, self._conn):
            try:
                if conn is not None:
                    conn.close()
            except Exception:  # noqa: BLE001 - the connection is broken anyway
                pass
        self._stream = None
        self._repl_conn = self._conn = None
        self._relations.clear()

    def _stream_once(self) -> Iterator[Batch]:
        resume = PgPosition.from_offset(self._position or {})
        stream = self._start_replication(resume.lsn)
        self._stream = stream
        self._relations.clear()
        self._signal_handler.restore(self._position or {})
        changes = ChangeStream(
            resume=resume, prefix=self.prefix, dbname=self.settings.dbname, emitter=self.emitter,
            relations=self._relations, describe=self._describe, forget_type=self._types.invalidate,
            signal_table=self.signal_table, hooks=self,
            per_event_ids=self.config.get("transaction.id.mode") == "debezium",
            binary_mode=self.modes.binary_handling_mode)
        self._changes = changes
        events: list[ChangeEvent] = []
        max_batch = self.max_batch
        for data in stream.messages(IDLE_S):
            if isinstance(data, str):  # DRAINED or IDLE: between messages, hand over what we have
                yield from self._between_messages(events, idle=data is IDLE)
                events = []
                if self._stopping:
                    return
                continue
            changes.handle(data, events)
            if len(events) >= max_batch:
                yield from self._handover_inside(events, changes)
                events = []
                if self._stopping:
                    return

    def _between_messages(self, events: list[ChangeEvent], *, idle: bool) -> Iterator[Batch]:
        """The stream has drained what the server sent: heartbeats, signal channels, a blocking snapshot or
        the next incremental chunk (never inside a transaction), then the batch goes out."""
        changes = self._changes
        assert changes is not None and self._stream is not None
        where = (changes.tx.final_lsn, changes.tx.last_change or 0)
        beat = self.heartbeat.due() if idle else None
        if beat is not None:
            events.append(beat)
            self._run_heartbeat_query()
        self._signal_handler.poll_channels(events, where)
        between = not changes.in_transaction
        if self._signal_handler.blocking and between and self._incr.window is None:  # not inside a chunk's window
            if events:
                yield self._handover(list(events), changes.position())
                events.clear()
            self.stream_lsn = changes.committed_lsn
            yield from self._blocking_snapshots()
        if self._incr.wants_chunk and between:  # signals of one transaction take effect together
            self.stream_lsn = changes.committed_lsn
            self._incr.start_chunk()
            if self._read_only_window is not None:  # it opens at once: what follows may be newer
                self._read_only_mark(sig.WINDOW_OPEN, events, where)
        if self._read_only_window is not None and between and \
                self._stream.received_lsn >= self._read_only_window[1].wal_lsn:
            self._read_only_mark(sig.WINDOW_CLOSE, events, where)
        if events or idle:
            *first, batch = self._handover_inside(events, changes)
            yield from first
            batch.caught_up = between
            yield batch

    def _handover_inside(self, events: list[ChangeEvent], changes: ChangeStream) -> list[Batch]:
        """Events (copied: the caller reuses its list) handed over where the stream stands, maybe inside
        a transaction. Then the events up to the last COMMIT among them go first, with its offset: a
        committed one, where a bounded reader (Spark's micro-batches) may end, though the socket mostly
        drains inside transactions. Not while an incremental or blocking snapshot runs: its state in
        the offset is the present one."""
        mark = changes.last_commit
        if mark is not None and mark[0] is events and 0 < mark[1] < len(events) and changes.in_transaction \
                and not self._incr.active and not self._signal_handler.blocking:
            _, count, position = mark
            return [self._handover(events[:count], position),
                    self._handover(events[count:], changes.position(inside=True))]
        return [self._handover(list(events), changes.position(inside=True))]

    # ---- StreamHooks: what the change stream asks of the source ------------------------------------

    def before_transaction(self, final_lsn: int, events: list[ChangeEvent]) -> None:
        if self._read_only_window is not None and final_lsn >= self._read_only_window[1].wal_lsn:
            # every transaction the chunk could have seen has been streamed: emit the chunk
            changes = self._changes
            assert changes is not None
            self._read_only_mark(sig.WINDOW_CLOSE, events, (changes.tx.final_lsn, changes.tx.last_change or 0))

    def signal_row(self, values: Sequence[Any], events: list[ChangeEvent], position: tuple[int, int]) -> None:
        self.stream_lsn = position[1]
        assert self._changes is not None
        row = dict(zip(self._changes.signal_columns, values, strict=False))  # a column added since: ignored
        self._signal_handler.on_row(row, events, position, str(self.signal_table))

    def watching(self, table: str, xid: int) -> bool:
        window = self._incr.window
        return (window is not None and window.open and window.task.table == table
                and (self._read_only_window is None or not self._read_only_window[1].sees(xid)))

    def observe(self, events: Sequence[ChangeEvent]) -> None:
        for event in events:
            self._incr.observe(event)

    def truncated(self, table: str) -> None:
        window = self._incr.window
        if window is not None and window.open and window.task.table == table:
            window.buffer.clear()  # every row of the chunk is gone

    def _handover(self, events: list[ChangeEvent], position: PgPosition) -> Batch:
        offset = position.to_offset()
        self._offset_extras(offset)
        self._position = offset
        return Batch(events, offset)

    def _run_heartbeat_query(self) -> None:
        if not self.heartbeat_query:
            return
        try:
            self._catalog_conn().execute(self.heartbeat_query)
        except psycopg.Error as exc:
            log.warning("heartbeat.action.query failed: %s", exc)

    # ---- signals and incremental snapshots ---------------------------------------------------

    def _offset_extras(self, position: dict[str, Any]) -> None:
        self._signal_handler.state(position)
        self._stamp(position)

    def _stamp(self, offset: dict[str, Any]) -> dict[str, Any]:
        """The server an offset belongs to: an LSN means nothing in another cluster or database."""
        if self._identity is not None:
            offset["server_identity"] = self._identity
        return offset

    def _check_server(self, offset: dict[str, Any]) -> None:
        stored = offset.get("server_identity")
        if stored is None or self._identity is None or stored == self._identity:
            return  # written before servers were named (or by Debezium): taken as it is
        raise OffsetStoreError(
            f"the stored offset was written on another server ({stored}) than this one ({self._identity}): its "
            "LSN means nothing here",
            fix="point the pipeline at the database it was capturing; or, if this one replaced it (a restore, a new "
                "cluster), take a new snapshot: move the offsets away (or give the pipeline a new name)")

    def _write_watermark(self, kind: str, chunk_id: str, data: dict[str, Any] | None = None) -> None:
        if self.read_only:  # the window is the chunk transaction's snapshot, up to the WAL position after it
            if kind == sig.WINDOW_CLOSE and self._reader.visibility is not None:
                self._read_only_window = (chunk_id, self._reader.visibility)
            return
        if self._signals is None or not self.signal_source:
            raise ChunkError("incremental snapshots need the signal table (signal.data.collection, channel "
                             "'source') to write their watermarks")
        self._signals.watermark(kind, chunk_id, data)

    def _read_only_mark(self, kind: str, events: list[ChangeEvent], position: tuple[int, int]) -> None:
        """read.only: a window's open or close, as a watermark row read from the stream would give it."""
        assert self._read_only_window is not None
        chunk_id = self._read_only_window[0]
        if kind == sig.WINDOW_CLOSE:
            self._read_only_window = None
        self._signal_handler.watermark(kind, chunk_id, events, position)

    def captured_table(self, qualified: str) -> cat.CatalogTable | None:
        return self._captured.get(qualified)

    def _refresh_captured(self) -> None:
        """Tables created since the start can be snapshotted too: read the catalog again."""
        conn = self._catalog_conn()
        published = cat.publication_tables(conn, self.publication) or set()
        self._captured = {t.qualified: t for t in cat.read_tables(conn)
                          if self.table_filter(t.qualified) and t.qualified in published
                          and t.qualified != self.signal_table}

    def _on_signal(self, signal: sig.Signal, events: list[ChangeEvent], position: tuple[int, int]) -> None:
        self._signal_handler.on_signal(signal, events, position)

    def _captured_keys(self) -> dict[str, bool]:
        self._refresh_captured()
        return {name: bool(table.primary_key) for name, table in self._captured.items()}

    def _blocking_snapshots(self) -> Iterator[Batch]:
        yield from blocking_snapshots(self._signal_handler.blocking, self._blocking_reader, lambda: None)

    @contextmanager
    def _blocking_reader(self) -> Iterator[ReadTable]:
        """Every table of one request read in one repeatable-read transaction, each under a savepoint
        so that one that fails to read is skipped and the others still are read."""
        conn = self.settings.connect()

        def read(name: str, condition: str | None) -> Iterator[list[ChangeEvent]] | None:
            table = self._captured.get(name)
            return None if table is None else self._blocking_rows(conn, table, condition)
        try:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield read
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _blocking_rows(self, conn: psycopg.Connection, table: cat.CatalogTable,
                       condition: str | None) -> Iterator[list[ChangeEvent]]:
        state = self.table_state(table)
        conn.execute("SAVEPOINT table_read")
        try:
            for rows in copy_rows(conn, table.schema, table.name, [c.name for c in table.columns], where=condition,
                                  batch_rows=self.config.get("snapshot.fetch.size")):
                ts = now_ts()
                source = source_block(self.prefix, self.settings.dbname, table.schema, table.name,
                                      ts_us=ts[1], snapshot="true", lsn=self.stream_lsn or None)
                events = []
                for values in rows:
                    self._chunk_seq += 1
                    events.append(state.envelope.event(OP_READ, None, state.row(values), source, ts=ts,
                                                       position=(self.stream_lsn, 0, self._chunk_seq)))
                yield events
                if self._stream is not None:  # keep the replication connection alive meanwhile
                    self._stream.maybe_send_status()
        except psycopg.Error as exc:
            conn.execute("ROLLBACK TO SAVEPOINT table_read")
            raise SourceError(str(exc).strip()) from None

    # ---- resumable initial snapshot -----------------------------------------------------------

    def _resumable_snapshot(self, tables: list[cat.CatalogTable], snapshot_name: str | None, lsn: int,
                            progress: dict[str, Any] | None) -> Generator[Batch, None, bool]:
        """The initial snapshot in key chunks; each chunk's batch carries the progress in its offset.

        The first run reads every chunk inside the slot's exported snapshot. After a restart that
        snapshot is gone: the chunks left are read as they are now, and the stream, which starts at
        the slot's consistent point, brings every change since, so applying the events in order
        still ends at the table's state. Returns False when stopped before the end.
        """
        chunk = self.config.get("snapshot.fetch.size")
        conn = self.settings.connect()
        ordered = sorted(tables, key=lambda t: self.table_filter.order_key(t.qualified))
        if progress is None:
            remaining = ordered
            last_key: list[Any] | None = None
        else:
            wanted = list(progress.get("tables") or ())
            remaining = [t for t in ordered if t.qualified in wanted]
            last_key = progress.get("last_key")
            if remaining and remaining[0].qualified != (wanted[0] if wanted else None):
                last_key = None  # the table in progress is gone
        first_overall = progress is None

        def offset(rest: list[str], key: list[Any] | None) -> dict[str, Any]:
            return {"lsn": lsn, "txId": None, "ts_usec": time.time_ns() // 1000,
                    "snapshot_progress": {"tables": rest, "last_key": key}}

        try:
            if snapshot_name:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
            log.info("resumable snapshot of %d table(s) at %s, %d rows a chunk", len(remaining), po.format_lsn(lsn),
                     chunk)
            for index, table in enumerate(remaining):
                rest = [t.qualified for t in remaining[index:]]
                state = self.table_state(table)
                is_last_table = index == len(remaining) - 1
                first_in_table = last_key is None
                names = [c.name for c in table.columns]
                if not table.primary_key:
                    log.warning("table %s has no primary key: its snapshot is not chunked (read whole, and read "
                                "again whole if the process stops before it ends)", table.qualified)
                    pending: Sequence[Any] | None = None  # one row held back: the table's last is marked
                    for rows in copy_rows(conn, table.schema, table.name, names, batch_rows=chunk):
                        events = []
                        for values in rows:
                            if pending is not None:
                                events.append(self._chunk_event(state, table, state.row(pending), lsn, snapshot_flag(
                                    first=first_overall, first_in_table=first_in_table, last_in_table=False,
                                    last=False)))
                                first_overall = first_in_table = False
                            pending = values
                        yield Batch(events)
                    if pending is not None:
                        yield Batch([self._chunk_event(state, table, state.row(pending), lsn, snapshot_flag(
                            first=first_overall, first_in_table=first_in_table, last_in_table=True,
                            last=is_last_table))])
                        first_overall = False
                    yield Batch([], offset(rest[1:], None))
                    last_key = None
                    continue
                key, types, positions = chunks.key_of(table, None)
                # The codec takes a chunk's COPY lines as they come, as in _snapshot.
                native = encoder_for(state, len(names)) if self.native_rows and self.encoded_batches else None
                row: Any = native.copy_row if native is not None else state.row
                while True:
                    select = chunks.chunk_select(table, key, types, condition=None, after=last_key, upto=None,
                                                 limit=chunk + 1)
                    rows = [r for batch in copy_select(conn, select, table.qualified, batch_rows=chunk + 1,
                                                       raw=native is not None) for r in batch]
                    more = len(rows) > chunk
                    rows = rows[:chunk]
                    # The rows between a chunk's first and last are never marked first or last: those
                    # the codec encodes in one call (EncodedRows); the first and last are events.
                    encoded = native.copy_batch(rows[1:-1]) if native is not None and len(rows) > 2 else None
                    events = []
                    for n, values in enumerate(rows):
                        if encoded is not None and 0 < n < len(rows) - 1:
                            continue
                        last_in_table = n == len(rows) - 1 and not more
                        flag = snapshot_flag(first=first_overall, first_in_table=first_in_table,
                                             last_in_table=last_in_table, last=last_in_table and is_last_table)
                        first_overall = first_in_table = False
                        if encoded is not None and n == len(rows) - 1:
                            yield Batch(events, encoded=self._chunk_rows(state, table, lsn, *encoded))
                            events = []
                        events.append(self._chunk_event(state, table, row(values), lsn, flag))
                    if rows:
                        values = parse_line(rows[-1].decode()) if native is not None else rows[-1]
                        last_key = [values[i] for i in positions]
                    yield Batch(events, offset(rest if more else rest[1:], last_key if more else None))
                    if self._stopping:
                        return False
                    if not more:
                        break
                last_key = None
            if snapshot_name:
                conn.execute("COMMIT")
        finally:
            conn.close()
        self._position = self._stamp({"lsn": lsn, "txId": None, "ts_usec": time.time_ns() // 1000,
                                      "snapshot_completed": True})
        yield Batch([], dict(self._position))
        return True

    def _chunk_event(self, state: TableState, table: cat.CatalogTable, after: Mapping[str, Any], lsn: int,
                     flag: str) -> ChangeEvent:
        ts = now_ts()
        source = source_block(self.prefix, self.settings.dbname, table.schema, table.name, ts_us=ts[1],
                              snapshot=flag, lsn=lsn)
        self._chunk_seq += 1
        return read_event(state.envelope, after, source, (lsn, 0, self._chunk_seq), ts)

    def _chunk_rows(self, state: TableState, table: cat.CatalogTable, lsn: int, rows: list[bytes],
                    keys: list[bytes] | None) -> EncodedRows:
        """Rows of a chunk the codec encoded, none of them marked first or last."""
        ts = now_ts()
        source = source_block(self.prefix, self.settings.dbname, table.schema, table.name, ts_us=ts[1],
                              snapshot="true", lsn=lsn)
        position = (lsn, 0, self._chunk_seq + 1)
        self._chunk_seq += len(rows)
        return EncodedRows(template(state.envelope, source, keyed=keys is not None, position=position, ts=ts),
                           rows, keys)

    @property
    def incremental(self) -> IncrementalSnapshot:
        """The incremental snapshot's state machine (a replaying reader sets its run)."""
        return self._incr

    # ---- operating: lag, status, guards, slots (cdc.core.source's protocols; the code: lag.py) -----

    def lag_watch(self, metrics: PipelineMetrics) -> Watch:
        from cdc.sources.postgres.lag import PostgresWatch

        return PostgresWatch(self.settings.connect, metrics, self.slot,
                             self.config.get("slot.max.retained.wal.bytes") or 0,
                             self.config.get("slot.retained.wal.action") or "warn")

    def guards_on(self) -> bool:
        return bool(self.config.get("slot.max.retained.wal.bytes"))

    def explain_error(self, error: BaseException) -> CdcError | None:
        from cdc.sources.postgres.guards import explain

        return explain(error, self.slot)

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

    def send_signal(self, type_: str, data: dict[str, Any], id_: str | None = None) -> str:
        to_table = self._insert_signal if self.signal_source and self._signals is not None else None
        return self._signal_handler.send(type_, data, id_, to_table)

    def _insert_signal(self, id_: str, type_: str, data: dict[str, Any]) -> str:
        assert self._signals is not None
        conn = self.settings.connect()  # its own connection: close() would apply slot.drop.on.stop
        try:
            chunks.check_signal_table(conn, self._signals.qualified)
            chunks.SignalTable(lambda: conn, self._signals.qualified).insert(id_, type_, data)
        finally:
            conn.close()
        return f"signal table {self._signals.qualified}"
