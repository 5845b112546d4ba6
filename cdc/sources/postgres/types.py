"""PostgreSQL column types -> Debezium's Kafka Connect schemas and value converters.

Values arrive in each type's TEXT output (what pgoutput sends in 't' columns and ``COPY TO``
writes). The connection pins the settings that shape that text (``DateStyle=ISO``,
``IntervalStyle=postgres``, ``TimeZone=UTC``, ``bytea_output=hex``, ``extra_float_digits=1``:
see ``connection.py``), but the converters also read other offsets than ``+00``, ``infinity``,
BC and five-digit years, bytea's escape form and float text that is not the shortest.
A column's value kind is chosen once (``value_kind``, under the type modes) and both its converter
(``converter_of``) and the compiled codec's writer (``codec_kind``) follow from it, so each value
costs one call and no type dispatch.
The caller handles SQL NULL itself.

What Debezium 3.6 emits (checked against its pg-types output and PostgresValueConverter):

| PostgreSQL                 | Connect type / semantic name; JSON payload value                        |
|----------------------------|-------------------------------------------------------------------------|
| bool                       | boolean                                                                 |
| int2 / int4 / int8, oid    | int16 / int32 / int64                                                   |
| float4 / float8            | float (Java's shortest float repr) / double; NaN, ±Infinity as strings  |
| numeric(p,s)               | bytes ``org.apache.kafka.connect.data.Decimal`` {scale, precision}      |
| numeric                    | struct ``io.debezium.data.VariableScaleDecimal`` (trailing 0s stripped) |
| money                      | bytes ``Decimal`` {scale: money.fraction.digits}                        |
|   decimal.handling.mode    | precise (above; NaN -> null) / double / string ("NAN", "POSITIVE_INF…") |
| char, varchar, bpchar,     | string                                                                  |
|   text, name, inet, cidr,  |                                                                         |
|   macaddr(8), ranges       |                                                                         |
| bytea                      | bytes (base64 in JSON) / base64 / base64-url-safe / hex strings         |
| bit(1), varbit(1) / bit(n) | boolean / bytes ``io.debezium.data.Bits`` {length} (little-endian)      |
| date                       | int32 ``io.debezium.time.Date`` (days)                                  |
| time(p)                    | int32 ``io.debezium.time.Time`` ms (p<=3) / int64 ``MicroTime`` µs      |
| timetz                     | string ``io.debezium.time.ZonedTime`` in UTC, "08:15:30.5Z"             |
| timestamp(p)               | int64 ``io.debezium.time.Timestamp`` ms (p<=3) / ``MicroTimestamp`` µs  |
| timestamptz(p)             | string ``io.debezium.time.ZonedTimestamp`` in UTC, p fraction digits    |
| interval                   | int64 ``io.debezium.time.MicroDuration`` (month = 30.4375 days)         |
|                            | / string ``io.debezium.time.Interval`` 'P1Y2M3DT4H5M6.789S'             |
| uuid / json, jsonb / xml   | string ``io.debezium.data.Uuid`` / ``Json`` / ``Xml``                   |
| tsvector                   | string ``io.debezium.data.Tsvector``                                    |
| point                      | struct ``io.debezium.data.geometry.Point`` {x, y, wkb, srid}            |
| enum                       | string ``io.debezium.data.Enum`` {allowed: "a,b,c"}                     |
| T[]                        | array of T's schema, elements optional (enum elements: not optional)   |
| domain                     | its base type, with the domain's typmod                                 |
| anything else (box, tsquery,| left out (include.unknown.datatypes=false, the default, as Debezium);  |
|   pg_lsn, txid_snapshot...)| else the bytes of its text, under binary.handling.mode                  |

time.precision.mode: ``adaptive`` (above), ``adaptive_time_microseconds`` (every time is
MicroTime), ``connect`` (``org.apache.kafka.connect.data.Date``/``Time``/``Timestamp``, ms),
``microseconds``, ``nanoseconds`` (``NanoTime``/``NanoTimestamp``), ``isostring``
(``IsoDate``/``IsoTime``/``IsoTimestamp`` strings). timetz/timestamptz are zoned strings in
every mode. ``infinity`` follows Debezium: timestamptz gives "infinity"/"-infinity", timestamp
gives pgjdbc's DATE_POSITIVE/NEGATIVE_INFINITY instant (µs 9223372036825200000), date gives
the LocalDate Debezium uses for it.
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any, ClassVar

from cdc.core import type_rules as rules
from cdc.core.encodings import decimal_bytes, float32, to_float32
from cdc.core.java_format import java_double
from cdc.core.type_modes import TypeModes as CoreTypeModes

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "Converter", "PgType", "TypeModes", "TypeRegistry", "ValueKind", "builtin_type", "codec_kind", "converter_of",
    "field_schema", "parse_array", "text_converter", "value_kind",
]

Converter = Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class PgType:
    oid: int
    name: str  # pg_type.typname: 'int4', 'numeric', '_int4', 'mood', 'bpchar'
    category: str  # pg_type.typcategory ('N', 'S', 'A', 'E', 'D', 'B', 'U', ...)
    typtype: str  # 'b' base, 'e' enum, 'd' domain, 'c' composite, 'r' range, 'p' pseudo
    enum_values: tuple[str, ...] = ()
    element: PgType | None = None  # arrays
    base: PgType | None = None  # domains
    schema: str = "pg_catalog"
    # A domain's own typmod (pg_type.typtypmod), e.g. numeric(10,2): a column of the domain has
    # atttypmod -1, and Debezium takes precision/scale from the domain.
    base_typmod: int = -1


@dataclass(frozen=True, slots=True)
class TypeModes(CoreTypeModes):
    interval_handling_mode: str = "numeric"  # numeric | string (ISO-8601 'P1Y2M3DT4H5M6.789S')
    hstore_handling_mode: str = "json"  # json (a JSON object as text) | map
    include_unknown_datatypes: bool = False  # types Debezium has no mapping for: left out, or their text
    money_fraction_digits: int = 2  # money.fraction.digits: the scale of money values under precise

    ALLOWED: ClassVar[dict[str, tuple[str, ...]]] = {
        **CoreTypeModes.ALLOWED,
        "time_precision_mode": ("adaptive", "adaptive_time_microseconds", "connect", "microseconds",
                                "nanoseconds", "isostring"),
        "interval_handling_mode": ("numeric", "string"),
        "hstore_handling_mode": ("json", "map"),
    }


# ---- built-in types ---------------------------------------------------------------------------

_BUILTIN_NAMES: dict[int, tuple[str, str]] = {
    16: ("bool", "B"), 17: ("bytea", "U"), 18: ("char", "Z"), 19: ("name", "S"), 20: ("int8", "N"),
    21: ("int2", "N"), 23: ("int4", "N"), 25: ("text", "S"), 26: ("oid", "N"), 114: ("json", "U"),
    142: ("xml", "U"), 650: ("cidr", "I"), 700: ("float4", "N"), 701: ("float8", "N"), 774: ("macaddr8", "U"),
    790: ("money", "N"), 829: ("macaddr", "U"), 869: ("inet", "I"), 1042: ("bpchar", "S"), 1043: ("varchar", "S"),
    1082: ("date", "D"), 1083: ("time", "D"), 1114: ("timestamp", "D"), 1184: ("timestamptz", "D"),
    1186: ("interval", "T"), 1266: ("timetz", "D"), 1560: ("bit", "V"), 1562: ("varbit", "V"),
    1700: ("numeric", "N"), 2950: ("uuid", "U"), 3614: ("tsvector", "U"), 3802: ("jsonb", "U"),
}
# array OID -> element OID
_BUILTIN_ARRAYS: dict[int, int] = {
    1000: 16, 1001: 17, 1002: 18, 1003: 19, 1016: 20, 1005: 21, 1007: 23, 1009: 25, 1028: 26, 199: 114, 143: 142,
    651: 650, 1021: 700, 1022: 701, 775: 774, 791: 790, 1040: 829, 1041: 869, 1014: 1042, 1015: 1043, 1182: 1082,
    1183: 1083, 1115: 1114, 1185: 1184, 1187: 1186, 1270: 1266, 1561: 1560, 1563: 1562, 1231: 1700, 2951: 2950,
    3643: 3614, 3807: 3802,
}
_BUILTINS: dict[int, PgType] = {oid: PgType(oid, name, cat, "b") for oid, (name, cat) in _BUILTIN_NAMES.items()}
_BUILTINS.update({oid: PgType(oid, "_" + _BUILTINS[elem].name, "A", "b", element=_BUILTINS[elem])
                  for oid, elem in _BUILTIN_ARRAYS.items()})


def builtin_type(oid: int) -> PgType | None:
    """The common built-in types (and their arrays), known without a catalog query."""
    return _BUILTINS.get(oid)


# ---- classification ---------------------------------------------------------------------------

# typname -> kind; the kind picks both the schema and the converter.
_KINDS: dict[str, str] = {
    "bool": "bool", "int2": "int16", "int4": "int32", "int8": "int64", "oid": "int64",
    "float4": "float32", "float8": "float64", "numeric": "numeric", "money": "money", "bytea": "bytea",
    "bit": "bit", "varbit": "varbit", "date": "date", "time": "time", "timetz": "timetz",
    "timestamp": "timestamp", "timestamptz": "timestamptz", "interval": "interval", "uuid": "uuid",
    "json": "json", "jsonb": "json", "xml": "xml", "tsvector": "tsvector", "point": "point",
}
# Base types Debezium writes as their text; any other base type without a kind above is one it has
# no mapping for ("unknown": box, circle, tsquery, pg_lsn, txid_snapshot, regclass...).
_TEXT_TYPES = frozenset(("bpchar", "varchar", "text", "name", "char", "inet", "cidr", "macaddr", "macaddr8",
                         "citext", "ltree", "int2vector", "oidvector"))
# Parsed as PostgreSQL arrays only when their category is 'A' and they are not these
# space-separated vector types.
_NOT_ARRAYS = frozenset(("int2vector", "oidvector"))


def _resolve(pg_type: PgType, typmod: int) -> tuple[PgType, int]:
    """A domain's base type (and the domain's typmod when the column has none)."""
    while pg_type.typtype == "d" and pg_type.base is not None:
        if typmod < 0:
            typmod = pg_type.base_typmod
        pg_type = pg_type.base
    return pg_type, typmod


def _kind(t: PgType) -> str:
    if t.element is not None and t.category == "A" and t.name not in _NOT_ARRAYS:
        return "array"
    if t.typtype == "e":
        return "enum"
    if t.typtype == "m":
        return "unknown"  # multiranges: Debezium 3.6 has no mapping and leaves the column out
    if t.typtype != "b":
        return "string"  # composite, range, pseudo: the text form
    if t.name == "hstore":
        return "hstore"
    if t.name in _TEXT_TYPES:
        return "string"
    return _KINDS.get(t.name, "unknown")


def column_kind(pg_type: PgType, typmod: int) -> str:
    """What a column is, for the rules outside this module: "array", "bytea", "bool", "unknown"..."""
    return _kind(_resolve(pg_type, typmod)[0])


def _time_precision(typmod: int) -> int:
    """Fractional-second digits of time/timetz/timestamp/timestamptz (-1: the default 6)."""
    return 6 if typmod < 0 else typmod


def _numeric_precision_scale(typmod: int) -> tuple[int, int] | None:
    if typmod < 4:
        return None
    packed = typmod - 4
    # The scale is an 11-bit signed field since PostgreSQL 15 (numeric(5,-2)).
    return (packed >> 16) & 0xFFFF, ((packed & 0x7FF) ^ 1024) - 1024


def numeric_scale(typmod: int) -> int | None:
    """The scale of a numeric(p,s) column; None for an unconstrained numeric."""
    ps = _numeric_precision_scale(typmod)
    return None if ps is None else ps[1]


def _bit_length(kind: str, typmod: int) -> int:
    if typmod >= 0:
        return typmod
    return 1 if kind == "bit" else 2**31 - 1  # varbit without a length: Integer.MAX_VALUE


# ---- value kinds ------------------------------------------------------------------------------

ValueKind = rules.ValueKind

# type kinds whose value kind takes no type mode
_PLAIN_KINDS = {"bool": "bool", "int16": "int", "int32": "int", "int64": "int", "float32": "float32",
                "float64": "float64", "timetz": "zoned_time", "point": "point"}


def value_kind(pg_type: PgType, typmod: int, modes: TypeModes) -> ValueKind:
    """What a column's values are under the type modes (time.precision.mode, decimal.handling.mode,
    binary.handling.mode, interval/hstore handling...): the one choice per column, the core kinds of
    cdc.core.type_rules.ValueKind and PostgreSQL's own (money, interval, hstore, point, array,
    unknown). The Python converter (``converter_of``) and the compiled codec's writer
    (``codec_kind``) are both derived from it."""
    t, typmod = _resolve(pg_type, typmod)
    kind = _kind(t)
    if kind in _PLAIN_KINDS:
        return ValueKind(_PLAIN_KINDS[kind])
    if kind == "array":
        assert t.element is not None
        element, element_typmod = _resolve(t.element, typmod)
        delimiter = ";" if element.name == "box" else ","  # box is the one built-in with typdelim ';'
        # Enum elements' schema is not optional (Debezium's): with a NULL element the array as a
        # whole is null, as Debezium writes it, or a Connect consumer refuses the record.
        return ValueKind("array", (value_kind(element, element_typmod, modes), delimiter, _kind(element) == "enum"))
    if kind == "numeric":
        return _numeric_kind(typmod, modes.decimal_handling_mode)
    if kind == "money":
        return ValueKind("money", (modes.decimal_handling_mode, modes.money_fraction_digits))
    if kind == "bytea":
        return ValueKind("binary", modes.binary_handling_mode)
    if kind in ("bit", "varbit"):
        return ValueKind("bits" if _bit_length(kind, typmod) > 1 else "bit")
    if kind in ("date", "time", "timestamp", "timestamptz"):
        return _temporal_kind(kind, _time_precision(typmod), modes.time_precision_mode)
    if kind == "interval":
        return ValueKind("interval", "iso" if modes.interval_handling_mode == "string" else "micros")
    if kind == "hstore":
        return ValueKind("hstore", modes.hstore_handling_mode)
    if kind == "unknown":  # with include.unknown.datatypes: the bytes of its text
        return ValueKind("unknown", (t.name, modes.binary_handling_mode))
    return ValueKind("text")  # enum, strings, uuid, json (jsonb: the server's text form), xml, inet, ...


def _numeric_kind(typmod: int, mode: str) -> ValueKind:
    if mode == "string":
        return ValueKind("decimal_string")
    if mode == "double":
        return ValueKind("decimal_double")
    ps = _numeric_precision_scale(typmod)
    return ValueKind("variable_decimal") if ps is None else ValueKind("decimal", ps[1])


def _temporal_kind(kind: str, precision: int, mode: str) -> ValueKind:
    if kind == "date":
        return ValueKind("date", "iso" if mode == "isostring" else "days")
    if kind == "time":
        return ValueKind("time", rules.time_unit(mode, precision))
    if kind == "timestamp":
        return ValueKind("timestamp", rules.timestamp_unit(mode, precision))
    return ValueKind("zoned_timestamp", min(precision, 6))  # timestamptz: PostgreSQL keeps at most 6 digits


# ---- schemas ----------------------------------------------------------------------------------

_semantic = rules.semantic
_plain = rules.plain


def field_schema(pg_type: PgType, typmod: int, optional: bool, modes: TypeModes, dims: int = 1
                 ) -> dict[str, Any] | None:
    """The Connect schema of a column as Debezium's JSON converter prints it (without "field"), or
    None for a type Debezium leaves out (``include.unknown.datatypes=false``). An array declared
    with ``dims`` > 1 dimensions (int[][]) is an array of arrays (Debezium: one level, whose
    elements come out null)."""
    t, typmod = _resolve(pg_type, typmod)
    kind = _kind(t)
    if kind == "unknown":  # with include.unknown.datatypes, the bytes of its text
        if not modes.include_unknown_datatypes:
            return None
        return rules.binary_schema(modes.binary_handling_mode, optional)
    if kind == "hstore":
        if modes.hstore_handling_mode == "map":
            return {"type": "map", "keys": {"type": "string", "optional": False},
                    "values": {"type": "string", "optional": True}, "optional": optional}
        return _semantic("string", optional, "io.debezium.data.Json")
    if kind == "array":
        assert t.element is not None
        element, element_typmod = _resolve(t.element, typmod)
        if _kind(element) == "xml":
            return None  # xml[]: no mapping in Debezium, left out as an unknown type
        # Debezium builds enum element schemas without .optional() (an upstream quirk we keep).
        items = field_schema(element, element_typmod, _kind(element) != "enum", modes)
        if items is None:
            return None
        for _ in range(dims - 1):
            items = {"type": "array", "items": items, "optional": True}
        return {"type": "array", "items": items, "optional": optional}
    if kind == "enum":
        return _semantic("string", optional, "io.debezium.data.Enum", {"allowed": ",".join(t.enum_values)})
    if kind in ("bool", "int16", "int32", "int64"):
        return _plain("boolean" if kind == "bool" else kind, optional)
    if kind == "float32":
        return _plain("float", optional)
    if kind == "float64":
        return _plain("double", optional)
    if kind in ("numeric", "money"):
        mode = modes.decimal_handling_mode
        if kind == "money":  # a Decimal without a precision parameter, as Debezium's
            return rules.decimal_schema(mode, None, modes.money_fraction_digits, optional)
        ps = _numeric_precision_scale(typmod)
        if ps is None:
            return rules.variable_decimal_schema(mode, optional)
        return rules.decimal_schema(mode, ps[0], ps[1], optional)
    if kind == "bytea":
        return rules.binary_schema(modes.binary_handling_mode, optional)
    if kind in ("bit", "varbit"):
        return rules.bits_schema(_bit_length(kind, typmod), optional)
    if kind == "date":
        return rules.date_schema(modes.time_precision_mode, optional)
    if kind == "time":
        return rules.time_schema(modes.time_precision_mode, _time_precision(typmod), optional)
    if kind == "timestamp":
        return rules.timestamp_schema(modes.time_precision_mode, _time_precision(typmod), optional)
    if kind == "timetz":
        return rules.zoned_time_schema(optional)
    if kind == "timestamptz":
        return rules.zoned_timestamp_schema(optional)
    if kind == "interval":
        if modes.interval_handling_mode == "string":
            return _semantic("string", optional, "io.debezium.time.Interval")
        return _semantic("int64", optional, "io.debezium.time.MicroDuration")
    if kind == "uuid":
        return _semantic("string", optional, "io.debezium.data.Uuid")
    if kind == "json":
        return _semantic("string", optional, "io.debezium.data.Json")
    if kind == "xml":
        return _semantic("string", optional, "io.debezium.data.Xml")
    if kind == "tsvector":
        return _semantic("string", optional, "io.debezium.data.Tsvector")
    if kind == "point":
        return rules.point_schema(optional)
    return _plain("string", optional)


# ---- numbers ----------------------------------------------------------------------------------

_b64encode = base64.b64encode


_unscaled_bytes = decimal_bytes


def _json_double(value: float) -> Any:
    """Jackson writes non-finite doubles as the strings "NaN", "Infinity", "-Infinity"."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return value


