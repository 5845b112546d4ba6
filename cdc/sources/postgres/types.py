"""PostgreSQL column types -> Debezium's Kafka Connect schemas and value converters.

Values arrive in each type's TEXT output (what pgoutput sends and ``COPY TO`` writes); the
connection pins the settings that shape that text (``DateStyle=ISO``, ``IntervalStyle=postgres``,
``TimeZone=UTC``, ``bytea_output=hex``, ``extra_float_digits=1``: see ``connection.py``).
A converter is chosen once per column, so each value costs one call and no type dispatch.

| PostgreSQL                 | Connect type / semantic name                                         |
|----------------------------|----------------------------------------------------------------------|
| bool                       | boolean                                                              |
| int2 / int4 / int8, oid    | int16 / int32 / int64                                                |
| float4 / float8            | float / double ("NaN", "Infinity", "-Infinity" as strings)           |
| numeric(p,s), money        | bytes ``org.apache.kafka.connect.data.Decimal`` (precise)            |
| numeric                    | struct ``io.debezium.data.VariableScaleDecimal`` (precise; NaN->null)|
|                            | double / string with decimal.handling.mode                           |
| char, varchar, text, name  | string                                                               |
| bytea                      | bytes (base64 in JSON) / base64 / base64-url-safe / hex strings      |
| date                       | int32 ``io.debezium.time.Date`` (days)                               |
| time(p)                    | int32 ``io.debezium.time.Time`` (p<=3) / int64 ``MicroTime``         |
| timetz                     | string ``io.debezium.time.ZonedTime`` (UTC)                          |
| timestamp(p)               | int64 ``io.debezium.time.Timestamp`` (p<=3) / ``MicroTimestamp``     |
| timestamptz                | string ``io.debezium.time.ZonedTimestamp`` (UTC)                     |
| interval                   | int64 ``io.debezium.time.MicroDuration`` (month = 30.4375 days)      |
| uuid / json, jsonb / xml   | string ``io.debezium.data.Uuid`` / ``Json`` / ``Xml``                |
| inet, cidr, macaddr(8)     | string                                                               |
| enum                       | string ``io.debezium.data.Enum`` with ``allowed``                    |
| T[]                        | array of T's schema (elements optional)                              |
| domain                     | its base type                                                        |
| anything else              | string (the text form)                                               |

``time.precision.mode=connect`` uses Kafka Connect's Date/Time/Timestamp (milliseconds);
``adaptive_time_microseconds`` keeps every ``time`` as MicroTime.
"""
from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True, slots=True)
class PgType:
    oid: int
    name: str  # pg_type.typname: 'int4', 'numeric', '_int4', 'mood', 'bpchar'
    category: str  # pg_type.typcategory
    typtype: str  # 'b' base, 'e' enum, 'd' domain, 'c' composite, 'r' range, 'p' pseudo
    enum_values: tuple[str, ...] = ()
    element: "PgType | None" = None
    base: "PgType | None" = None
    schema: str = "pg_catalog"
    base_typmod: int = -1  # a domain's typmod over its base type, e.g. numeric(10,2)


@dataclass(frozen=True, slots=True)
class TypeModes:
    decimal_handling_mode: str = "precise"  # precise | double | string
    time_precision_mode: str = "adaptive"  # adaptive | adaptive_time_microseconds | connect
    binary_handling_mode: str = "bytes"  # bytes | base64 | base64-url-safe | hex
    interval_handling_mode: str = "numeric"  # numeric | string
    money_fraction_digits: int = 2


Converter = Callable[[str], Any]

