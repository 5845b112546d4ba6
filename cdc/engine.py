"""The pipeline loop: source -> converter -> sink -> acknowledgement -> offset.

    offset = store.load()
    for batch in source.stream(offset):          # log order
        sink.write(convert(transforms(batch.events)))
        sink.write(batch.encoded spliced into records)   # a snapshot's rows the codec encoded
        pending = batch.offset or pending
        every offset.flush.interval.ms (and at stop):
            sink.flush()                          # everything written is durable
            store.save(pending)                   # then, and only then, the offset moves
            source.acknowledge(pending)           # and the source may release its log

A crash anywhere re-delivers at most what was written after the last stored offset:
at-least-once, in order. With a sink that commits records and offset in one transaction (Kafka,
exactly.once.support), a transaction holds exactly the records up to its offset: rows handed over with
no offset (inside a source transaction) are written only once the pending offset is committed, so a
restart from it repeats none of them. SIGINT/SIGTERM ask the source to stop; the engine then flushes and
stores the last acknowledged offset before it returns.

A retriable source error (a connection lost mid-snapshot or mid-stream, a server restarting) restarts
the source from the stored offset under the retry policy (``errors.max.retries``,
``retriable.restart.connector.wait.ms``), as Kafka Connect restarts a task: what was written and
acknowledged stays, an interrupted snapshot is taken again.
"""
from __future__ import annotations

import gc
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any, Protocol

from cdc.core.converters import Converter
from cdc.core.encoded_rows import record_pieces
from cdc.core.errors import CdcError
from cdc.core.offsets import OffsetStore
from cdc.core.records import Batch, ChangeEvent, EncodedRows
from cdc.core.retry import RetryPolicy
from cdc.core.sink import Sink
from cdc.core.source import ReportsStreaming, Source
from cdc.transforms.chain import TransformChain

log = logging.getLogger(__name__)


class Observer(Protocol):
    """What watches a pipeline (cdc.metrics): it sees each batch as the source hands it over and each
    stored offset; given the error that ends a run, it may name a clearer cause (None: the same)."""

    def batch(self, batch: Batch) -> None: ...

    def committed(self, offset: dict[str, Any]) -> None: ...

    def failed(self, error: BaseException) -> BaseException | None: ...


