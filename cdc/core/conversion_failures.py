"""``event.converting.failure.handling.mode``: a column value the source's converter cannot turn into
its Connect value (a date out of range, a text its type cannot parse).

Debezium's modes: ``fail`` stops the pipeline with the table, column and value; ``warn`` (its default)
writes null for that column and logs a warning; ``skip`` writes null silently. The rest of the row
and the event are kept in every mode but ``fail``.

A source's rows are converted by a loop over the columns' converters with no guard (the hot path);
only when a row raises does the source convert it again with :meth:`ConversionFailures.guard`'s
wrappers, which say which column failed and apply the mode. So a valid row costs nothing more.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cdc.core.errors import SourceError

log = logging.getLogger(__name__)

MODES = ("fail", "warn", "skip")


class ConversionFailures:
    def __init__(self, mode: str = "warn") -> None:
        self.mode = mode

    def guard(self, table: str, column: str, convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``convert`` for the slow path: a failure follows the mode."""

        def guarded(value: Any) -> Any:
            try:
                return convert(value)
            except Exception as exc:  # noqa: BLE001 - any converter's failure is a conversion failure
                return self.failed(table, column, value, exc)

        return guarded

    def failed(self, table: str, column: str, value: Any, error: BaseException) -> None:
        shown = repr(value) if len(repr(value)) <= 200 else repr(value)[:200] + "..."
        what = f"the value {shown} of column {table}.{column} cannot be converted: {error}"
        if self.mode == "fail":
            raise SourceError(what, fix="correct the value at the source, or set event.converting.failure.handling."
                                        "mode=warn (null and a warning, Debezium's default) or skip (null)") from error
        if self.mode == "warn":
            log.warning("%s; written as null (event.converting.failure.handling.mode=warn)", what)
        return None
