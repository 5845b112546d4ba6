"""One retry policy for every source: a retriable :class:`CdcError` is retried with doubling waits
(``retriable.restart.connector.wait.ms``, at most 30 s apart) up to ``errors.max.retries``
times (-1, Debezium's default: without limit); anything else, or a pipeline that is stopping, fails at once.

Sources translate their driver's errors into ``CdcError`` with ``retriable`` set (a lost
connection, a server restarting) before the policy sees them; the decision is made only here.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from cdc.core.errors import CdcError, SourceError

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_WAIT_S = 30.0


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int
    first_wait_s: float
    sleep: Callable[[float], None] = time.sleep

    @classmethod
    def from_config(cls, config: Any) -> RetryPolicy:
        return cls(max_retries=config.get("errors.max.retries"),
                   first_wait_s=config.get("retriable.restart.connector.wait.ms") / 1000)

    def wait(self, attempt: int) -> float:
        """The pause before retry number ``attempt`` (1-based)."""
        return min(self.first_wait_s * 2 ** (attempt - 1), MAX_WAIT_S)

    def should_retry(self, error: BaseException, attempt: int, stopping: bool = False) -> bool:
        """Whether retry number ``attempt`` may follow ``error``."""
        limited = self.max_retries >= 0  # -1: no limit, as Debezium's default
        return isinstance(error, CdcError) and error.retriable and not stopping \
            and (not limited or attempt <= self.max_retries)

    def call(self, what: str, action: Callable[[], T], stopping: Callable[[], bool] = lambda: False) -> T:
        """``action()``, retried while its errors are retriable; a last retriable failure says how
        many attempts were made."""
        attempt = 0
        while True:
            try:
                return action()
            except CdcError as exc:
                attempt += 1
                if not self.should_retry(exc, attempt, stopping()):
                    if exc.retriable and attempt > 1:
                        raise SourceError(f"gave up {what} after {attempt} attempts: {exc.message}",
                                          fix=exc.fix) from exc
                    raise
                self.pause(what, exc, attempt)

    def pause(self, what: str, error: CdcError, attempt: int) -> None:
        wait = self.wait(attempt)
        of = ", no limit: errors.max.retries=-1" if self.max_retries < 0 else f" of {self.max_retries}"
        log.warning("%s failed (%s); retrying in %.1f s (attempt %d%s)", what,
                    error.message.splitlines()[0], wait, attempt, of)
        self.sleep(wait)

    def resumed(self, what: str, run: Callable[[], Iterator[T]], reset: Callable[[], None],
                stopping: Callable[[], bool] = lambda: False) -> Iterator[T]:
        """Items of ``run()``, which is started again (after a pause, then ``reset()``) when it breaks
        with a retriable error; a run that yielded something starts the count of attempts over."""
        attempt = 0
        while True:
            try:
                for item in run():
                    attempt = 0
                    yield item
                return
            except CdcError as exc:
                attempt += 1
                if not self.should_retry(exc, attempt, stopping()):
                    raise
                self.pause(what, exc, attempt)
                reset()
