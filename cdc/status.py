"""``cdc status`` and ``cdc slots``: where a pipeline stands at its source, from outside it.

status connects with the pipeline's config (a connection of its own; the pipeline may run or not),
reads the stored offset and asks the source where its log stands against it and what is wrong
(cdc.core.source.ReportsStatus: each database's code is in its package), each finding with its fix.
Exit status: 0 nothing wrong, 1 a warning, 2 an error.

slots lists the replication slots of a source that has them (HasSlots: PostgreSQL), and drops one on
request (never an active one).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cdc import registry
from cdc.config import CORE_OPTIONS, Config
from cdc.core.errors import ConfigError, SourceError
from cdc.core.source import HasSlots, ReportsStatus, declared_options, offers
from cdc.metrics import options_for
from cdc.metrics.findings import ERROR, Finding, duration, exit_code, size

STATUS_WORDS = {0: "OK", 1: "WARNING", 2: "ERROR"}


@dataclass
class Report:
    pipeline: str
    source: str
    where: str
    stored_offset: dict[str, Any] | None
    position: str | None = None  # the source's current position, in its own notation
    lag_bytes: float | None = None
    lag_seconds: float | None = None
    details: dict[str, Any] = field(default_factory=dict)  # what the text shows of the slot or binlog state
    state: dict[str, Any] = field(default_factory=dict)  # that state in full (json)
    stored: str | None = None  # the stored offset in the source's notation
    findings: list[Finding] = field(default_factory=list)

    @property
    def code(self) -> int:
        return exit_code(self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {"status": STATUS_WORDS[self.code].lower(), "pipeline": self.pipeline, "source": self.source,
                "where": self.where, "stored_offset": self.stored_offset, "position": self.position,
                "lag_bytes": self.lag_bytes, "lag_seconds": self.lag_seconds, "details": self.details,
                "state": self.state, "findings": [f.as_dict() for f in self.findings]}

    def text(self) -> str:
        lines = [f"pipeline        {self.pipeline} ({self.source}, {self.where})",
                 f"stored offset   {self.stored or _offset(self.stored_offset)}",
                 f"source position {self.position or '?'}",
                 "lag             " + (f"{size(self.lag_bytes)}" if self.lag_bytes is not None else "?")
                 + (f", {duration(self.lag_seconds)} since the last delivered change" if self.lag_seconds else "")]
        for name, value in self.details.items():
            lines.append(f"{name:<15} {value}")
        lines.append(f"status          {STATUS_WORDS[self.code]}")
        for finding in self.findings:
            lines.append(f"  {finding.level}: {finding.message}")
            if finding.fix:
                lines.append(f"    fix: {finding.fix}")
        return "\n".join(lines)


def _offset(offset: dict[str, Any] | None) -> str:
    if offset is None:
        return "none (the pipeline has stored nothing yet)"
    return ", ".join(f"{k}={v}" for k, v in offset.items() if not isinstance(v, (dict, list))) or "{}"


def pipeline_config(source: str, properties: dict[str, Any]) -> Config:
    """The pipeline's config with every option it may hold declared (and checked)."""
    source_cls = registry.load(registry.SOURCES, source)
    config = Config(dict(properties)).declare(CORE_OPTIONS).declare(declared_options(source_cls))
    config.declare(options_for(source))
    config.validate(("",))  # unknown names were the pipeline's business; only values are checked here
    return config


def stored_offset(config: Config) -> dict[str, Any] | None:
    from cdc.core.offsets import without_writer
    from cdc.pipeline import offset_store

    store = offset_store(config)
    try:
        return without_writer(store.load())
    finally:
        store.close()


def status(source: str, properties: dict[str, Any]) -> Report:
    """The pipeline's stored offset against its source, as the source reports it (ReportsStatus)."""
    config = pipeline_config(source, properties)
    offset = stored_offset(config)
    name = str(config.get("name"))
    source_cls = registry.load(registry.SOURCES, source)
    if not offers(source_cls, ReportsStatus):
        return Report(name, source, "?", offset, details={
            "note": f"the {source} source does not report where it stands (cdc.core.source.ReportsStatus)"})
    lag = source_cls.status_report(config, offset)
    return Report(name, source, lag.where, offset, lag.position, lag.lag_bytes, lag.lag_seconds, lag.details,
                  lag.state, lag.stored, lag.findings)


def print_status(source: str, properties: dict[str, Any], as_json: bool) -> int:
    try:
        report = status(source, properties)
    except (SourceError, ConfigError) as exc:
        # cannot even look: that is an error of the pipeline too (exit 2), said the same way
        finding = Finding(ERROR, "unreachable", exc.message, exc.fix)
        report = Report(str(properties.get("name") or "cdc"), source, "?", None, findings=[finding])
    print(json.dumps(report.as_dict(), indent=2, default=str) if as_json else report.text())
    return report.code


# ---- slots ----------------------------------------------------------------------------------------

def slots(source: str, properties: dict[str, Any], drop: str | None = None, as_json: bool = False) -> int:
    """``cdc slots``: the replication slots of the source's server (HasSlots), or drop one."""
    source_cls = registry.load(registry.SOURCES, source)
    if not offers(source_cls, HasSlots):
        having = ", ".join(slot_sources()) or "none installed"
        raise ConfigError(f"the {source} source has no replication slots",
                          fix=f"give cdc slots a pipeline whose source has them ({having})")
    config = pipeline_config(source, properties)
    print(source_cls.drop_slot(config, drop) if drop is not None else source_cls.slot_report(config, as_json))
    return 0


def slot_sources() -> list[str]:
    """The installed sources with replication slots (a config that names no source means theirs)."""
    names = []
    for name, entry in sorted(registry.available(registry.SOURCES).items()):
        try:
            if offers(entry.load(), HasSlots):
                names.append(name)
        except Exception:  # noqa: BLE001 - a plugin that cannot load has no slots to list
            continue
    return names
