"""Fixtures of the conformance suite."""
from tests.conformance.connect_reader import connect_reader  # noqa: F401 - a fixture
