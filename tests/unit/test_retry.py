"""The one retry policy (cdc.core.retry): what is retried, how long it waits, when it gives up."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdc.core.errors import CdcError, RetriableSourceError, SourceError
from cdc.core.retry import RetryPolicy


def policy(sleeps: list[float], retries: int = 3) -> RetryPolicy:
    return RetryPolicy(max_retries=retries, first_wait_s=0.5, sleep=sleeps.append)


def test_retriable_errors_are_retried_with_doubling_waits_up_to_30s() -> None:
    sleeps: list[float] = []
    calls = iter([RetriableSourceError("down"), RetriableSourceError("down"), "ok"])

    def action() -> str:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item
    assert policy(sleeps).call("connecting", action) == "ok"
    assert sleeps == [0.5, 1.0]
    assert [RetryPolicy(10, 4.0).wait(n) for n in (1, 2, 3, 4, 5)] == [4.0, 8.0, 16.0, 30.0, 30.0]


def test_gives_up_after_max_retries_saying_how_many_attempts() -> None:
    sleeps: list[float] = []

    def action() -> None:
        raise RetriableSourceError("server down", fix="start it")
    with pytest.raises(SourceError) as info:
        policy(sleeps, retries=2).call("connecting", action)
    assert "gave up connecting after 3 attempts: server down" in str(info.value)
    assert info.value.fix == "start it" and not info.value.retriable and sleeps == [0.5, 1.0]


def test_fatal_errors_and_a_stopping_pipeline_fail_at_once() -> None:
    sleeps: list[float] = []

    def fatal() -> None:
        raise SourceError("wrong password")
    with pytest.raises(SourceError, match="wrong password"):
        policy(sleeps).call("connecting", fatal)

    def down() -> None:
        raise RetriableSourceError("down")
    with pytest.raises(RetriableSourceError):
        policy(sleeps).call("connecting", down, stopping=lambda: True)
    assert sleeps == []


def test_a_resumed_run_starts_over_after_a_break_and_counts_anew_once_it_delivers() -> None:
    sleeps: list[float] = []
    resets: list[int] = []
    runs = iter([[1, 2, CdcError], [CdcError], [3, CdcError], [4]])

    def run() -> Iterator[int]:
        for item in next(runs):
            if item is CdcError:
                raise RetriableSourceError("connection lost")
            yield item  # type: ignore[misc]
    out = list(policy(sleeps, retries=2).resumed("streaming", run, lambda: resets.append(1)))
    assert out == [1, 2, 3, 4] and len(resets) == 3
    assert sleeps == [0.5, 1.0, 0.5]  # the count starts over after a run that delivered
