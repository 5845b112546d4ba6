"""The start-up decision of every source (cdc.core.snapshot_mode), case by case."""
from __future__ import annotations

import pytest

from cdc.core.snapshot_mode import Plan, decide

OFFSET = {"lsn": 100}
DONE_ONLY = {"lsn": 100, "snapshot_only": True}
IN_PROGRESS = {"lsn": 100, "snapshot_progress": {"tables": ["public.t"], "last_key": [5]}}


@pytest.mark.parametrize("mode, offset, reaches, plan, stop", [
    ("initial", None, False, Plan.SNAPSHOT, False),
    ("when_needed", None, True, Plan.SNAPSHOT, False),
    ("always", None, True, Plan.SNAPSHOT, False),
    ("initial_only", None, False, Plan.SNAPSHOT, True),
    ("no_data", None, True, Plan.SCHEMA, False),
    ("schema_only", None, True, Plan.SCHEMA, False),  # Debezium's old name
    ("recovery", None, True, Plan.SCHEMA, False),
    ("never", None, True, Plan.LOG_START, False),
    ("initial", OFFSET, True, Plan.STREAM, False),
    ("no_data", OFFSET, True, Plan.STREAM, False),
    ("always", OFFSET, True, Plan.SNAPSHOT, False),
    ("initial", OFFSET, False, Plan.LOG_GONE, False),
    ("no_data", OFFSET, False, Plan.LOG_GONE, False),
    ("when_needed", OFFSET, False, Plan.SNAPSHOT, False),
    ("when_needed", OFFSET, True, Plan.STREAM, False),
    ("initial_only", DONE_ONLY, True, Plan.NOTHING, False),
    ("initial_only", OFFSET, True, Plan.NOTHING, False),  # Debezium's initial_only never streams
    ("initial_only", OFFSET, False, Plan.NOTHING, False),
    ("initial_only", IN_PROGRESS, True, Plan.RESUME_SNAPSHOT, True),  # finishes the snapshot it began, then stops
    ("initial", DONE_ONLY, False, Plan.SNAPSHOT, False),
    ("no_data", DONE_ONLY, True, Plan.STREAM, False),
    ("initial", IN_PROGRESS, True, Plan.RESUME_SNAPSHOT, False),
    ("initial", IN_PROGRESS, False, Plan.SNAPSHOT, False),  # its slot is gone: start over
    ("always", IN_PROGRESS, True, Plan.SNAPSHOT, False),
])
def test_decision(mode: str, offset: dict | None, reaches: bool, plan: Plan, stop: bool) -> None:
    decision = decide(mode, offset, log_reaches=reaches)
    assert (decision.plan, decision.then_stop) == (plan, stop)
    assert decision.reason


def test_unknown_mode_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        decide("sometimes", None, log_reaches=True)
