"""A Delta target's schema against a micro-batch's: what a schema change at the source does to it.

``apply_changes(..., schema_changes=POLICY)``, checked before each MERGE into an existing Delta table
(a metadata read; nothing more when the batch's columns and types are the table's), as Flink CDC's
per-sink schema change behaviours:

    evolve      a new column is added (rows that existed get its default at the source, as SQL gave
                them); a type widened at the source is widened in the table where Delta can (Delta's
                type widening: integers to larger integers or double or decimal, float to double,
                decimal precision, date to timestamp_ntz); another type change stops the query
    try-evolve  as evolve, but a type change Delta cannot apply is logged and the values are cast to
                the table's type, NULL where they do not fit (as lenient)
    lenient     new columns are added; types are never changed: values are cast to the table's,
                NULL where they do not fit, with a warning
    ignore      the table keeps its columns and types: new columns are not written, values are cast
    fail        any difference stops the query

A column dropped at the source stays in the table under every policy (and gets NULL in rows written
after the drop when the events still carry it: ``cdc.spark.supervisor``); a rename is a new column.
A source type narrower than the table's is written as it is (Delta widens it on write).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc.core.errors import ConfigError
from cdc.spark.schema import DEFAULT

log = logging.getLogger(__name__)

POLICIES = ("evolve", "try-evolve", "lenient", "ignore", "fail")


class SchemaChangeRefused(ValueError):
    """A schema change the policy does not apply to the target (not the reader's restart signal)."""


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ConfigError(f"schema_changes={policy!r} is not a policy", fix=f"one of {', '.join(POLICIES)}")
    return policy


def defaults(row_type: T.StructType) -> dict[str, Any]:
    """The columns' defaults at the source, as the reader's schema carries them (cdc.spark.schema)."""
    return {f.name: f.metadata[DEFAULT] for f in row_type.fields if DEFAULT in (f.metadata or {})}


_RANK = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 3, T.LongType: 4}
_DIGITS = {1: 3, 2: 5, 3: 10, 4: 20}  # decimal digits an integer type needs


def _rank(t: T.DataType) -> int | None:
    return next((r for cls, r in _RANK.items() if isinstance(t, cls)), None)


def widens(old: T.DataType, new: T.DataType) -> bool:
    """Whether ``new`` holds every value of ``old``, as Delta's type widening allows the change."""
    if old == new:
        return True
    a, b = _rank(old), _rank(new)
    if a is not None and b is not None:
        return a <= b
    if a is not None and isinstance(new, T.DoubleType):
        return a <= 3
    if a is not None and isinstance(new, T.DecimalType):
        return new.precision - new.scale >= _DIGITS[a]
    if isinstance(old, T.FloatType) and isinstance(new, T.DoubleType):
        return True
    if isinstance(old, T.DecimalType) and isinstance(new, T.DecimalType):
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    return isinstance(old, T.DateType) and isinstance(new, T.TimestampNTZType)


def fit_target(spark: SparkSession, target: str, rows: DataFrame, columns: Sequence[str], policy: str,
               source_defaults: Mapping[str, Any]) -> tuple[DataFrame, list[str]]:
    """Before a MERGE of ``rows`` into the existing Delta table ``target``: the table evolved per
    ``policy`` and the rows (their ``columns`` written) fitted to it; returns the rows and the columns
    to write."""
    table = {f.name: f.dataType for f in spark.read.format("delta").load(target).schema.fields}
    types = {f.name: f.dataType for f in rows.schema.fields}
    new = [c for c in columns if c not in table]
    retyped = [c for c in columns if c in table and types[c] != table[c]]
    if not new and not retyped:
        return rows, list(columns)
    where = f"the Delta table {target}"
    if policy == "fail":
        raise SchemaChangeRefused(
            f"the source's columns changed and schema_changes='fail': new {new}, types changed "
            f"{[f'{c}: {table[c].simpleString()} -> {types[c].simpleString()}' for c in retyped]} for {where}")
    write = list(columns)
    if new and policy == "ignore":
        log.warning("schema_changes=ignore: columns %s of the source are not written to %s", new, where)
        write = [c for c in write if c not in new]
    elif new:
        _add_columns(spark, target, [(c, types[c]) for c in new], source_defaults)
    casts: dict[str, T.DataType] = {}
    for c in retyped:
        if widens(types[c], table[c]):  # narrower at the source: written as it is
            continue
        if policy in ("evolve", "try-evolve") and widens(table[c], types[c]) and _widen(spark, target, c, types[c]):
            continue
        if policy == "evolve":
            raise SchemaChangeRefused(
                f"cannot apply the source's type change of column {c} ({table[c].simpleString()} -> "
                f"{types[c].simpleString()}) to {where}: Delta cannot change it in place; "
                "schema_changes='try-evolve' or 'lenient' keeps the table's type and casts the values "
                "(NULL where they do not fit), or rewrite the table with the new type")
        casts[c] = table[c]
    if casts:
        rows = _cast(rows, casts, where, policy)
    return rows, write


def _add_columns(spark: SparkSession, target: str, new: list[tuple[str, T.DataType]],
                 source_defaults: Mapping[str, Any]) -> None:
    """New columns; the rows the table holds get each one's default at the source (a column added
    with a default is that value in every row that existed, in SQL), else NULL. Two Delta commits:
    a stop between them leaves those rows NULL in it."""
    from delta.tables import DeltaTable

    spec = ", ".join(f"`{name}` {t.simpleString()}" for name, t in new)
    spark.sql(f"ALTER TABLE delta.`{target}` ADD COLUMNS ({spec})")
    filled: dict[str, str | Column] = {f"`{name}`": F.lit(source_defaults[name]).cast(t) for name, t in new
              if source_defaults.get(name) is not None}
    if filled:
        DeltaTable.forPath(spark, target).update(set=filled)
    log.warning("columns %s added to the Delta table %s%s", [n for n, _ in new], target,
                f" (rows it held: {', '.join(filled)} set to the source's default)" if filled else "")


def _widen(spark: SparkSession, target: str, column: str, new: T.DataType) -> bool:
    """Delta's type widening (the table feature enabled on first use); False when Delta refuses."""
    from pyspark.errors import AnalysisException

    try:
        spark.sql(f"ALTER TABLE delta.`{target}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
        spark.sql(f"ALTER TABLE delta.`{target}` ALTER COLUMN `{column}` TYPE {new.simpleString()}")
    except AnalysisException as exc:
        log.warning("Delta did not widen %s of %s to %s: %s", column, target, new.simpleString(), exc)
        return False
    log.warning("column %s of the Delta table %s widened to %s", column, target, new.simpleString())
    return True


def _cast(rows: DataFrame, casts: Mapping[str, T.DataType], where: str, policy: str) -> DataFrame:
    """Values cast to the table's types (try_cast: NULL where a value does not fit), with a warning
    that counts the values lost."""
    lost = rows.agg(*[F.sum(F.when(F.col(f"`{c}`").isNotNull() & F.col(f"`{c}`").try_cast(t).isNull(), 1)
                            .otherwise(0)).alias(c) for c, t in casts.items()]).first()
    log.warning("schema_changes=%s: %s cast to the types of %s%s", policy,
                ", ".join(f"{c} to {t.simpleString()}" for c, t in casts.items()), where,
                "" if lost is None else "; values that did not fit, written as NULL: " +
                ", ".join(f"{c} {lost[c] or 0}" for c in casts))
    return rows.select(*[F.col(f"`{c}`").try_cast(casts[c]).alias(c) if c in casts else F.col(f"`{c}`")
                         for c in rows.columns])
