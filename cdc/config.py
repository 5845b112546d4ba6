"""The configuration API plugins and the rest of cdc import: :class:`Option`, :class:`Config`, the shared
validators, the file readers and the core's options, re-exported from where they live in the core
(cdc.core.config, cdc.core.config_files, cdc.core.options), which imports nothing outside cdc.core.
"""
from __future__ import annotations

from cdc.core.config import (
    CONNECT_PREFIXES,
    CONNECT_SETTINGS,
    FIX,
    SECRET_MASK,
    Config,
    Option,
    non_negative,
    positive,
    regular_expressions,
    tcp_port,
)
from cdc.core.config_files import load_file, parse_properties
from cdc.core.options import CORE_OPTIONS, TOPIC_OPTIONS, TOPIC_PREFIX_MAX_LENGTH

__all__ = [
    "CONNECT_PREFIXES", "CONNECT_SETTINGS", "CORE_OPTIONS", "FIX", "SECRET_MASK", "TOPIC_OPTIONS",
    "TOPIC_PREFIX_MAX_LENGTH", "Config", "Option", "load_file", "non_negative", "parse_properties", "positive",
    "regular_expressions", "tcp_port",
]
