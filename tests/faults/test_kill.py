"""kill -9 storms: 5-8 kills at random moments of the initial snapshot, or of the stream, under a writer;
each killed run is started again at once. Afterwards the table rebuilt from the events is the table,
no change is lost or invented, duplicates are only replays, and nothing comes twice after a clean stop."""
from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.faults.conftest import sources
from tests.faults.harness import Cdc, Source, Writer, finish, seed, verify

pytestmark = pytest.mark.faults

def _alive_before_kill(cdc: Cdc) -> None:
    assert cdc.alive(), f"run {cdc.run.number} ended before it was killed:\n{cdc.tail()}"


@pytest.mark.parametrize("source", sources(default=("mariadb",)), indirect=True)
def test_kill_storm_stream(source: Source, tmp_path: Path) -> None:
    rng = random.Random(seed())
    source.create_table(2000)
    cdc = Cdc(source, tmp_path)
    writer = Writer(source, range(1, 2001), rng)
    try:
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        writer.start()
        writer.wait_ops(300)
        kills = rng.randint(5, 8)
        for _ in range(kills):
            time.sleep(rng.uniform(0.2, 2.5))  # mid-start, mid-transaction, mid-flush: wherever it lands
            _alive_before_kill(cdc)
            cdc.kill()
            cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        finish(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verdict = verify(cdc, writer)
    assert verdict.runs == kills + 2


@pytest.mark.parametrize("source", sources(default=("postgres",)), indirect=True)
def test_kill_storm_snapshot(source: Source, tmp_path: Path) -> None:
    """Kills during the snapshot (a few during the start: slot, locks, schema), the writer busy all along:
    each run takes the snapshot again (snapshot.mode=initial, not resumable), after a truncate event."""
    rng = random.Random(seed())
    rows = 150_000 if source.kind == "postgres" else 40_000
    source.create_table(rows)
    cdc = Cdc(source, tmp_path)
    writer = Writer(source, range(1, rows + 1), rng).start()
    try:
        kills = rng.randint(5, 8)
        for _ in range(kills):
            cdc.start()
            if rng.random() < 0.25:  # during the start: the plan made, the slot or the locks being taken
                assert cdc.wait_log("start: snapshot"), cdc.tail()
                time.sleep(rng.uniform(0, 0.06))
            else:  # somewhere in the rows (an event takes some 300 bytes or more)
                assert cdc.wait_output(int(rng.uniform(0.02, 0.9) * rows * 300)), cdc.tail()
            _alive_before_kill(cdc)
            cdc.kill()
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        finish(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verdict = verify(cdc, writer)
    assert verdict.runs == kills + 2
    assert cdc.events.truncates >= 1, "no kill landed in a snapshot"
