"""SQL Server log sequence numbers: ``binary(10)`` values, shown as Debezium does.

An LSN is 10 bytes, compared as an unsigned big-endian number: virtual log file (4 bytes),
block offset (4) and slot (2). Debezium prints it as ``00000027:00000758:0005``; NULL (no
LSN, e.g. ``sys.fn_cdc_get_max_lsn()`` before the capture job ran) is all zero bytes here.
"""
from __future__ import annotations

from dataclasses import dataclass

_SIZE = 10


@dataclass(frozen=True, order=True, slots=True)
class Lsn:
    raw: bytes

    def __post_init__(self) -> None:
        if len(self.raw) != _SIZE:
            raise ValueError(f"an LSN is {_SIZE} bytes, got {len(self.raw)}: {self.raw.hex()}")

    @classmethod
    def of(cls, value: bytes | bytearray | str | Lsn | None) -> Lsn:
        """From the binary(10) a driver returns, Debezium's text, or None (NULL)."""
        if value is None:
            return NULL
        if isinstance(value, Lsn):
            return value
        if isinstance(value, (bytes, bytearray)):
            return cls(bytes(value))
        return cls.parse(value)

    @classmethod
    def parse(cls, text: str) -> Lsn:
        parts = text.strip().split(":")
        if len(parts) != 3 or [len(p) for p in parts] != [8, 8, 4]:
            raise ValueError(f"not an LSN: {text!r} (expected like 00000027:00000758:0005)")
        try:
            return cls(bytes.fromhex("".join(parts)))
        except ValueError:
            raise ValueError(f"not an LSN: {text!r} (expected hexadecimal digits)") from None

    @property
    def available(self) -> bool:
        """False for NULL: Debezium's ``Lsn.isAvailable()``."""
        return self.raw != bytes(_SIZE)

    def __str__(self) -> str:
        h = self.raw.hex()
        return f"{h[0:8]}:{h[8:16]}:{h[16:20]}"

    def __repr__(self) -> str:
        return f"Lsn({self})"

    def as_int(self) -> int:
        """For event positions (Spark ordering)."""
        return int.from_bytes(self.raw, "big")


NULL = Lsn(bytes(_SIZE))


def text_or_none(lsn: Lsn | None) -> str | None:
    return str(lsn) if lsn is not None and lsn.available else None
