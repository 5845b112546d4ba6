"""Files cdc creates hold what the database holds (rows, DDL), so they are created readable by their
owner only (mode 0600) unless configured wider (``sink.files.mode``); an existing file keeps its mode."""
from __future__ import annotations

import os
from pathlib import Path
from typing import IO

PRIVATE = 0o600


def open_append(path: Path, mode: int = PRIVATE, buffering: int = -1) -> IO[bytes]:
    """``path`` opened for appending bytes, created with exactly ``mode`` (whatever the umask) when new."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, mode)
        os.fchmod(fd, mode)  # the umask narrowed it; a configured mode is meant as written
    except FileExistsError:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    return os.fdopen(fd, "ab", buffering=buffering)


def file_mode(text: str) -> str | None:
    """A validator: an octal file mode such as 600 or 0640, owner-writable."""
    try:
        mode = int(str(text), 8)
    except ValueError:
        return f"expected an octal file mode such as 600 or 640, got {text!r}"
    if not 0 <= mode <= 0o777 or not mode & 0o200:
        return "expected a mode from 200 to 777 that lets the owner write, such as 600 or 640"
    return None
