"""What a source offers beyond its contract is declared in cdc.core.source as protocols and asked with
isinstance: each built-in source offers what it implements, a bare plugin offers nothing and still runs,
and the code that uses capabilities neither probes sources by attribute name nor switches on their names."""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from cdc.config import CORE_OPTIONS, Config, Option
from cdc.core import source as capabilities
from cdc.core.records import Batch
from cdc.core.source import offers
from tests.conftest import ROOT

CLASS_LEVEL = ("Replayable", "ChecksReplay", "SnapshotsInParallel", "ReportsStatus", "HasSlots", "NamesItsMetrics",
               "MakesCloudEvents")
INSTANCE_LEVEL = ("ReportsStreaming", "NamesItsConnector", "TakesSignals", "DescribesTables", "SnapshotsIncrementally",
                  "NativeRows", "EncodedBatches", "ReportsLag", "Guarded", "ExplainsErrors")
OFFERED = {
    "postgres": {"Replayable", "SnapshotsInParallel", "ReportsStatus", "HasSlots", "NamesItsMetrics",
                 "MakesCloudEvents", "ReportsStreaming", "NamesItsConnector", "TakesSignals", "DescribesTables",
                 "SnapshotsIncrementally", "NativeRows", "EncodedBatches", "ReportsLag", "Guarded", "ExplainsErrors"},
    "mysql": {"Replayable", "SnapshotsInParallel", "ReportsStatus", "NamesItsMetrics", "MakesCloudEvents",
              "ReportsStreaming", "NamesItsConnector", "TakesSignals", "DescribesTables", "SnapshotsIncrementally",
              "NativeRows", "EncodedBatches", "ReportsLag"},
    "sqlserver": {"Replayable", "ChecksReplay", "SnapshotsInParallel", "ReportsStatus", "NamesItsMetrics",
                  "MakesCloudEvents", "NamesItsConnector", "TakesSignals", "DescribesTables", "SnapshotsIncrementally",
                  "ReportsLag"},
}


def _source(name: str, tmp_path: Path) -> Any:
    from cdc import registry

    props = {"topic.prefix": "x", "database.names": "testDB",
             "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")}
    return registry.load(registry.SOURCES, name)(Config(props).declare(CORE_OPTIONS))


@pytest.mark.parametrize("name", sorted(OFFERED))
def test_each_builtin_source_offers_what_it_implements(name: str, tmp_path: Path) -> None:
    source = _source(name, tmp_path)
    try:
        offered = {c for c in CLASS_LEVEL if offers(type(source), getattr(capabilities, c))}
        offered |= {c for c in INSTANCE_LEVEL if isinstance(source, getattr(capabilities, c))}
    finally:
        source.close()
    assert offered == OFFERED[name]


class Bare:
    """A plugin with the contract and nothing more."""

    name: ClassVar[str] = "bare"
    title: ClassVar[str] = "bare"
    options: ClassVar[tuple[Option, ...]] = ()
    connector_classes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Config) -> None:
        self.stopped = False

    def stream(self, offset: dict[str, Any] | None) -> Iterator[Batch]:
        while not self.stopped:
            yield Batch(caught_up=True)

    def acknowledge(self, offset: dict[str, Any]) -> None:
        pass

    def stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        pass


def test_a_bare_plugin_offers_nothing_and_gets_the_pipelines_own_metrics() -> None:
    from cdc.metrics import Monitoring
    from cdc.metrics.page import live_lag

    assert isinstance(Bare(Config({})), capabilities.Source)
    assert not any(offers(Bare, getattr(capabilities, c)) for c in CLASS_LEVEL)
    assert not any(isinstance(Bare(Config({})), getattr(capabilities, c)) for c in INSTANCE_LEVEL)

    class Engine:
        source = Bare(Config({}))
        observer: Any = None

        def fail(self, error: BaseException) -> None:
            raise AssertionError(error)

    monitoring = Monitoring(Engine(), Monitoring.config({"topic.prefix": "x"}), "bare", port=0)
    try:
        assert monitoring.monitor.watch is None and monitoring.metrics.plugin == "bare"
        assert monitoring.metrics.connected() == 1.0  # a source that does not say is taken as reading its log
        assert live_lag(monitoring.metrics) == "-"
    finally:
        monitoring.close()


def test_a_plugin_that_predates_declared_options_is_tolerated() -> None:
    class Old:
        pass

    assert capabilities.declared_options(Old) == ()
    assert capabilities.declared_options(Bare) == ()



def test_cloudevents_takes_its_makers_from_the_source() -> None:
    """A source that does not say what CloudEvents' ids are made of is refused before the pipeline starts;
    one that does gets them from its own declaration, whatever its connector's name."""
    from cdc.converters import CLOUDEVENTS, converter_from_config
    from cdc.core.errors import ConfigError

    with pytest.raises(ConfigError, match="MakesCloudEvents"):
        converter_from_config(Config({"value.converter": CLOUDEVENTS}))
    converter_from_config(Config({"key.converter": CLOUDEVENTS}))  # keys are written as null: no maker needed
    makers = {"mydb": capabilities.CloudEventsMaker(("name", "pos"))}
    serializer = converter_from_config(Config({"value.converter": CLOUDEVENTS}), cloud_events=makers).value
    assert serializer.makers == makers

USERS = ["cdc/spark/datasource.py", "cdc/pipeline.py", "cdc/status.py", "cdc/cli.py", "cdc/converters/__init__.py",
         "cdc/converters/cloudevents.py",
         *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "cdc" / "metrics").glob("*.py")))]
# the only attribute look-ups left there, neither of them on a source
ALLOWED = {("cdc/pipeline.py", 'getattr(store, "topic", None)'), ("cdc/metrics/page.py", "getattr(s, attribute)")}


@pytest.mark.parametrize("path", USERS)
def test_no_probing_of_sources_and_no_switch_on_their_names(path: str) -> None:
    text = (ROOT / path).read_text()
    probes = {(path, m.group(0)) for m in re.finditer(r"\b(?:has|get)attr\([^)]*\)", text)} - ALLOWED
    assert probes == set()
    switches = re.findall(r"""(?:==|!=|\bin)\s*\(?\s*["'](?:postgres|mysql|sqlserver|mariadb)["']""", text)
    assert switches == []
