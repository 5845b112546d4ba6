"""What the compiled codecs (``native/``, module ``cdc_native``) hand the sources: a row already
written as the JSON bytes of Debezium's row struct (:class:`NativeRow`), the module loader that
warns once when it is missing, and the option that turns them off.

The JSON converter splices ``NativeRow.json`` in as it is (``cdc.core.converters._default``); the
envelope takes ``NativeRow.key`` as the event's key; anything else that reads a value gets the
row decoded the Python way, so nothing downstream can tell the difference but the time it took.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from cdc.core.config import Config, Option
from cdc.core.topics import TopicNaming

log = logging.getLogger(__name__)

NATIVE_ROWS_OPTION = Option(
    "native.rows", bool, True, "Encode streamed rows with the compiled codec (cdc_native, built from native/) "
    "when it is installed and rows go straight to the JSON converter (no transforms); same bytes, less time.")



def native_rows_wanted(config: Config) -> bool:
    """``native.rows``, unless the topic naming adds a field to keys (a regex strategy's table identifier),
    which the codec's keys do not have."""
    return bool(config.get("native.rows")) and not TopicNaming.from_config(config).augments_keys


_module: Any = None
_warned = False


def native_module() -> Any:
    """``cdc_native``, or None (with one warning per process) when it is not installed."""
    global _module, _warned
    if _module is None:
        try:
            import cdc_native
        except ImportError:
            if not _warned:
                _warned = True
                log.warning("the compiled row codec (cdc_native) is not installed: rows are converted in Python. "
                            "pip install cdc-debezium brings it (cdc-debezium-native) with CPython 3.11+ on Linux "
                            "x86_64 and aarch64 (glibc 2.17+ or musl 1.2+) and macOS x86_64 and arm64; elsewhere "
                            "build it with a Rust toolchain: "
                            "pip install ./native (in a source checkout)")
            return None
        _module = cdc_native
        log.info("compiled row codec: cdc_native from %s", getattr(cdc_native, "__file__", "?"))
    return _module


class NativeRow(Mapping[str, Any]):
    """A row the codec encoded: ``json`` for the converter, ``key`` (the envelope's key: the key
    columns, in its order) without decoding the rest; any other read decodes the whole row the
    Python way (once), by ``decode(*args)``."""

    __slots__ = ("json", "key", "_keys", "_decode", "_args", "_full")

    def __init__(self, json: bytes, key: dict[str, Any] | None, decode: Any, *args: Any) -> None:
        self.json = json
        self.key = key
        self._keys = key or {}
        self._decode = decode
        self._args = args
        self._full: dict[str, Any] | None = None

    def _row(self) -> dict[str, Any]:
        if self._full is None:
            self._full = self._decode(*self._args)
        return self._full

    def __getitem__(self, name: str) -> Any:
        if name in self._keys:
            return self._keys[name]
        return self._row()[name]

    def get(self, name: str, default: Any = None) -> Any:
        if name in self._keys:
            return self._keys[name]
        return self._row().get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._row())

    def __len__(self) -> int:
        return len(self._row())

    def __repr__(self) -> str:
        return f"NativeRow({self.json.decode()})"
