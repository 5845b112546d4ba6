"""Every T-SQL statement the SQL Server source sends parses in sqlglot's T-SQL dialect."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from cdc.sources.sqlserver import queries as q

INIT_SQL = Path(__file__).resolve().parents[2] / "compose" / "sqlserver-init.sql"


@pytest.mark.parametrize("sql", q.all_statements())
def test_statement_parses_as_tsql(sql: str) -> None:
    tree = sqlglot.parse_one(sql, read="tsql")
    assert not isinstance(tree, exp.Command), f"sqlglot fell back to a raw command for {sql!r}"


def test_every_module_statement_is_in_the_parse_list() -> None:
    constants = [v for k, v in vars(q).items() if k.isupper() and isinstance(v, str) and not k.startswith("_")]
    listed = q.all_statements()
    for sql in constants:
        if sql in (q.AGENT_STATUS, q.LOCK_TIMEOUT, q.COMMIT_TIME_COLUMN):
            continue  # templates (their filled-in form is listed) and a column name
        assert sql in listed, sql


def test_change_query_reads_an_inclusive_window_in_merge_order() -> None:
    tree = sqlglot.parse_one(q.changes_direct("dbo_customers"), read="tsql")
    assert tree.find(exp.Table).name == "dbo_customers_CT"
    assert [o.this.name for o in tree.args["order"].expressions] == ["__$start_lsn", "__$seqval", "__$operation"]
    assert isinstance(tree.args["where"].this, exp.And)
    assert {type(c) for c in tree.args["where"].this.flatten()} == {exp.GTE, exp.LTE}
    function = sqlglot.parse_one(q.changes_function("dbo_customers"), read="tsql")
    assert "all update old" in function.sql("tsql")


def test_identifiers_are_bracket_quoted() -> None:
    assert q.quote("we]ird") == "[we]]ird]"
    tree = sqlglot.parse_one(q.select_rows("sales", "order items", ["id", "unit price"]), read="tsql")
    assert [c.name for c in tree.expressions] == ["id", "unit price"]
    with pytest.raises(ValueError):
        q.changes_direct("x]; DROP TABLE y; --")


def test_agent_query_takes_the_database_placeholder() -> None:
    sql = q.agent_status(q.AGENT_STATUS, "testDB")
    assert "[testDB].sys.dm_server_services" in sql
    custom = q.agent_status("SELECT [#db].dbo.agent_running()", "inventory")
    assert custom == "SELECT [inventory].dbo.agent_running()"
    sqlglot.parse_one(custom, read="tsql")


def test_fix_statements_parse() -> None:
    for sql in (q.enable_db_sql("testDB"), q.enable_table_sql("testDB", "dbo", "customers")):
        assert len([s for s in sqlglot.parse(sql, read="tsql") if s is not None]) == 2


def test_compose_init_script_parses() -> None:
    batches = [b for b in re.split(r"^GO\s*$", INIT_SQL.read_text(), flags=re.M) if b.strip()]
    assert len(batches) > 5
    for batch in batches:
        body = "\n".join(line for line in batch.splitlines() if not line.strip().startswith("--")).strip()
        if body:
            sqlglot.parse(body, read="tsql")
