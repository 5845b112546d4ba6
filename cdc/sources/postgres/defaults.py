"""Column defaults as Debezium puts them in the value schema (``PostgresDefaultValueConverter``),
and the values of columns a key-only old tuple leaves out.

Debezium reads the catalog's default expression (``pg_get_expr``) with a parser per type name:

* a default that starts with a function call (``now()``, ``gen_random_uuid()``, ``(random() < 2)``,
  ``md5('x'::text)``) or is ``CURRENT_DATE``/``LOCALTIME``/... becomes the type's *placeholder*
  (``1970-01-01T00:00:00.000000Z`` for timestamptz, ``00000000-0000-0000-0000-000000000000`` for
  uuid, ``{}`` for json, ``0`` for numbers, ``""`` for text...), nullable column or not;
* any other default is its first quoted literal (``'dflt'::text`` -> ``dflt``, also inside a
  ``CASE``), else its text as it is (``1.5``, ``true``), converted like a value of the column; a
  text that does not convert (``CASE WHEN ... THEN 2 ... END`` for an int) gives no default;
* a type without a parser (bytea, money, inet, arrays, timetz, tsvector, geometric types...)
  never has a default.

Each rule here was checked against Debezium 3.6.1's output (tests/conformance/workloads/pg_defaults*.sql).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

NO_DEFAULT = object()

# The first quoted literal. Debezium's pattern, '(.*?)', stops at a doubled quote ('it''s' -> it);
# cdc reads the literal whole (docs/debezium-differences.md).
_LITERAL = re.compile(r"'((?:[^']|'')*)'")
_FUNCTION = re.compile(r"[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")  # FUNCTION_DEFAULT_PATTERN, at the start
_CURRENT = frozenset(("current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"))
# Types whose default text Debezium trims before parsing.
_TRIMMED = frozenset(("bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4", "int8", "uuid",
                      "date", "time", "timestamp", "timestamptz", "interval"))
# Types Debezium reads "NULL::type" of as no default (the others read it as the text "NULL::type").
_NULL_AWARE = frozenset(("bool", "numeric", "float4", "float8", "int2", "int4", "int8"))

# What Java's BigDecimal / Float.parseFloat / Integer.parseInt take: a default of a numeric type
# whose text is anything else (a CASE, an operator expression) has no default in Debezium.
_DECIMAL_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_NUMBER_TEXT = {"numeric": _DECIMAL_TEXT, "float4": _DECIMAL_TEXT, "float8": _DECIMAL_TEXT,
                "int2": _INTEGER_TEXT, "int4": _INTEGER_TEXT, "int8": _INTEGER_TEXT}

# Per type name Debezium has a parser for: the placeholder of a generated default, as PostgreSQL
# would print the value (so the column's own converter turns it into the event's form).
_PLACEHOLDERS: dict[str, str] = {
    "bit": "00", "varbit": "0", "bool": "false", "bpchar": "", "varchar": "", "text": "",
    "numeric": "0.0", "float4": "0.0", "float8": "0.0", "int2": "0", "int4": "0", "int8": "0",
    "json": "{}", "jsonb": "{}", "xml": "", "uuid": "00000000-0000-0000-0000-000000000000",
    "date": "1970-01-01", "time": "00:00:00", "timestamp": "1970-01-01 00:00:00",
    "timestamptz": "1970-01-01 00:00:00+00", "interval": "00:00:00",
}

# The text of each kind's zero, for a NOT NULL column a key-only old tuple leaves out and that
# has no default (Debezium's converters fall back to these values).
_ZERO_TEXT: dict[str, str] = {
    "bool": "f", "int16": "0", "int32": "0", "int64": "0", "float32": "0", "float64": "0", "numeric": "0",
    "money": "0.00", "bytea": "\\x", "date": "1970-01-01", "time": "00:00:00", "timetz": "00:00:00+00",
    "timestamp": "1970-01-01 00:00:00", "timestamptz": "1970-01-01 00:00:00+00", "interval": "00:00:00",
    "point": "(0,0)",
}


def _text(type_name: str, expression: str, *, enum: bool) -> str | None | object:
    """The text Debezium parses a default as, None for a NULL default, NO_DEFAULT when it has none."""
    if enum:
        suffix = "::" + type_name
        if expression.endswith(suffix):
            quoted = expression[:-len(suffix)]
            if len(quoted) >= 2 and quoted[0] == quoted[-1] == "'":
                return quoted[1:-1]
        return NO_DEFAULT
    placeholder = _PLACEHOLDERS.get(type_name)
    if placeholder is None:
        return NO_DEFAULT  # "Mapper for type ... not found"
    if type_name in _TRIMMED:
        expression = expression.strip()
    if type_name in _NULL_AWARE and expression.startswith("NULL::"):
        return None
    if _FUNCTION.match(expression) or expression.lower() in _CURRENT:
        return placeholder
    if "'" not in expression:
        return None if expression.startswith("NULL::") else expression
    match = _LITERAL.search(expression)
    return match.group(1).replace("''", "'") if match else NO_DEFAULT


def default_value(expression: str | None, type_name: str, convert: Callable[[str], Any], *, enum: bool,
                  scale: int | None = None) -> Any:
    """The schema's ``default`` for a column of PostgreSQL type ``type_name``, or NO_DEFAULT.
    ``scale``: a numeric(p,s) column's s (Debezium widens a default's scale to it: -1.5 -> -1.50)."""
    if expression is None:
        return NO_DEFAULT
    text = _text(type_name, expression, enum=enum)
    if text is None or text is NO_DEFAULT:
        return NO_DEFAULT
    assert isinstance(text, str)
    number = _NUMBER_TEXT.get(type_name)
    if number is not None and not number.fullmatch(text):
        return NO_DEFAULT  # "Cannot parse column default value"
    if type_name == "numeric" and scale is not None and scale > 0:
        value = Decimal(text)
        if -value.as_tuple().exponent < scale:  # type: ignore[operator]
            text = f"{value:.{scale}f}"
    if type_name == "bool":
        text = "t" if text.lower() == "true" else "f"  # Boolean.parseBoolean: anything else is false
    try:
        value = convert(text)
    except (ValueError, TypeError, ArithmeticError, IndexError):
        return NO_DEFAULT  # Debezium: "Cannot parse column default value"
    if isinstance(value, dict):
        return NO_DEFAULT  # a struct (VariableScaleDecimal): "Struct can't be used as default value"
    return value


def zero(kind: str, schema: dict[str, Any], convert: Callable[[str], Any], scale: int | None = None) -> Any:
    """The value Debezium gives a NOT NULL column that a key-only old tuple leaves out and that has
    no default: its type's zero, in the column's own representation (``scale``: numeric(p,s)'s s, or
    money.fraction.digits for money)."""
    if kind == "money" and scale is not None and schema["type"] == "string":
        return f"{0:.{scale}f}"  # Debezium's fallback: BigDecimal.ZERO.setScale(digits).toString()
    text = _ZERO_TEXT.get(kind)
    if text is not None and kind == "numeric" and scale:
        text = "0." + "0" * scale if scale > 0 else text
    if text is not None:
        try:
            return convert(text)
        except (ValueError, TypeError, ArithmeticError, IndexError):
            pass
    if kind == "array":
        return []
    return {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float": 0.0, "double": 0.0, "boolean": False,
            "string": "", "bytes": "", "array": [], "map": {}}.get(schema["type"])
