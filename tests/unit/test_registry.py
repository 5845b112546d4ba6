"""Plugins are found through entry points, including from a separately installed package."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cdc import registry
from cdc.core.errors import PluginNotFoundError


def test_builtin_plugins_are_registered() -> None:
    assert "postgres" in registry.available(registry.SOURCES)
    assert {"files", "stdout"} <= set(registry.available(registry.SINKS))


def test_unknown_plugin_lists_the_known_ones() -> None:
    with pytest.raises(PluginNotFoundError) as info:
        registry.load(registry.SOURCES, "postgress")
    text = str(info.value)
    assert "unknown source 'postgress'" in text
    assert "postgres" in text
    assert "Did you mean 'postgres'" in text


def test_plugin_from_a_separate_distribution_is_discovered(tmp_path: Path) -> None:
    project = tmp_path / "cdc-echo"
    (project / "cdc_echo").mkdir(parents=True)
    (project / "cdc_echo" / "__init__.py").write_text(textwrap.dedent('''
        class EchoSource:
            """Echo source from a third-party package."""
            name = "echo"
            options = ()
    '''))
    (project / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "cdc-echo"
        version = "0.0.1"
        [project.entry-points."cdc.sources"]
        echo = "cdc_echo:EchoSource"
        [tool.setuptools]
        packages = ["cdc_echo"]
    '''))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(project)], check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    listing = subprocess.run([sys.executable, "-m", "cdc.cli", "sources"], env=env, check=True,
                             capture_output=True, text=True).stdout
    assert "echo" in listing and "cdc_echo:EchoSource" in listing and "(cdc-echo)" in listing
    loaded = subprocess.run([sys.executable, "-c", "from cdc import registry; "
                             "print(registry.load(registry.SOURCES, 'echo').__doc__)"],
                            env=env, check=True, capture_output=True, text=True).stdout
    assert "third-party" in loaded
