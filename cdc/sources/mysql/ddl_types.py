"""The column types of the MySQL/MariaDB DDL parser (``ddl.py``): a table of type names and their
JDBC types, the words a type name may continue with, the arguments and suffixes a type takes, and
the rules of the few types that set more than their name (ENUM, SET, SERIAL)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlglot.tokens import TokenType

from cdc.core.encodings import JDBC
from cdc.core.schema import Column
from cdc.sources.mysql.ddl_tokens import Cursor

# Debezium 3.5's MariaDB/MySQL grammar: type keywords -> JDBC type (TINYINT is SMALLINT there).
_TYPES: dict[str, int] = {
    "CHAR": JDBC.CHAR, "CHARACTER": JDBC.CHAR, "CHAR VARYING": JDBC.VARCHAR,
    "CHARACTER VARYING": JDBC.VARCHAR, "VARCHAR": JDBC.VARCHAR, "TINYTEXT": JDBC.VARCHAR,
    "TEXT": JDBC.VARCHAR, "MEDIUMTEXT": JDBC.VARCHAR, "LONGTEXT": JDBC.VARCHAR, "LONG": JDBC.VARCHAR,
    "LONG VARCHAR": JDBC.VARCHAR, "LONG CHAR VARYING": JDBC.VARCHAR,
    "NCHAR": JDBC.NCHAR, "NATIONAL CHAR": JDBC.NCHAR, "NATIONAL CHARACTER": JDBC.NCHAR,
    "NCHAR VARYING": JDBC.NVARCHAR, "NVARCHAR": JDBC.NVARCHAR, "NCHAR VARCHAR": JDBC.NVARCHAR,
    "NATIONAL VARCHAR": JDBC.NVARCHAR, "NATIONAL CHAR VARYING": JDBC.NVARCHAR,
    "NATIONAL CHARACTER VARYING": JDBC.NVARCHAR,
    "TINYINT": JDBC.SMALLINT, "INT1": JDBC.SMALLINT, "SMALLINT": JDBC.SMALLINT, "INT2": JDBC.SMALLINT,
    "MEDIUMINT": JDBC.INTEGER, "INT3": JDBC.INTEGER, "MIDDLEINT": JDBC.INTEGER, "INT": JDBC.INTEGER,
    "INTEGER": JDBC.INTEGER, "INT4": JDBC.INTEGER, "BIGINT": JDBC.BIGINT, "INT8": JDBC.BIGINT,
    "REAL": JDBC.REAL, "DOUBLE": JDBC.DOUBLE, "FLOAT8": JDBC.DOUBLE, "FLOAT": JDBC.FLOAT,
    "FLOAT4": JDBC.FLOAT, "DECIMAL": JDBC.DECIMAL, "DEC": JDBC.DECIMAL, "FIXED": JDBC.DECIMAL,
    "NUMERIC": JDBC.NUMERIC, "BIT": JDBC.BIT, "VECTOR": JDBC.OTHER,
    "TIME": JDBC.TIME, "TIMESTAMP": JDBC.TIMESTAMP_WITH_TIMEZONE, "DATETIME": JDBC.TIMESTAMP,
    "DATE": JDBC.DATE, "YEAR": JDBC.INTEGER,
    "BINARY": JDBC.BINARY, "VARBINARY": JDBC.VARBINARY, "BLOB": JDBC.BLOB, "TINYBLOB": JDBC.BLOB,
    "MEDIUMBLOB": JDBC.BLOB, "LONGBLOB": JDBC.BLOB, "LONG VARBINARY": JDBC.BLOB,
    "BOOL": JDBC.BOOLEAN, "BOOLEAN": JDBC.BOOLEAN, "SERIAL": JDBC.BIGINT,
    "ENUM": JDBC.CHAR, "SET": JDBC.CHAR,
    "GEOMETRY": JDBC.OTHER, "POINT": JDBC.OTHER, "LINESTRING": JDBC.OTHER, "POLYGON": JDBC.OTHER,
    "MULTIPOINT": JDBC.OTHER, "MULTILINESTRING": JDBC.OTHER, "MULTIPOLYGON": JDBC.OTHER,
    "GEOMETRYCOLLECTION": JDBC.OTHER, "GEOMCOLLECTION": JDBC.OTHER, "JSON": JDBC.OTHER,
    "UUID": JDBC.OTHER, "INET4": JDBC.OTHER, "INET6": JDBC.OTHER,
}
_DEFAULT_DIMENSIONS: dict[str, tuple[int, int | None]] = {
    "DECIMAL": (10, 0), "DEC": (10, 0), "FIXED": (10, 0), "NUMERIC": (10, 0), "BIT": (1, None),
    "VECTOR": (2048, None),
}
_NUMERIC = {JDBC.SMALLINT, JDBC.INTEGER, JDBC.BIGINT, JDBC.REAL, JDBC.DOUBLE, JDBC.FLOAT, JDBC.DECIMAL, JDBC.NUMERIC}
# Column.typeUsesCharset() in Debezium: these columns take the table's charset when they have none.
CHARSET_TYPES = {JDBC.CHAR, JDBC.VARCHAR, JDBC.NCHAR, JDBC.NVARCHAR}


@dataclass(slots=True)
class ColumnSpec:
    """A parsed column definition, before the table's default charset is known."""

    name: str
    type_name: str
    jdbc_type: int
    length: int | None = None
    scale: int | None = None
    enum_values: tuple[str, ...] | None = None
    charset: str | None = None  # explicit, from CHARACTER SET or COLLATE
    national: bool = False
    optional: bool | None = None
    auto_incremented: bool = False
    comment: str | None = None
    default_given: bool = False  # a DEFAULT clause other than DEFAULT NULL
    default_expression: str | None = None
    primary: bool = False
    unique: bool = False
    position: tuple[str, str | None] | None = None  # ("FIRST", None) / ("AFTER", column)

    def column(self, table_charset: str | None, keep_comment: bool) -> Column:
        # The server makes key and AUTO_INCREMENT columns NOT NULL whatever the definition says.
        optional = self.optional is not False and not self.primary and not self.auto_incremented
        charset = self.charset
        if self.national:
            charset = "utf8"  # NCHAR/NVARCHAR are always utf8
        elif charset is None and self.jdbc_type in CHARSET_TYPES:
            charset = table_charset
        # Debezium: an optional column has an implicit NULL default.
        has_default = self.default_given or optional
        return Column(
            name=self.name,
            jdbc_type=self.jdbc_type,
            type_name=self.type_name,
            type_expression=self.type_name,
            charset=charset,
            length=self.length,
            scale=self.scale,
            optional=optional,
            auto_incremented=self.auto_incremented,
            generated=self.auto_incremented,  # Debezium's "generated" is "value made by the server"
            comment=self.comment if keep_comment else None,
            has_default=has_default,
            default_expression=self.default_expression if self.default_given else None,
            enum_values=self.enum_values,
        )


