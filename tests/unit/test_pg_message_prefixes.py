"""message.prefix.include.list / exclude.list: which logical decoding messages the PostgreSQL source emits."""
from __future__ import annotations

import pytest

from cdc.config import Config
from cdc.core.errors import ConfigError
from cdc.core.filters import NameFilter
from cdc.sources.postgres.config import POSTGRES_OPTIONS, message_prefix_filter


def _filter(**properties: str) -> NameFilter:
    config = Config({name.replace("_", "."): value for name, value in properties.items()}).declare(POSTGRES_OPTIONS)
    return message_prefix_filter(config)


def test_every_message_without_lists() -> None:
    keep = _filter()
    assert keep("") and keep("anything")


def test_include_list_matches_whole_prefixes_ignoring_case() -> None:
    keep = _filter(message_prefix_include_list="audit.*,KEEP")
    assert [p for p in ("audit", "audit-log", "keep", "keeper", "other", "") if keep(p)] == \
        ["audit", "audit-log", "keep"]


def test_exclude_list_skips_what_it_matches() -> None:
    keep = _filter(message_prefix_exclude_list="noise.*,SKIP")
    assert [p for p in ("noise", "noise-1", "skip", "skipper", "") if keep(p)] == ["skipper", ""]


def test_both_lists_are_refused() -> None:
    with pytest.raises(ConfigError, match="both set"):
        _filter(message_prefix_include_list="a", message_prefix_exclude_list="b")
