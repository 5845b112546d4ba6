"""What is wrong with a pipeline's position at its source, as findings that say the cause and the fix.

``cdc status`` prints them (and exits 1 on a warning, 2 on an error); the running pipeline's
monitor (cdc.metrics.lag) logs them when they appear, and stops the pipeline on an error. Each
database's findings are in its package (cdc.sources.postgres.guards: the slot's,
cdc.sources.mysql.lag: the binlog's, ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WARNING = "warning"
ERROR = "error"


@dataclass(frozen=True)
class Finding:
    level: str  # warning | error
    code: str  # stable identifier (json output, de-duplicated log lines)
    message: str
    fix: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"level": self.level, "code": self.code, "message": self.message, "fix": self.fix}


def exit_code(findings: list[Finding]) -> int:
    """0 when nothing is wrong, 1 for warnings, 2 for an error."""
    if any(f.level == ERROR for f in findings):
        return 2
    return 1 if findings else 0


def duration(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def size(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover - the loop returns at GB
