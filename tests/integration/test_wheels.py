"""The wheels a user installs: scripts/wheels.sh builds them, a fresh virtual environment on a PATH
without cargo or rustc installs them (our wheels from files only, their dependencies from the index),
and the demo's pipeline (scripts/demo.sh) runs there with the compiled codec on.

In the test command only this machine's codec wheel is built (Linux x86_64, glibc: a minute cold);
every platform's (Linux x86_64/aarch64, glibc and musl, macOS x86_64/arm64, cross-built with zig: several
minutes cold) with CDC_ALL_WHEELS=1, which scripts/wheels-matrix.sh sets. The codec wheels are cached under
~/.cache/cdc/wheels/<hash of native/, pyproject.toml, scripts/wheels.sh and the targets> (CDC_CACHE moves
~/.cache/cdc): a warm run builds only the pure-Python wheel of cdc-debezium, whose code changes more often.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import signal
import struct
import subprocess
import sys
import time
import tomllib
import uuid
import zipfile
from pathlib import Path

import psycopg
import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(1800)]

CACHE = Path(os.environ.get("CDC_CACHE", Path.home() / ".cache" / "cdc")) / "wheels"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
ALL_WHEELS = os.environ.get("CDC_ALL_WHEELS") == "1"
# (Rust target, the codec wheel's platform tag)
TARGETS = {"x86_64-unknown-linux-gnu": "manylinux2014_x86_64.manylinux_2_17_x86_64",
           "aarch64-unknown-linux-gnu": "manylinux2014_aarch64.manylinux_2_17_aarch64",
           "x86_64-unknown-linux-musl": "musllinux_1_2_x86_64", "aarch64-unknown-linux-musl": "musllinux_1_2_aarch64",
           "x86_64-apple-darwin": "macosx_10_12_x86_64", "aarch64-apple-darwin": "macosx_11_0_arm64"}
HOST = f"{platform.machine()}-unknown-linux-gnu"


def _targets() -> list[str]:
    """What this run builds: every platform's codec wheel, or this machine's."""
    return list(TARGETS) if ALL_WHEELS else [HOST]


def _key() -> str:
    native = ROOT / "native"
    files = sorted(f for top in native.iterdir() if top.name != "target"
                   for f in ([top] if top.is_file() else top.rglob("*")) if f.is_file())
    digest = hashlib.sha256()
    for path in [*files, ROOT / "pyproject.toml", ROOT / "scripts" / "wheels.sh"]:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(" ".join(_targets()).encode())
    return digest.hexdigest()[:16]


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{' '.join(map(str, argv))} failed:\n{done.stdout}\n{done.stderr}"
    return done  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUT of scripts/wheels.sh: the pure-Python wheel built now, the codec wheels from the cache."""
    if shutil.which("cargo") is None:
        pytest.skip("no Rust toolchain (cargo): the codec wheels cannot be built here")
    out = tmp_path_factory.mktemp("wheels")
    cached = CACHE / _key()
    env = {**os.environ, "PYTHON": sys.executable}
    if cached.is_dir():
        _run(["bash", str(ROOT / "scripts" / "wheels.sh"), str(out)], cwd=ROOT, env={**env, "CDC_WHEEL_TARGETS": ""},
             timeout=900)
        for wheel in cached.glob("*.whl"):
            shutil.copy(wheel, out)
    else:
        _run(["bash", str(ROOT / "scripts" / "wheels.sh"), str(out)], cwd=ROOT,
             env={**env, "CDC_WHEEL_TARGETS": " ".join(_targets())}, timeout=1700)
        partial = CACHE / f".{cached.name}.{uuid.uuid4().hex[:6]}"
        partial.mkdir(parents=True)
        for wheel in out.glob("cdc_debezium_native-*.whl"):
            shutil.copy(wheel, partial)
        partial.rename(cached)
    return out


def _clean_path(venv: Path) -> str:
    """PATH with the venv first and no directory that has cargo or rustc."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not any((Path(d) / tool).exists() for tool in ("cargo", "rustc", "rustup"))]
    return os.pathsep.join([str(venv / "bin"), *dirs])


ELF_CHECK = """
import sys
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
with open(sys.argv[1], "rb") as file:
    elf = ELFFile(file)
    needed = sorted(t.needed for s in elf.iter_sections() if isinstance(s, DynamicSection)
                    for t in s.iter_tags() if t.entry.d_tag == "DT_NEEDED")
    print(elf["e_machine"], *needed)