def charset_of_collation(collation: str) -> str:
    """MySQL collations are named ``<charset>_<rules>`` (``binary`` is its own charset)."""
    collation = collation.lower()
    return collation if collation == "binary" else collation.split("_", 1)[0]


# ---- the type's name ----------------------------------------------------------------------------

def _continuations() -> dict[str, tuple[tuple[str, ...], ...]]:
    """First word -> the words a type name of ``_TYPES`` may go on with, longest first (so that
    ``NATIONAL CHAR VARYING`` is read whole, not as ``NATIONAL CHAR`` and a stray word)."""
    found: dict[str, list[tuple[str, ...]]] = {}
    for name in sorted(_TYPES, key=lambda n: -n.count(" ")):
        first, *rest = name.split()
        if rest:
            found.setdefault(first, []).append(tuple(rest))
    return {first: tuple(rests) for first, rests in found.items()}


_TYPE_CONTINUATIONS = _continuations()


def _type_name(cur: Cursor) -> str:
    """The type's name as a key of ``_TYPES``: its first word and the words that continue it."""
    first = cur.word()
    if first is None:
        raise cur.error("expected a data type")
    cur.i += 1
    for rest in _TYPE_CONTINUATIONS.get(first, ()):
        if cur.accept(*rest):
            return " ".join((first, *rest))
    if first == "NATIONAL":
        raise cur.error("expected CHAR or VARCHAR after NATIONAL")
    if first not in _TYPES:
        raise cur.error(f"unknown data type {first}", back=1)
    return first


# ---- what follows the name: ( arguments ), then suffixes ----------------------------------------

def _dimensions(cur: Cursor, spec: ColumnSpec, base: str) -> None:
    """``(length[, scale])``; a length may be written ``1.0`` or ``1e1``."""
    numbers = [arg.next().text for arg in cur.paren_groups()]
    try:
        spec.length = int(float(numbers[0]))
        if len(numbers) > 1:
            spec.scale = int(numbers[1])
    except (ValueError, IndexError):
        raise cur.error(f"bad dimensions for {base}") from None


def _enum_values(cur: Cursor, spec: ColumnSpec, base: str) -> None:
    spec.enum_values = tuple(_enum_value(arg) for arg in cur.paren_groups())


def _enum_value(arg: Cursor) -> str:
    """An ENUM/SET option as written, quotes included: Debezium records ``'a'``, not ``a``."""
    token = arg.next()
    if token.token_type == TokenType.INTRODUCER:
        token = arg.next()
    if token.token_type not in (TokenType.STRING, TokenType.NATIONAL_STRING):
        raise arg.error("expected a quoted ENUM/SET value", back=1)
    raw = arg.sql[token.start:token.end + 1]
    return raw[1:] if raw[:1] in "nN" and raw[1:2] == "'" else raw


# type name -> what its ( ... ) holds, when not dimensions
_TYPE_ARGUMENTS: dict[str, Callable[[Cursor, ColumnSpec, str], None]] = {"ENUM": _enum_values, "SET": _enum_values}


def _flag(cur: Cursor, spec: ColumnSpec, suffixes: list[str]) -> bool:
    suffixes.append(cur.next().text.upper())
    return True


