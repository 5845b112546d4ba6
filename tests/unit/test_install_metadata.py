"""Installing from a checkout (issue 38 item 7): cdc-debezium's hard dependencies are published names,
and the compiled row codec (cdc-debezium-native, which no index may have) is required only as setup.py
decides: pinned in the published wheel (scripts/wheels.sh, CDC_NATIVE=pin), built from native/ in a
checkout with cargo, left out in one without. No network, no build: setup.py's function is called."""
from __future__ import annotations

import runpy
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]


@pytest.fixture(scope="module")
def setup_py() -> dict[str, Any]:
    return runpy.run_path(str(ROOT / "setup.py"), run_name="setup_py_under_test")  # not __main__: no setup()


def _names(requirements: list[str]) -> list[str]:
    return [Requirement(r).name for r in requirements]


def test_the_static_metadata_has_no_codec_requirement() -> None:
    """pyproject's [project] leaves the dependencies to setup.py; no list there names the codec, so
    `pip install -e '.[dev]'` (or any extra) never asks an index for it."""
    project = PYPROJECT["project"]
    assert "dependencies" not in project and "dependencies" in project["dynamic"]
    static = [*PYPROJECT["tool"]["cdc"]["dependencies"], *(r for extra in project["optional-dependencies"].values()
                                                          for r in extra)]
    assert "cdc-debezium-native" not in _names(static)
    assert not [r for r in static if Requirement(r).url], "a direct reference cannot be published"


def test_a_checkout_without_cargo_installs_without_the_codec(setup_py: dict[str, Any]) -> None:
    assert setup_py["native_mode"]({"PATH": "/nonexistent"}, ROOT) == "none"
    required = setup_py["requirements"]({"PATH": "/nonexistent"}, ROOT)
    assert required == PYPROJECT["tool"]["cdc"]["dependencies"]


def test_a_checkout_with_cargo_builds_the_codec_from_native(setup_py: dict[str, Any], tmp_path: Path) -> None:
    cargo = tmp_path / "bin" / "cargo"
    cargo.parent.mkdir()
    cargo.write_text("#!/bin/sh\n")
    cargo.chmod(0o755)
    environ = {"PATH": str(cargo.parent)}
    assert shutil.which("cargo", path=environ["PATH"]) == str(cargo)
    assert setup_py["native_mode"](environ, ROOT) == "build"
    native = [r for r in setup_py["requirements"](environ, ROOT) if r.startswith("cdc-debezium-native")]
    assert native == [f"cdc-debezium-native @ {(ROOT / 'native').as_uri()} ; platform_python_implementation == "
                      "'CPython'"]


def test_the_published_wheel_pins_the_codec_where_it_has_wheels(setup_py: dict[str, Any], tmp_path: Path) -> None:
    """CDC_NATIVE=pin (scripts/wheels.sh), and an sdist (no native/ beside setup.py) does the same."""
    pinned = setup_py["requirements"]({"CDC_NATIVE": "pin", "PATH": "/nonexistent"}, ROOT)
    (native,) = [r for r in pinned if r.startswith("cdc-debezium-native")]
    assert native.startswith(f"cdc-debezium-native=={VERSION}; platform_python_implementation == 'CPython'")
    for platform in ("sys_platform == 'linux'", "sys_platform == 'darwin'", "'x86_64'", "'aarch64'", "'arm64'"):
        assert platform in native
    sdist = tmp_path / "sdist"
    sdist.mkdir()
    shutil.copy(ROOT / "pyproject.toml", sdist)
    assert setup_py["requirements"]({"PATH": "/nonexistent"}, sdist) == pinned


def test_an_unknown_mode_is_refused(setup_py: dict[str, Any]) -> None:
    with pytest.raises(SystemExit, match="CDC_NATIVE='wheel'"):
        setup_py["native_mode"]({"CDC_NATIVE": "wheel"}, ROOT)
