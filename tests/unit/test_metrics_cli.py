"""The command line's side of operating a pipeline: JSON log lines, metrics and guard flags, and the
split of those options from what the pipeline is built from."""
from __future__ import annotations

import json
import logging
from typing import Any

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
    """The metrics' flags are the monitoring's; the slot guards' are the PostgreSQL source's own options
    (cdc.core.source.Guarded), declared and checked with it."""
    parser = cli.build_parser()
    args = parser.parse_args(["postgres", "--metrics-port", "9404", "--slot-max-retained-wal-bytes", "1000",
                              "--slot-retained-wal-action", "stop", "--topic-prefix", "x"])
    props = {k[5:]: v for k, v in vars(args).items() if k.startswith("prop:") and v is not None}
    assert props["metrics.port"] == "9404" and props["slot.retained.wal.action"] == "stop"
    ours, rest = split_properties(props, "postgres")
    assert set(ours) == {"metrics.port"}
    assert rest == {"slot.max.retained.wal.bytes": "1000", "slot.retained.wal.action": "stop", "topic.prefix": "x"}
    assert "slot.max.retained.wal.bytes" not in {o.name for o in options_for("mysql")}
    with pytest.raises(SystemExit):  # not a flag of the MySQL source
        parser.parse_args(["mysql", "--slot-max-retained-wal-bytes", "1000"])
    assert parser.parse_args(["--log-format", "json", "status", "c.properties", "--json"]).json is True


def test_status_and_slots_take_the_pipelines_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipeline started with flags is inspected with the same flags: cdc status <source> <flags>."""
    from cdc import status

    seen: dict[str, Any] = {}

    def report(source: str, props: dict[str, Any], as_json: bool) -> int:
        seen.update(source=source, props=props, json=as_json)
        return 0

    def slots(source: str, props: dict[str, Any], drop: str | None, as_json: bool) -> int:
        seen.update(source=source, props=props, drop=drop)
        return 0

    monkeypatch.setattr(status, "print_status", report)
    monkeypatch.setattr(status, "slots", slots)
    flags = ["--database-hostname", "db.example", "--database-port", "5433", "--slot-name", "shop",
             "--publication-name", "shop", "--topic-prefix", "shop", "--offsets", "out/offsets.json",
             "--slot-max-retained-wal-bytes", "1000"]
    assert cli.main(["status", "postgres", *flags, "--json"]) == 0
    assert seen["source"] == "postgres" and seen["json"] is True
    assert seen["props"] == {"database.hostname": "db.example", "database.port": "5433", "slot.name": "shop",
                             "publication.name": "shop", "topic.prefix": "shop",
                             "offset.storage.file.filename": "out/offsets.json", "slot.max.retained.wal.bytes": "1000"}
    assert cli.main(["slots", "postgres", *flags, "--drop", "old"]) == 0
    assert seen["source"] == "postgres" and seen["drop"] == "old" and seen["props"]["slot.name"] == "shop"
    assert cli.main(["status", "mysql", "--database-hostname", "m", "--database-include-list", "shop"]) == 0
    assert seen["source"] == "mysql" and seen["props"] == {"database.hostname": "m", "database.include.list": "shop"}


def test_status_of_a_config_file_and_of_flags_with_a_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from cdc import status

    seen: dict[str, Any] = {}
    monkeypatch.setattr(status, "print_status",
                        lambda source, props, as_json: seen.update(source=source, props=props) or 0)
    config = tmp_path / "shop.properties"
    config.write_text("source=mysql\ndatabase.hostname=m\n")
    assert cli.main(["status", str(config), "--set", "name=shop"]) == 0
    assert seen == {"source": "mysql", "props": {"database.hostname": "m", "name": "shop"}}
    assert cli.main(["status", "postgres", "--config", str(config), "--slot-name", "s"]) == 0
    assert seen["source"] == "postgres" and seen["props"]["slot.name"] == "s"  # the command line names the source
    assert cli.main(["status", str(tmp_path / "missing.properties"), "--config", str(config)]) == 1
    assert "--config goes with one" in capsys.readouterr().err


def test_slots_of_a_source_without_them_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["slots", "mysql", "--database-hostname", "m"]) == 1
    err = capsys.readouterr().err
    assert "the mysql source has no replication slots" in err and "postgres" in err


def test_monitoring_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="metrics.port"):
        Monitoring.config({"metrics.port": "70000"}, "postgres")

    class Engine:  # a source with nothing beyond the contract: no guard asks for monitoring
        source = object()

    assert Monitoring.attach(Engine(), Monitoring.config({}, "postgres"), "postgres") is None  # off: nothing runs


def test_guard_options_are_checked_by_the_source(tmp_path: Any) -> None:
    from cdc.pipeline import build

    props = {"slot.retained.wal.action": "panic", "topic.prefix": "x", "offset.storage.file.filename":
             str(tmp_path / "o.json"), "sink.files.directory": str(tmp_path)}
    with pytest.raises(ConfigError, match="slot.retained.wal.action"):
        build("postgres", props)
    engine = build("postgres", {**props, "slot.retained.wal.action": "stop", "slot.max.retained.wal.bytes": "1000",
                                "database.hostname": "127.0.0.1", "database.port": "9"})  # nothing listens
    source = engine.source
    from cdc.core.source import Guarded

    assert isinstance(source, Guarded) and source.guards_on()
    config = Monitoring.config({}, "postgres")
    assert not config.get("metrics.port")
    attached = Monitoring.attach(engine, config, "postgres")  # the guard alone runs the monitor
    assert attached is not None
    attached.close()
