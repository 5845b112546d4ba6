"""Names and values quoted for the SQL that error messages suggest as a fix.

A fix line is pasted into a SQL prompt as it is, so every identifier and literal in it is quoted
for its dialect: a table named ``t; drop table victim; --`` stays one name.
"""
from __future__ import annotations


def pg_identifier(name: str) -> str:
    """PostgreSQL: ``"name"`` with ``"`` doubled."""
    return '"' + name.replace('"', '""') + '"'


def pg_table(schema: str, table: str) -> str:
    return f"{pg_identifier(schema)}.{pg_identifier(table)}"


def sql_literal(text: str) -> str:
    """A standard SQL string literal: ``'text'`` with ``'`` doubled."""
    return "'" + text.replace("'", "''") + "'"


def mysql_identifier(name: str) -> str:
    """MySQL/MariaDB: ```name``` with backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def mysql_literal(text: str) -> str:
    """MySQL/MariaDB: ``'text'`` with ``'`` and backslashes escaped (backslash escapes are on by default)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def tsql_identifier(name: str) -> str:
    """SQL Server: ``[name]`` with ``]`` doubled."""
    return "[" + name.replace("]", "]]") + "]"


def tsql_literal(text: str) -> str:
    """SQL Server: ``N'text'`` with ``'`` doubled."""
    return "N'" + text.replace("'", "''") + "'"
