"""Kafka Connect's transformation chain, configured with Kafka Connect's property names.

``transforms=a,b`` lists the stages in order; ``transforms.a.type`` names the class (the Java class
name a Debezium / Kafka Connect configuration uses), found through the ``cdc.transforms`` entry
point group so that other distributions can add their own; ``transforms.a.predicate`` and
``transforms.a.negate`` make a stage conditional on one of the ``predicates=...`` (as Kafka's
``TransformationStage``: the stage runs when ``predicate.test(record) != negate``).

Options are read as Kafka Connect's ``ConfigDef`` reads them (booleans ``true``/``false`` in any
case, lists split on commas), but an option a transform does not know is refused rather than
ignored: a misspelt option silently doing nothing is the commonest SMT configuration mistake.
"""
from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import entry_points
from typing import Any, Protocol

from cdc.core.errors import ConfigError
from cdc.core.java_regex import java_regex, java_replace_first  # noqa: F401 (the transforms' import of them)
from cdc.core.records import ChangeEvent

log = logging.getLogger(__name__)

GROUP = "cdc.transforms"

# Options Debezium removed; a configuration copied from an old connector still carries them.
_REMOVED = {
    "drop.tombstones": "Debezium 2.5 replaced it with delete.tombstone.handling.mode",
    "delete.handling.mode": "Debezium 2.5 replaced it with delete.tombstone.handling.mode",
}


class Transformation(Protocol):
    """A single message transform: a new event, the same event, or None to drop it."""

    def apply(self, event: ChangeEvent) -> ChangeEvent | None: ...


class Predicate(Protocol):
    def test(self, event: ChangeEvent) -> bool: ...


