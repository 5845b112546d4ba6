"""The ``cdc`` command.

    cdc --version                    cdc's version, and whether the compiled row codec is installed
    cdc sources                      list installed source and sink plugins
    cdc postgres [options]           capture a PostgreSQL database (one command per source plugin)
    cdc run CONFIG                   run from a TOML or .properties file (Debezium property names)
    cdc signal CONFIG SIGNAL [--table T] [--condition SQL]
                                     send execute-snapshot / stop-snapshot / pause-snapshot /
                                     resume-snapshot / log to a running pipeline's signal channel
    cdc status CONFIG [--json]       where a pipeline stands at its source, and what is wrong
    cdc status SOURCE [flags]        (exit 0 ok, 1 warning, 2 error); SOURCE and flags: the very
                                     command line the pipeline was started with (cdc postgres ...)
    cdc slots CONFIG [--drop NAME]   the replication slots of the source's server (PostgreSQL's);
    cdc slots SOURCE [flags]         drop an inactive one

Every option of a source or sink is also a flag: ``database.hostname`` -> ``--database-hostname``;
``--set name=value`` sets any property. Passwords are read from flags, files or ``CDC_PASSWORD``
and are never printed.

``--log-format json`` writes each log line as a JSON object (time, level, logger, message, pipeline).
``metrics.port`` serves Prometheus metrics and a status page while a pipeline runs (cdc.metrics).

Exit status: 0 when the pipeline stopped cleanly; 1 on an error, printed as ``cdc: error: <what and
why>`` and a ``fix:`` line (bad configuration, unreadable files, a server that refuses); 2 when the
command line itself is wrong (argparse's usage message); 130 when aborted by a second Ctrl-C.
An unexpected exception is a bug in cdc and still prints its traceback.

Imports are deferred to the command that needs them: ``cdc --help`` imports no plugin, and a
source's flags are declared only when its command is given (from its light option declarations,
``registry.source_options``), so help and usage errors print without importing a database driver.
"""
from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any

from cdc import registry
from cdc.core.errors import CdcError, ConfigError

if TYPE_CHECKING:
    from cdc.config import Option

    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _SubParsers = argparse._SubParsersAction

log = logging.getLogger("cdc")

# Short flags for what people type most; everything else is --<property-with-dashes>.
SHORTCUTS = {
    "topic.prefix": "--topic-prefix",
    "snapshot.mode": "--snapshot-mode",
    "sink": "--sink",
    "sink.files.directory": "--output",
    "offset.storage.file.filename": "--offsets",
    "table.include.list": "--tables",
    "kafka.bootstrap.servers": "--bootstrap-servers",
}


def _flag(option: Option) -> str:
    return SHORTCUTS.get(option.name, "--" + option.name.replace(".", "-").replace("_", "-"))


def _add_options(parser: argparse.ArgumentParser, options: Sequence[Option], seen: set[str]) -> None:
    for option in options:
        if option.name in seen or option.pattern is not None:  # a family (column.mask.with.N.chars): --set
            continue
        seen.add(option.name)
        help_text = option.doc
        if option.default not in (None, ""):
            help_text += f" (default: {option.default})"
        help_text = help_text.replace("%", "%%")  # argparse formats help with %
        kwargs: dict[str, Any] = {"dest": "prop:" + option.name, "default": None, "help": help_text,
                                  "metavar": option.name.upper().replace(".", "_") if option.type is not bool else None}
        if option.choices:
            kwargs["choices"] = option.choices
            kwargs.pop("metavar")
        if option.type is bool:
            kwargs.pop("metavar")
            kwargs["nargs"] = "?"
            kwargs["const"] = "true"
            kwargs["choices"] = ("true", "false")
        parser.add_argument(_flag(option), **kwargs)


def _sink_options() -> list[Option]:
    from cdc.core.source import declared_options

    options: list[Option] = []
    for name, entry in sorted(registry.available(registry.SINKS).items()):
        try:
            options.extend(declared_options(entry.load()))
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the CLI
            log.debug("sink plugin %s cannot be loaded: %s", name, exc)
    return options