_FLOAT_SPECIAL: dict[str, str] = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}


def _float64(text: str) -> Any:
    special = _FLOAT_SPECIAL.get(text)
    return special if special is not None else float(text)


def _float32(text: str) -> Any:
    special = _FLOAT_SPECIAL.get(text)
    if special is not None:
        return special
    f = to_float32(text)
    if not math.isfinite(f):
        return "Infinity" if f > 0 else "-Infinity"
    return float32(text)


_NUMERIC_SPECIAL_STRING = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}


def _numeric_string(text: str) -> str:
    """decimal.handling.mode=string: BigDecimal.toPlainString() of the value, which PostgreSQL's text
    already is; the special values print as SpecialValueDecimal's enum names."""
    return _NUMERIC_SPECIAL_STRING.get(text, text)


def _numeric_double(text: str) -> Any:
    """decimal.handling.mode=double."""
    special = _FLOAT_SPECIAL.get(text)
    return special if special is not None else _json_double(float(text))


def _variable_decimal(text: str) -> Any:
    """numeric without a scale, precise: VariableScaleDecimal of BigDecimal.stripTrailingZeros(),
    negative scales set to 0."""
    if text in _FLOAT_SPECIAL:
        return None  # Debezium cannot encode NaN/Infinity here: it logs and writes null
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0")
    unscaled = int(whole + fraction) if fraction else int(whole)
    return {"scale": len(fraction), "value": _unscaled_bytes(unscaled)}


