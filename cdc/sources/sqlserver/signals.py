"""Signal handling of the SQL Server source: the signal table, incremental and blocking snapshots.

    signal table   rows inserted into the CDC-enabled ``signal.data.collection`` come back through
                   its change table in commit order (stream.py hands them to :meth:`on_row`): signals
                   and the watermarks of incremental snapshots, acted on, never emitted
    between polls  file / Kafka signals, blocking snapshots (the table read whole on its database's
                   streaming connection), the next chunk of an incremental snapshot (its watermarks
                   are INSERTs into the signal table: they come back with the next poll)
    offsets        the progress (``incremental``, ``blocking``, ``signal_file_pos``) is kept next to
                   ``databases``

What to do with a signal is core's (cdc.core.signal_handler, cdc.core.incremental); this module says
where SQL Server keeps them. It reads the running streams through ``streams()``, never holding the
streamer or the source.
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import nullcontext
from typing import Any

from cdc.config import Config
from cdc.core import signals as sig
from cdc.core.blocking_snapshot import blocking_snapshots
from cdc.core.chunk_reader import KeysetChunkReader
from cdc.core.envelope import OP_READ
from cdc.core.records import Batch, ChangeEvent
from cdc.core.source_signals import SourceSignals
from cdc.sources.sqlserver import chunks
from cdc.sources.sqlserver import queries as q
from cdc.sources.sqlserver.connection import QueryLayer
from cdc.sources.sqlserver.source_info import source_block
from cdc.sources.sqlserver.stream import DatabaseStream, StreamSignals
from cdc.sources.sqlserver.tables import CaptureInstance

Streams = Callable[[], Mapping[str, DatabaseStream]]


class SqlServerSignals(SourceSignals):
    """The signal table (``table``: database, schema, table), the incremental snapshot and the handler."""

    def __init__(self, config: Config, databases: list[str], *, prefix: str, clock: Callable[[], int],
                 streams: Streams, connect: Callable[[str], QueryLayer], offset: Callable[[], dict[str, Any]]) -> None:
        """``streams()``: the databases streaming now; ``connect(database)``: a connection of its own
        (``cdc signal``); ``offset()``: the source's offset now (for the batches of blocking snapshots)."""
        self.table: tuple[str, str, str] | None = None
        if config.get("signal.data.collection"):
            self.table = chunks.split_signal_table(config.get("signal.data.collection"), databases)
        self._streams = streams
        self._offset = offset
        self.prefix = prefix
        self.clock = clock
        self.fetch_size: int = config.get("snapshot.fetch.size")
        table = chunks.SqlServerSignalTable(self.table, self._signal_conn, connect) if self.table else None
        # the signal table is a channel (signals, watermarks) only when channel 'source' is enabled
        from_table = "source" in (config.get("signal.enabled.channels") or []) and self.table is not None
        super().__init__(KeysetChunkReader(chunks.SqlServerChunks(self._signal_stream, prefix, clock)), table,
                         from_table=from_table, chunk_size=config.get("incremental.snapshot.chunk.size"),
                         captured_keys=self.captured_keys, watermarks_writable=from_table,
                         channels=sig.polled_channels(config))

    # ---- the signal table ----------------------------------------------------------------------

    def is_signal_table(self, database: str, instance: CaptureInstance) -> bool:
        return self.table is not None and (database, instance.schema, instance.table) == self.table

    def check_table(self, conn: QueryLayer) -> None:
        """The signal table of ``conn``'s database exists with its columns (when it is read)."""
        if self.from_table and self.signal_table is not None and self.table and conn.database == self.table[0]:
            self.signal_table.check(conn)

    def reads_watermarks(self, database: str) -> bool:
        """Whether ``database``'s stream carries the signal table (an incremental snapshot of its tables)."""
        return self.from_table and self.table is not None and database == self.table[0]

    def wire(self, stream: DatabaseStream) -> None:
        """The signal table's database reads it: its rows are signals (before ``stream.start``)."""
        if not self.reads_watermarks(stream.database):
            return
        assert self.table is not None
        where = ".".join(self.table)
        incr, handler = self.incremental, self.handler

        def on_row(row: dict[str, Any], events: list[ChangeEvent], position: tuple[int, ...]) -> None:
            handler.on_row(row, events, position, where)

        stream.set_signals(StreamSignals(f"{self.table[1]}.{self.table[2]}", on_row, incr.observe,
                                         lambda: incr.window_table))

    def _signal_stream(self) -> DatabaseStream | None:
        return self._streams().get(self.table[0]) if self.table else None

    def _signal_conn(self) -> QueryLayer | None:
        stream = self._signal_stream()
        return stream.conn if stream is not None else None

    # ---- snapshots between polls ----------------------------------------------------------------

    def captured_keys(self) -> dict[str, bool]:
        """Captured tables, ``<db>.<schema>.<table>`` (Debezium's data-collection names): has a key."""
        out: dict[str, bool] = {}
        for stream in self._streams().values():
            for instance in stream.builder.current.values():
                state = stream.builder.states.get(instance)
                if state is not None:
                    out[state.data_collection] = bool(state.instance.index_columns)
        return out

    def queue_initial_snapshot(self, database: str, snapshots: Callable[[str], bool] = lambda name: True) -> None:
        """snapshot.resumable: the rows of the first snapshot are read as an incremental snapshot of the
        database's tables (those ``snapshots`` takes, by database.schema.table: snapshot.include.collection.list),
        in key chunks with the progress in the offset; keyless tables are read whole."""
        self._queue_initial(lambda name: name.startswith(f"{database}.") and snapshots(name))

    def between_polls(self, stream: DatabaseStream) -> Generator[Batch, None, bool]:
        """Where the stream stands between two polls: file / Kafka signals, blocking snapshots, and the
        next chunk of an incremental snapshot. Returns whether a chunk's watermarks were written (the
        stream reads them at once, without pausing)."""
        incr = self.incremental
        window = incr.window
        events: list[ChangeEvent] = []
        self.handler.poll_channels(events, (stream.position.commit_lsn.as_int(), 0, 0))
        if events:
            yield Batch(events, self._offset())
        if self.blocking_due:
            yield from blocking_snapshots(self.handler.blocking, lambda: nullcontext(self._blocking_rows),
                                          self._offset)
        if incr.wants_chunk and stream is self._signal_stream():
            incr.start_chunk()
        return incr.window is not None and incr.window is not window

    def _blocking_rows(self, name: str, condition: str | None) -> Iterator[list[ChangeEvent]] | None:
        """A table's rows read on its database's streaming connection (between two polls)."""
        database, _, table_name = name.partition(".")
        stream = self._streams().get(database)
        instance = stream.builder.current.get(table_name) if stream is not None else None
        state = stream.builder.states.get(instance) if stream is not None and instance else None
        if stream is None or state is None:
            return None
        table = state.instance
        sql = q.select_where(table.schema, table.table, [c.name for c in table.columns], condition)

        def events(rows: list[dict[str, Any]], now: int) -> list[ChangeEvent]:
            assert stream is not None and state is not None
            source = source_block(self.prefix, database, table.schema, table.table, ts_ns=now, snapshot="true",
                                  commit_lsn=stream.position.commit_lsn)
            return [state.envelope.event(OP_READ, None, state.row(values), source,
                                         ts=(now // 1_000_000, now // 1000, now)) for values in rows]
        return (events(rows, self.clock()) for rows in stream.conn.batches(sql, (), self.fetch_size))
