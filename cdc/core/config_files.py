"""Configuration files: TOML (flat or dotted tables) and Java ``.properties``, into a flat mapping of
property names for :class:`cdc.core.config.Config`."""
from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cdc.core.errors import ConfigError

log = logging.getLogger(__name__)

_NOT_CONFIG = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML"}


def load_file(path: str | Path) -> dict[str, Any]:
    """Read a TOML file (flat or dotted tables) or a Java ``.properties`` file (UTF-8)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _NOT_CONFIG:
        raise ConfigError(f"config file {path} is {_NOT_CONFIG[suffix]}, which cdc does not read",
                          fix="write it as TOML (name.toml) or as Java properties (name.properties, key=value lines)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}", fix=_read_fix(path, exc)) from None
    try:
        text = raw.decode("utf-8-sig")  # a byte order mark, as some editors write, is no error
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(
            f"config file {path} is not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} is no UTF-8 character",
            fix=f"save it as UTF-8 (e.g. iconv -f latin1 -t utf-8 {path} > utf8{path.suffix}), "
                "or replace that character",
        ) from None
    if suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                f"{path} is not valid TOML: {exc}",
                fix="correct that line: TOML strings need quotes (topic.prefix = \"shop\"); a file of plain "
                    "key=value lines is a .properties file, so name it that way",
            ) from None
        return _flatten(data)
    return parse_properties(text, str(path))


def _read_fix(path: Path, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"check the path (relative paths start at {Path.cwd()})"
    if isinstance(exc, IsADirectoryError):
        return "give the path of the config file itself, not of its folder"
    if isinstance(exc, PermissionError):
        return "make the file readable by the user running cdc"
    return "check that the file can be read"


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def parse_properties(text: str, origin: str = "properties") -> dict[str, str]:
    """Java properties: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuations.

    A line with no name before its ``=`` or ``:``, or an INI/TOML section header, is an error naming
    ``origin`` and the line: Java would read something, but not what the writer meant."""
    out: dict[str, str] = {}
    logical = ""
    first = 0
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        if not logical:
            first = number
        if stripped.endswith("\\") and not stripped.endswith("\\\\") and number < len(lines):
            logical += stripped[:-1]
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            stripped = stripped[:-1]  # a continuation on the last line continues with nothing
        logical += stripped
        if not logical:
            continue
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)", logical)
        if logical[0] in "=:":
            raise ConfigError(f"{origin} line {first}: {logical!r} has no property name before {logical[0]!r}",
                              fix="write it as name=value, or start the line with # to make it a comment")
        if logical.startswith("[") and logical.endswith("]"):
            raise ConfigError(f"{origin} line {first}: {logical!r} is a section header, which a .properties file "
                              f"does not have",
                              fix="write full names (database.hostname=...) without sections, or write the file as "
                                  "TOML and name it .toml")
        name, value = (match.group(1), match.group(2).replace("\\\\", "\\")) if match else (logical, "")
        if name in out and out[name] != value:
            log.warning("%s line %d sets %s again: the last value is used (as Java's Properties does)",
                        origin, first, name)
        out[name] = value
        logical = ""
    return out

