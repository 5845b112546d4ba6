"""Kafka Connect's predicates (``org.apache.kafka.connect.transforms.predicates``), which make a
transform conditional: ``transforms.<alias>.predicate=<name>`` (and ``negate=true``)."""
from __future__ import annotations

from cdc.core.records import ChangeEvent
from cdc.transforms.chain import Options


class TopicNameMatches:
    """True when the whole topic name matches ``pattern`` (Java ``Matcher.matches``)."""

    def __init__(self, options: Options) -> None:
        if not (options.string("pattern") or ""):
            raise options.error("pattern", "is required and may not be empty", "set a regular expression")
        pattern = options.regex("pattern")
        assert pattern is not None
        self.pattern = pattern

    def test(self, event: ChangeEvent) -> bool:
        return self.pattern.fullmatch(event.topic) is not None


class HasHeaderKey:
    """True when the record has at least one header named ``name``."""

    def __init__(self, options: Options) -> None:
        name = options.string("name") or ""
        if not name:
            raise options.error("name", "is required and may not be empty", "set the header name")
        self.name = name

    def test(self, event: ChangeEvent) -> bool:
        return any(header[0] == self.name for header in event.headers or ())


class RecordIsTombstone:
    """True for tombstones (a null value)."""

    def __init__(self, options: Options) -> None:
        pass

    def test(self, event: ChangeEvent) -> bool:
        return event.value is None
