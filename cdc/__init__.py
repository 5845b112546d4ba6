"""cdc: Debezium-compatible change data capture in Python (the distribution ``cdc-debezium``)."""
from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:  # ``cdc.__version__`` without reading metadata on every import
    if name == "__version__":
        from cdc.version import VERSION

        return VERSION
    raise AttributeError(f"module 'cdc' has no attribute {name!r}")
