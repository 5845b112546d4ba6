"""converters=: a custom converter (tests/fixtures/custom_converters.py) chooses the schema and values of the
columns it claims, in the snapshot and the stream, with the compiled codec on (the table then goes the Python
way), a NULL staying null and the column's default converted. Debezium's TinyIntOneToBooleanConverter is
checked against Debezium in tests/conformance/workloads/mariadb_custom_converter.sql."""
from __future__ import annotations

from pathlib import Path

import pytest

from cdc.core.errors import ConfigError
from cdc.pipeline import build
from tests.integration.harness import Pipeline
from tests.integration.test_pg_stream import payloads, sql

pytestmark = pytest.mark.postgres

ISBN = {"converters": "isbn", "isbn.type": "tests.fixtures.custom_converters:IsbnConverter",
        "isbn.schema.name": "shop.Isbn"}


def test_a_python_converter_takes_its_columns_in_snapshot_and_stream(pg_db: dict[str, str], tmp_path: Path) -> None:
    sql(pg_db, "CREATE TABLE books (id int PRIMARY KEY, isbn text DEFAULT '0-00-000000-0', title text)",
        "INSERT INTO books VALUES (1, '978-3-16-148410-0', 'first')")
    with Pipeline({**pg_db, "snapshot.mode": "initial", **ISBN}, tmp_path / "o.json") as p:
        p.wait_ready()
        sql(pg_db, "INSERT INTO books VALUES (2, '0-306-40615-X', 'second'), (3, NULL, 'third')",
            "UPDATE books SET title = 'first!' WHERE id = 1")
        got = p.wait_count(4, topic="dbz.public.books")
    assert [(op, after) for op, _, _, after in payloads(got)] == [
        ("r", {"id": 1, "isbn": "9783161484100", "title": "first"}),
        ("c", {"id": 2, "isbn": "030640615X", "title": "second"}),
        ("c", {"id": 3, "isbn": None, "title": "third"}),
        ("u", {"id": 1, "isbn": "9783161484100", "title": "first!"}),
    ]
    field = next(f for f in got[0]["value"]["schema"]["fields"][1]["fields"] if f["field"] == "isbn")
    assert field == {"type": "string", "optional": True, "name": "shop.Isbn", "default": "0000000000",
                     "field": "isbn"}


def test_a_converter_that_is_no_python_class_is_a_clear_error(pg_db: dict[str, str], tmp_path: Path) -> None:
    props = {**{k: v for k, v in pg_db.items() if k != "dsn"}, "topic.prefix": "dbz", "converters": "geo",
             "geo.type": "com.acme.GeoConverter", "sink.files.directory": str(tmp_path)}
    with pytest.raises(ConfigError, match=r"geo.type='com.acme.GeoConverter' is no custom converter cdc knows") as e:
        build("postgres", props)
    assert "package.module:Class" in e.value.fix