"""


def test_the_wheels(wheels: Path, tmp_path: Path) -> None:
    """Every wheel is there; auditwheel confirms the manylinux tags (it cannot read musl wheels on
    a glibc machine: those are checked for their machine and their one library, musl's libc.so;
    the macOS ones for their Mach-O CPU type)."""
    names = sorted(p.name for p in wheels.glob("*.whl"))
    assert f"cdc_debezium-{VERSION}-py3-none-any.whl" in names
    native = [n for n in names if n.startswith("cdc_debezium_native-")]
    expected = sorted(f"cdc_debezium_native-{VERSION}-cp311-abi3-{TARGETS[t]}.whl" for t in _targets())
    assert native == expected
    tools = tmp_path / "tools"
    _run([sys.executable, "-m", "venv", str(tools)])
    _run([str(tools / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "auditwheel"], timeout=600)
    for name in native:
        arch = "x86_64" if "x86_64" in name else "aarch64"
        if "macosx" in name:  # a 64-bit Mach-O library of its CPU (cross-built: it cannot be run here)
            with zipfile.ZipFile(wheels / name) as wheel:
                (library,) = [n for n in wheel.namelist() if n.startswith("cdc_native/") and n.endswith(".so")]
                magic, cpu = struct.unpack("<II", wheel.read(library)[:8])
            assert (magic, cpu) == (0xFEEDFACF, {"x86_64": 0x01000007, "aarch64": 0x0100000C}[arch]), name
        elif "manylinux" in name:
            shown = _run([str(tools / "bin" / "auditwheel"), "show", str(wheels / name)]).stdout
            assert f'"manylinux_2_17_{arch}"' in " ".join(shown.split()), shown
        else:
            unpacked = tmp_path / name
            shutil.unpack_archive(wheels / name, unpacked, "zip")
            (library,) = unpacked.glob("cdc_native/*.so")
            elf = _run([str(tools / "bin" / "python"), "-c", ELF_CHECK, str(library)]).stdout.split()
            assert elf == [{"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}[arch], "libc.so"], elf


def test_fresh_venv_runs_the_demo_with_the_codec(wheels: Path, pg_db: dict[str, str], tmp_path: Path) -> None:
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"no codec wheel for {platform.machine()}")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    path = _clean_path(venv)
    assert shutil.which("cargo", path=path) is None and shutil.which("rustc", path=path) is None
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PATH=path, VIRTUAL_ENV=str(venv))
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    # Ours from the files only (pip picks the codec wheel of this platform), then the rest from the index.
    _run([*pip, "install", "-q", "--no-index", "--no-deps", "--find-links", str(wheels),
          f"cdc-debezium=={VERSION}", f"cdc-debezium-native=={VERSION}"], env=env, cwd=tmp_path, timeout=600)
    _run([*pip, "install", "-q", f"cdc-debezium=={VERSION}"], env=env, cwd=tmp_path, timeout=900)
    python = str(venv / "bin" / "python")
    probe = _run([python, "-c", "import cdc, cdc_native, importlib.metadata as m; print(cdc.__file__); "
                  "print(cdc_native.__file__); print(m.distribution('cdc-debezium-native').read_text('WHEEL'))"],
                 env=env, cwd=tmp_path).stdout
    assert probe.count(str(venv)) == 2, probe  # both from the venv, not from this checkout
    assert f"Tag: cp311-abi3-manylinux_2_17_{platform.machine()}" in probe
    version = _run([str(venv / "bin" / "cdc"), "--version"], env=env, cwd=tmp_path).stdout
    assert f"cdc {VERSION} (cdc-debezium" in version and f"cdc_native {VERSION} (cdc-debezium-native)" in version

    # The demo (scripts/demo.sh): a sample table, captured, then changed while cdc streams.
    dsn = pg_db["dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email text, "
                     "balance numeric(10,2), joined date)")
        conn.execute("INSERT INTO customers (name, email, balance, joined) VALUES ('Ada', 'ada@example.com', "
                     "120.50, '2024-01-02'), ('Grace', 'grace@example.com', 99.99, '2024-03-04')")
    out = tmp_path / "out"
    slot = "wheels_" + uuid.uuid4().hex[:8]
    command = [str(venv / "bin" / "cdc"), "-v", "postgres", "--database-hostname", pg_db["database.hostname"],
               "--database-port", pg_db["database.port"], "--database-user", pg_db["database.user"],
               "--database-dbname", pg_db["database.dbname"], "--topic-prefix", "demo", "--slot-name", slot,
               "--publication-name", slot, "--decimal-handling-mode", "string", "--slot-drop-on-stop", "true",
               "--output", str(out), "--offsets", str(out / "offsets.json")]
    if pg_db.get("database.password"):
        env["CDC_PASSWORD"] = pg_db["database.password"]
    topic = out / "demo.public.customers.jsonl"
    log = tmp_path / "cdc.log"
    with open(log, "w") as stderr:
        process = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            def wait_for(events: int) -> None:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    assert process.poll() is None, log.read_text()
                    if topic.exists() and len(topic.read_text().splitlines()) >= events:
                        return
                    time.sleep(0.2)
                raise AssertionError(f"timed out waiting for {events} events:\n{log.read_text()}")

            wait_for(2)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("INSERT INTO customers (name, email, balance, joined) "
                             "VALUES ('Linus', 'linus@example.com', 0, '2024-05-06')")
                conn.execute("UPDATE customers SET balance = balance + 10 WHERE name = 'Ada'")
                conn.execute("DELETE FROM customers WHERE name = 'Grace'")
            wait_for(6)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    text = log.read_text()
    lines = [json.loads(line) for line in topic.read_text().splitlines()]
    ops = [r["value"]["payload"]["op"] if r["value"] else None for r in lines]
    assert ops == ["r", "r", "c", "u", "d", None], ops
    assert lines[3]["value"]["payload"]["after"]["balance"] == "130.50"
    assert "is not installed" not in text, text
    assert f"compiled row codec: cdc_native from {venv}" in text, text
