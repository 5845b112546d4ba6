"""Numbers printed as Java prints them (``Double.toString``, ``Float.toString``,
``BigDecimal.toString``), where a consumer sees the text a Java object gave: Kafka Connect's
SimpleHeaderConverter, and pgjdbc's geometric types that Debezium writes as their text."""
from __future__ import annotations

import math
import struct
from decimal import Decimal


def java_big_decimal(unscaled: int, scale: int) -> str:
    """``BigDecimal.toString()``: plain unless the exponent is positive or below -6 (then 1.23E-7)."""
    digits = str(abs(unscaled))
    sign = "-" if unscaled < 0 else ""
    adjusted = len(digits) - 1 - scale
    if scale >= 0 and adjusted >= -6:
        if scale == 0:
            return sign + digits
        if len(digits) > scale:
            return sign + digits[:-scale] + "." + digits[-scale:]
        return sign + "0." + "0" * (scale - len(digits)) + digits
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}E{'+' if adjusted > 0 else ''}{adjusted}"


def _java_floating(value: float, digits: str, exponent: int) -> str:
    """Java's Float/Double.toString from the shortest decimal digits and the exponent of the first."""
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if 1e-3 <= abs(value) < 1e7:
        if exponent >= 0:
            whole, fraction = digits[:exponent + 1].ljust(exponent + 1, "0"), digits[exponent + 1:]
        else:
            whole, fraction = "0", "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def _shortest(text: str) -> tuple[str, int]:
    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    joined = "".join(map(str, digits))
    return joined, exponent + len(joined) - 1


def java_double(value: float) -> str:
    """``Double.toString``: 1.5, 1.0E10, 1.0E-5 (shortest round-trip digits)."""
    special = _special(value)
    if special is not None:
        return special
    return _java_floating(value, *_shortest(repr(abs(value))))


def java_float(value: float) -> str:
    """``Float.toString``: the shortest digits that read back as the same 32-bit float."""
    special = _special(value)
    if special is not None:
        return special
    single = _float32(value)
    if single is None:
        return java_double(value)  # not a float's value: Connect would have refused it before
    for precision in range(1, 10):
        text = f"{abs(single):.{precision}g}"
        if _float32(float(text)) == abs(single):
            break
    return _java_floating(single, *_shortest(text))


def _float32(value: float) -> float | None:
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:  # rounds past the largest float
        return None
