"""One relational schema model for every source: what ``tableChanges`` serializes.

``Table`` and ``Column`` mirror Debezium's ``io.debezium.relational.Table``/``Column`` and
their JSON form in schema history records and schema change events (see
``shared/reference/001_*``). Sources fill them from their catalogs or from parsed DDL.

The JSON follows Debezium 3's ``JsonTableChangeSerializer``: a change is
``{type, id, previousId?, table?, comment?}`` (a DROP carries only type and id; ``comment`` is
the table's comment, written next to ``table``), a table is
``{defaultCharsetName, primaryKeyColumnNames, columns, attributes}``, and a column leaves out
``nativeType``, ``length``, ``scale`` and ``defaultValueExpression`` when they are unset.
``from_json`` reads that form back (schema history replay).
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
        # a quote inside a name is doubled, as Debezium's TableId writes it (parse_table_id undoes it)
        return ".".join('"' + p.replace('"', '""') + '"' for p in (self.catalog, self.schema, self.table) if p)


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
        if self.default_expression is not None:
            out["defaultValueExpression"] = self.default_expression
        out["enumValues"] = list(self.enum_values) if self.enum_values is not None else []
        return out

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Column:
        enum_values = doc.get("enumValues")
        return cls(
            name=doc["name"],
            jdbc_type=doc["jdbcType"],
            type_name=doc["typeName"],
            type_expression=doc.get("typeExpression"),
            native_type=doc.get("nativeType"),
            charset=doc.get("charsetName"),
            length=doc.get("length"),
            scale=doc.get("scale"),
            position=doc.get("position", 1),
            optional=doc.get("optional", True),
            auto_incremented=doc.get("autoIncremented", False),
            generated=doc.get("generated", False),
            comment=doc.get("comment"),
            has_default=doc.get("hasDefaultValue", False) or doc.get("defaultValueExpression") is not None,
            default_expression=doc.get("defaultValueExpression"),
            enum_values=tuple(enum_values) if enum_values else None,
        )

    def with_changes(self, **changes: Any) -> Column:
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
        doc: dict[str, Any] = {
            "defaultCharsetName": self.default_charset,
            "primaryKeyColumnNames": list(self.primary_key),
            "columns": [c.to_json() for c in self.columns],
        }
        if self.attributes:  # Debezium 3.5's MySQL/MariaDB history has none: written only when set
            doc["attributes"] = [{"name": name, "value": value} for name, value in self.attributes]
        return doc

    @classmethod
    def from_json(cls, table_id: TableId, doc: dict[str, Any], comment: str | None = None) -> Table:
        return cls(
            id=table_id,
            columns=tuple(Column.from_json(c) for c in doc.get("columns", ())),
            primary_key=tuple(doc.get("primaryKeyColumnNames", ())),
            default_charset=doc.get("defaultCharsetName"),
            comment=comment if comment is not None else doc.get("comment"),  # older shape kept it here
            attributes=tuple((a["name"], a.get("value")) for a in doc.get("attributes", ())),
        )


def table_change(kind: str, table: Table, previous_id: TableId | None = None) -> dict[str, Any]:
    """One ``tableChanges`` entry (kind is CREATE or ALTER; a rename is an ALTER with ``previousId``)."""
    change: dict[str, Any] = {"type": kind, "id": table.id.quoted()}
    if previous_id is not None:
        change["previousId"] = previous_id.quoted()
    change["table"] = table.to_json()
    change["comment"] = table.comment
    return change


def table_drop(table_id: TableId) -> dict[str, Any]:
    """The ``tableChanges`` entry of a dropped table: Debezium writes no table for it."""
    return {"type": "DROP", "id": table_id.quoted()}


def parse_table_id(quoted: str) -> tuple[str, ...]:
    """The parts of a ``"db"."table"`` identifier (quotes doubled inside a part are undone)."""
    parts: list[str] = []
    i = 0
    while i < len(quoted):
        if quoted[i] == ".":
            i += 1
            continue
        if quoted[i] != '"':
            end = quoted.find(".", i)
            end = len(quoted) if end < 0 else end
            parts.append(quoted[i:end])
            i = end
            continue
        i += 1
        part = []
        while i < len(quoted):
            if quoted[i] == '"' and quoted[i + 1:i + 2] == '"':
                part.append('"')
                i += 2
            elif quoted[i] == '"':
                i += 1
                break
            else:
                part.append(quoted[i])
                i += 1
        parts.append("".join(part))
    return tuple(parts)
