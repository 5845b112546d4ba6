"""The configuration model: :class:`Option` and :class:`Config`, with Debezium's property names.

Each option is declared once (:class:`Option`: name, type, default, doc, choices, secret);
the CLI's help, the docs' option table and validation all come from those declarations.
A config is a flat mapping of property names (``database.hostname``, ``topic.prefix``, ...) to
values, read from TOML, a ``.properties`` file (cdc.core.config_files) or the command line.
Validation reports every problem at once; unknown names are a warning with the closest known name,
as Kafka Connect users are used to typos being tolerated but want to hear about them. The options
every source shares are cdc.core.options.CORE_OPTIONS; ``cdc.config`` re-exports all of it for
plugins.
"""
from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cdc.core.config_providers import resolve
from cdc.core.errors import ConfigError
from cdc.core.filters import patterns_problem
from cdc.core.option_surface import Surface, refusals

log = logging.getLogger(__name__)

SECRET_MASK = "********"
FIX = "correct the properties named above (in the config file, or on the command line with --set NAME=VALUE)"


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
    # A family of properties (Debezium's column.mask.with.(d+).chars): ``name`` is Debezium's spelling of
    # it, ``pattern`` what the properties' names match; each of them is checked as this option's value.
    pattern: str | None = None

    def names(self, name: str) -> bool:
        """Whether property ``name`` is this option (or one of its family)."""
        return name == self.name or (self.pattern is not None and re.fullmatch(self.pattern, name) is not None)

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
            if isinstance(raw, (bool, float)):
                raise ValueError(f"expected a whole number, got {raw!r}")
            try:
                return int(str(raw).strip())
            except ValueError:
                raise ValueError(f"expected a whole number, got {raw!r}") from None
        if self.type is float:
            try:
                return float(str(raw).strip())
            except ValueError:
                raise ValueError(f"expected a number, got {raw!r}") from None
        if self.type is list:
            if isinstance(raw, (list, tuple)):
                return [str(v).strip() for v in raw if str(v).strip()]
            return [part.strip() for part in str(raw).split(",") if part.strip()]
        value = str(raw).strip() if not isinstance(raw, str) else raw
        if self.choices is not None:
            value = value.strip().lower()
        return value

    def problem(self, raw: Any, name: str | None = None) -> str | None:
        """What is wrong with ``raw`` as this option's value (and what to put instead), or None; ``name``: the
        property's, for an option of a family."""
        name = name or self.name
        if raw is None or raw == "":
            return f"{name} is required but not set: {self.doc}" if self.required else None
        try:
            value = self.parse(raw)
        except ValueError as exc:
            return f"{name}={raw!r}: {exc}"
        if self.choices is not None and value not in self.choices:
            close = difflib.get_close_matches(str(value), self.choices, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return f"{name}={raw!r} is not one of {', '.join(self.choices)}{hint}"
        if self.validator is not None and (problem := self.validator(value)):
            return f"{name}={raw!r}: {problem}"
        return None


@dataclass
class Config:
    """Raw properties plus the options declared by the parts in use."""

    properties: dict[str, Any]
    options: dict[str, Option] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.properties = resolve(self.properties)  # ${file:...}, ${env:...}, database.password.file

    def declare(self, options: Iterable[Option]) -> Config:
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
            raise ConfigError(f"invalid value for {name}: {exc}", fix=FIX) from None

    def pattern_options(self) -> list[Option]:
        return [o for o in self.options.values() if o.pattern is not None]

    def matching(self, option: Option) -> list[tuple[str, Any]]:
        """The properties of a pattern option's family, with their raw values, in the configuration's order."""
        return [(name, value) for name, value in self.properties.items() if option.names(name)]

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def with_prefix(self, prefix: str) -> dict[str, Any]:
        """Pass-through properties such as ``producer.*``, with the prefix removed."""
        return {k[len(prefix):]: v for k, v in self.properties.items() if k.startswith(prefix)}

    def validate(self, passthrough_prefixes: tuple[str, ...] = (), surface: Surface | None = None) -> None:
        """Raise one ConfigError listing every problem; warn about unknown property names. Kafka
        Connect's own worker and connector settings, which a Debezium ``.properties`` file carries
        (``tasks.max``, ``errors.tolerance``...), are no mistake: listed once, at INFO.

        ``surface``: the Debezium connectors the source stands in for. An option of theirs that cdc does
        not implement is refused here, before anything starts (cdc.core.option_surface), never ignored."""
        problems: list[str] = []
        for name, option in self.options.items():
            problem = option.problem(self.properties.get(name))
            if problem:
                problems.append(problem)
        for option in self.pattern_options():
            problems += [p for name, value in self.matching(option) if (p := option.problem(value, name))]
        if problems:
            raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(problems), fix=FIX)
        mapped: list[str] = []
        declared = [*self.options, *(n for n in self.properties if any(o.names(n) for o in self.pattern_options()))]
        if surface is not None:
            refused, mapped = refusals(surface, self.properties, declared)
            if refused:
                raise ConfigError(
                    f"options of Debezium's {surface.title} connector that cdc does not implement:\n  - "
                    + "\n  - ".join(refused),
                    fix="remove them (or set them to Debezium's default) to run without what they ask for; "
                        "docs/options.md lists what cdc does with each Debezium option")
            if mapped:
                log.info("Debezium options that tune Kafka Connect's JVM, accepted (docs/options.md says what cdc "
                         "does instead): %s", ", ".join(sorted(mapped)))
        known = list(self.options)
        connect_only = []
        for name in self.properties:
            if name in declared or name in mapped or name.startswith(passthrough_prefixes):
                continue
            if surface is not None and surface.lookup(name) is not None:
                continue  # a Debezium option at its default: accepted above
            if name in CONNECT_SETTINGS or name.startswith(CONNECT_PREFIXES):
                connect_only.append(name)
                continue
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            log.warning("unknown property %r is ignored%s", name, hint)
        if connect_only:
            log.info("Kafka Connect settings that have no effect in cdc: %s", ", ".join(sorted(connect_only)))

    def masked(self) -> dict[str, Any]:
        """The properties with every secret replaced, safe to print or log."""
        out = {}
        custom = self._sanitize_pattern()
        for name, value in sorted(self.properties.items()):
            option = self.options.get(name)
            secret = (option is not None and option.secret) or _looks_secret(name) \
                or (custom is not None and custom.fullmatch(name) is not None)
            out[name] = SECRET_MASK if secret and value not in (None, "") else value
        return out

    def _sanitize_pattern(self) -> re.Pattern[str] | None:
        """custom.sanitize.pattern: more property names whose values are never shown (beside cdc's own rule)."""
        raw = self.properties.get("custom.sanitize.pattern")
        try:
            return re.compile(str(raw), re.IGNORECASE) if raw else None
        except re.error:
            return re.compile(".*")  # an invalid pattern is reported by validate(); until then hide everything

    def __repr__(self) -> str:  # never print a password by accident
        return f"Config({self.masked()!r})"


