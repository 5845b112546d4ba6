"""Fixtures shared by several integration modules (found by pytest without an import)."""
from tests.integration.registry_fixtures import registry_url  # noqa: F401 - fixture

__all__ = ["registry_url"]