_BUILTIN_NAMES: dict[int, tuple[str, str]] = {
    16: ("bool", "B"), 17: ("bytea", "U"), 18: ("char", "Z"), 19: ("name", "S"), 20: ("int8", "N"),
    21: ("int2", "N"), 23: ("int4", "N"), 25: ("text", "S"), 26: ("oid", "N"), 114: ("json", "U"),
    142: ("xml", "U"), 650: ("cidr", "I"), 700: ("float4", "N"), 701: ("float8", "N"), 774: ("macaddr8", "U"),
    790: ("money", "N"), 829: ("macaddr", "U"), 869: ("inet", "I"), 1042: ("bpchar", "S"), 1043: ("varchar", "S"),
    1082: ("date", "D"), 1083: ("time", "D"), 1114: ("timestamp", "D"), 1184: ("timestamptz", "D"),
    1186: ("interval", "T"), 1266: ("timetz", "D"), 1700: ("numeric", "N"), 2950: ("uuid", "U"), 3802: ("jsonb", "U"),
}
_BUILTIN_ARRAYS: dict[int, int] = {
    1000: 16, 1001: 17, 1002: 18, 1003: 19, 1016: 20, 1005: 21, 1007: 23, 1009: 25, 1028: 26, 199: 114, 143: 142,
    651: 650, 1021: 700, 1022: 701, 775: 774, 791: 790, 1040: 829, 1041: 869, 1014: 1042, 1015: 1043, 1182: 1082,
    1183: 1083, 1115: 1114, 1185: 1184, 1187: 1186, 1270: 1266, 1231: 1700, 2951: 2950, 3807: 3802,
}


def builtin_type(oid: int) -> PgType | None:
    """The common built-in types, known without a catalog query."""
    if oid in _BUILTIN_NAMES:
        name, category = _BUILTIN_NAMES[oid]
        return PgType(oid, name, category, "b")
    element_oid = _BUILTIN_ARRAYS.get(oid)
    if element_oid is not None:
        element = builtin_type(element_oid)
        assert element is not None
        return PgType(oid, "_" + element.name, "A", "b", element=element)
    return None


# ---- schemas --------------------------------------------------------------------------------

