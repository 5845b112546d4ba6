"""cdc-debezium's dependencies: the one part of its metadata decided when it is built (everything else
is in pyproject.toml). The list is pyproject's ``[tool.cdc] dependencies`` plus the compiled row codec
(native/, distribution cdc-debezium-native, module cdc_native), as ``CDC_NATIVE`` says:

- ``pin``: ``cdc-debezium-native==<version>`` on the platforms it has a wheel for (``[tool.cdc]
  native-platforms``), what the published wheel requires (scripts/wheels.sh builds it so), so that
  ``pip install cdc-debezium`` brings the codec there;
- ``build``: built here from native/ (a direct reference to the directory; maturin and cargo);
- ``none``: left out: rows are converted in Python (cdc warns once when it runs).

Unset: ``build`` in a checkout with cargo on PATH, ``none`` in one without (so ``pip install -e .``
works on a fresh machine either way, and the codec is not taken from an index that may not have it:
``CDC_NATIVE=pin`` asks for that), ``pin`` where native/ is not beside this file (an sdist).
"""
from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("pin", "build", "none")


def native_mode(environ: Mapping[str, str] = os.environ, here: Path = HERE) -> str:
    mode = environ.get("CDC_NATIVE", "").strip().lower()
    if mode:
        if mode not in MODES:
            raise SystemExit(f"CDC_NATIVE={mode!r}: expected one of {', '.join(MODES)}")
        return mode
    if not (here / "native" / "Cargo.toml").is_file():
        return "pin"
    return "build" if shutil.which("cargo", path=environ.get("PATH")) else "none"


def requirements(environ: Mapping[str, str] = os.environ, here: Path = HERE) -> list[str]:
    pyproject = tomllib.loads((here / "pyproject.toml").read_text())
    cdc = pyproject["tool"]["cdc"]
    required = list(cdc["dependencies"])
    mode = native_mode(environ, here)
    if mode == "pin":
        required.append(f"{cdc['native']}; {cdc['native-platforms']}")
    elif mode == "build":
        # pyo3's abi3 module: CPython only; any platform with a Rust toolchain.
        name = cdc["native"].split("==")[0]
        required.append(f"{name} @ {(here / 'native').as_uri()} ; platform_python_implementation == 'CPython'")
    return required


if __name__ == "__main__":
    from setuptools import setup

    setup(install_requires=requirements())