class _Commands(_SubParsers):
    """The sub-commands. A source's flags (its options, the sinks', the metrics') are declared only
    when its command is the one given, so that no other command imports plugins to build them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: dict[str, Callable[[], None]] = {}
        self.inspectors: dict[str, argparse.ArgumentParser] = {}  # status, slots: a source's flags on demand

    def declare(self, name: str) -> None:
        """Declare the flags of command ``name`` now (once)."""
        declare = self.pending.pop(name, None)
        if declare is not None:
            declare()

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values:
            self.declare(values[0])
            inspector = self.inspectors.pop(values[0], None)
            if inspector is not None and len(values) > 1 and names_source(values[1]):
                _declare_source_flags(inspector, values[1])  # cdc status postgres --database-hostname ...
        super().__call__(parser, namespace, values, option_string)


def names_source(target: str) -> bool:
    """Whether the first argument of status / slots is an installed source (else: a config file)."""
    return target in registry.available(registry.SOURCES) and not os.path.isfile(target)


def _codec() -> str:
    """Which compiled row codec is installed, for ``cdc --version``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        import cdc_native  # noqa: F401
    except ImportError:
        return "not installed (rows are converted in Python)"
    for dist in ("cdc-debezium-native", "cdc-native"):  # the second: built by hand before the rename
        try:
            return f"cdc_native {version(dist)} ({dist})"
        except PackageNotFoundError:
            continue
    return "cdc_native (installed)"


class _Version(argparse.Action):
    """``--version``: computed when asked for (reading metadata and the codec costs a few ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from cdc.version import DISTRIBUTION, VERSION

        print(f"cdc {VERSION} ({DISTRIBUTION}, Python {sys.version.split()[0]})")
        print(f"compiled row codec: {_codec()}")
        parser.exit()


def _declare_source(p: argparse.ArgumentParser, name: str, entry: EntryPoint) -> None:
    """The flags of ``cdc <name>``: the core options, the source's own, the sinks', the metrics'."""
    try:
        doc = registry.docstring(entry).strip().splitlines()
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the CLI
        p.description = f"(cannot be loaded: {exc})"
        return
    p.description = doc[0] if doc else None
    p.add_argument("--config", help="read properties from this file first (TOML or .properties)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="set any property")
    _declare_source_flags(p, name)


def _declare_source_flags(p: argparse.ArgumentParser, name: str) -> None:
    """One flag per option of a pipeline of source ``name``: the core options, the source's own, the
    sinks', the metrics' (the pipeline's command, and status / slots given the same command line)."""
    from cdc.config import CORE_OPTIONS
    from cdc.metrics import options_for

    try:
        options = registry.source_options(name)
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the CLI
        p.description = f"(cannot be loaded: {exc})"
        return
    seen: set[str] = set()
    # A source may redeclare a core option (its own snapshot modes, its default time mode).
    merged = {o.name: o for o in CORE_OPTIONS}
    merged.update({o.name: o for o in options})
    _add_options(p, list(merged.values()), seen)
    _add_options(p, _sink_options(), seen)
    _add_options(p, options_for(name), seen)


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``cdc`` command. A source command's flags are declared when that command is
    parsed (:func:`declare_all` declares them all at once)."""
    parser = argparse.ArgumentParser(prog="cdc", description="Debezium-compatible change data capture in Python.")
    parser.add_argument("--version", action=_Version, help="print cdc's version and whether the compiled row "
                                                           "codec (cdc_native) is installed, and exit")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text",
                        help="log lines as text, or as one JSON object each (time, level, logger, message, pipeline)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", action=_Commands)
    assert isinstance(sub, _Commands)
    sub.add_parser("sources", help="list the installed source and sink plugins")
    run = sub.add_parser("run", help="run a pipeline from a config file (TOML or .properties)")
    run.add_argument("config", help="config file; the source is its 'source' property (or connector.class)")
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a property")
    signal = sub.add_parser("signal", help="send a signal (execute-snapshot, stop-snapshot, ...) to a pipeline")
    signal.add_argument("config", help="the pipeline's config file (its signal.* properties say where to write)")
    signal.add_argument("signal",
                        choices=("execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log"))
    signal.add_argument("--table", action="append", default=[], metavar="T",
                        help="table 'schema.table' or regular expression (repeatable)")
    signal.add_argument("--condition", metavar="SQL",
                        help="additional condition (a WHERE clause) for the tables of execute-snapshot")
    signal.add_argument("--type", dest="snapshot_type", choices=("incremental", "blocking"), default="incremental",
                        help="snapshot type of execute-snapshot (default: incremental)")
    signal.add_argument("--message", help="text of a log signal")
    signal.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a property")
    target = ("the pipeline's config file, or its source (postgres, mysql, ...) followed by the flags the pipeline "
              "was started with: cdc status postgres --database-hostname db --slot-name s ...")
    status = sub.add_parser("status", help="where a pipeline stands at its source and what is wrong "
                                           "(exit 0 ok, 1 warning, 2 error)")
    status.add_argument("target", metavar="CONFIG|SOURCE", help=target)
    status.add_argument("--json", action="store_true", help="print the report as JSON")
    slots = sub.add_parser("slots", help="list the replication slots of the source's server (PostgreSQL's), "
                                         "or drop one")
    slots.add_argument("target", metavar="CONFIG|SOURCE", help=target.replace("status", "slots"))
    slots.add_argument("--drop", metavar="NAME", help="drop this slot (refused while a process streams from it)")
    slots.add_argument("--json", action="store_true", help="print the list as JSON")
    for inspector in (status, slots):
        inspector.add_argument("--config", help="with SOURCE: read properties from this file first")
        inspector.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a property")
        sub.inspectors[inspector.prog.rsplit(" ", 1)[-1]] = inspector
    for name, entry in sorted(registry.available(registry.SOURCES).items()):
        p = sub.add_parser(name, help=f"capture changes from {name}")
        sub.pending[name] = functools.partial(_declare_source, p, name, entry)
    return parser


def declare_all(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with the flags of every source command declared (for tools that read them all)."""
    for action in parser._actions:
        if isinstance(action, _Commands):
            for name in list(action.pending):
                action.declare(name)
    return parser


def _properties(args: argparse.Namespace) -> dict[str, Any]:
    from cdc.config import load_file

    props: dict[str, Any] = {}
    config_file = vars(args).get("config")
    if config_file:
        props.update(load_file(config_file))
    for key, value in vars(args).items():
        if key.startswith("prop:") and value is not None:
            props[key[5:]] = value
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--set expects NAME=VALUE, got {item!r}",
                              fix="write it as --set name=value, e.g. --set snapshot.mode=no_data")
        props[name.strip()] = value
    if "database.password" not in props and os.environ.get("CDC_PASSWORD"):
        props["database.password"] = os.environ["CDC_PASSWORD"]
    return props