def _fixed_decimal(scale: int) -> Converter:
    """numeric(p, s), precise: Connect's Decimal of scale s."""
    quantum = Decimal(1).scaleb(-scale)

    def fixed(text: str) -> Any:
        # numeric(p,s) prints exactly s fraction digits: drop the point to get the unscaled value.
        whole, _, fraction = text.partition(".")
        if fraction and len(fraction) == scale:
            return _unscaled_bytes(int(whole + fraction))
        if text in _FLOAT_SPECIAL:
            return None  # Debezium cannot encode NaN/Infinity in a Decimal: it logs and writes null
        if not scale and not fraction and "." not in text:
            return _unscaled_bytes(int(text))
        value = Decimal(text).quantize(quantum, rounding=ROUND_HALF_UP)
        return _unscaled_bytes(int(value.scaleb(scale)))
    return fixed


_MONEY_JUNK = re.compile(r"[^0-9.,]")
# Fraction digits of money's text under the usual lc_monetary (C, en_US...): how the parser tells a
# decimal point from a group separator. The scale of events is money.fraction.digits, not this.
_MONEY_TEXT_DIGITS = 2


def _money_parts(text: str, fraction_digits: int) -> tuple[bool, str, str]:
    """(negative, integer digits, fraction digits) of money's locale-dependent text form:
    '$1,234.56', '-$0.99', '($5.00)', '1.234,56 €', '-1 234,56 zł', '¥1,235'."""
    negative = "-" in text or "(" in text
    core = _MONEY_JUNK.sub("", text).strip(".,")  # also drops dots of symbols like 'kr.'
    pos = max(core.rfind("."), core.rfind(","))
    integer, fraction = core, ""
    if pos >= 0:
        tail, head, sep = core[pos + 1:], core[:pos], core[pos]
        other = "," if sep == "." else "."
        # The last separator is the decimal point if it has the locale's fraction digits after it,
        # or follows group separators of the other kind, or is the only one and not a 3-digit group.
        if (fraction_digits > 0 and len(tail) == fraction_digits) or other in head \
                or (sep not in head and len(tail) != 3):
            integer, fraction = head, tail
    integer = integer.replace(".", "").replace(",", "").lstrip("0") or "0"
    if negative and integer == "0" and not fraction.strip("0"):
        negative = False  # BigDecimal has no negative zero
    return negative, integer, fraction


