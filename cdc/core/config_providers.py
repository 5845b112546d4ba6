"""Secrets kept out of configuration files, as Kafka Connect keeps them.

* Kafka Connect's config providers, so a Debezium configuration that uses them runs unchanged:
  ``config.providers=file,env`` with ``config.providers.file.class=org.apache.kafka.common.config.provider.
  FileConfigProvider`` makes ``${file:/run/secrets/db.properties:password}`` the value of ``password``
  in that properties file; ``EnvVarConfigProvider`` gives ``${env:DB_PASSWORD}``, and
  ``DirectoryConfigProvider`` ``${dir:/run/secrets:db-password}`` (a file's whole content).
* ``database.password.file``: a file holding the password (a trailing newline is not part of it).

A reference that cannot be resolved is an error naming the property and the reference, never the
value.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from cdc.core.config_files import parse_properties
from cdc.core.errors import ConfigError

_FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"
_ENV = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
_DIRECTORY = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
# Kafka's ConfigTransformer pattern: ${provider:[path:]key}
_REFERENCE = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")


def resolve(properties: dict[str, Any]) -> dict[str, Any]:
    """``properties`` with provider references replaced and ``database.password.file`` read."""
    providers = _providers(properties)
    if providers:
        properties = {name: _substitute(name, value, providers) for name, value in properties.items()}
    password_file = properties.get("database.password.file")
    if password_file:
        if properties.get("database.password"):
            raise ConfigError("both database.password and database.password.file are set",
                              fix="keep one of them (the file keeps the password out of the configuration)")
        properties = {**properties, "database.password": _read(Path(password_file), "database.password.file")
                      .rstrip("\r\n")}
    return properties


def _providers(properties: dict[str, Any]) -> dict[str, str]:
    names = [n.strip() for n in str(properties.get("config.providers") or "").split(",") if n.strip()]
    found = {}
    for name in names:
        cls = properties.get(f"config.providers.{name}.class")
        if cls not in (_FILE, _ENV, _DIRECTORY):
            raise ConfigError(f"config.providers.{name}.class={cls!r} is not a config provider cdc has",
                              fix=f"use {_FILE}, {_ENV} or {_DIRECTORY}")
        found[name] = cls
    return found


def _substitute(name: str, value: Any, providers: dict[str, str]) -> Any:
    if not isinstance(value, str) or "${" not in value:
        return value

    def one(match: re.Match[str]) -> str:
        provider, path, key = match.group(1), match.group(2), match.group(3)
        cls = providers.get(provider)
        if cls is None:
            return match.group(0)  # not a provider's reference: left as Connect leaves it
        where = f"{name}'s reference {match.group(0)}"
        if cls == _ENV:
            if key not in os.environ:
                raise ConfigError(f"{where}: no environment variable {key}", fix=f"export {key}=... before cdc starts")
            return os.environ[key]
        if not path:
            raise ConfigError(f"{where} names no file", fix="write it as ${" + provider + ":/path/to/file:key}")
        if cls == _DIRECTORY:
            return _read(Path(path) / key, where)
        entries = parse_properties(_read(Path(path), where), path)
        if key not in entries:
            raise ConfigError(f"{where}: {path} has no key {key!r}", fix=f"add {key}=... to {path}")
        return entries[key]

    return _REFERENCE.sub(one, value)


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path}: {exc.strerror or exc}",
                          fix="check the path, and that the user running cdc may read the file") from None
