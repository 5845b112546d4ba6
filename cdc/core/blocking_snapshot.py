"""Blocking snapshots (``execute-snapshot`` with ``type: blocking``): streaming waits while the
requested tables are read whole, then goes on from where it was. The order of requests, the
skipping of a table that is no longer captured or fails to read, and the offset handed out after
each request are the same for every source; a source only reads one table's rows as events."""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from cdc.core.errors import SourceError
from cdc.core.records import Batch, ChangeEvent

log = logging.getLogger(__name__)

# (captured table name, condition or None) -> its rows as read events, batch by batch; None when
# the table is no longer captured. A read that fails raises SourceError: the table is skipped.
ReadTable = Callable[[str, str | None], Iterator[list[ChangeEvent]] | None]


def blocking_snapshots(requests: list[dict[str, Any]], open_reader: Callable[[], AbstractContextManager[ReadTable]],
                       offset: Callable[[], dict[str, Any] | None]) -> Iterator[Batch]:
    """Run the queued ``requests`` (``{"tables": [...], "conditions": {table: where}}``), removing each
    once read; ``open_reader`` gives one reader (a connection, a transaction) per request."""
    while requests:
        request = requests[0]
        with open_reader() as read:
            for name in request["tables"]:
                condition = (request.get("conditions") or {}).get(name)
                rows = read(name, condition)
                if rows is None:
                    log.error("blocking snapshot: table %s is no longer captured; skipped", name)
                    continue
                where = f" where {condition}" if condition else ""
                log.info("blocking snapshot of %s%s (streaming paused)", name, where)
                try:
                    for events in rows:
                        yield Batch(events)
                except SourceError as exc:
                    log.error("blocking snapshot of %s failed: %s; skipped", name, exc.message)
        requests.pop(0)
        done = offset()
        if done is not None:
            yield Batch([], done)
