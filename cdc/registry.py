"""Plugin discovery through Python entry points.

Sources register under ``cdc.sources``, sinks under ``cdc.sinks``, offset stores under
``cdc.offset_stores`` and schema histories under ``cdc.schema_histories``. Built-ins register
the same way as third-party packages, so a new database is a new distribution with an entry
point. A plugin that fails to import is reported when it is asked for, not at discovery, so
one broken plugin does not break the others.
"""
from __future__ import annotations

import difflib
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from cdc.core.errors import PluginNotFoundError

SOURCES = "cdc.sources"
SINKS = "cdc.sinks"
OFFSET_STORES = "cdc.offset_stores"
SCHEMA_HISTORIES = "cdc.schema_histories"

_KIND = {SOURCES: "source", SINKS: "sink", OFFSET_STORES: "offset store", SCHEMA_HISTORIES: "schema history"}


def available(group: str) -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=group)}


def load(group: str, name: str) -> Any:
    """The object an entry point names, or a PluginNotFoundError listing the known names."""
    plugins = available(group)
    entry = plugins.get(name)
    kind = _KIND.get(group, group)
    if entry is None:
        known = ", ".join(sorted(plugins)) or "none installed"
        close = difflib.get_close_matches(name, list(plugins), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise PluginNotFoundError(
            f"unknown {kind} {name!r}; installed: {known}.{hint}",
            fix=f"install the package that provides the {kind}, or use one of the installed names",
        )
    try:
        return entry.load()
    except ImportError as exc:
        raise PluginNotFoundError(
            f"the {kind} {name!r} ({entry.value}) cannot be imported: {exc}",
            fix=f"install its extra, e.g. pip install 'cdc[{name}]'",
        ) from exc


def source_for_connector_class(connector_class: str) -> str:
    """The name of the installed source whose ``connector_classes`` lists a Debezium
    ``connector.class`` (each source plugin declares the classes it stands in for)."""
    names = []
    for name, entry in sorted(available(SOURCES).items()):
        try:
            plugin = entry.load()
        except ImportError:
            continue
        names.append(name)
        if connector_class in getattr(plugin, "connector_classes", ()):
            return name
    known = ", ".join(names) or "none installed"
    raise PluginNotFoundError(
        f"no installed source stands in for connector.class={connector_class!r}; installed sources: {known}",
        fix="install the package of that source, or set source = <one of the installed names> instead",
    )
