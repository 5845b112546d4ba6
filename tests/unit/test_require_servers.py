"""CDC_REQUIRE_SERVERS=1 (tests/conftest.py): a skip for something missing fails the run, whether
the test skips while it runs or its module skips itself while being collected (a module-level
``pytest.importorskip``); a skip whose reason is in EXPECTED_SKIPS stays a skip. Each case runs a
throwaway test folder in a child pytest with this repository's conftest loaded as a plugin."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

MODULES = {
    # skips at collection: a library that is not installed
    "test_missing_library.py": 'import pytest\n\npytest.importorskip("cdc_no_such_package")\n\n\n'
                               "def test_never_runs():\n    pass\n",
    # skips at collection, for a reason CI accepts (no SQL Server can run here)
    "test_expected_at_collection.py": "import pytest\n\n"
                                      'pytest.skip("set CDC_TEST_SQLSERVER_DSN to run", allow_module_level=True)\n\n\n'
                                      "def test_never_runs():\n    pass\n",
    # skips while running: a server that is not there
    "test_missing_server.py": 'import pytest\n\n\ndef test_needs_a_server():\n    pytest.skip("no server here")\n',
    "test_runs.py": "def test_runs():\n    pass\n",
}


def run(folder: Path, require: bool) -> tuple[int, str]:
    for name, text in MODULES.items():
        (folder / name).write_text(text)
    (folder / "pytest.ini").write_text("[pytest]\n")  # the folder is the rootdir, not this repository
    env = {k: v for k, v in os.environ.items() if k != "CDC_REQUIRE_SERVERS"}
    if require:
        env["CDC_REQUIRE_SERVERS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "-q", "-rfs", str(folder)], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_without_the_switch_every_skip_is_a_skip(tmp_path: Path) -> None:
    code, out = run(tmp_path, require=False)
    assert code == 0, out
    assert "1 passed, 3 skipped" in out, out
    assert "SKIPPED [1] test_missing_library.py:3: could not import 'cdc_no_such_package'" in out, out


def test_with_the_switch_a_module_skipped_at_collection_fails(tmp_path: Path) -> None:
    code, out = run(tmp_path, require=True)
    assert code == 1, out
    assert "2 failed, 1 passed, 1 skipped" in out, out
    assert "FAILED test_missing_library.py::skipped_at_collection" in out, out
    assert ("skipped while collected, but CDC_REQUIRE_SERVERS=1 requires everything to run: "
            "Skipped: could not import 'cdc_no_such_package'") in out, out
    # the run-time switch, as before
    assert "FAILED test_missing_server.py::test_needs_a_server" in out, out
    assert "skipped, but CDC_REQUIRE_SERVERS=1 requires everything to run: Skipped: no server here" in out, out
    assert "SKIPPED [1] test_expected_at_collection.py:3: set CDC_TEST_SQLSERVER_DSN to run" in out, out


@pytest.mark.parametrize("require", [False, True])
def test_the_other_tests_still_run(tmp_path: Path, require: bool) -> None:
    """A module failed this way is one failed test, not a collection error that stops the session."""
    code, out = run(tmp_path, require)
    assert "error" not in out.lower(), out
    assert "1 passed" in out, out
