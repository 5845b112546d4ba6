"""The snapshot's progress tells the truth: one rate in the bar and in the log lines, the time left when
the size is known, and a total that becomes the count when the table ends."""
from __future__ import annotations

import io
import logging

import pytest

from cdc.core import progress as progress_module
from cdc.core.progress import TableProgress


def test_log_lines_give_the_share_the_rate_and_the_time_left(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    with caplog.at_level(logging.INFO, logger="cdc.snapshot"):
        p = TableProgress("public.t", 60_000, mode="log")
        now[0] += 5
        p.advance(6_000)
        now[0] += 1
        p.done()
    assert "snapshot of public.t started (about 60000 rows)" in caplog.text
    assert "snapshot of public.t: 6000 of about 60000 rows (10 %), 1200 rows/s, about 45 s left" in caplog.text
    assert "done: 6000 rows in 6.0 s (1000 rows/s)" in caplog.text
    assert TableProgress("public.u", None, mode="off").status() == "0 rows, 0 rows/s"


def test_the_bar_never_passes_100_and_ends_at_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(progress_module.sys, "stderr", stream)
    low = TableProgress("public.t", 100, mode="bar")
    low.advance(150)
    assert low._bar is not None and low._bar.total == 150
    low.done()
    high = TableProgress("public.u", 6_000, mode="bar")  # a stale estimate above the real count
    high.advance(5_900)
    high.done()
    assert "5.90k/5.90k" in stream.getvalue() and "100%" in stream.getvalue()
