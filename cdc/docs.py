"""The option reference, generated from the Option declarations (one place for each option).

    python -m cdc.docs > docs/options.md

Every group is a tuple of :class:`cdc.config.Option` the code declares: the core's, each installed
plugin's (under the ``title`` it declares: a source's guards are among its own), the converters', the
metrics', and Spark's ``format("cdc")`` reader options once they are declared in ``cdc.spark.options``
(``READER_OPTIONS``, a module importable without pyspark).
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Iterable

from cdc import registry
from cdc.config import CORE_OPTIONS, Option

SPARK_READER = 'Spark: spark.readStream.format("cdc")'
SPARK_READER_MODULE = "cdc.spark.options"

# A line under a group's heading, where its options are not the command line's properties.
NOTES = {
    SPARK_READER: 'Set with `.option(name, value)` on `spark.readStream.format("cdc")`, beside the source\'s own '
                  "options above under their Debezium names (Spark's option names are case-insensitive); see "
                  "[spark.md](spark.md).",
}


def spark_reader_options() -> tuple[Option, ...]:
    """``format("cdc")``'s own options, from ``cdc.spark.options.READER_OPTIONS``; () while that module
    does not exist (any other import error is raised)."""
    try:
        module = importlib.import_module(SPARK_READER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != SPARK_READER_MODULE:
            raise
        return ()
    return tuple(module.READER_OPTIONS)


def option_groups() -> list[tuple[str, tuple[Option, ...]]]:
    """The core options, then each installed plugin's (sources, sinks, offset stores, schema histories),
    under the ``title`` the plugin declares: a plugin from another package documents itself too."""
    groups: list[tuple[str, tuple[Option, ...]]] = [("Every source", CORE_OPTIONS)]
    for group, kind in ((registry.SOURCES, "source"), (registry.SINKS, "sink"),
                        (registry.OFFSET_STORES, "offset store"), (registry.SCHEMA_HISTORIES, "schema history")):
        for name, entry in sorted(registry.available(group).items()):
            try:
                plugin = entry.load()
            except ImportError:  # its extra is not installed
                continue
            options = tuple(getattr(plugin, "options", ()))
            if options:
                groups.append((getattr(plugin, "title", f"{name} {kind}"), options))
    from cdc.converters import CONVERTER_OPTIONS
    from cdc.metrics import METRICS_OPTIONS

    groups.append(("Converters (key.converter, value.converter)", CONVERTER_OPTIONS))
    groups.append(("Metrics and the status page (cdc run, cdc postgres, cdc mysql, cdc sqlserver)", METRICS_OPTIONS))
    spark = spark_reader_options()
    if spark:
        groups.append((SPARK_READER, spark))
    return groups


def anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def table(options: Iterable[Option]) -> str:
    rows = ["| property | type | default | description |", "|---|---|---|---|"]
    for option in options:
        shown = str(option.default).lower() if isinstance(option.default, bool) else option.default  # as written
        default = "" if shown in (None, "") else f"`{shown}`"
        kind = " \\| ".join(option.choices) if option.choices else option.type.__name__
        rows.append(f"| `{option.name}` | {kind} | {default} | {option.doc}{' (secret)' if option.secret else ''} |")
    return "\n".join(rows)


def shortcuts() -> str:
    """The command line's short flags that are not the property's own name with dashes."""
    from cdc.cli import SHORTCUTS

    return ", ".join(f"`{flag}` for `{name}`" for name, flag in SHORTCUTS.items()
                     if flag != "--" + name.replace(".", "-").replace("_", "-"))


DEBEZIUM_SECTION = "Debezium's options, connector by connector"


def debezium_tables() -> list[str]:
    """Per Debezium connector a built-in or installed source stands in for: every option of Debezium's, and
    whether cdc honours it (declares it), maps it (a Kafka Connect JVM setting, with what cdc does instead)
    or refuses it at start-up (cdc.core.option_surface)."""
    from cdc.converters import CONVERTER_OPTIONS
    from cdc.core.option_surface import CONNECTOR_TITLES, OPTIONS, VERSIONS, rows

    shared = {o.name: o for o in (*CORE_OPTIONS, *CONVERTER_OPTIONS)}
    parts = []
    for name, entry in sorted(registry.available(registry.SOURCES).items()):
        try:
            plugin = entry.load()
        except ImportError:
            continue
        for cls in getattr(plugin, "connector_classes", ()):
            if cls not in OPTIONS:
                continue
            declared = {**shared, **{o.name: o for o in getattr(plugin, "options", ())}}
            listed = rows(cls, declared)
            counts = {s: sum(r.status == s for r in listed) for s in ("honoured", "mapped", "refused")}
            parts += [f"### {CONNECTOR_TITLES[cls]} ({cls.rsplit('.', 1)[1]} {VERSIONS[cls]}, cdc source `{name}`)",
                      "", f"{len(listed)} options: {counts['honoured']} honoured, {counts['mapped']} mapped, "
                      f"{counts['refused']} refused.", "",
                      "| Debezium option | Debezium's default | cdc | notes |", "|---|---|---|---|"]
            parts += [f"| `{r.name}` | {_code(r.debezium_default)} | {r.status} | {_cell(r.note)} |" for r in listed]
            parts.append("")
    return parts


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    groups = option_groups()
    parts = ["# Options", "",
             "Generated by `python -m cdc.docs` from the option declarations in the code (a test fails when this "
             "page is out of date or an option has no description); Debezium's property names. On the command "
             "line `a.b.c` is `--a-b-c`, or `--set a.b.c=value`, and `cdc <source> --help` shows the same; "
             f"shorter flags: {shortcuts()}. What the command does with them: [operations.md](operations.md).", ""]
    parts += [f"- [{title}](#{anchor(title)})" for title, _ in groups]
    parts += [f"- [{DEBEZIUM_SECTION}](#{anchor(DEBEZIUM_SECTION)})", ""]
    for title, options in groups:
        parts += [f"## {title}", ""]
        if title in NOTES:
            parts += [NOTES[title], ""]
        parts += [table(options), ""]
    parts += [f"## {DEBEZIUM_SECTION}", "",
              "Every option of the Debezium connectors cdc stands in for, read from their jars "
              "(`cdc/core/debezium_options.py`), and what cdc does with it: **honoured** (declared above, and done "
              "as Debezium documents it), **mapped** (it tunes Kafka Connect's JVM: accepted, and the note says what "
              "cdc does instead) or **refused**: a configuration that sets it does not start, with an error naming "
              "it, unless it is set to Debezium's default, which asks for nothing cdc does not do. "
              "`internal.*` options are left out. The treatments are in `cdc/core/option_surface.py`.", ""]
    parts += debezium_tables()
    return "\n".join(parts).rstrip("\n")


if __name__ == "__main__":
    print(render())
