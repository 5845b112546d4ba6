"""Where cdc knowingly differs from Debezium's recorded output, and why.

Every entry is a place where Debezium's value is a defect no consumer should rely on (listed in
docs/debezium-differences.md with the option that restores Debezium's behaviour, where there is
one). The comparison rewrites Debezium's normalised records with cdc's value at that place, so
the rest of the record is still compared field for field.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Callable

Record = dict[str, Any]


@dataclass(frozen=True)
class Deviation:
    workloads: str  # fnmatch pattern of workload names
    path: str  # dotted path into the record; "*" matches any field name at that level
    ours: Callable[[Any, Record], Any]  # cdc's value, from Debezium's value there and the record
    reason: str
    where: Callable[[Record], bool] = lambda record: True


DEVIATIONS: list[Deviation] = []


def apply(workload: str, records: list[Record]) -> list[Record]:
    for deviation in DEVIATIONS:
        if not fnmatch.fnmatch(workload, deviation.workloads):
            continue
        for record in records:
            if deviation.where(record):
                _rewrite(record, deviation.path.split("."), deviation.ours, record)
    return records


def _rewrite(node: Any, parts: list[str], ours: Callable[[Any, Record], Any], record: Record) -> None:
    if not isinstance(node, dict) or not parts:
        return
    head, rest = parts[0], parts[1:]
    names = list(node) if head == "*" else [head] if head in node else []
    for name in names:
        if rest:
            _rewrite(node[name], rest, ours, record)
        else:
            node[name] = ours(node[name], record)
