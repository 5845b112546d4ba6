"""One config model for every source and sink, using Debezium's property names.

Each option is declared once (:class:`Option`: name, type, default, doc, choices, secret);
the CLI's help, the docs' option table and validation all come from those declarations.
A config is a flat mapping of property names (``database.hostname``, ``topic.prefix``, ...) to
values, read from TOML, a ``.properties`` file or the command line. Validation reports every
problem at once; unknown names are a warning with the closest known name, as Kafka Connect
users are used to typos being tolerated but want to hear about them.
"""
from __future__ import annotations

import difflib
import logging
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from cdc.core.errors import ConfigError

log = logging.getLogger(__name__)

SECRET_MASK = "********"


@dataclass(frozen=True)
class Option:
    name: str
    type: type = str
    default: Any = None
    doc: str = ""
    choices: tuple[str, ...] | None = None
    secret: bool = False
    required: bool = False
    validator: Callable[[Any], str | None] | None = None  # returns a problem or None

    def parse(self, raw: Any) -> Any:
        if raw is None:
            return None
        if self.type is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise ValueError(f"expected true or false, got {raw!r}")
        if self.type is int:
            if isinstance(raw, bool):
                raise ValueError(f"expected an integer, got {raw!r}")
            return int(str(raw).strip())
        if self.type is float:
            return float(str(raw).strip())
        if self.type is list:
            if isinstance(raw, (list, tuple)):
                return [str(v).strip() for v in raw if str(v).strip()]
            return [part.strip() for part in str(raw).split(",") if part.strip()]
        value = str(raw).strip() if not isinstance(raw, str) else raw
        if self.choices is not None:
            value = value.strip().lower()
        return value


@dataclass
class Config:
    """Raw properties plus the options declared by the parts in use."""

    properties: dict[str, Any]
    options: dict[str, Option] = field(default_factory=dict)

    def declare(self, options: Iterable[Option]) -> "Config":
        for option in options:
            self.options[option.name] = option
        return self

    def get(self, name: str) -> Any:
        option = self.options.get(name)
        raw = self.properties.get(name)
        if option is None:
            return raw
        if raw is None or raw == "":
            return option.default
        try:
            return option.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"invalid value for {name}: {exc}") from None

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def with_prefix(self, prefix: str) -> dict[str, Any]:
        """Pass-through properties such as ``producer.*``, with the prefix removed."""
        return {k[len(prefix):]: v for k, v in self.properties.items() if k.startswith(prefix)}

    def validate(self, passthrough_prefixes: tuple[str, ...] = ()) -> None:
        """Raise one ConfigError listing every problem; warn about unknown property names."""
        problems: list[str] = []
        for name, option in self.options.items():
            raw = self.properties.get(name)
            if raw is None or raw == "":
                if option.required:
                    problems.append(f"{name} is required: {option.doc}")
                continue
            try:
                value = option.parse(raw)
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
                continue
            if option.choices is not None and value not in option.choices:
                problems.append(f"{name}={raw!r} is not one of {', '.join(option.choices)}")
            elif option.validator is not None and (problem := option.validator(value)):
                problems.append(f"{name}={raw!r}: {problem}")
        if problems:
            raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(problems))
        known = list(self.options)
        for name in self.properties:
            if name in self.options or name.startswith(passthrough_prefixes):
                continue
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            log.warning("unknown property %r is ignored%s", name, hint)

    def masked(self) -> dict[str, Any]:
        """The properties with every secret replaced, safe to print or log."""
        out = {}
        for name, value in sorted(self.properties.items()):
            option = self.options.get(name)
            secret = (option is not None and option.secret) or _looks_secret(name)
            out[name] = SECRET_MASK if secret and value not in (None, "") else value
        return out

    def __repr__(self) -> str:  # never print a password by accident
        return f"Config({self.masked()!r})"


def _looks_secret(name: str) -> bool:
    return bool(re.search(r"password|secret|sasl\.jaas|token|credential", name, re.I))