def _money_converter(mode: str, digits: int) -> Converter:
    """money under decimal.handling.mode ``mode``: precise is a Decimal of scale ``digits``
    (money.fraction.digits, rounded HALF_UP as Debezium's setScale); double and string are the
    value as the server prints it, whatever ``digits`` says (as Debezium's)."""
    def plain(text: str) -> str:
        negative, integer, fraction = _money_parts(text, _MONEY_TEXT_DIGITS)
        return ("-" if negative else "") + integer + ("." + fraction if fraction else "")

    if mode == "string":
        return plain
    if mode == "double":
        return lambda text: float(plain(text))

    quantum = Decimal(1).scaleb(-digits)

    def precise(text: str) -> str:
        negative, integer, fraction = _money_parts(text, _MONEY_TEXT_DIGITS)
        if len(fraction) == digits:
            unscaled = int(integer + fraction)
        else:  # setScale(money fraction digits, HALF_UP)
            value = Decimal(integer + "." + (fraction or "0")).quantize(quantum, rounding=ROUND_HALF_UP)
            unscaled = int(value.scaleb(digits))
        return _unscaled_bytes(-unscaled if negative else unscaled)
    return precise


# ---- binary -----------------------------------------------------------------------------------

def _bytea(text: str) -> bytes:
    if text.startswith("\\x"):
        return bytes.fromhex(text[2:])
    return _unescape_bytea(text)


