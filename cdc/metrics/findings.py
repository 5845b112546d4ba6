"""What is wrong with a pipeline's position at its source, as findings that say the cause and the fix.

``cdc status`` prints them (and exits 1 on a warning, 2 on an error); the running pipeline's
monitor (cdc.metrics.lag) logs them when they appear. PostgreSQL's slot findings are in
cdc.sources.postgres.guards; the binlog's are here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WARNING = "warning"
ERROR = "error"
PURGE_WARNING_S = 3600.0  # warn when the oldest binlog still needed may be purged within this time


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


def binlog_findings(state: Any) -> list[Finding]:
    """``state``: a cdc.metrics.lag.BinlogState."""
    if state.file is None:
        return []
    if state.position_purged:
        oldest = state.files[0][0] if state.files else "none"
        return [Finding(ERROR, "binlog_purged",
                        f"the stored offset is in binlog {state.file}, which the server no longer has (its oldest is "
                        f"{oldest}): the changes between them are lost",
                        "take a new snapshot: restart with snapshot.mode=when_needed (or delete the stored offset); "
                        "then keep binlogs longer (binlog_expire_logs_seconds) than the pipeline may be stopped")]
    purge_in = state.purge_in_seconds
    if purge_in is not None and purge_in != float("inf") and purge_in < PURGE_WARNING_S:
        when = f"within {duration(purge_in)}" if purge_in > 0 else "at the next binlog rotation"
        return [Finding(WARNING, "binlog_purge_soon",
                        f"binlog {state.file}, the oldest the pipeline still needs, may be purged {when} "
                        f"(binlog_expire_logs_seconds={state.expire_seconds}); {size(state.behind_bytes)} not read yet",
                        "make sure the pipeline runs and keeps up, or raise binlog_expire_logs_seconds "
                        "(SET GLOBAL binlog_expire_logs_seconds = ...; and in the server's config)")]
    return []
