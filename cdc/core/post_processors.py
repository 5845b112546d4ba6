"""Debezium's post processors (``post.processors``): steps every change event goes through after the source
built it and before Kafka Connect's transforms.

    post.processors=reselector
    reselector.type=io.debezium.processors.reselect.ReselectColumnsPostProcessor
    reselector.reselect.columns.include.list=inventory.docs:body

The one Debezium ships, ``ReselectColumnsPostProcessor``, reads columns again from the table, by the row's
key, where the event has the unavailable-value placeholder (an unchanged TOASTed value PostgreSQL did not
send) or a null: ``reselect.unavailable.values`` and ``reselect.null.values`` (both on by default),
``reselect.columns.include.list`` / ``exclude.list`` (``schema.table:column`` regular expressions),
``reselect.error.handling.mode`` (``warn``, Debezium's default: the event goes out as it was; ``fail``).
What it reads is the row as it is when the event is processed, not as the transaction left it, as in
Debezium. A source offers it through :class:`Reselects`; the values read go through the same converters and
column options (masking, names) as the source's own.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cdc.core.envelope import OP_CREATE, OP_UPDATE
from cdc.core.errors import CdcError, ConfigError, SourceError
from cdc.core.filters import REGEX_FIX, compile_pattern
from cdc.core.records import ChangeEvent
from cdc.core.unavailable import mark_available

log = logging.getLogger(__name__)

RESELECT = "io.debezium.processors.reselect.ReselectColumnsPostProcessor"


@dataclass(frozen=True)
class TableLookup:
    """What a source tells the reselector about one table: its columns as events name them, the placeholder
    each column's unavailable values have in events, and how to read columns of one row again."""

    fields: Mapping[str, str]  # column -> the field events carry it in
    unavailable: Mapping[str, Any]  # column -> its placeholder value in events
    key_columns: Sequence[str]
    read: Callable[[Mapping[str, Any], Sequence[str]], Mapping[str, Any] | None]  # (key by column, columns)
    # -> the columns' values as events carry them, by column; None when the row is gone


@runtime_checkable
class Reselects(Protocol):
    """A source whose tables can be read again by key (post.processors=reselector)."""

    def reselect_lookup(self, table_id: str) -> TableLookup | None: ...


class PostProcessor(Protocol):
    def __call__(self, events: list[ChangeEvent]) -> list[ChangeEvent]: ...


def names(properties: Mapping[str, Any]) -> list[str]:
    """The post processors a configuration names (``post.processors``)."""
    return [n.strip() for n in str(properties.get("post.processors") or "").split(",") if n.strip()]


def prefixes(properties: Mapping[str, Any]) -> tuple[str, ...]:
    """Each named post processor's own properties (``<name>.``), which cdc passes to it."""
    return tuple(f"{name}." for name in names(properties))


def from_config(properties: Mapping[str, Any], source: Any) -> list[PostProcessor]:
    """The post processors a configuration names, in its order; a ConfigError for one cdc has not."""
    out: list[PostProcessor] = []
    for name in names(properties):
        kind = str(properties.get(f"{name}.type") or "").strip()
        if kind != RESELECT:
            raise ConfigError(f"post.processors names {name!r}, whose {name}.type is {kind or 'not set'}: cdc has "
                              f"Debezium's {RESELECT} only", fix=f"set {name}.type={RESELECT}, or remove {name!r} "
                                                                   "from post.processors")
        if not isinstance(source, Reselects):
            raise ConfigError(f"the {type(source).__name__} source cannot read its tables again by key, which "
                              f"post processor {name!r} ({RESELECT}) needs",
                              fix=f"remove {name!r} from post.processors")
        own = {k[len(name) + 1:]: v for k, v in properties.items() if k.startswith(f"{name}.")}
        out.append(ReselectColumns.from_properties(own, source))
    return out


