"""Servers the tests start with the project's scripts (scripts/postgres.sh, scripts/mariadb.sh...), for the
fixtures of tests/conftest.py and the conformance suite alike."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def start_by_script(name: str, env: dict[str, str] | None = None, timeout: int = 900) -> tuple[str | None, str]:
    """Start a server with scripts/``name`` (``start``, then ``dsn``): its DSN, or None and why not.

    A start that fails is tried once more (a port another process held for a moment, a slow first
    start); the reason kept is the script's own last words, which name the server's log."""
    script = str(ROOT / "scripts" / name)
    full_env = {**os.environ, **(env or {})}
    why = ""
    for _ in range(2):
        try:
            subprocess.run(["bash", script, "start"], env=full_env, check=True, capture_output=True, text=True,
                           timeout=timeout)
        except subprocess.CalledProcessError as failed:
            why = " ".join((failed.stderr or "").strip().splitlines()[-12:]) or f"exit status {failed.returncode}"
            continue
        except (subprocess.SubprocessError, OSError) as failed:
            why = str(failed)
            continue
        dsn = subprocess.run(["bash", script, "dsn"], env=full_env, check=True, capture_output=True,
                             text=True).stdout.strip()
        return dsn, ""
    return None, f"scripts/{name} start failed: {why}"