def _character_set(cur: Cursor, spec: ColumnSpec, suffixes: list[str]) -> bool:
    """``CHARACTER SET x`` / ``CHAR SET x``; CHARACTER or CHAR alone ends the type."""
    if cur.word(1) != "SET":
        return False
    cur.i += 2
    spec.charset = cur.name().lower()
    return True


def _charset(cur: Cursor, spec: ColumnSpec, suffixes: list[str]) -> bool:
    cur.i += 1
    spec.charset = cur.name().lower()
    return True


def _collate(cur: Cursor, spec: ColumnSpec, suffixes: list[str]) -> bool:
    """A collation names its charset, which an explicit CHARACTER SET overrides."""
    cur.i += 1
    collation = cur.name()
    spec.charset = spec.charset or charset_of_collation(collation)
    return True


# suffix keyword -> its reader (False: the word is not a suffix here, the type ends before it)
_TYPE_SUFFIXES: dict[str, Callable[[Cursor, ColumnSpec, list[str]], bool]] = {
    "SIGNED": _flag, "UNSIGNED": _flag, "ZEROFILL": _flag, "BINARY": _flag, "ASCII": _flag, "UNICODE": _flag,
    "BYTE": _flag, "CHARACTER": _character_set, "CHAR": _character_set, "CHARSET": _charset, "COLLATE": _collate,
}


def _type_suffixes(cur: Cursor, spec: ColumnSpec) -> list[str]:
    """The words after the type (sign, ZEROFILL, BINARY, charset, collation): the flag words read."""
    suffixes: list[str] = []
    while True:
        read = _TYPE_SUFFIXES.get(cur.word() or "")
        if read is None or not read(cur, spec, suffixes):
            break
    if "ASCII" in suffixes and spec.charset is None:
        spec.charset = "latin1"
    if "UNICODE" in suffixes and spec.charset is None:
        spec.charset = "ucs2"
    return suffixes


def _full_name(base: str, precision: bool, jdbc: int, suffixes: list[str]) -> str:
    """Debezium's typeName: the base name with the suffixes that name a different type, in a fixed order."""
    name = base + (" PRECISION" if precision else "")
    for suffix in ("SIGNED", "UNSIGNED", "ZEROFILL") if jdbc in _NUMERIC and base != "YEAR" else ():
        if suffix in suffixes:
            name += " " + suffix
    if "BINARY" in suffixes and jdbc in CHARSET_TYPES and base not in ("ENUM", "SET"):
        name += " BINARY"
    return name


def _default_dimensions(spec: ColumnSpec, base: str, jdbc: int) -> None:
    if spec.length is None:
        if base in _DEFAULT_DIMENSIONS:
            spec.length, default_scale = _DEFAULT_DIMENSIONS[base]
            if spec.scale is None:
                spec.scale = default_scale
        elif jdbc == JDBC.NCHAR:
            spec.length = 1
    elif spec.scale is None and base in _DEFAULT_DIMENSIONS:
        spec.scale = _DEFAULT_DIMENSIONS[base][1]


# ---- the types that set more than their name --------------------------------------------------

def _enum(spec: ColumnSpec) -> None:
    spec.enum_values = spec.enum_values or ()
    spec.length = 1  # Debezium: an ENUM is one character long


def _set(spec: ColumnSpec) -> None:
    spec.enum_values = spec.enum_values or ()
    spec.length = max(0, 2 * len(spec.enum_values) - 1)  # Debezium: as long as its options with commas


def _serial(spec: ColumnSpec) -> None:
    """SERIAL is BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE."""
    spec.type_name = "BIGINT UNSIGNED"
    spec.auto_incremented = True
    spec.optional = False
    spec.unique = True


_TYPE_RULES: dict[str, Callable[[ColumnSpec], None]] = {"ENUM": _enum, "SET": _set, "SERIAL": _serial}


def parse_type(cur: Cursor, spec: ColumnSpec) -> None:
    """A column's data type into ``spec``: name, JDBC type, dimensions or values, sign, charset."""
    base = _type_name(cur)
    jdbc = spec.jdbc_type = _TYPES[base]
    precision = base == "DOUBLE" and cur.accept("PRECISION")
    if cur.is_type(TokenType.L_PAREN):
        _TYPE_ARGUMENTS.get(base, _dimensions)(cur, spec, base)
    suffixes = _type_suffixes(cur, spec)
    spec.type_name = _full_name(base, precision, jdbc, suffixes)
    spec.national = jdbc in (JDBC.NCHAR, JDBC.NVARCHAR)
    _default_dimensions(spec, base, jdbc)
    rule = _TYPE_RULES.get(base)
    if rule is not None:
        rule(spec)


def enum_options(values: Iterable[str] | None) -> list[str]:
    """ENUM/SET options without their quotes, unescaped as Debezium does (``\\'`` and ``''``)."""
    out = []
    for value in values or ():
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out.append(value.replace("\\'", "'").replace("''", "'"))
    return out