class Options:
    """The options of one transform or predicate (``transforms.<alias>.`` stripped).

    Each getter records the name it read; :meth:`check_all_read` then warns about any other name
    (and refuses the options Debezium removed).
    """

    def __init__(self, props: Mapping[str, str], *, where: str, class_name: str) -> None:
        self._props = dict(props)
        self._where = where
        self._class_name = class_name
        self._known: set[str] = set()

    def error(self, name: str, problem: str, fix: str) -> ConfigError:
        return ConfigError(f"{self._where}.{name} ({self._class_name}): {problem}", fix=fix)

    def string(self, name: str, default: str | None = None, *, required: bool = False) -> str | None:
        self._known.add(name)
        value = self._props.get(name)
        if value is None:
            if required:
                raise self.error(name, "is required", f"set {self._where}.{name}")
            return default
        return value

    def required(self, name: str) -> str:
        value = self.string(name, required=True)
        assert value is not None
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.string(name)
        if value is None:
            return default
        if value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise self.error(name, f"{value!r} is not a boolean", "use true or false")

    def integer(self, name: str, default: int | None = None) -> int | None:
        value = self.string(name)
        if value is None:
            return default
        try:
            return int(value.strip())
        except ValueError:
            raise self.error(name, f"{value!r} is not an integer", "use a whole number") from None

    def list(self, name: str, default: str = "") -> list[str]:
        value = self.string(name, default)
        assert value is not None
        return [item.strip() for item in value.split(",") if item.strip()]

    def choice(self, name: str, choices: Iterable[str], default: str) -> str:
        """One of ``choices``, matched without regard to case as Debezium's enumerated options are."""
        value = self.string(name, default)
        assert value is not None
        for choice in choices:
            if choice.lower() == value.strip().lower():
                return choice
        raise self.error(name, f"{value!r} is not one of {', '.join(choices)}",
                         f"use one of {', '.join(choices)}")

    def regex(self, name: str, *, required: bool = True) -> re.Pattern[str] | None:
        value = self.string(name, required=required)
        if value is None:
            return None
        try:
            return java_regex(value)
        except re.error as exc:
            raise self.error(name, f"{value!r} is not a valid regular expression: {exc}",
                             "correct the expression (Java syntax; Python's re must accept it too)") from None

    def accept(self, *names: str) -> None:
        """Options that are valid but change nothing here (cache sizes)."""
        self._known.update(names)

    def check_all_read(self) -> None:
        for name in self._props:
            if name in self._known:
                continue
            if name in _REMOVED:
                raise self.error(name, f"is no longer an option: {_REMOVED[name]}",
                                 f"remove {self._where}.{name}")
            # Kafka Connect ignores options a transform does not define, so a Debezium configuration
            # that sets one must still run: say so, with the likely typo, rather than refuse it.
            close = difflib.get_close_matches(name, sorted(self._known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            log.warning("%s.%s (%s): unknown option, ignored%s; the options are: %s", self._where, name,
                        self._class_name, hint, ", ".join(sorted(self._known)) or "none")


def _load(kind: str, alias: str, class_name: str | None) -> Callable[[Options], Any]:
    where = f"{kind}.{alias}"
    if not class_name:
        raise ConfigError(f"{where}.type is not set", fix=f"set {where}.type to a transform class name")
    plugins = {ep.name: ep for ep in entry_points(group=GROUP)}
    entry = plugins.get(class_name.strip())
    if entry is None:
        close = difflib.get_close_matches(class_name, list(plugins), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"{where}.type: no installed transform or predicate is named {class_name!r}.{hint}",
            fix=f"use one of: {', '.join(sorted(plugins))}; or install the package that provides it "
                f"(it registers under the {GROUP!r} entry point group)",
        )
    try:
        factory: Callable[[Options], Any] = entry.load()
    except ImportError as exc:
        raise ConfigError(f"{where}.type: {class_name} ({entry.value}) cannot be imported: {exc}",
                          fix="install the package that provides it") from exc
    return factory


def _build(kind: str, alias: str, props: Mapping[str, str], reserved: tuple[str, ...] = ()) -> Any:
    prefix = f"{kind}.{alias}."
    own = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
    class_name = own.pop("type", None)
    for name in reserved:
        own.pop(name, None)
    factory = _load(kind, alias, class_name)
    assert class_name is not None
    options = Options(own, where=f"{kind}.{alias}", class_name=class_name.strip())
    built = factory(options)
    if kind == "predicates" and not callable(getattr(built, "test", None)):
        raise ConfigError(f"{kind}.{alias}.type: {class_name} is a transform, not a predicate",
                          fix="name a predicate class (org.apache.kafka.connect.transforms.predicates....)")
    if kind == "transforms" and not callable(getattr(built, "apply", None)):
        raise ConfigError(f"{kind}.{alias}.type: {class_name} is a predicate, not a transform",
                          fix=f"use it as predicates.<name>.type and refer to it with {kind}.{alias}.predicate")
    options.check_all_read()
    return built


def _aliases(props: Mapping[str, str], kind: str) -> list[str]:
    aliases = [a.strip() for a in props.get(kind, "").split(",") if a.strip()]
    duplicates = sorted({a for a in aliases if aliases.count(a) > 1})
    if duplicates:
        raise ConfigError(f"{kind} lists {', '.join(duplicates)} more than once",
                          fix=f"give each entry of {kind} its own alias")
    return aliases


class _Stage:
    __slots__ = ("transform", "predicate", "negate")

    def __init__(self, transform: Transformation, predicate: Predicate | None, negate: bool) -> None:
        self.transform = transform
        self.predicate = predicate
        self.negate = negate

    def apply(self, event: ChangeEvent) -> ChangeEvent | None:
        if self.predicate is None or self.predicate.test(event) != self.negate:
            return self.transform.apply(event)
        return event


class TransformChain:
    """The configured transforms, applied in order; an event a stage drops goes no further."""

    def __init__(self, stages: list[_Stage]) -> None:
        self._stages = stages

    def __len__(self) -> int:
        return len(self._stages)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TransformChain:
        """Build the chain from Kafka Connect properties (``transforms=...``, ``predicates=...``)."""
        predicates = {alias: _build("predicates", alias, props) for alias in _aliases(props, "predicates")}
        stages = []
        for alias in _aliases(props, "transforms"):
            where = f"transforms.{alias}"
            predicate_alias = props.get(f"{where}.predicate")
            negate_text = props.get(f"{where}.negate")
            predicate = None
            if predicate_alias is not None:
                predicate = predicates.get(predicate_alias.strip())
                if predicate is None:
                    raise ConfigError(
                        f"{where}.predicate refers to {predicate_alias!r}, which predicates= does not list",
                        fix=f"add {predicate_alias} to predicates= and set predicates.{predicate_alias}.type",
                    )
            elif negate_text is not None:
                raise ConfigError(f"{where}.negate is set but there is no {where}.predicate to negate",
                                  fix=f"set {where}.predicate or remove {where}.negate")
            negate = False
            if negate_text is not None:
                if negate_text.strip().lower() not in ("true", "false"):
                    raise ConfigError(f"{where}.negate: {negate_text!r} is not a boolean", fix="use true or false")
                negate = negate_text.strip().lower() == "true"
            transform = _build("transforms", alias, props, reserved=("predicate", "negate"))
            stages.append(_Stage(transform, predicate, negate))
        return cls(stages)

    def apply(self, event: ChangeEvent) -> ChangeEvent | None:
        for stage in self._stages:
            result = stage.apply(event)
            if result is None:
                return None
            event = result
        return event

    def apply_all(self, events: Iterable[ChangeEvent]) -> list[ChangeEvent]:
        out = []
        for event in events:
            result = self.apply(event)
            if result is not None:
                out.append(result)
        return out