def _unescape_bytea(text: str) -> bytes:
    """bytea's 'escape' output: \\ooo octal, \\\\ a backslash, other bytes as themselves."""
    raw = text.encode()  # the escape form is ASCII: bytes >= 0x7f are octal escapes
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == 0x5C and raw[i + 1:i + 2] == b"\\":
            out.append(0x5C)
            i += 2
        elif c == 0x5C:
            out.append(int(raw[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(c)
            i += 1
    return bytes(out)


def _binary_converter(mode: str) -> Converter:
    if mode == "hex":
        return lambda text: text[2:].lower() if text.startswith("\\x") else _unescape_bytea(text).hex()
    if mode == "base64-url-safe":
        return lambda text: base64.urlsafe_b64encode(_bytea(text)).decode()
    # bytes (Connect bytes are base64 in JSON) and base64 look the same in the payload
    return lambda text: _b64encode(_bytea(text)).decode()


def _point(text: str) -> dict[str, Any]:
    """'(x,y)' as Debezium's Point: the coordinates and their WKB (little-endian, type 1), no SRID."""
    x_text, _, y_text = text.strip("()").partition(",")
    x, y = float(x_text), float(y_text)
    return {"x": x, "y": y, "wkb": _b64encode(struct.pack("<BIdd", 1, 1, x, y)).decode(), "srid": None}


# Geometric types pgjdbc reads into objects (PGbox...) whose text Debezium writes: every number
# as Java's Double.toString prints it ('(1,1),(0,0)' -> '(1.0,1.0),(0.0,0.0)').
_PGJDBC_GEOMETRIC = frozenset(("box", "circle", "line", "lseg", "path", "polygon"))
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _text_bytes(type_name: str, mode: str) -> Converter:
    """A type Debezium has no mapping for, with include.unknown.datatypes: its text's bytes."""
    encode = _binary_converter(mode)
    if type_name in _PGJDBC_GEOMETRIC:
        return lambda text: encode("\\x" + _NUMBER.sub(lambda m: java_double(float(m.group())), text).encode().hex())
    return lambda text: encode("\\x" + text.encode().hex())


def _bits_converter(text: str) -> str:
    """BitSet.toByteArray() of the bit string: little-endian, as few bytes as the highest 1 needs."""
    value = int(text, 2) if text else 0
    return _b64encode(value.to_bytes((value.bit_length() + 7) // 8, "little")).decode()


def _bit_bool(text: str) -> bool:
    return "1" in text


# ---- dates and times --------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1)
_EPOCH_TZ = datetime(1970, 1, 1, tzinfo=UTC)
_UTC = UTC
_ONE_US = timedelta(microseconds=1)
_EPOCH_ORDINAL = 719163  # date(1970, 1, 1).toordinal()
_DAY_US = 86_400_000_000
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# pgjdbc's PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY, which Debezium turns 'infinity'
# timestamps into (as epoch microseconds).
_TS_POS_INFINITY_US = 9223372036825200000
_TS_NEG_INFINITY_US = -9223372036832400000
# Debezium 3.6.1's values for date infinity and -infinity (recorded in tests/conformance), as epoch days.
_DATE_POS_INFINITY_DAYS = -2147472692
_DATE_NEG_INFINITY_DAYS = -2147472691


def _saturate(value: int) -> int:
    """Java's (long) cast of a double: past the int64 range it stays at Long.MIN/MAX_VALUE. An
    int64 field cannot hold more, and the JSON converter refuses a larger integer."""
    return _INT64_MAX if value > _INT64_MAX else _INT64_MIN if value < _INT64_MIN else value


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01, proleptic Gregorian, astronomical years (1 BC = 0); any year."""
    year -= month <= 2
    era = year // 400  # Python's // floors already (the C original subtracts 399)
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


def _iso_year(year: int) -> str:
    """java.time's ISO year: 4 digits, '+' beyond 9999, '-' before year 0."""
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def _fraction(micros: int, width: int | None) -> str:
    """Fraction of a second: exactly `width` digits, or (None) trimmed and none if zero."""
    if width is None:
        return "." + f"{micros:06d}".rstrip("0") if micros else ""
    if width <= 6:
        return "." + f"{micros:06d}"[:width]
    return "." + f"{micros:06d}" + "0" * (width - 6)


def _iso_datetime(micros: int, width: int | None) -> str:
    """Epoch microseconds as java.time prints a UTC date-time: '2024-02-29T11:45:30.123456Z'."""
    days, rest = divmod(micros, _DAY_US)
    seconds, fraction = divmod(rest, 1_000_000)
    year, month, day = _civil_from_days(days)
    return (f"{_iso_year(year)}-{month:02d}-{day:02d}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:"
            f"{seconds % 60:02d}{_fraction(fraction, width)}Z")


def _iso_time(micros: int) -> str:
    """Microseconds of a day as ISO_OFFSET_TIME at UTC: '08:15:30.5Z'."""
    seconds, fraction = divmod(micros % _DAY_US, 1_000_000)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}{_fraction(fraction, None)}Z"


_DATE_RE = re.compile(r"(\d{4,})-(\d\d)-(\d\d)( BC)?$")
_TS_RE = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d+))?"
    r"(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?( BC)?$"
)


def _date_days(text: str) -> int:
    try:
        return date.fromisoformat(text).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        pass
    if text == "infinity":
        return _DATE_POS_INFINITY_DAYS
    if text == "-infinity":
        return _DATE_NEG_INFINITY_DAYS
    match = _DATE_RE.match(text)
    if match is None:
        raise ValueError(f"unrecognised date {text!r}")
    year = int(match.group(1))
    if match.group(4):
        year = 1 - year  # 1 BC is year 0
    return _days_from_civil(year, int(match.group(2)), int(match.group(3)))


def _micros_of(fraction: str | None) -> int:
    return int(fraction[:6].ljust(6, "0")) if fraction else 0


def _slow_timestamp_micros(text: str) -> int:
    """BC dates and years past 9999 (datetime cannot hold them); an offset is applied."""
    match = _TS_RE.match(text)
    if match is None:
        raise ValueError(f"unrecognised timestamp {text!r}")
    year, month, day, hour, minute, second, fraction, sign, oh, om, os_, bc = match.groups()
    year_value = 1 - int(year) if bc else int(year)
    days = _days_from_civil(year_value, int(month), int(day))
    micros = (days * 86400 + int(hour) * 3600 + int(minute) * 60 + int(second)) * 1_000_000 + _micros_of(fraction)
    if sign:
        offset = int(oh) * 3600 + int(om or 0) * 60 + int(os_ or 0)
        micros -= (offset if sign == "+" else -offset) * 1_000_000
    return micros


def _timestamp_micros(text: str) -> int:
    """Epoch microseconds of a timestamp[tz] text (an offset, if any, is applied)."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return _slow_timestamp_micros(text)
    if parsed.tzinfo is None:
        return (parsed - _EPOCH) // _ONE_US
    return (parsed - _EPOCH_TZ) // _ONE_US


def _time_micros(text: str) -> int:
    """'13:45:30.123456' (up to '24:00:00') -> microseconds past midnight."""
    if len(text) >= 8 and text[2] == ":" and text[5] == ":":
        micros = (int(text[:2]) * 3600 + int(text[3:5]) * 60 + int(text[6:8])) * 1_000_000
        return micros + _micros_of(text[9:]) if len(text) > 9 else micros
    hours, minutes, rest = text.split(":", 2)
    seconds, _, fraction = rest.partition(".")
    return (int(hours) * 3600 + int(minutes) * 60 + int(seconds)) * 1_000_000 + _micros_of(fraction)


_TIMETZ_RE = re.compile(r"(.*?)([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?$")


def _zoned_time(text: str) -> str:
    """timetz in UTC, as ZonedTime prints it: '13:45:30.5+05:30' -> '08:15:30.5Z'."""
    match = _TIMETZ_RE.match(text)
    if match is None:
        return _iso_time(_time_micros(text))
    local, sign, oh, om, os_ = match.groups()
    offset = (int(oh) * 3600 + int(om or 0) * 60 + int(os_ or 0)) * 1_000_000
    return _iso_time(_time_micros(local) - (offset if sign == "+" else -offset))


def _time_converter(unit: str) -> Converter:
    """time in ``unit`` (rules.time_unit): "ms", "us", "ns" past midnight, or "iso" text."""
    if unit == "iso":
        return lambda text: _iso_time(_time_micros(text))  # LocalTime: 24:00:00 wraps to 00:00
    if unit == "ns":
        return lambda text: _time_micros(text) * 1000
    if unit == "ms":
        return lambda text: _time_micros(text) // 1000
    return _time_micros


def _timestamp_converter(unit: str) -> Converter:
    """timestamp in ``unit`` (rules.timestamp_unit): "ms", "us", "ns" since the epoch, or "iso" text."""
    if unit == "iso":
        def iso(text: str) -> str:
            if text == "infinity":
                return _iso_datetime(_TS_POS_INFINITY_US, None)
            if text == "-infinity":
                return _iso_datetime(_TS_NEG_INFINITY_US, None)
            return _iso_datetime(_timestamp_micros(text), None)
        return iso
    if unit == "ns":
        def nanos(text: str) -> int | None:
            if text == "infinity":
                return _INT64_MAX
            if text == "-infinity":
                return _INT64_MIN
            value = _timestamp_micros(text) * 1000
            # Debezium cannot represent it either (it logs and writes null).
            return value if _INT64_MIN <= value <= _INT64_MAX else None
        return nanos
    per = 1000 if unit == "ms" else 1  # microseconds per unit
    pos_infinity, neg_infinity = _TS_POS_INFINITY_US // per, _TS_NEG_INFINITY_US // per

    def epoch(text: str) -> int:
        try:
            return (datetime.fromisoformat(text) - _EPOCH) // _ONE_US // per
        except (ValueError, TypeError):
            pass
        if text == "infinity":
            return pos_infinity
        if text == "-infinity":
            return neg_infinity
        # past the int64 microsecond range near PostgreSQL's largest timestamp: saturated (Debezium
        # overflows into a wrong value)
        return _saturate(_slow_timestamp_micros(text) // per)
    return epoch


def _timestamptz_converter(precision: int) -> Converter:
    """timestamptz(``precision``) as ZonedTimestamp: exactly the column's scale in fraction digits
    (6 unless timestamptz(p)); scale 0 falls back to ISO_OFFSET_DATE_TIME, which trims."""
    width = precision if precision > 0 else None
    pad = "000000"

    def convert(text: str) -> str:
        # The connection pins TimeZone=UTC: 'YYYY-MM-DD hh:mm:ss[.ffffff]+00'.
        if text.endswith("+00") and text[4:5] == "-" and text[10:11] == " ":
            clock, _, fraction = text[11:-3].partition(".")
            if width is None:
                return f"{text[:10]}T{clock}{_fraction(_micros_of(fraction), None)}Z"
            return f"{text[:10]}T{clock}.{(fraction + pad)[:width]}Z"
        if text == "infinity" or text == "-infinity":
            return text
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return _iso_datetime(_slow_timestamp_micros(text), width)
        if moment.tzinfo is None:  # a timestamp without offset: read it as UTC
            moment = moment.replace(tzinfo=_UTC)
        return _iso_datetime((moment - _EPOCH_TZ) // _ONE_US, width)
    return convert


def _date_converter(form: str) -> Converter:
    """date as epoch "days" or "iso" text."""
    if form == "iso":
        def iso(text: str) -> str:
            year, month, day = _civil_from_days(_date_days(text))
            return f"{_iso_year(year)}-{month:02d}-{day:02d}Z"
        return iso
    return _date_days


# ---- intervals --------------------------------------------------------------------------------

_ISO_INTERVAL_PART = re.compile(r"(-?\d+(?:\.\d+)?)([YMDHS])")


def _seconds_micros(text: str) -> int:
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("+-").partition(".")
    micros = int(whole or 0) * 1_000_000 + _micros_of(fraction)
    return -micros if negative else micros


def _interval_fields(text: str) -> tuple[int, int, int, int, int, int]:
    """(years, months, days, hours, minutes, second-micros) as pgjdbc's PGInterval reads the text:
    IntervalStyle postgres '1 year 2 mons 3 days 04:05:06.789', postgres_verbose
    '@ 1 year 2 mons 3 days 4 hours 5 mins 6.789 secs ago' and iso_8601 'P1Y2M3DT4H5M6.789S'."""
    years = months = days = hours = minutes = micros = 0
    if text.startswith("P"):
        date_part, _, time_part = text[1:].partition("T")
        for amount, unit in _ISO_INTERVAL_PART.findall(date_part):
            if unit == "Y":
                years = int(amount)
            elif unit == "M":
                months = int(amount)
            elif unit == "D":
                days = int(amount)
        for amount, unit in _ISO_INTERVAL_PART.findall(time_part):
            if unit == "H":
                hours = int(amount)
            elif unit == "M":
                minutes = int(amount)
            elif unit == "S":
                micros = _seconds_micros(amount)
        return years, months, days, hours, minutes, micros
    verbose = text.startswith("@")
    tokens = text.replace("+", " ").replace("@", " ").lower().split()
    value: str | None = None
    for position, token in enumerate(tokens, 1):
        if position & 1:  # a number, or an 'hh:mm:ss' clock
            if ":" not in token:
                value = token
                continue
            negative = token.startswith("-")
            clock = token[1:] if negative else token
            hour_text, _, rest = clock.partition(":")
            hours, minutes = int(hour_text), int(rest[:2])
            micros = _seconds_micros(rest[3:]) if rest[2:3] == ":" else 0
            if negative:
                hours, minutes, micros = -hours, -minutes, -micros
            value = None
        elif value is not None:
            if token.startswith("year"):
                years = int(value)
            elif token.startswith("mon"):
                months = int(value)
            elif token.startswith("day"):
                days = int(value)
            elif token.startswith("hour"):
                hours = int(value)
            elif token.startswith("min"):
                minutes = int(value)
            elif token.startswith("sec"):
                micros = _seconds_micros(value)
    if verbose and text.endswith("ago"):
        return -years, -months, -days, -hours, -minutes, -micros
    return years, months, days, hours, minutes, micros


def _pginterval_seconds(micros: int) -> float:
    """PGInterval.getSeconds(): wholeSeconds + microSeconds / 1e6 (both truncated toward zero)."""
    whole = abs(micros) // 1_000_000
    if micros < 0:
        whole = -whole
    return whole + (micros - whole * 1_000_000) / 1_000_000


def _interval_micros(text: str) -> int:
    """MicroDuration.durationMicros in Java's double arithmetic, truncated like its (long) cast."""
    years, months, days, hours, minutes, micros = _interval_fields(text)
    number_of_days = (years * 12 + months) * (365.25 / 12.0) + days
    number_of_seconds = ((number_of_days * 24 + hours) * 60 + minutes) * 60 + _pginterval_seconds(micros)
    return _saturate(int(number_of_seconds * 1e6))


def _interval_iso(text: str) -> str:
    """io.debezium.time.Interval.toIsoString: 'P1Y2M3DT4H5M6.789S', every part always present."""
    years, months, days, hours, minutes, micros = _interval_fields(text)
    seconds = Decimal(repr(_pginterval_seconds(micros)))  # BigDecimal.valueOf(double)
    if seconds.as_tuple().exponent < -9:  # type: ignore[operator]
        seconds = seconds.quantize(Decimal("1e-9"), rounding=ROUND_DOWN)
    seconds_text = format(seconds.normalize(), "f") if seconds else "0"
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{seconds_text}S"


# ---- arrays -----------------------------------------------------------------------------------

def parse_array(text: str, delimiter: str = ",") -> list[Any]:
    """PostgreSQL array text ('{1,NULL,"a b",{2,3}}') -> nested lists of str / None."""
    start = text.index("{") if text.startswith("[") else 0  # '[0:1]={1,2}': explicit bounds
    # Fast path: one dimension and nothing quoted or escaped.
    if '"' not in text and "\\" not in text and text.count("{") == 1:
        body = text[start + 1:-1]
        if not body:
            return []
        return [None if item == "NULL" else item for item in body.split(delimiter)]
    return _parse_array_at(text, start, delimiter)[0]


_UNESCAPE = re.compile(r"\\(.)")


def _parse_array_at(text: str, i: int, delimiter: str) -> tuple[list[Any], int]:
    if text[i] != "{":
        raise ValueError(f"malformed array {text!r}")
    i += 1
    items: list[Any] = []
    n = len(text)
    while i < n:
        c = text[i]
        if c == "}":
            return items, i + 1
        if c == delimiter or c in " \t\n":
            i += 1
            continue
        if c == "{":
            item, i = _parse_array_at(text, i, delimiter)
            items.append(item)
        elif c == '"':
            i += 1
            chars: list[str] = []
            while text[i] != '"':
                if text[i] == "\\":
                    i += 1
                chars.append(text[i])
                i += 1
            items.append("".join(chars))
            i += 1
        else:
            start = i
            while text[i] != delimiter and text[i] != "}":
                i += 1
            token = text[start:i].strip()
            if token == "NULL":
                items.append(None)
            else:
                items.append(_UNESCAPE.sub(r"\1", token) if "\\" in token else token)
    raise ValueError(f"malformed array {text!r}")


def _array_converter(element: Converter, delimiter: str) -> Converter:
    def apply(items: list[Any]) -> list[Any]:
        return [None if v is None else (apply(v) if v.__class__ is list else element(v)) for v in items]

    def convert(text: str) -> list[Any]:
        return apply(parse_array(text, delimiter))
    return convert


# ---- converters -------------------------------------------------------------------------------

_HSTORE_PAIR = re.compile(r'\s*"((?:[^"\\]|\\.)*)"\s*=>\s*(?:"((?:[^"\\]|\\.)*)"|(NULL))\s*,?')


def _hstore_map(text: str) -> dict[str, str | None]:
    """hstore's text form ('"a"=>"1", "b"=>NULL') as a dict, in the server's order."""
    out: dict[str, str | None] = {}
    for match in _HSTORE_PAIR.finditer(text):
        key = re.sub(r"\\(.)", r"\1", match.group(1))
        out[key] = None if match.group(3) else re.sub(r"\\(.)", r"\1", match.group(2))
    return out


def _hstore_json(text: str) -> str:
    """hstore.handling.mode=json: compact JSON, as Jackson writes Debezium's map."""
    return json.dumps(_hstore_map(text), ensure_ascii=False, separators=(",", ":"))


def _bool(text: str) -> bool:
    return text == "t"


def _text(text: str) -> str:
    return text


def _array_of(element: ValueKind, delimiter: str, null_if_a_null: bool) -> Converter:
    convert = _array_converter(converter_of(element), delimiter)
    if null_if_a_null:
        return lambda text: None if None in (values := convert(text)) else values
    return convert


# value kind -> its converter, from the kind's parameter: no choice of its own (value_kind made it)
_CONVERTERS: dict[str, Callable[[Any], Converter]] = {
    "bool": lambda _: _bool,
    "int": lambda _: int,
    "float32": lambda _: _float32,
    "float64": lambda _: _float64,
    "text": lambda _: _text,
    "decimal": _fixed_decimal,
    "variable_decimal": lambda _: _variable_decimal,
    "decimal_double": lambda _: _numeric_double,
    "decimal_string": lambda _: _numeric_string,
    "money": lambda mode_digits: _money_converter(*mode_digits),
    "binary": _binary_converter,
    "bit": lambda _: _bit_bool,
    "bits": lambda _: _bits_converter,
    "date": _date_converter,
    "time": _time_converter,
    "timestamp": _timestamp_converter,
    "zoned_time": lambda _: _zoned_time,
    "zoned_timestamp": _timestamptz_converter,
    "interval": lambda form: _interval_iso if form == "iso" else _interval_micros,
    "hstore": lambda form: _hstore_map if form == "map" else _hstore_json,
    "point": lambda _: _point,
    "unknown": lambda name_mode: _text_bytes(*name_mode),
    "array": lambda param: _array_of(*param),
}


def converter_of(kind: ValueKind) -> Converter:
    """The function from a column's text output to the JSON-ready value Debezium writes, for its kind."""
    return _CONVERTERS[kind.name](kind.param)


def text_converter(pg_type: PgType, typmod: int, modes: TypeModes) -> Converter:
    """The function from a column's text output to the JSON-ready value Debezium writes."""
    return converter_of(value_kind(pg_type, typmod, modes))


# value kind -> the compiled codec's writer (cdc_native.RowCodec's kinds), for those without a parameter
_CODEC_WRITERS = {"bool": "bool", "int": "int", "float32": "float4", "float64": "float8", "text": "text",
                  "variable_decimal": "vdecimal"}
_CODEC_BINARY = {"bytes": "bytea", "base64": "bytea", "base64-url-safe": "bytea:url", "hex": "bytea:hex"}


def codec_kind(kind: ValueKind) -> str:
    """The compiled row codec's writer for values of this kind (what ``cdc_native.RowCodec`` takes:
    cdc.sources.postgres.native_rows); "python": the codec calls the column's converter and orjson.
    Derived from the kind alone: the codec writes a kind, or a parameter of it, or leaves it."""
    name, param = kind.name, kind.param
    if name in _CODEC_WRITERS:
        return _CODEC_WRITERS[name]
    if name == "decimal" and param >= 0:
        return f"decimal:{param}"
    if name == "binary":
        return _CODEC_BINARY.get(param, "python")
    if name == "date" and param == "days":
        return "date"
    if name in ("time", "timestamp") and param != "iso":
        return f"{name}:{param}"
    if name == "zoned_timestamp":
        return f"tstz:{param}"
    return "python"


def native_kind(pg_type: PgType, typmod: int, modes: TypeModes) -> str | None:
    """The codec's writer of a column when it is a decimal or a zoned timestamp with a fraction, else
    None (TableState.native_kinds); ``codec_kind(value_kind(...))`` is the codec's whole choice."""
    kind = codec_kind(value_kind(pg_type, typmod, modes))
    return kind if kind.startswith("decimal:") or (kind.startswith("tstz:") and kind != "tstz:0") else None


def unavailable_value(pg_type: PgType, typmod: int, placeholder: str, modes: TypeModes) -> Any:
    """Debezium's placeholder for an unchanged TOASTed value, as its converters give it for the
    column's type (checked against Debezium 3.6.1): the text for strings, its bytes for bytea; in an
    array, one placeholder string for strings, the placeholder's bytes as numbers for int4/int8/date
    elements, a name-based UUID of those bytes for uuid, the bytes for bytea (binary mode bytes only),
    and null for the other element types (Debezium writes null, or stops, for those)."""
    t, typmod = _resolve(pg_type, typmod)
    kind = _kind(t)
    data = placeholder.encode()
    if kind == "bytea":
        return text_converter(t, typmod, modes)("\\x" + data.hex())
    if kind != "array":
        return placeholder
    assert t.element is not None
    element, element_typmod = _resolve(t.element, typmod)
    element_kind = _kind(element)
    if element_kind in ("int32", "int64", "date"):
        return list(data)
    if element_kind == "uuid":
        return [str(_name_uuid(data))]
    if element_kind == "bytea":  # only as bytes (base64 in JSON); Debezium writes null in the string modes
        return [base64.b64encode(data).decode()] if modes.binary_handling_mode == "bytes" else None
    if element_kind in ("string", "json", "xml"):
        return [placeholder]
    return None


def _name_uuid(data: bytes) -> uuid.UUID:
    """Java's ``UUID.nameUUIDFromBytes``: the MD5 of the bytes as a version 3 UUID."""
    digest = bytearray(hashlib.md5(data).digest())  # noqa: S324 - an identifier, not security
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(digest))


