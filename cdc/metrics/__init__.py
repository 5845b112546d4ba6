"""Operating a pipeline: Prometheus metrics with Debezium's names, the source's own lag, guards, and a
status page, all on ``metrics.port`` (0, the default: none of it runs, and the engine pays nothing).

    registry.py   every metric, and what the engine calls per batch and per stored offset
    lag.py        the monitor that polls the source's lag watch (cdc.core.source.ReportsLag: each
                  database's in its package) on a timer, on a connection of its own; the guard rule
    findings.py   what is wrong, with the fix (shared with ``cdc status``)
    server.py     /metrics and the status page (page.py, charts from history.py)

:class:`Monitoring` puts them together around an :class:`~cdc.engine.Engine`.
"""
from __future__ import annotations

import logging
from typing import Any

from cdc.config import Config, Option, positive
from cdc.core.source import ExplainsErrors, Guarded, NamesItsMetrics, ReportsLag
from cdc.metrics.registry import ErrorLog, PipelineMetrics

log = logging.getLogger(__name__)


def _port(value: int) -> str | None:
    return None if 0 <= value < 65536 else "must be a TCP port (1-65535), or 0 for no metrics server"


METRICS_OPTIONS: tuple[Option, ...] = (
    Option("metrics.port", int, 0, "Port of the HTTP server with Prometheus metrics (/metrics) and the status page "
           "(/); 0 turns metrics off.", validator=_port),
    Option("metrics.host", str, "127.0.0.1", "Address the metrics server listens on (0.0.0.0: every interface)."),
    Option("metrics.lag.interval.ms", int, 10000, "How often the source's own lag (replication slot, binlog) is "
           "queried, on a connection of its own.", validator=positive),
    Option("metrics.sample.interval.ms", int, 10000, "Interval of the status page's chart samples (the last hour "
           "is kept).", validator=positive),
)


def options_for(source: str | None = None) -> tuple[Option, ...]:
    """The options this package reads for a pipeline (cdc.cli declares them as flags), whatever its source:
    a source's own guards are among its own options (cdc.core.source.Guarded)."""
    return METRICS_OPTIONS


def split_properties(properties: dict[str, Any], source: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ours, the rest): the pipeline is built from the rest, so it does not warn about ours."""
    names = {o.name for o in options_for(source)}
    ours = {k: v for k, v in properties.items() if k in names}
    return ours, {k: v for k, v in properties.items() if k not in names}


class Monitoring:
    """Metrics, the source lag monitor, guards and the HTTP server of one running engine. What the
    source offers beyond its contract is asked of it through cdc.core.source's protocols: its lag
    watch (ReportsLag), guards (Guarded), an explainer of its errors (ExplainsErrors), the label of
    its Debezium metrics (NamesItsMetrics); a source without them gets the pipeline's own metrics."""

    def __init__(self, engine: Any, config: Config, source: str, *, port: int | None = None) -> None:
        """``config``: the pipeline's properties with ours declared; ``source``: the source's name;
        ``port`` overrides metrics.port (0 there: any free port, for tests)."""
        from cdc.metrics.lag import Monitor
        from cdc.metrics.server import MetricsServer

        config.declare(options_for(source))
        self.port: int | None = config.get("metrics.port") if port is None else port
        serve = port is not None or bool(self.port)
        sample_s = config.get("metrics.sample.interval.ms") / 1000
        name = str(config.get("name") or "cdc")
        plugin = engine.source.metrics_plugin if isinstance(engine.source, NamesItsMetrics) else source
        self.metrics = PipelineMetrics(plugin=plugin, server=str(config.get("topic.prefix") or name),
                                       source=engine.source, history_interval_s=sample_s)
        engine.observer = self.metrics
        self._handler = ErrorLog(self.metrics)
        logging.getLogger("cdc").addHandler(self._handler)
        if isinstance(engine.source, ExplainsErrors):
            self.metrics.explain = engine.source.explain_error
        watch = engine.source.lag_watch(self.metrics) if isinstance(engine.source, ReportsLag) else None
        self.server = MetricsServer(self.metrics, config.get("metrics.host"), self.port or 0, name).start() \
            if serve else None
        if self.server is not None:
            self.port = self.server.port
        self.monitor = Monitor(self.metrics, watch, engine.fail, lag_interval_s=config.get("metrics.lag.interval.ms")
                               / 1000, sample_interval_s=sample_s if serve else None).start()

    @staticmethod
    def config(properties: dict[str, Any], source: str | None = None) -> Config:
        """The pipeline's properties with ours declared and checked (the pipeline checks the rest)."""
        config = Config(dict(properties)).declare(options_for(source))
        config.validate(("",))
        return config

    @classmethod
    def attach(cls, engine: Any, config: Config, source: str) -> Monitoring | None:
        """Monitoring when the config asks for it (metrics.port, or a guard of the source), else None:
        nothing runs."""
        wanted = config.get("metrics.port") or (isinstance(engine.source, Guarded) and engine.source.guards_on())
        return cls(engine, config, source) if wanted else None

    def close(self) -> None:
        self.metrics.closed = True
        self.monitor.close()
        if self.server is not None:
            self.server.close()
        logging.getLogger("cdc").removeHandler(self._handler)


__all__ = ["METRICS_OPTIONS", "Monitoring", "PipelineMetrics", "options_for", "split_properties"]
