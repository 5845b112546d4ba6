"""A PostgreSQL column as Debezium's ``Column`` describes it, for the column options (cdc.core.columns).

Debezium's PostgreSQL connector reads a column's JDBC type, length and scale through pgjdbc
(``TypeInfoCache.getSQLType``, ``getPrecision``, ``getScale``): that is what decides whether a column is
masked or hashed (character types only), whether it can be truncated, and what
``column.propagate.source.type`` puts in its schema. The rules below are pgjdbc's, checked against
Debezium 3.6.1's output (tests/conformance/workloads/pg_column_propagate.sql).
"""
from __future__ import annotations

from cdc.core.columns import CHAR, VARCHAR, SourceColumn
from cdc.sources.postgres.types import PgType

UNKNOWN_LENGTH = 2147483647  # pgjdbc's length of a type without one (text, bytea, json...)

_JDBC: dict[str, int] = {
    "int2": 5, "int4": 4, "oid": -5, "int8": -5, "float4": 7, "float8": 8, "money": 8, "numeric": 2,
    "bool": -7, "bit": -7, "bytea": -2, "date": 91, "time": 92, "timetz": 92, "timestamp": 93,
    "timestamptz": 93, "xml": 2009, "bpchar": CHAR, "char": CHAR, "varchar": VARCHAR, "text": VARCHAR,
    "name": VARCHAR,
}
_OTHER = 1111
_ARRAY = 2003
_TEMPORAL = ("date", "time", "timetz", "timestamp", "timestamptz", "interval")


def source_column(name: str, pg_type: PgType, typmod: int) -> SourceColumn:
    """The column ``name`` of type ``pg_type`` (typmod as pg_attribute has it) in Debezium's terms. A domain
    keeps its own name and takes its base type's rules (and typmod); an array takes its element's length."""
    type_name = pg_type.name
    resolved, typmod = _base(pg_type, typmod)
    element = resolved.element if resolved.category == "A" and resolved.element is not None else None
    measured, _ = _base(element, typmod) if element is not None else (resolved, typmod)
    scale = None if measured.name == "numeric" and typmod < 0 else _scale(measured.name, typmod)
    return SourceColumn(name=name, type_name=type_name, jdbc_type=_jdbc_type(resolved, element is not None),
                        length=_precision(measured.name, typmod), scale=scale)


def _base(pg_type: PgType, typmod: int) -> tuple[PgType, int]:
    while pg_type.typtype == "d" and pg_type.base is not None:
        if typmod < 0:
            typmod = pg_type.base_typmod
        pg_type = pg_type.base
    return pg_type, typmod


def _jdbc_type(pg_type: PgType, array: bool) -> int:
    if array:
        return _ARRAY
    if pg_type.typtype == "e":
        return VARCHAR  # pgjdbc reports enums as VARCHAR: Debezium masks them
    return _JDBC.get(pg_type.name, _OTHER)


def _precision(type_name: str, typmod: int) -> int:
    """pgjdbc's getPrecision."""
    fixed = {"int2": 5, "int4": 10, "oid": 10, "int8": 19, "float4": 8, "float8": 17, "char": 1, "bool": 1}
    if type_name in fixed:
        return fixed[type_name]
    if type_name == "numeric":
        return 0 if typmod < 0 else ((typmod - 4) & 0xFFFF0000) >> 16
    if type_name in ("bpchar", "varchar"):
        return UNKNOWN_LENGTH if typmod < 0 else typmod - 4
    if type_name in _TEMPORAL:
        return _display_size(type_name, typmod)
    if type_name == "bit":
        return typmod
    if type_name == "varbit":
        return UNKNOWN_LENGTH if typmod < 0 else typmod
    return UNKNOWN_LENGTH


def _display_size(type_name: str, typmod: int) -> int:
    """pgjdbc's getDisplaySize of the temporal types: the longest text of a value."""
    if type_name == "date":
        return 13
    if type_name == "interval":
        return 49
    seconds = {-1: 7, 0: 0, 1: 3}.get(typmod, typmod + 1)  # the fraction and its point
    zone = 6 if type_name in ("timetz", "timestamptz") else 0
    date = 13 + 1 if type_name.startswith("timestamp") else 0
    return date + 8 + seconds + zone


def _scale(type_name: str, typmod: int) -> int:
    """pgjdbc's getScale."""
    if type_name == "float4":
        return 8
    if type_name == "float8":
        return 17
    if type_name == "numeric":
        return (typmod - 4) & 0xFFFF
    if type_name in ("time", "timetz", "timestamp", "timestamptz"):
        return 6 if typmod < 0 else typmod
    if type_name == "interval":
        return 6 if typmod < 0 else typmod & 0xFFFF
    return 0