# Kafka Connect's worker and connector settings (and Debezium's engine ones) that a Debezium
# configuration carries and that mean nothing to cdc: one process, one task, its own REST-free
# operation. Accepted without a warning so that such a file runs unchanged.
CONNECT_SETTINGS = frozenset((
    "tasks.max", "config.action.reload", "group.id", "plugin.path", "plugin.discovery", "rest.port", "listeners",
    "rest.advertised.host.name", "rest.advertised.port", "config.storage.topic", "config.storage.replication.factor",
    "status.storage.topic", "status.storage.replication.factor", "status.storage.partitions",
    "offset.storage.partitions", "offset.flush.timeout.ms", "offset.commit.policy", "internal.key.converter",
    "internal.value.converter", "key.converter", "value.converter", "header.converter", "errors.tolerance",
    "errors.log.enable", "errors.log.include.messages", "errors.retry.timeout", "errors.retry.delay.max.ms",
    "task.shutdown.graceful.timeout.ms", "scheduled.rebalance.max.delay.ms", "connector.client.config.override.policy",
    "exactly.once.source.support", "transaction.boundary", "transaction.boundary.interval.ms",
    "offsets.storage.topic", "topic.tracking.allow.reset", "topic.tracking.enable", "predicates",
    "connector.class",
))
CONNECT_PREFIXES = ("errors.deadletterqueue.", "admin.", "consumer.override.", "producer.override.",
                    "admin.override.", "internal.key.converter.", "internal.value.converter.")


# A property whose name says it holds a secret, declared or not (a misspelled database.pasword, a
# client's ssl.keystore.key): its value is never shown.
_SECRET_NAME = re.compile(r"pass|pasw|pwd|secret|token|credential|jaas|private|user\.info|api[._-]?key|"
                          r"connection\.?string|(^|[._])key$|keystore\.(key|certificate)", re.I)


def _looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


# Validators the option declarations of every part share (each returns a problem or None).

def positive(value: int) -> str | None:
    return None if value > 0 else "must be greater than 0"


def non_negative(value: int) -> str | None:
    return None if value >= 0 else "must be 0 or more"


def tcp_port(value: int) -> str | None:  # for the sources' database.port
    return None if 0 < value < 65536 else "must be a TCP port (1-65535)"


def regular_expressions(value: list[str]) -> str | None:
    return patterns_problem(value)