def _flag(properties: Mapping[str, Any], name: str, default: bool) -> bool:
    raw = properties.get(name)
    if raw is None or raw == "":
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"reselect option {name}={raw!r}: expected true or false", fix="set it to true or false")
    return text == "true"


def _patterns(properties: Mapping[str, Any], name: str) -> list[re.Pattern[str]]:
    try:
        return [compile_pattern(p.strip()) for p in str(properties.get(name) or "").split(",") if p.strip()]
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}", fix=REGEX_FIX) from None


class ReselectColumns:
    """Debezium's ReselectColumnsPostProcessor."""

    def __init__(self, source: Reselects, *, include: Iterable[re.Pattern[str]] = (),
                 exclude: Iterable[re.Pattern[str]] = (), unavailable: bool = True, nulls: bool = True,
                 fail: bool = False) -> None:
        self.source = source
        self.include, self.exclude = list(include), list(exclude)
        self.unavailable, self.nulls, self.fail = unavailable, nulls, fail
        self._lookups: dict[str, TableLookup | None] = {}

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any], source: Reselects) -> ReselectColumns:
        mode = str(properties.get("reselect.error.handling.mode") or "warn").strip().lower()
        if mode not in ("warn", "fail"):
            raise ConfigError(f"reselect.error.handling.mode={mode!r} is not one of warn, fail",
                              fix="set it to warn (Debezium's default) or fail")
        include = _patterns(properties, "reselect.columns.include.list")
        exclude = _patterns(properties, "reselect.columns.exclude.list")
        if include and exclude:
            raise ConfigError("reselect.columns.include.list and reselect.columns.exclude.list are both set",
                              fix="keep one of them")
        return cls(source, include=include, exclude=exclude,
                   unavailable=_flag(properties, "reselect.unavailable.values", True),
                   nulls=_flag(properties, "reselect.null.values", True), fail=mode == "fail")

    def __call__(self, events: list[ChangeEvent]) -> list[ChangeEvent]:
        for event in events:
            value = event.value
            if value is None or event.table_id == "" or value.get("op") not in (OP_CREATE, OP_UPDATE):
                continue
            after = value.get("after")
            if after:
                self._reselect(event, after)
        return events

    def _selected(self, table_id: str, column: str) -> bool:
        name = f"{table_id}:{column}"
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)

    def _lookup(self, table_id: str) -> TableLookup | None:
        if table_id not in self._lookups:
            self._lookups[table_id] = self.source.reselect_lookup(table_id)
        return self._lookups[table_id]

    def _reselect(self, event: ChangeEvent, after: dict[str, Any]) -> None:
        lookup = self._lookup(event.table_id)
        if lookup is None:
            return
        wanted = [c for c, f in lookup.fields.items() if f in after and self._selected(event.table_id, c)
                  and self._wanted(after[f], lookup.unavailable.get(c))]
        if not wanted:
            return
        key = {c: after.get(lookup.fields[c]) for c in lookup.key_columns}
        try:
            found = lookup.read(key, wanted)
        except CdcError as exc:
            self._failed(f"reading {', '.join(wanted)} of {event.table_id} again for key {key} failed: {exc.message}")
            return
        if found is None:
            self._failed(f"no row of {event.table_id} has key {key} any more: {', '.join(wanted)} not read again")
            return
        for column in wanted:
            after[lookup.fields[column]] = found[column]
        mark_available(after, [lookup.fields[c] for c in wanted])  # real values now (cdc.core.unavailable)

    def _wanted(self, value: Any, placeholder: Any) -> bool:
        if value is None:
            return self.nulls
        return self.unavailable and placeholder is not None and value == placeholder

    def _failed(self, what: str) -> None:
        if self.fail:
            raise SourceError(what, fix="set reselector's reselect.error.handling.mode=warn to let such events go "
                                        "out as they are")
        log.warning("%s (reselect.error.handling.mode=warn: the event goes out as it is)", what)