def load_file(path: str | Path) -> dict[str, Any]:
    """Read a TOML file (flat or dotted tables) or a Java ``.properties`` file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    if path.suffix.lower() == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
        return _flatten(data)
    return parse_properties(text)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def parse_properties(text: str) -> dict[str, str]:
    """Java properties: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuations."""
    out: dict[str, str] = {}
    logical = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            logical += stripped[:-1]
            continue
        logical += stripped
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)", logical)
        if match:
            out[match.group(1)] = match.group(2).replace("\\\\", "\\")
        elif logical:
            out[logical] = ""
        logical = ""
    return out


# ---- options shared by every source ---------------------------------------------------------

def _positive(value: int) -> str | None:
    return None if value > 0 else "must be greater than 0"


CORE_OPTIONS: tuple[Option, ...] = (
    Option("name", str, "cdc", "Logical name of this pipeline; the key of its stored offsets."),
    Option("topic.prefix", str, None, "Prefix of every topic name (Debezium's logical server name).", required=True),
    Option("table.include.list", list, None, "Regular expressions of fully-qualified table names to capture."),
    Option("table.exclude.list", list, None, "Regular expressions of fully-qualified table names not to capture."),
    Option("column.exclude.list", list, None, "Regular expressions of fully-qualified column names to leave out of events."),
    Option("message.key.columns", str, None, "Key columns per table: 'schema.table:col1,col2;schema.table2:col'."),
    Option("snapshot.mode", str, "initial", "When to snapshot the captured tables.",
           choices=("initial", "never", "initial_only", "when_needed", "no_data", "always")),
    Option("tombstones.on.delete", bool, True, "Follow each delete event with a tombstone (null value)."),
    Option("skipped.operations", list, ["t"], "Operations not to emit: c, u, d, t (truncate), or none. As in "
           "Debezium, truncates are skipped unless this says otherwise."),
    Option("provide.transaction.metadata", bool, False, "Emit BEGIN/END events and a transaction block in every event."),
    Option("transaction.topic", str, None, "Topic of transaction events (default: <topic.prefix>.transaction)."),
    Option("include.schema.changes", bool, True, "Emit schema change events on the <topic.prefix> topic."),
    Option("decimal.handling.mode", str, "precise", "How DECIMAL/NUMERIC values are represented.",
           choices=("precise", "double", "string")),
    Option("time.precision.mode", str, "adaptive", "How temporal values are represented.",
           choices=("adaptive", "adaptive_time_microseconds", "connect")),
    Option("binary.handling.mode", str, "bytes", "How binary values are represented.",
           choices=("bytes", "base64", "base64-url-safe", "hex")),
    Option("interval.handling.mode", str, "numeric", "How INTERVAL values are represented.", choices=("numeric", "string")),
    Option("heartbeat.interval.ms", int, 0, "Emit a heartbeat (and confirm the position) this often when idle; 0 disables."),
    Option("heartbeat.topics.prefix", str, "__debezium-heartbeat", "Prefix of the heartbeat topic."),
    Option("extended.headers.enabled", bool, True, "Put Debezium's __debezium.context.* headers (connector name, "
           "logical name, task id, run id) on every record."),
    Option("key.converter.schemas.enable", bool, True, "Include the schema in every key (JSON converter)."),
    Option("value.converter.schemas.enable", bool, True, "Include the schema in every value (JSON converter)."),
    Option("offset.storage", str, "file", "Where source offsets are stored (file, or a plugin name such as kafka)."),
    Option("offset.storage.file.filename", str, None, "Offset file (default: <output>/offsets.json or ./cdc-offsets.json)."),
    Option("offset.flush.interval.ms", int, 1000, "How often acknowledged offsets are stored.", validator=_positive),
    Option("max.batch.size", int, 2048, "Most events handed to the sink at once.", validator=_positive),
    Option("sink", str, "files", "Sink plugin name (files, stdout, kafka, ...)."),
)