def _check_signal_tables(wanted: list[str], captured: list[str]) -> None:
    """An execute-snapshot of a table the pipeline does not capture would do nothing, and say nothing."""
    import re

    def matches(pattern: str) -> bool:
        try:
            return any(re.fullmatch(pattern, name) for name in captured)
        except re.error:
            return pattern in captured
    missing = [table for table in wanted if not matches(table)]
    if missing:
        shown = ", ".join(captured[:20]) + (" ..." if len(captured) > 20 else "")
        raise ConfigError(f"the pipeline captures no table named {', '.join(missing)}: the snapshot would read nothing",
                          fix=f"name captured tables (they are: {shown or 'none'}), or widen table.include.list first")


def _list_plugins() -> None:
    for group, title in ((registry.SOURCES, "sources"), (registry.SINKS, "sinks"),
                         (registry.OFFSET_STORES, "offset stores"), (registry.SCHEMA_HISTORIES, "schema histories")):
        plugins = registry.available(group)
        print(f"{title}:")
        for name, entry in sorted(plugins.items()):
            dist = entry.dist.name if entry.dist else "?"
            print(f"  {name:12} {entry.value}  ({dist})")
        if not plugins:
            print("  (none)")


def _send_signal(args: argparse.Namespace, props: dict[str, Any]) -> int:
    from cdc.config import CORE_OPTIONS, Config
    from cdc.core.source import DescribesTables, TakesSignals, declared_options
    from cdc.pipeline import PASSTHROUGH_PREFIXES, source_name

    source = source_name(props)
    props.pop("source", None)
    props.pop("connector.class", None)
    if not source:
        raise ConfigError(f"{args.config} names no source", fix="add source = \"postgres\" (or connector.class)")
    data: dict[str, Any] = {}
    if args.signal in ("execute-snapshot", "stop-snapshot"):
        if args.signal == "execute-snapshot" and not args.table:
            raise ConfigError("execute-snapshot needs at least one --table: which tables to snapshot",
                              fix=f"name them: cdc signal {args.config} execute-snapshot --table schema.table "
                                  "[--table ...]")
        data = {"data-collections": args.table, "type": args.snapshot_type}
        if args.condition:
            if args.signal != "execute-snapshot":
                raise ConfigError("--condition applies to execute-snapshot only",
                                  fix="leave --condition out, or send execute-snapshot")
            data["additional-conditions"] = [{"data-collection": t, "filter": args.condition} for t in args.table]
    elif args.signal == "log":
        data = {"message": args.message or ""}
    if not any(props.get(k) for k in ("signal.data.collection", "signal.file", "signal.kafka.topic")):
        raise ConfigError(f"{args.config} configures no signal channel, so the signal would have nowhere to go",
                          fix="give it the running pipeline's signal.data.collection (a signal table), signal.file "
                              "or signal.kafka.topic")
    config = Config(dict(props)).declare(CORE_OPTIONS)
    source_cls = registry.load(registry.SOURCES, source)
    config.declare(declared_options(source_cls))
    config.validate(PASSTHROUGH_PREFIXES + ("sink.", "offset.", "schema.history."))
    instance = source_cls(config)
    if not isinstance(instance, TakesSignals):
        raise ConfigError(f"source {source!r} does not take signals",
                          fix="send signals to a source that has them (postgres, mysql, sqlserver)")
    if args.signal == "execute-snapshot" and isinstance(instance, DescribesTables):
        _check_signal_tables(args.table, instance.captured_tables())
    where = instance.send_signal(args.signal, data)
    print(f"sent {args.signal} {data} to {where}")
    return 0


