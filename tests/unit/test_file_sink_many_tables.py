"""The files sink with thousands of topics: a flush syncs only what was written since the last one, and
idle files are closed past sink.files.max.open (opened again when their topic has records)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cdc.config import Config
from cdc.core.records import SinkRecord
from cdc.sinks import files as files_module
from cdc.sinks.files import FileSink


def test_flush_syncs_only_the_files_written_since_the_last_one(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(files_module.os, "fsync", lambda fd: synced.append(fd))
    sink = FileSink(Config({"sink.files.directory": str(tmp_path), "sink.files.max.open": "100"}))
    sink.write([SinkRecord(f"t{i}", b"1", b"2") for i in range(600)])
    sink.flush()
    assert len(synced) == 600 and len(sink._files) <= 100
    synced.clear()
    for _ in range(3):  # one row a transaction on one table: one file synced, however many are open
        sink.write([SinkRecord("t7", b"1", b"3")])
        sink.flush()
    assert len(synced) == 3
    sink.write([SinkRecord("t1", b"1", b"4")])  # a topic whose file was closed as idle: opened again
    sink.close()
    assert (tmp_path / "t7.jsonl").read_text().count("\n") == 4
    assert (tmp_path / "t1.jsonl").read_text().splitlines()[-1].endswith('"value":4,"headers":null}')
    assert all((tmp_path / f"t{i}.jsonl").read_text().count("\n") >= 1 for i in range(600))
