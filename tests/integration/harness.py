"""Run a real pipeline in a thread and collect what reaches the sink, for the tests."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cdc.config import CORE_OPTIONS, Config
from cdc.core.converters import JsonConverter
from cdc.core.header_converters import header_converter
from cdc.core.offsets import FileOffsetStore
from cdc.core.records import SinkRecord
from cdc.core.retry import RetryPolicy
from cdc.core.source import EncodedBatches, NativeRows, ReportsStreaming
from cdc.engine import Engine
from cdc.sources.postgres import PostgresSource

# Debezium's recorded runs (tests/fixtures/reference, the conformance fixtures) wrote headers with this.
JSON_HEADERS = "org.apache.kafka.connect.json.JsonConverter"


def parse_header(value: bytes | None) -> Any:
    """A header as a test reads it: a JSON converter's envelope parsed, any other header's text
    (Connect's default SimpleHeaderConverter: ``{"id":2}``, ``dbz``) as it is."""
    if value is None:
        return None
    return json.loads(value) if value.startswith(b'{"schema":') else value.decode()


class CollectingSink:
    """Keeps every record, in order, as parsed JSON; acknowledges on flush."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.flushed = 0
        self.lock = threading.Lock()

    def write(self, records: Sequence[SinkRecord]) -> None:
        with self.lock:
            for r in records:
                self.records.append({
                    "topic": r.topic,
                    "key": json.loads(r.key) if r.key is not None else None,
                    "value": json.loads(r.value) if r.value is not None else None,
                    "headers": {k: parse_header(v) for k, v in r.headers} if r.headers else None,
                })

    def flush(self) -> None:
        with self.lock:
            self.flushed = len(self.records)

    def close(self) -> None:
        pass

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.records)


class Pipeline:
    def __init__(self, props: dict[str, Any], offsets: Path, sink: CollectingSink | None = None,
                 source_cls: Callable[[Config], Any] = PostgresSource) -> None:
        base = {"topic.prefix": "dbz", "slot.name": "cdc_test", "publication.name": "cdc_test_pub",
                "offset.flush.interval.ms": "100", "status.update.interval.ms": "500"}
        props = {**base, **{k: v for k, v in props.items() if k != "dsn"}}
        self.config = Config(props).declare(CORE_OPTIONS)
        self.source = source_cls(self.config)
        if isinstance(self.source, NativeRows):  # as cdc.pipeline.build does for the JSON converter
            self.source.native_rows = bool(self.config.get("native.rows"))
            if isinstance(self.source, EncodedBatches):
                self.source.encoded_batches = self.source.native_rows
        self.sink = sink or CollectingSink()
        converter = JsonConverter(self.config.get("value.converter.schemas.enable"),
                                  headers=header_converter(self.config))
        retry = RetryPolicy.from_config(self.config) if "errors.max.retries" in self.config.options else None
        self.engine = Engine(self.source, self.sink, converter, FileOffsetStore(offsets, "test"), flush_interval_s=0.1,
                             retry=retry)  # as cdc.pipeline.build
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.engine.run()
        except BaseException as exc:  # noqa: BLE001 - surfaced to the test
            self.error = exc

    def __enter__(self) -> Pipeline:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.engine.stop()
        self.thread.join(30)
        assert not self.thread.is_alive(), "pipeline did not stop"

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 30) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            records = self.sink.snapshot()
            if predicate(records):
                return records
            time.sleep(0.05)
        raise AssertionError(f"timed out; got {len(self.sink.snapshot())} records: {self.sink.snapshot()[-5:]}")

    def wait_count(self, n: int, topic: str | None = None, timeout: float = 30) -> list[dict[str, Any]]:
        def enough(records: list[dict[str, Any]]) -> bool:
            return len([r for r in records if topic is None or r["topic"] == topic]) >= n
        records = self.wait_for(enough, timeout)
        return [r for r in records if topic is None or r["topic"] == topic]

    def wait_ready(self, timeout: float = 30) -> None:
        """Until the source is streaming (its replication stream is open)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            if isinstance(self.source, ReportsStreaming) and self.source.streaming:
                return
            time.sleep(0.05)
        raise AssertionError("the source did not start streaming")


def apply_in_order(records: list[dict[str, Any]], topic: str) -> dict[int, Any]:
    """The table rebuilt by applying the events in order. Also checks that no snapshot row follows a
    newer streamed change of its key: the writers only raise ``v`` and never bring a deleted key back,
    so a read after a delete, or with a lower ``v`` than a change before it, would be stale."""
    state: dict[int, Any] = {}
    streamed: dict[int, tuple[str, int]] = {}
    for r in records:
        if r["topic"] != topic or r["value"] is None:
            continue
        p = r["value"]["payload"]
        row = p["after"] or p["before"]
        if p["op"] == "r":
            seen = streamed.get(row["id"])
            assert seen is None or (seen[0] != "d" and seen[1] <= row["v"]), (row, seen)
        else:
            streamed[row["id"]] = (p["op"], row["v"])
        if p["op"] == "d":
            state.pop(row["id"], None)
        else:
            state[row["id"]] = row["v"]
    return state
