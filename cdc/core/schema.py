"""One relational schema model for every source: what ``tableChanges`` serializes.

``Table`` and ``Column`` mirror Debezium's ``io.debezium.relational.Table``/``Column`` and
their JSON form in schema history records and schema change events (see
``shared/reference/001_*``). Sources fill them from their catalogs or from parsed DDL.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True, order=True, slots=True)
class TableId:
    catalog: str | None
    schema: str | None
    table: str

    def __str__(self) -> str:
        """Debezium's identifier: parts that exist, joined by dots (``db.table``, ``schema.table``)."""
        return ".".join(p for p in (self.catalog, self.schema, self.table) if p)

    def quoted(self) -> str:
        """The ``id`` of a tableChanges entry: ``"db"."table"``."""
        return ".".join(f'"{p}"' for p in (self.catalog, self.schema, self.table) if p)


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    jdbc_type: int
    type_name: str
    type_expression: str | None = None
    native_type: int | None = None
    charset: str | None = None
    length: int | None = None
    scale: int | None = None
    position: int = 1
    optional: bool = True
    auto_incremented: bool = False
    generated: bool = False
    comment: str | None = None
    has_default: bool = False
    default_expression: str | None = None
    enum_values: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "jdbcType": self.jdbc_type,
        }
        if self.native_type is not None:
            out["nativeType"] = self.native_type
        out["typeName"] = self.type_name
        out["typeExpression"] = self.type_expression if self.type_expression is not None else self.type_name
        out["charsetName"] = self.charset
        if self.length is not None:
            out["length"] = self.length
        if self.scale is not None:
            out["scale"] = self.scale
        out["position"] = self.position
        out["optional"] = self.optional
        out["autoIncremented"] = self.auto_incremented
        out["generated"] = self.generated
        out["comment"] = self.comment
        out["hasDefaultValue"] = self.has_default
        if self.has_default:
            out["defaultValueExpression"] = self.default_expression
        out["enumValues"] = list(self.enum_values) if self.enum_values is not None else []
        return out

    def with_changes(self, **changes: Any) -> "Column":
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Table:
    id: TableId
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    default_charset: str | None = None
    comment: str | None = None
    attributes: tuple[tuple[str, Any], ...] = field(default=())

    def column(self, name: str) -> Column | None:
        for column in self.columns:
            if column.name == name:
                return column
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "defaultCharsetName": self.default_charset,
            "primaryKeyColumnNames": list(self.primary_key),
            "columns": [c.to_json() for c in self.columns],
            "comment": self.comment,
        }


def table_change(kind: str, table: Table) -> dict[str, Any]:
    """One ``tableChanges`` entry (kind is CREATE, ALTER or DROP)."""
    return {"type": kind, "id": table.id.quoted(), "table": table.to_json()}
