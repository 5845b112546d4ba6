"""The fault suite's fixtures: ``source`` (PostgreSQL or MariaDB, with the captured table's database),
and the switch between the quick default subset and the full suite (``CDC_FAULTS=all``,
scripts/fault-suite.sh)."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tests.conftest as shared
from tests.faults.harness import MariaDbSource, PostgresSource, Source
from tests.integration.kafka_fixtures import own_kafka

__all__ = ["FULL", "RecordProperty", "own_kafka", "sources"]

RecordProperty = Callable[[str, object], None]  # pytest's record_property fixture

OPT_IN = "full fault suite: scripts/fault-suite.sh"
NO_MOUNT = "cannot mount a tmpfs here"  # the disk-full cases, without root

# Neither a case left out of the default run nor one this machine cannot host is a missing server:
# CDC_REQUIRE_SERVERS=1 (CI) must not fail them.
shared.EXPECTED_SKIPS = (  # type: ignore[assignment]  # a longer tuple of the same strings
    *shared.EXPECTED_SKIPS, *(s for s in (OPT_IN, NO_MOUNT) if s not in shared.EXPECTED_SKIPS))

FULL = pytest.mark.skipif(os.environ.get("CDC_FAULTS") != "all", reason=OPT_IN)


def sources(*, default: tuple[str, ...] = ()) -> list[Any]:
    """The ``source`` parameters of a case: each source, in the default run only if named in ``default``."""
    params = []
    for kind, mark in (("postgres", pytest.mark.postgres), ("mariadb", pytest.mark.mysql)):
        marks = [mark] if kind in default else [mark, FULL]
        params.append(pytest.param(kind, marks=marks, id=kind))
    return params


@pytest.fixture()
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Source]:
    """The source of the case's parameter, on a database of its own (dropped afterwards)."""
    if request.param == "postgres":
        db = request.getfixturevalue("pg_db")
        yield PostgresSource(db)
    else:
        server = request.getfixturevalue("mysql_server")
        db = request.getfixturevalue("mysql_db")
        yield MariaDbSource(server, db)
