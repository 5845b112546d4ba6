"""Records as JSON lines on standard output, for a look or a shell pipe."""
from __future__ import annotations

import sys
from collections.abc import Sequence

from cdc.config import Config, Option
from cdc.core.header_converters import header_converter
from cdc.core.records import SinkRecord
from cdc.sinks.files import record_line


class StdoutSink:
    name = "stdout"
    options: tuple[Option, ...] = ()

    def __init__(self, config: Config | None = None) -> None:
        self.out = sys.stdout.buffer
        self.json_headers = header_converter(config or Config({})).writes_json

    def write(self, records: Sequence[SinkRecord]) -> None:
        for record in records:
            self.out.write(record_line(record, json_headers=self.json_headers))

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        self.out.flush()
