"""Rows the codec encoded (cdc/core/encoded_rows.py) become the records the same events give one by
one: through RecordPieces.records (any sink) and the file sink's write_encoded, with and without
schemas, keyed and keyless, natively spliced and in Python."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc.config import Config
from cdc.core import encoded_rows
from cdc.core.converters import JsonConverter
from cdc.core.encoded_rows import record_pieces, template
from cdc.core.errors import SinkError
from cdc.core.records import Batch, ChangeEvent, EncodedRows
from cdc.engine import Engine
from cdc.sinks.files import FileSink
from tests.unit.test_emitter import envelope

ROWS = [{"id": 1, "name": "a"}, {"id": -7, "name": 'quote " and \\ and żółw'}, {"id": 3, "name": None}]
SOURCE = {"version": "3", "connector": "postgresql", "snapshot": "true", "table": "t"}
TS = (1_700_000_000_000, 1_700_000_000_000_000, 1_700_000_000_000_000_000)


def _events(keyed: bool) -> list[ChangeEvent]:
    env = envelope(keyed)
    return [env.event("r", None, row, SOURCE, ts=TS) for row in ROWS]


def _encoded(keyed: bool) -> EncodedRows:
    rows = [orjson.dumps(row) for row in ROWS]
    keys = [orjson.dumps({"id": row["id"]}) for row in ROWS] if keyed else None
    return EncodedRows(template(envelope(keyed), SOURCE, keyed=keyed, position=(), ts=TS), rows, keys)


@pytest.fixture(params=["native", "python"])
def splicing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(encoded_rows, "native_module", lambda: None)
    elif encoded_rows.native_module() is None:
        pytest.skip("cdc_native is not installed (pip install ./native)")
    return str(request.param)


@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("schemas", [True, False])
def test_records_are_those_of_the_events_one_by_one(splicing: str, keyed: bool, schemas: bool) -> None:
    converter = JsonConverter(schemas)
    pieces = record_pieces(converter, _encoded(keyed).template)
    assert pieces.records(_encoded(keyed)) == [converter.to_record(e) for e in _events(keyed)]


@pytest.mark.parametrize("keyed", [True, False])
def test_the_file_sink_writes_the_lines_write_gives(splicing: str, keyed: bool, tmp_path: Path) -> None:
    converter = JsonConverter(True)
    one_by_one = FileSink(Config({"sink.files.directory": str(tmp_path / "a")}))
    one_by_one.write([converter.to_record(e) for e in _events(keyed)])
    one_by_one.close()
    batched = FileSink(Config({"sink.files.directory": str(tmp_path / "b")}))
    batched.write([converter.to_record(_events(keyed)[0])])  # what the file's buffer holds goes first
    encoded = _encoded(keyed)
    encoded.rows, encoded.keys = encoded.rows[1:], encoded.keys[1:] if encoded.keys else None
    batched.write_encoded(record_pieces(converter, encoded.template), encoded)
    batched.close()
    assert (tmp_path / "b" / "dbz.public.t.jsonl").read_bytes() == (tmp_path / "a" / "dbz.public.t.jsonl").read_bytes()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_a_sink_error_that_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "dbz.public.t.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    sink = FileSink(Config({"sink.files.directory": str(tmp_path)}))
    encoded = _encoded(True)
    with pytest.raises(SinkError) as caught:
        sink.write_encoded(record_pieces(JsonConverter(True), encoded.template), encoded)
    assert str(tmp_path) in str(caught.value) and "free space" in str(caught.value)


class _Source:
    def stream(self, offset: Any) -> Any:
        yield Batch([], encoded=_encoded(True))

    def acknowledge(self, offset: Any) -> None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


class _Store:
    def load(self) -> None:
        return None

    def save(self, offset: Any) -> None: ...

    def close(self) -> None: ...


class _Transforms:
    def apply_all(self, events: list[ChangeEvent]) -> list[ChangeEvent]:
        return events


def test_encoded_rows_are_refused_when_transforms_would_not_see_them(tmp_path: Path) -> None:
    sink = FileSink(Config({"sink.files.directory": str(tmp_path)}))
    engine = Engine(_Source(), sink, JsonConverter(True), _Store(), transforms=_Transforms())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="transforms"):
        engine.run()