class JsonFormatter(logging.Formatter):
    """One JSON object per log line, for log collectors; ``pipeline`` is the ``name`` option."""

    def __init__(self, pipeline: str = "cdc") -> None:
        super().__init__()
        self.pipeline = pipeline

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                 "level": record.levelname, "logger": record.name, "message": record.getMessage(),
                 "pipeline": self.pipeline}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _setup_logging(args: argparse.Namespace) -> JsonFormatter | None:
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter() if args.log_format == "json" else None
    handler.setFormatter(formatter or logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose + 1, 2), handlers=[handler])
    return formatter


def _inspected(args: argparse.Namespace) -> str | None:
    """status / slots: the source their first argument names (the flags then are its pipeline's), else
    None with that argument taken as the config file."""
    if names_source(args.target):
        return str(args.target)
    if args.config:
        raise ConfigError(f"{args.target} is not an installed source, and --config goes with one",
                          fix=f"cdc {args.command} CONFIG, or cdc {args.command} SOURCE --config CONFIG [flags]")
    args.config = args.target
    return None


def _pipeline_source(args: argparse.Namespace, props: dict[str, Any], given: str | None = None) -> str:
    if args.command not in ("run", "status", "slots"):
        return str(args.command)
    from cdc.pipeline import source_name

    source = given or source_name(props)
    props.pop("source", None)  # connector.class stays: it says which Debezium connector's options apply
    if source is None and args.command == "slots":
        from cdc.status import slot_sources

        having = slot_sources()
        if len(having) == 1:
            return having[0]  # the one source with replication slots
    if not source:
        raise ConfigError(f"{args.config} names no source",
                          fix="add source = \"postgres\" (or a Debezium connector.class)")
    return source


def _run(source: str, props: dict[str, Any]) -> int:
    from cdc.engine import install_signal_handlers, tune_garbage_collector
    from cdc.metrics import Monitoring, split_properties
    from cdc.pipeline import build

    config = Monitoring.config(props, source)  # checked before anything is built
    engine = build(source, split_properties(props, source)[1])
    monitoring = Monitoring.attach(engine, config, source)
    install_signal_handlers(engine)
    tune_garbage_collector()
    try:
        engine.run()
    except CdcError as exc:
        explained = _explained(exc, engine.source)
        if explained is exc:
            raise
        raise explained from exc
    finally:
        if monitoring is not None:
            monitoring.close()
    log.info("stopped after %d events", engine.events_written)
    return 0


def _explained(exc: CdcError, source: Any) -> CdcError:
    """A clearer error where the source knows one (PostgreSQL: a slot the server invalidated)."""
    from cdc.core.source import ExplainsErrors

    if isinstance(source, ExplainsErrors):
        return source.explain_error(exc) or exc
    return exc


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    formatter = _setup_logging(args)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "sources":
            _list_plugins()
            return 0
        inspected = _inspected(args) if args.command in ("status", "slots") else None
        props = _properties(args)
        if formatter is not None:
            formatter.pipeline = str(props.get("name") or "cdc")
        if args.command == "signal":
            return _send_signal(args, props)
        source = _pipeline_source(args, props, inspected)
        if args.command == "status":
            from cdc.status import print_status

            return print_status(source, props, args.json)
        if args.command == "slots":
            from cdc.status import slots

            return slots(source, props, args.drop, args.json)
        return _run(source, props)
    except CdcError as exc:
        if formatter is not None:
            log.error("%s", exc)
        else:
            print(f"cdc: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cdc: aborted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
