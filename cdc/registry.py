"""Plugin discovery through Python entry points.

Sources register under ``cdc.sources``, sinks under ``cdc.sinks``, offset stores under
``cdc.offset_stores`` and schema histories under ``cdc.schema_histories``. Built-ins register
the same way as third-party packages, so a new database is a new distribution with an entry
point. A plugin that fails to import is reported when it is asked for, not at discovery, so
one broken plugin does not break the others.

A source may also register its option declarations under ``cdc.source_options`` (same name, an
object importable without the database driver): ``cdc <source> --help`` and the flags of a
command line are then declared without importing the source itself (:func:`source_options`).
"""
from __future__ import annotations

import ast
import difflib
import importlib.util
import sys
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from cdc.core.errors import PluginNotFoundError

SOURCES = "cdc.sources"
SINKS = "cdc.sinks"
OFFSET_STORES = "cdc.offset_stores"
SCHEMA_HISTORIES = "cdc.schema_histories"
SOURCE_OPTIONS = "cdc.source_options"

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
            fix=f"install its extra, e.g. pip install 'cdc-debezium[{name}]'",
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
        # connector_classes is part of the Source protocol; a plugin written before it was stands in for none
        if connector_class in getattr(plugin, "connector_classes", ()):
            return name
    known = ", ".join(names) or "none installed"
    raise PluginNotFoundError(
        f"no installed source stands in for connector.class={connector_class!r}; installed sources: {known}",
        fix="install the package of that source, or set source = <one of the installed names> instead",
    )


def source_options(name: str) -> tuple[Any, ...]:
    """The option declarations (``cdc.config.Option``) of the source ``name``: from its
    ``cdc.source_options`` entry point when it has one (a light module, no driver imported), else
    the ``options`` of the source itself (loaded: a PluginNotFoundError when it cannot be)."""
    light = available(SOURCE_OPTIONS).get(name)
    if light is not None:
        try:
            return tuple(light.load())
        except ImportError:
            pass
    from cdc.core.source import declared_options  # the Source protocol's options (tolerant of older plugins)

    return declared_options(load(SOURCES, name))


def docstring(entry: EntryPoint) -> str:
    """The docstring of the object an entry point names, else of its module (``obj.__doc__ or
    module.__doc__``); read from the module's source file when it is not imported yet, so that the
    help of a command does not import a database driver."""
    tree = None
    if entry.module not in sys.modules:
        try:
            spec = importlib.util.find_spec(entry.module)
            origin = spec.origin if spec is not None else None
            if origin and origin.endswith(".py"):
                with open(origin, encoding="utf-8") as file:
                    tree = ast.parse(file.read())
        except (ImportError, OSError, SyntaxError, ValueError):
            tree = None
    if tree is not None and entry.module not in sys.modules:  # (finding it may have imported its package)
        module_doc = ast.get_docstring(tree, clean=False) or ""
        for node in tree.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == entry.attr:
                return ast.get_docstring(node, clean=False) or module_doc
        return module_doc
    obj = entry.load()
    return getattr(obj, "__doc__", None) or getattr(sys.modules.get(entry.module), "__doc__", None) or ""
