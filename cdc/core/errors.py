"""One error root for the whole project.

Every error says what failed, why, and what to do about it. ``retriable`` tells the engine
whether a retry with backoff may help (a host that is down) or not (a wrong password).
Errors pickle, because Spark ships them between processes.
"""
from __future__ import annotations


class CdcError(Exception):
    """Base of every error raised by cdc."""

    retriable: bool = False

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(message if not fix else f"{message}\n  fix: {fix}")

    def __reduce__(self):  # keep keyword arguments across pickling
        return (_rebuild, (type(self), self.message, self.fix))


def _rebuild(cls: type[CdcError], message: str, fix: str | None) -> CdcError:
    return cls(message, fix=fix)


class ConfigError(CdcError):
    """The configuration is invalid; nothing was started."""


class PluginNotFoundError(ConfigError):
    """A source or sink name that no installed plugin provides."""


class OffsetStoreError(CdcError):
    """The stored offsets cannot be read or written."""


class SchemaHistoryError(CdcError):
    """The schema history cannot be read or written."""


class SourceError(CdcError):
    """The source database refused or broke the capture."""


class RetriableSourceError(SourceError):
    """A transient source failure: the engine reconnects with backoff."""

    retriable = True


class SinkError(CdcError):
    """The sink could not accept or acknowledge records."""


class RetriableSinkError(SinkError):
    retriable = True
