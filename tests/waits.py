"""Waiting on a condition instead of a fixed time (issue 38 item 6): a test that needs something to have
happened (a server up, a stream caught up, a process in a state) polls for it, with a deadline, and says
what it waited for when the deadline passes. A ``time.sleep`` of a second or more left in a test lets
time pass on purpose (a timeout, a delay option, a window in which nothing must arrive), and says so."""
from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.1,
               detail: Callable[[], str] | None = None) -> None:
    """Return as soon as ``predicate()`` is true; fail after ``timeout`` seconds, naming ``what`` (and
    ``detail()``: a log's tail, say)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            more = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{more}")
        time.sleep(interval)
