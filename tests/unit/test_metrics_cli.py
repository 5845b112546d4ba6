"""The command line's side of operating a pipeline: JSON log lines, metrics and guard flags, and the
split of those options from what the pipeline is built from."""
from __future__ import annotations

import json
import logging

import pytest

from cdc import cli
from cdc.core.errors import ConfigError
from cdc.metrics import Monitoring, options_for, split_properties


def test_json_log_lines() -> None:
    formatter = cli.JsonFormatter("shop")
    record = logging.LogRecord("cdc.engine", logging.WARNING, __file__, 1, "slot %s is behind by %d bytes",
                               ("s1", 42), None)
    entry = json.loads(formatter.format(record))
    assert entry["level"] == "WARNING" and entry["logger"] == "cdc.engine" and entry["pipeline"] == "shop"
    assert entry["message"] == "slot s1 is behind by 42 bytes" and entry["time"].endswith("+00:00")
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    assert "ValueError: boom" in json.loads(formatter.format(record))["exception"]


def test_flags_and_split() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["postgres", "--metrics-port", "9404", "--slot-max-retained-wal-bytes", "1000",
                              "--slot-retained-wal-action", "stop", "--topic-prefix", "x"])
    props = {k[5:]: v for k, v in vars(args).items() if k.startswith("prop:") and v is not None}
    assert props["metrics.port"] == "9404" and props["slot.retained.wal.action"] == "stop"
    ours, rest = split_properties(props, "postgres")
    assert set(ours) == {"metrics.port", "slot.max.retained.wal.bytes", "slot.retained.wal.action"}
    assert rest == {"topic.prefix": "x"}
    assert "slot.max.retained.wal.bytes" not in {o.name for o in options_for("mysql")}
    assert parser.parse_args(["--log-format", "json", "status", "c.properties", "--json"]).json is True


def test_monitoring_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="metrics.port"):
        Monitoring.config({"metrics.port": "70000"}, "postgres")
    with pytest.raises(ConfigError, match="slot.retained.wal.action"):
        Monitoring.config({"slot.retained.wal.action": "panic"}, "postgres")
    assert Monitoring.attach(object(), Monitoring.config({}, "postgres"), "postgres") is None  # off: nothing runs