def _semantic(type_: str, optional: bool, name: str, parameters: dict[str, str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": type_, "optional": optional, "name": name, "version": 1}
    if parameters is not None:
        schema["parameters"] = parameters
    return schema


def _precision(typmod: int) -> int:
    """Fractional-second digits of time/timestamp types (-1: the default 6)."""
    return 6 if typmod < 0 else typmod


def _numeric_precision_scale(typmod: int) -> tuple[int, int] | None:
    if typmod < 4:
        return None
    packed = typmod - 4
    return (packed >> 16) & 0xFFFF, packed & 0xFFFF


def _resolve(pg_type: PgType, typmod: int = -1) -> tuple[PgType, int]:
    """A domain's base type (and the domain's typmod when the column has none)."""
    while pg_type.typtype == "d" and pg_type.base is not None:
        if typmod < 0:
            typmod = pg_type.base_typmod
        pg_type = pg_type.base
    return pg_type, typmod


def field_schema(pg_type: PgType, typmod: int, optional: bool, modes: TypeModes) -> dict[str, Any]:
    """The Connect schema of a column as Debezium's JSON converter prints it (without "field")."""
    t, typmod = _resolve(pg_type, typmod)
    name = t.name
    if t.element is not None and (t.category == "A" or name.startswith("_")):
        return {"type": "array", "items": field_schema(t.element, typmod, True, modes), "optional": optional}
    if t.typtype == "e":
        return _semantic("string", optional, "io.debezium.data.Enum", {"allowed": ",".join(t.enum_values)})
    if name == "bool":
        return {"type": "boolean", "optional": optional}
    if name == "int2":
        return {"type": "int16", "optional": optional}
    if name == "int4":
        return {"type": "int32", "optional": optional}
    if name in ("int8", "oid"):
        return {"type": "int64", "optional": optional}
    if name == "float4":
        return {"type": "float", "optional": optional}
    if name == "float8":
        return {"type": "double", "optional": optional}
    if name in ("numeric", "money"):
        if modes.decimal_handling_mode == "double":
            return {"type": "double", "optional": optional}
        if modes.decimal_handling_mode == "string":
            return {"type": "string", "optional": optional}
        if name == "money":
            return _semantic("bytes", optional, "org.apache.kafka.connect.data.Decimal",
                             {"scale": str(modes.money_fraction_digits)})
        ps = _numeric_precision_scale(typmod)
        if ps is None:
            return {
                "type": "struct",
                "fields": [{"type": "int32", "optional": False, "field": "scale"},
                           {"type": "bytes", "optional": False, "field": "value"}],
                "optional": optional, "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
                "doc": "Variable scaled decimal",
            }
        precision, scale = ps
        return _semantic("bytes", optional, "org.apache.kafka.connect.data.Decimal",
                         {"scale": str(scale), "connect.decimal.precision": str(precision)})
    if name == "bytea":
        if modes.binary_handling_mode == "bytes":
            return {"type": "bytes", "optional": optional}
        return {"type": "string", "optional": optional}
    if name == "date":
        if modes.time_precision_mode == "connect":
            return _semantic("int32", optional, "org.apache.kafka.connect.data.Date")
        return _semantic("int32", optional, "io.debezium.time.Date")
    if name == "time":
        if modes.time_precision_mode == "connect":
            return _semantic("int32", optional, "org.apache.kafka.connect.data.Time")
        if modes.time_precision_mode == "adaptive" and _precision(typmod) <= 3:
            return _semantic("int32", optional, "io.debezium.time.Time")
        return _semantic("int64", optional, "io.debezium.time.MicroTime")
    if name == "timetz":
        return _semantic("string", optional, "io.debezium.time.ZonedTime")
    if name == "timestamp":
        if modes.time_precision_mode == "connect":
            return _semantic("int64", optional, "org.apache.kafka.connect.data.Timestamp")
        if _precision(typmod) <= 3:
            return _semantic("int64", optional, "io.debezium.time.Timestamp")
        return _semantic("int64", optional, "io.debezium.time.MicroTimestamp")
    if name == "timestamptz":
        return _semantic("string", optional, "io.debezium.time.ZonedTimestamp")
    if name == "interval":
        if modes.interval_handling_mode == "string":
            return _semantic("string", optional, "io.debezium.time.Interval")
        return _semantic("int64", optional, "io.debezium.time.MicroDuration")
    if name == "uuid":
        return _semantic("string", optional, "io.debezium.data.Uuid")
    if name in ("json", "jsonb"):
        return _semantic("string", optional, "io.debezium.data.Json")
    if name == "xml":
        return _semantic("string", optional, "io.debezium.data.Xml")
    return {"type": "string", "optional": optional}


# ---- converters -----------------------------------------------------------------------------

_b64 = base64.b64encode


def _unscaled_bytes(unscaled: int) -> str:
    """Two's-complement big-endian bytes of the smallest width, base64 (Connect's Decimal)."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return _b64(unscaled.to_bytes(length, "big", signed=True)).decode()


_SPECIAL_FLOATS = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}


def _float(text: str) -> Any:
    special = _SPECIAL_FLOATS.get(text)
    return special if special is not None else float(text)


def _decimal_converter(scale: int | None, mode: str) -> Converter:
    if mode == "string":
        return lambda text: text
    if mode == "double":
        return lambda text: float(text) if text != "NaN" else "NaN"

    if scale is None:  # VariableScaleDecimal
        def variable(text: str) -> Any:
            try:
                value = Decimal(text)
            except InvalidOperation:
                return None
            if not value.is_finite():
                return None  # Debezium cannot represent NaN/Infinity in a decimal
            sign, digits, exponent = value.as_tuple()
            unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
            value_scale = -int(exponent)
            if value_scale < 0:
                unscaled *= 10 ** (-value_scale)
                value_scale = 0
            return {"scale": value_scale, "value": _unscaled_bytes(unscaled)}
        return variable

    def fixed(text: str) -> Any:
        # numeric(p,s) prints exactly s fraction digits: drop the point to get the unscaled value.
        whole, dot, fraction = text.partition(".")
        if len(fraction) == scale and whole.lstrip("-").isdigit() and (not fraction or fraction.isdigit()):
            return _unscaled_bytes(int(whole + fraction))
        try:
            value = Decimal(text)
        except InvalidOperation:
            return None
        if not value.is_finite():
            return None
        return _unscaled_bytes(int(value.scaleb(scale).to_integral_value()))
    return fixed


_MONEY_STRIP = re.compile(r"[^0-9.\-]")


def _money_converter(modes: TypeModes) -> Converter:
    digits = modes.money_fraction_digits

    def clean(text: str) -> str:
        negative = text.startswith("(") or "-" in text
        number = _MONEY_STRIP.sub("", text).replace("-", "")
        return ("-" if negative else "") + number

    if modes.decimal_handling_mode == "string":
        return clean
    if modes.decimal_handling_mode == "double":
        return lambda text: float(clean(text))
    return lambda text: _unscaled_bytes(int(Decimal(clean(text)).scaleb(digits).to_integral_value()))


def _binary_converter(mode: str) -> Converter:
    def raw(text: str) -> bytes:
        if text.startswith("\\x"):
            return bytes.fromhex(text[2:])
        return _unescape_bytea(text)

    if mode == "hex":
        return lambda text: raw(text).hex()
    if mode == "base64-url-safe":
        return lambda text: base64.urlsafe_b64encode(raw(text)).decode()
    return lambda text: base64.b64encode(raw(text)).decode()  # bytes (JSON shows base64) and base64


def _unescape_bytea(text: str) -> bytes:
    """bytea's old 'escape' output format: \\ooo octal and \\\\ backslash."""
    out = bytearray()
    i = 0
    raw = text.encode()
    while i < len(raw):
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


_EPOCH_DATE = date(1970, 1, 1)
_EPOCH = datetime(1970, 1, 1)
_EPOCH_TZ = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_US = timedelta(microseconds=1)
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_INT32_MAX = 2**31 - 1
_INT32_MIN = -(2**31)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar, any year (Howard Hinnant)."""
    year -= month <= 2
    era = (year if year >= 0 else year - 399) // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_DATE_RE = re.compile(r"(\d+)-(\d\d)-(\d\d)( BC)?$")
_TS_RE = re.compile(r"(\d+)-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?([+-]\d\d(?::?\d\d){0,2})?( BC)?$")


def _offset_seconds(text: str | None) -> int:
    if not text:
        return 0
    sign = -1 if text[0] == "-" else 1
    parts = text[1:].split(":")
    if len(parts) == 1 and len(parts[0]) > 2:  # +0530
        parts = [parts[0][:2], parts[0][2:]]
    hours, minutes, seconds = (int(p) for p in (parts + ["0", "0"])[:3])
    return sign * (hours * 3600 + minutes * 60 + seconds)


def _slow_timestamp_micros(text: str) -> int:
    """Years beyond datetime's range or BC dates."""
    match = _TS_RE.match(text)
    if match is None:
        raise ValueError(f"unrecognised timestamp {text!r}")
    year, month, day, hour, minute, second, fraction, offset, bc = match.groups()
    year_value = int(year)
    if bc:
        year_value = 1 - year_value  # 1 BC is year 0
    days = _days_from_civil(year_value, int(month), int(day))
    micros = (days * 86400 + int(hour) * 3600 + int(minute) * 60 + int(second)) * 1_000_000
    if fraction:
        micros += int(fraction.ljust(6, "0")[:6])
    return micros - _offset_seconds(offset) * 1_000_000


def timestamp_micros(text: str) -> int:
    """Microseconds since the epoch; the text may carry an offset (timestamptz)."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return _slow_timestamp_micros(text)
    if parsed.tzinfo is None:
        return (parsed - _EPOCH) // _ONE_US
    return (parsed - _EPOCH_TZ) // _ONE_US


def _date_days(text: str) -> int:
    if text == "infinity":
        return _INT32_MAX
    if text == "-infinity":
        return _INT32_MIN
    try:
        return (date.fromisoformat(text) - _EPOCH_DATE).days
    except ValueError:
        match = _DATE_RE.match(text)
        if match is None:
            raise
        year = int(match.group(1))
        if match.group(4):
            year = 1 - year
        return _days_from_civil(year, int(match.group(2)), int(match.group(3)))


def _time_micros(text: str) -> int:
    hours, minutes, rest = text.split(":", 2)
    seconds, _, fraction = rest.partition(".")
    micros = (int(hours) * 3600 + int(minutes) * 60 + int(seconds)) * 1_000_000
    if fraction:
        micros += int(fraction.ljust(6, "0")[:6])
    return micros


_TIMETZ_SPLIT = re.compile(r"([+-]\d\d(?::?\d\d){0,2})$")


def _zoned_time(text: str) -> str:
    match = _TIMETZ_SPLIT.search(text)
    offset = match.group(1) if match else None
    local = text[: match.start()] if match else text
    micros = (_time_micros(local) - _offset_seconds(offset) * 1_000_000) % 86_400_000_000
    seconds, fraction = divmod(micros, 1_000_000)
    out = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if fraction:
        out += "." + f"{fraction:06d}".rstrip("0")
    return out + "Z"


def _zoned_timestamp_converter(digits: int) -> Converter:
    pad = "0" * digits

    def convert(text: str) -> str:
        # Fast path: the connection pins TimeZone=UTC, so the text is 'YYYY-MM-DD hh:mm:ss[.f]+00'.
        if text.endswith("+00") and text[10:11] == " " and text[4:5] == "-":
            clock = text[11:-3]
            seconds, dot, fraction = clock.partition(".")
            if digits > 0:
                return f"{text[:10]}T{seconds}.{(fraction + pad)[:digits]}Z"
            return f"{text[:10]}T{seconds}Z"
        if text in ("infinity", "-infinity"):
            return text
        micros = timestamp_micros(text)
        seconds, fraction = divmod(micros, 1_000_000)
        days, rest = divmod(seconds, 86400)
        if -719162 <= days <= 2932896:  # datetime's range
            moment = datetime(1970, 1, 1) + timedelta(days=days, seconds=rest)
            body = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
        else:
            body = _civil_string(days, rest)
        if digits > 0:
            body += "." + f"{fraction:06d}"[:digits]
        return body + "Z"
    return convert


def _civil_string(days: int, rest: int) -> str:
    """ISO date-time for days outside datetime's range (Hinnant's civil_from_days)."""
    z = days + 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    y += m <= 2
    return f"{y:04d}-{m:02d}-{d:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"


def _timestamp_converter(unit_us: int) -> Converter:
    def convert(text: str) -> int:
        if text == "infinity":
            return _INT64_MAX
        if text == "-infinity":
            return _INT64_MIN
        return timestamp_micros(text) // unit_us
    return convert


_INTERVAL_PART = re.compile(r"(-?\d+) (year|mon|day)s?")
_INTERVAL_TIME = re.compile(r"(-?)(\d+):(\d\d):(\d\d)(?:\.(\d+))?")
_MONTH_US = 30.4375 * 24 * 3600 * 1_000_000


def _interval_parts(text: str) -> tuple[int, int, int]:
    """(months, days, microseconds) of IntervalStyle=postgres output."""
    months = days = 0
    for amount, unit in _INTERVAL_PART.findall(text):
        if unit == "year":
            months += int(amount) * 12
        elif unit == "mon":
            months += int(amount)
        else:
            days += int(amount)
    micros = 0
    match = _INTERVAL_TIME.search(text)
    if match:
        sign, hours, minutes, seconds, fraction = match.groups()
        micros = (int(hours) * 3600 + int(minutes) * 60 + int(seconds)) * 1_000_000
        if fraction:
            micros += int(fraction.ljust(6, "0")[:6])
        if sign:
            micros = -micros
    return months, days, micros


def _interval_micros(text: str) -> int:
    months, days, micros = _interval_parts(text)
    return round(months * _MONTH_US) + days * 86_400_000_000 + micros


def _interval_iso(text: str) -> str:
    months, days, micros = _interval_parts(text)
    years, months = divmod(months, 12) if months >= 0 else (-((-months) // 12), -((-months) % 12))
    seconds = micros / 1_000_000
    hours = int(seconds / 3600)
    minutes = int((seconds - hours * 3600) / 60)
    secs = seconds - hours * 3600 - minutes * 60
    sec_text = f"{secs:.6f}".rstrip("0").rstrip(".")
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{sec_text}S"


def parse_array(text: str) -> list[Any]:
    """PostgreSQL array text ('{1,NULL,"a b",{2,3}}') -> nested lists of str/None."""
    pos = 0
    if text.startswith("["):  # explicit bounds: '[0:1]={1,2}'
        pos = text.index("=") + 1

    def parse(i: int) -> tuple[list[Any], int]:
        assert text[i] == "{"
        i += 1
        items: list[Any] = []
        if text[i] == "}":
            return items, i + 1
        while True:
            c = text[i]
            if c == "{":
                item, i = parse(i)
                items.append(item)
            elif c == '"':
                i += 1
                chars = []
                while text[i] != '"':
                    if text[i] == "\\":
                        i += 1
                    chars.append(text[i])
                    i += 1
                items.append("".join(chars))
                i += 1
            else:
                start = i
                while text[i] not in ",}":
                    i += 1
                token = text[start:i].strip()
                items.append(None if token == "NULL" else token)
            if text[i] == ",":
                i += 1
                continue
            if text[i] == "}":
                return items, i + 1
            raise ValueError(f"malformed array {text!r}")

    items, _ = parse(pos)
    return items


def _array_converter(element: Converter) -> Converter:
    def apply(items: list[Any]) -> list[Any]:
        return [None if v is None else (apply(v) if isinstance(v, list) else element(v)) for v in items]
    return lambda text: apply(parse_array(text))


def _bool(text: str) -> bool:
    return text == "t"


def text_converter(pg_type: PgType, typmod: int, modes: TypeModes) -> Converter:
    """The function from a column's text output to the JSON-ready value Debezium writes."""
    t, typmod = _resolve(pg_type, typmod)
    name = t.name
    if t.element is not None and (t.category == "A" or name.startswith("_")):
        return _array_converter(text_converter(t.element, typmod, modes))
    if t.typtype == "e":
        return str
    if name == "bool":
        return _bool
    if name in ("int2", "int4", "int8", "oid"):
        return int
    if name in ("float4", "float8"):
        return _float
    if name == "numeric":
        ps = _numeric_precision_scale(typmod)
        return _decimal_converter(ps[1] if ps else None, modes.decimal_handling_mode)
    if name == "money":
        return _money_converter(modes)
    if name == "bytea":
        return _binary_converter(modes.binary_handling_mode)
    if name == "date":
        return _date_days
    if name == "time":
        if modes.time_precision_mode == "connect" or (
            modes.time_precision_mode == "adaptive" and _precision(typmod) <= 3
        ):
            return lambda text: _time_micros(text) // 1000
        return _time_micros
    if name == "timetz":
        return _zoned_time
    if name == "timestamp":
        if modes.time_precision_mode == "connect" or _precision(typmod) <= 3:
            return _timestamp_converter(1000)
        return _timestamp_converter(1)
    if name == "timestamptz":
        return _zoned_timestamp_converter(_precision(typmod))
    if name == "interval":
        return _interval_iso if modes.interval_handling_mode == "string" else _interval_micros
    return str


# ---- catalog --------------------------------------------------------------------------------

_TYPE_SQL = """
SELECT t.oid, t.typname, t.typcategory, t.typtype, t.typelem, t.typbasetype, n.nspname, t.typtypmod,
       COALESCE((SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid),
                '{}')
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE t.oid = ANY(%s)
"""


class TypeRegistry:
    """PgType by OID: built-ins without a query, the rest (enums, domains, arrays of those)
    from pg_type/pg_enum, one query per batch of unknown OIDs, cached until invalidated."""

    def __init__(self, connect: Callable[[], "psycopg.Connection"]) -> None:
        self._connect = connect
        self._types: dict[int, PgType] = {}

    def get(self, oid: int) -> PgType:
        found = self._types.get(oid) or builtin_type(oid)
        if found is None:
            self.load([oid])
            found = self._types.get(oid)
        if found is None:  # dropped meanwhile: fall back to its text form
            return PgType(oid, f"oid{oid}", "X", "b")
        return found

    def load(self, oids: Iterable[int]) -> None:
        wanted = {o for o in oids if o not in self._types and builtin_type(o) is None}
        rows: dict[int, tuple] = {}
        conn = None
        while wanted:
            conn = conn or self._connect()
            fetched = conn.execute(_TYPE_SQL, (list(wanted),)).fetchall()
            wanted = set()
            for row in fetched:
                rows[row[0]] = row
                for dependent in (row[4], row[5]):
                    if dependent and dependent not in rows and dependent not in self._types \
                            and builtin_type(dependent) is None:
                        wanted.add(dependent)
        for oid in rows:
            self._build(oid, rows)

    def _build(self, oid: int, rows: dict[int, tuple]) -> PgType:
        known = self._types.get(oid) or builtin_type(oid)
        if known is not None:
            return known
        row = rows.get(oid)
        if row is None:
            return PgType(oid, f"oid{oid}", "X", "b")
        _, name, category, typtype, elem, base, schema, base_typmod, labels = row
        category = category if isinstance(category, str) else bytes(category).decode()
        typtype = typtype if isinstance(typtype, str) else bytes(typtype).decode()
        element = self._build(elem, rows) if elem and category == "A" else None
        base_type = self._build(base, rows) if base and typtype == "d" else None
        pg_type = PgType(oid, name, category, typtype, tuple(labels or ()), element, base_type, schema, base_typmod)
        self._types[oid] = pg_type
        return pg_type

    def invalidate(self, oid: int | None = None) -> None:
        if oid is None:
            self._types.clear()
        else:
            self._types.pop(oid, None)
