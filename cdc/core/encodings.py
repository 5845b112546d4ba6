"""Debezium's value encodings and JDBC type codes, shared by every source.

    decimal_bytes   Kafka Connect's Decimal: BigInteger.toByteArray() of the unscaled value, base64
    float32         a 32-bit float as Java prints it (Float.toString, JDK 19+): the shortest decimal
                    that reads back as the same float, as the Python float of that decimal
    binary_text     bytes as binary.handling.mode wants them in JSON (base64, url-safe, hex)
    JDBC            java.sql.Types, as Debezium writes them in ``jdbcType``
"""
from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable
from fractions import Fraction

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")
_F32_MIN_NORMAL = 1.1754943508222875e-38


def decimal_bytes(unscaled: int) -> str:
    """Two's-complement big-endian bytes of the smallest width, base64 (Connect's Decimal in JSON)."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def to_float32(text: str | float) -> float:
    """Float.valueOf: a decimal (or a double) rounded once to float32, as an exact Python float."""
    x = float(text)
    try:
        f = _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)
    if isinstance(text, str) and f != x and math.isfinite(f):
        # Going through float64 rounds twice; that only matters if x landed exactly halfway
        # between two float32 values, so settle that case on the exact decimal.
        bits = _U32.unpack(_F32.pack(f))[0]
        other = _F32.unpack(_U32.pack(bits + (1 if abs(x) > abs(f) else -1)))[0]
        if (f + other) / 2 == x:
            exact, mid = Fraction(text), Fraction(x)
            if exact != mid and (exact > mid) == (other > f):
                f = other
    return f


def float32(value: str | float) -> float:
    """Java's Float.toString (JDK 19+) of ``value`` rounded to float32: the shortest decimal that
    reads back as the same float (at least two digits when one would do), as a Python float."""
    f = to_float32(value)
    if f == 0.0 or not math.isfinite(f):
        return f
    # A normal float32 is always told apart by 6 significant digits; shorter decimals show up
    # through %g's dropped trailing zeros.
    first = 6 if abs(f) >= _F32_MIN_NORMAL else 1
    for digits in range(first, 10):
        candidate = f"{f:.{digits}g}"
        if to_float32(candidate) == f:
            if digits == 1:
                candidate = f"{f:.2g}"
            return float(candidate)
    return f


def binary_encoder(mode: str) -> Callable[[bytes], str]:
    """binary.handling.mode: bytes and base64 both print as base64 in JSON; hex; base64-url-safe."""
    if mode == "hex":
        return lambda data: data.hex()
    if mode == "base64-url-safe":
        return lambda data: base64.urlsafe_b64encode(data).decode()
    return lambda data: base64.b64encode(data).decode()


class JDBC:
    """java.sql.Types values, as Debezium writes them in ``jdbcType``."""

    BIT = -7
    TINYINT = -6
    SMALLINT = 5
    INTEGER = 4
    BIGINT = -5
    FLOAT = 6
    REAL = 7
    DOUBLE = 8
    NUMERIC = 2
    DECIMAL = 3
    CHAR = 1
    VARCHAR = 12
    LONGVARCHAR = -1
    NCHAR = -15
    NVARCHAR = -9
    LONGNVARCHAR = -16
    DATE = 91
    TIME = 92
    TIMESTAMP = 93
    TIMESTAMP_WITH_TIMEZONE = 2014
    BINARY = -2
    VARBINARY = -3
    LONGVARBINARY = -4
    BLOB = 2004
    BOOLEAN = 16
    SQLXML = 2009
    OTHER = 1111
    MICROSOFT_DATETIMEOFFSET = -155  # SQL Server's own code for datetimeoffset