class Engine:
    def __init__(
        self,
        source: Source,
        sink: Sink,
        converter: Converter,
        offsets: OffsetStore,
        *,
        flush_interval_s: float = 1.0,
        transforms: TransformChain | None = None,
        retry: RetryPolicy | None = None,
        post_processors: Sequence[Callable[[list[ChangeEvent]], list[ChangeEvent]]] = (),
    ) -> None:
        self.source = source
        self.sink = sink
        self.converter = converter
        self.offsets = offsets
        self.flush_interval_s = flush_interval_s
        self.transforms = transforms if transforms else None  # Kafka Connect's transforms=, before the converter
        self.post_processors = tuple(post_processors)  # Debezium's post.processors, before the transforms
        self.retry = retry  # None: a retriable source error ends the run too
        self._stopping = threading.Event()
        self._failure: BaseException | None = None  # why fail() stopped the run
        self.events_written = 0
        self.observer: Observer | None = None

    def source_streaming(self) -> bool:
        """Whether the source reads its log now (sources without the notion: always)."""
        return self.source.streaming if isinstance(self.source, ReportsStreaming) else True

    def stop(self) -> None:
        self._stopping.set()
        self.source.stop()

    def fail(self, error: BaseException) -> None:
        """Stop as stop() does, then raise ``error`` from run() (a guard watching from another thread)."""
        self._failure = error
        self.stop()

    def run(self) -> None:
        pending: dict[str, Any] | None = None
        last_commit = time.monotonic()
        to_record = self.converter.to_record
        observer = self.observer
        transactional = bool(getattr(self.sink, "transactional", False))  # records and offsets committed together
        clean = False

        def commit_pending() -> None:  # before the source restarts: what it handed over is stored first
            nonlocal pending
            if pending is not None:
                self._commit(pending)
                pending = None

        try:
            offset = self.offsets.load()
            if offset is not None:
                log.info("resuming from stored offset %s", offset)
            for batch in self._batches(offset, commit_pending):
                if observer is not None:
                    observer.batch(batch)
                events = batch.events
                for process in self.post_processors:
                    events = process(events)
                if self.transforms:
                    events = self.transforms.apply_all(events)
                if pending is not None and batch.offset is None and transactional and (events or batch.encoded):
                    # Rows past the pending offset (inside a source transaction) must not share its Kafka
                    # transaction: a restart from that offset would deliver them again.
                    self._commit(pending)
                    pending = None
                    last_commit = time.monotonic()
                if events:
                    self.sink.write([to_record(e) for e in events])
                    self.events_written += len(events)
                if batch.encoded is not None:
                    self._write_encoded(batch.encoded)
                if batch.offset is not None:
                    pending = batch.offset
                now = time.monotonic()
                if pending is not None and (batch.commit_now or now - last_commit >= self.flush_interval_s):
                    self._commit(pending)
                    pending = None
                    last_commit = now
                if self._stopping.is_set():
                    break
            clean = True
        except Exception as exc:
            cause = self._failure or (observer.failed(exc) if observer is not None else None)
            if cause is not None and cause is not exc:
                raise cause from exc
            raise
        finally:
            try:
                if pending is not None:
                    if clean:
                        self._commit(pending)
                    else:
                        self._commit_after_error(pending)
                elif clean:
                    self.sink.flush()
            finally:
                self._close_all(raising=clean)
        if self._failure is not None:
            raise self._failure

    def _batches(self, offset: dict[str, Any] | None, commit_pending: Callable[[], None]) -> Iterator[Batch]:
        """The source's batches; after a retriable error the source starts again from the stored offset,
        once the batches it handed over before the error are stored. The retry budget is renewed once
        a restarted source delivers events again."""
        attempt = 0
        while True:
            try:
                for batch in self.source.stream(offset):
                    if attempt and batch.events:
                        attempt = 0
                    yield batch
                return
            except CdcError as exc:
                attempt += 1
                if self.retry is None or not self.retry.should_retry(exc, attempt, self._stopping.is_set()):
                    raise
                log.warning("restarting the source from the stored offset: %s", exc.message)
                self._close_quietly(self.source.close, "source")
                commit_pending()
                self.retry.pause("restarting the source", exc, attempt)
                offset = self.offsets.load()

    def _close_quietly(self, close: Any, part: str) -> None:
        try:
            close()
        except Exception as exc:  # noqa: BLE001 - the source is restarted anyway
            log.warning("closing the %s failed: %s", part, exc)

    def _close_all(self, *, raising: bool) -> None:
        """Close the source, the sink and the offset store, each whatever the others do. After a failure
        (``raising`` False) an error while closing is logged, never raised: it would hide the cause."""
        first: BaseException | None = None
        for part, close in (("source", self.source.close), ("sink", self.sink.close),
                            ("offset store", self.offsets.close)):
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - reported below
                if raising and first is None:
                    first = exc
                else:
                    log.warning("closing the %s failed too: %s", part, exc)
        if first is not None:
            raise first

    def _write_encoded(self, encoded: EncodedRows) -> None:
        """Rows the codec encoded: the template serialized once, the records spliced around it, by
        the sink in one go where it can (``write_encoded``), else as records one by one."""
        if self.transforms is not None:  # a source is told to encode only when nothing else reads the rows
            raise RuntimeError("a source handed over encoded rows to a pipeline with transforms: "
                               "leave its encoded_batches off when transforms are configured")
        pieces = record_pieces(self.converter, encoded.template, encoded.more)
        write_encoded = getattr(self.sink, "write_encoded", None)
        if write_encoded is not None:
            write_encoded(pieces, encoded)
        else:
            self.sink.write(pieces.records(encoded))
        self.events_written += len(encoded.rows)

    def _commit_after_error(self, offset: dict[str, Any]) -> None:
        """The batches before the failure were written whole: store their offset if the sink can
        still flush them, so a restart repeats less. The original error is what the user sees.
        Not when the sink commits records and offsets together (exactly once): its open transaction
        may hold part of the batch that failed, so it is aborted and the restart resumes from the
        last committed offset."""
        if getattr(self.sink, "transactional", False):
            return
        try:
            self._commit(offset)
        except Exception as exc:  # noqa: BLE001
            log.warning("could not store the last offset after the failure: %s", exc)

    def _commit(self, offset: dict[str, Any]) -> None:
        self.sink.flush()
        self.offsets.save(offset)
        self.source.acknowledge(offset)
        if self.observer is not None:
            self.observer.committed(offset)


def tune_garbage_collector() -> None:
    """A pipeline allocates millions of short-lived objects (rows, events) and keeps only a batch
    of them: collecting the young generation every 700 allocations (CPython's default) costs
    5-10 % of the throughput for nothing. The CLI calls this; embedders may too."""
    gc.set_threshold(50_000, 20, 100)


def install_signal_handlers(engine: Engine) -> None:
    """First Ctrl-C / SIGTERM: stop cleanly after flushing; a second one: exit at once."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if engine._stopping.is_set():
            raise KeyboardInterrupt
        log.warning("stopping after flushing what was read (press Ctrl-C again to abort)")
        engine.stop()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
