"""The version written into every event's ``source.version``."""
from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("cdc")
except PackageNotFoundError:  # running from a source tree that is not installed
    VERSION = "0.0.0"
