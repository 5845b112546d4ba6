"""Column defaults as Debezium puts them in the value schema (``PostgresDefaultValueConverter``).

A constant default (``'dflt'::text``, ``1.5``, ``'2024-01-01'::date``, ``true``) becomes the
schema's ``default``, converted like a value of the column. A default that is an expression
(``nextval(...)``, ``now()``) has no value Debezium can know: a NOT NULL column then gets its
type's zero (``0``, ``""``, ``false``), a nullable one no default.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_CASTS = r"(?:::[\w\s\".\[\]()]+?)*"
_STRING = re.compile(r"'((?:[^']|'')*)'" + _CASTS)
_NUMBER = re.compile(r"\(?([+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\)?" + _CASTS)
_NULL = re.compile(r"NULL" + _CASTS, re.IGNORECASE)
_BOOLEAN = {"true": "t", "false": "f"}

NO_DEFAULT = object()


def literal(expression: str) -> str | None | object:
    """The text a constant default stands for, None for NULL, NO_DEFAULT for an expression."""
    text = expression.strip()
    if _NULL.fullmatch(text):
        return None
    match = _STRING.fullmatch(text)
    if match:
        return match.group(1).replace("''", "'")
    match = _NUMBER.fullmatch(text)
    if match:
        return match.group(1)
    if text.lower() in _BOOLEAN:
        return text.lower()
    return NO_DEFAULT


def zero(schema: dict[str, Any]) -> Any:
    """The value of a type Debezium falls back to for NOT NULL columns."""
    if schema.get("name") == "org.apache.kafka.connect.data.Decimal":
        return "AA=="  # BigDecimal.ZERO's unscaled bytes
    return {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float": 0.0, "float32": 0.0, "float64": 0.0,
            "double": 0.0, "boolean": False, "string": "", "bytes": "", "array": []}.get(schema["type"])


def default_value(expression: str | None, schema: dict[str, Any], convert: Callable[[str], Any],
                  *, is_bool: bool) -> Any:
    """The schema's ``default`` for a column, or NO_DEFAULT."""
    if expression is None:
        return NO_DEFAULT
    text = literal(expression)
    if text is None:
        return NO_DEFAULT
    if text is not NO_DEFAULT:
        assert isinstance(text, str)
        if is_bool:
            text = _BOOLEAN.get(text.lower(), text)
        try:
            return convert(text)
        except (ValueError, TypeError, ArithmeticError):
            pass
    if schema.get("optional", True):
        return NO_DEFAULT
    value = zero(schema)
    return NO_DEFAULT if value is None else value
