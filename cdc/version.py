"""cdc's version, written in one place: ``[project] version`` of pyproject.toml.

Read from the installed distribution (``cdc-debezium``); in a source checkout that is not installed,
from the pyproject.toml beside the package. It is also the version in every event's ``source.version``.
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DISTRIBUTION = "cdc-debezium"


def _version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that is not installed
        pass
    try:
        import tomllib

        project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
        if project.get("name") == DISTRIBUTION:
            return str(project["version"])
    except (OSError, ValueError, KeyError):
        pass
    return "0.0.0"


VERSION = _version()
