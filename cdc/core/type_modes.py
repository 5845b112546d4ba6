"""The options that choose how values are represented (Debezium's ``decimal.handling.mode``,
``time.precision.mode``, ``binary.handling.mode``), read and checked the same way by every
source. A source subclasses :class:`TypeModes` with the modes only its database has (PostgreSQL's
interval and hstore modes, MySQL's unsigned BIGINT) and the time precision modes it supports."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from cdc.core.config import Config
from cdc.core.errors import ConfigError

Modes = TypeVar("Modes", bound="TypeModes")


@dataclass(frozen=True, slots=True)
class TypeModes:
    decimal_handling_mode: str = "precise"  # precise | double | string
    time_precision_mode: str = "adaptive"  # adaptive | adaptive_time_microseconds | connect (| source's own)
    binary_handling_mode: str = "bytes"  # bytes | base64 | base64-url-safe | hex

    # the values each mode takes (a subclass adds its fields' and may narrow or widen these)
    ALLOWED: ClassVar[dict[str, tuple[str, ...]]] = {
        "decimal_handling_mode": ("precise", "double", "string"),
        "time_precision_mode": ("adaptive", "adaptive_time_microseconds", "connect"),
        "binary_handling_mode": ("bytes", "base64", "base64-url-safe", "hex"),
    }

    def __post_init__(self) -> None:
        for name, allowed in self.ALLOWED.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name.replace('_', '.')}={getattr(self, name)!r} is not supported",
                                  fix=f"use one of {', '.join(allowed)}")

    @classmethod
    def from_config(cls: type[Modes], config: Config, **given: Any) -> Modes:
        """Every mode whose option (``decimal_handling_mode`` -> ``decimal.handling.mode``) the
        config declares, plus ``given`` (modes a source learns from its server)."""
        read = {f.name: config.get(f.name.replace("_", ".")) for f in fields(cls)
                if f.name not in given and f.name.replace("_", ".") in config.options}
        return cls(**read, **given)