# ---- catalog ----------------------------------------------------------------------------------

_TYPE_SQL = """
SELECT t.oid::int8, t.typname::text, t.typcategory::text, t.typtype::text, t.typelem::int8,
       t.typbasetype::int8, n.nspname::text, t.typtypmod,
       ARRAY(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder)
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE t.oid = ANY(%s::int8[]::oid[])
"""


class TypeRegistry:
    """PgType by OID: built-ins without a query, the rest (enums with their labels, domains with
    their base type, arrays with their element type, recursively) from pg_type/pg_enum, one query
    per round of unknown OIDs, cached until invalidated."""

    def __init__(self, connect: Callable[[], psycopg.Connection]) -> None:
        self._connect = connect
        self._conn: psycopg.Connection | None = None
        self._types: dict[int, PgType] = {}

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        return self._conn

    def get(self, oid: int) -> PgType:
        found = self._types.get(oid) or _BUILTINS.get(oid)
        if found is None:
            self.load((oid,))
            found = self._types.get(oid)
        if found is None:  # dropped meanwhile: its text form still works
            found = PgType(oid, f"oid{oid}", "X", "b")
        return found

    def load(self, oids: Iterable[int]) -> None:
        wanted = {o for o in oids if o and o not in self._types and o not in _BUILTINS}
        rows: dict[int, tuple[Any, ...]] = {}
        while wanted:
            for row in self._query(sorted(wanted)):
                rows[row[0]] = row
            # element and base types this round named but nobody knows yet
            wanted = {dep for row in rows.values() for dep in (row[4], row[5])
                      if dep and dep not in rows and dep not in self._types and dep not in _BUILTINS}
        for oid in rows:
            self._build(oid, rows)

    def _query(self, oids: list[int]) -> list[tuple[Any, ...]]:
        from psycopg import pq

        conn = self._connection()
        idle = conn.info.transaction_status == pq.TransactionStatus.IDLE
        rows = conn.execute(_TYPE_SQL, (oids,)).fetchall()
        if idle and not conn.autocommit:
            conn.rollback()  # leave no transaction open behind a catalog lookup
        return rows

    def _build(self, oid: int, rows: dict[int, tuple[Any, ...]]) -> PgType:
        known = self._types.get(oid) or _BUILTINS.get(oid)
        if known is not None:
            return known
        row = rows.get(oid)
        if row is None:
            return PgType(oid, f"oid{oid}", "X", "b")
        _, name, category, typtype, elem, base, schema, base_typmod, labels = row
        element = self._build(elem, rows) if elem and category == "A" else None
        base_type = self._build(base, rows) if base and typtype == "d" else None
        pg_type = PgType(oid, name, category, typtype, tuple(labels or ()), element, base_type, schema,
                         base_typmod if typtype == "d" else -1)
        self._types[oid] = pg_type
        return pg_type

    def invalidate(self, oid: int | None = None) -> None:
        """Forget one type (and the arrays and domains built on it), or all of them."""
        if oid is None:
            self._types.clear()
            return
        stale = {oid}
        changed = True
        while changed:
            changed = False
            for known_oid, known in self._types.items():
                if known_oid not in stale and any(
                        dep is not None and dep.oid in stale for dep in (known.element, known.base)):
                    stale.add(known_oid)
                    changed = True
        for stale_oid in stale:
            self._types.pop(stale_oid, None)
