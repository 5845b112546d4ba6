"""Helpers for the tests of sources and sinks, also for plugins from other packages."""
