"""Rows of another version of a table than the query's Spark schema (fixed when the query starts).

Three schemas meet when a row's version (R) differs from Spark's (S): the table as it is in the
database now (D) tells which of R and S is the older one.

* A column R has and S lacks: if D has it, it was added after the query started and S is stale:
  the query stops with ``SourceError`` ("the columns of T changed"), which a restart (by hand, or by
  ``cdc.spark.supervisor.run_changes``) resolves, its schema being D's. If D lacks it, it was dropped
  since these rows were written: it is left out.
* A column whose type in R is not S's: if D's type is not S's either, S is stale (a type changed
  since the query started): the query stops as above. Else the rows are older than the change (a
  restarted query replays them) and their values are cast to S's type, NULL where they do not fit.
* A column S has and R lacks: added since these rows were written (D has it): the column's default
  at the source, which SQL gives every row that existed when it was added (NULL without one); or
  dropped before these rows were written: NULL.

``policy`` "fail" (``schemaChanges``): any other version stops the query (Flink CDC's ``exception``).
"""
from __future__ import annotations

import binascii
import logging
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from pyspark.sql import types as T

from cdc.core.errors import SourceError
from cdc.spark.schema import field_type, struct_type_of

log = logging.getLogger(__name__)

Convert = Callable[[dict[str, Any] | None], Any]
# The table now: its Connect row schema, or only its column names (then types are not compared).
Now = Callable[[str], "dict[str, Any] | list[str]"]

RESTART_FIX = "restart the streaming query: it resumes from its checkpoint with the new schema " \
              "(cdc.spark.supervisor.run_changes does it by itself)"


def changed(table: str, before: list[str], after: list[str], types: list[str] | None = None,
            fix: str = RESTART_FIX) -> SourceError:
    """The error a change of the table's columns stops the query with (``run_changes`` looks for it)."""
    more = f" (types of {', '.join(types)})" if types else ""
    return SourceError(f"the columns of {table} changed from {before} to {after}{more}", fix=fix)


def same(a: T.StructType, b: T.StructType) -> bool:
    """The same columns of the same types (metadata aside)."""
    return [(f.name, f.dataType) for f in a.fields] == [(f.name, f.dataType) for f in b.fields]


def fitted(table: str, row_schema: dict[str, Any], spark_columns: list[str], spark_type: T.StructType | None,
           now: Now | None, policy: str | None) -> Convert:
    """A converter of rows of ``row_schema``'s version into Spark's columns (see the module's doc)."""
    version_type, _ = struct_type_of(row_schema)
    columns = version_type.fieldNames()
    if policy == "fail":
        raise changed(table, spark_columns, columns,
                      fix="schemaChanges=fail stops at every change of the table: apply it to the target, then "
                          "restart the query (or run it with another schema_changes policy)")
    extra = [c for c in columns if c not in spark_columns]
    current = now(table) if now is not None else None
    now_fields: dict[str, dict[str, Any]] | None = None
    if isinstance(current, dict):
        now_fields = {f["field"]: f for f in current["fields"]}
        now_names = list(now_fields)
    else:
        now_names = list(current) if current is not None else []
    if extra and (current is None or set(extra) & set(now_names)):
        raise changed(table, spark_columns, columns)
    row_types = {f.name: f.dataType for f in version_type.fields}
    spark_types = {f.name: f.dataType for f in spark_type.fields} if spark_type is not None else {}
    retyped = [c for c in columns if c in spark_types and row_types[c] != spark_types[c]]
    if now_fields is not None:
        stale = [c for c in retyped if c in now_fields and field_type(now_fields[c])[0] != spark_types[c]]
        if stale:
            raise changed(table, spark_columns, columns, [f"{c}: {spark_types[c].simpleString()} -> "
                                                          f"{row_types[c].simpleString()}" for c in stale])
    by_name = {f["field"]: f for f in row_schema["fields"]}
    plan: list[tuple[str | None, Callable[[Any], Any], Any]] = []  # (field of the rows, converter, constant)
    notes: list[str] = []
    for name in spark_columns:
        if name in by_name:
            convert = field_type(by_name[name])[1]
            if name in retyped:
                convert = _then(convert, caster(spark_types[name]))
                notes.append(f"{name} cast from {row_types[name].simpleString()} to {spark_types[name].simpleString()}")
            plan.append((name, convert, None))
            continue
        default = None
        if now_fields is not None and name in now_fields and now_fields[name].get("default") is not None:
            default = _default(now_fields[name], spark_types.get(name))
        plan.append((None, _identity, default))
        notes.append(f"{name} added since: {'its default' if default is not None else 'NULL'}"
                     if name in now_names else f"{name} dropped since: NULL")
    if extra:
        notes.append(f"{', '.join(extra)} dropped since: left out")
    log.warning("rows of %s written with columns %s: read as %s (%s)", table, columns, spark_columns,
                "; ".join(notes))

    def to_tuple(payload: dict[str, Any] | None) -> tuple | None:
        if payload is None:
            return None
        get = payload.get
        return tuple([constant if field is None else None if (v := get(field)) is None else convert(v)
                      for field, convert, constant in plan])
    return to_tuple


def _default(field: dict[str, Any], spark_type: T.DataType | None) -> Any:
    """A column's default at the source (Debezium's ``default`` of its field) as a Spark value; None
    when it does not convert."""
    try:
        value = field_type(field)[1](field["default"])
        return caster(spark_type)(value) if spark_type is not None and value is not None else value
    except (TypeError, ValueError, OverflowError, binascii.Error) as exc:
        log.warning("the default of %s is not read (%s): rows older than the column get NULL", field["field"], exc)
        return None


def _identity(value: Any) -> Any:
    return value


def _then(first: Callable[[Any], Any], second: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if (v := first(value)) is None else second(v)


_INT_BOUNDS = {T.ByteType: 7, T.ShortType: 15, T.IntegerType: 31, T.LongType: 63}


def caster(spark_type: T.DataType) -> Callable[[Any], Any]:
    """A Python value of another type -> ``spark_type``'s, None where it does not fit (a type changed
    at the source, for rows written before the change)."""
    if isinstance(spark_type, T.StringType):
        return lambda v: v if isinstance(v, str) else v.isoformat() if isinstance(v, date | datetime) else str(v)
    bits = next((b for cls, b in _INT_BOUNDS.items() if isinstance(spark_type, cls)), None)
    if bits is not None:
        low, high = -(1 << bits), (1 << bits) - 1

        def integral(v: Any) -> int | None:
            try:
                n = int(v)
            except (TypeError, ValueError, OverflowError):
                return None
            return n if low <= n <= high and (isinstance(v, str) or n == v) else None
        return integral
    if isinstance(spark_type, T.FloatType | T.DoubleType):
        def fractional(v: Any) -> float | None:
            try:
                return float(v)
            except (TypeError, ValueError):
                return None
        return fractional
    if isinstance(spark_type, T.DecimalType):
        scale, digits = spark_type.scale, spark_type.precision - spark_type.scale

        def decimal(v: Any) -> Decimal | None:
            try:
                d = Decimal(str(v)).quantize(Decimal(1).scaleb(-scale))
            except (InvalidOperation, ValueError):
                return None
            return d if d.adjusted() < digits else None
        return decimal
    return lambda v: v
