"""The quick CLI: help and version without importing a database driver, every source's flags still
declared, and the version written in one place (bench/bench_cli.py has the timings)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib

import pytest

from cdc import cli, registry
from cdc.config import CORE_OPTIONS
from tests.conftest import ROOT

HEAVY = ("psycopg", "pymysql", "pymysqlreplication", "confluent_kafka", "pyspark", "pyarrow", "sqlglot", "pyodbc",
         "fastavro")
SOURCES = sorted(registry.available(registry.SOURCES))

PROBE = """
import json, sys
from cdc.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)), file=sys.stderr)
"""


def _imported(*argv: str) -> list[str]:
    """The heavy modules a fresh process has imported after ``cdc *argv`` (which exits)."""
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    return list(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--help"], ["--version"], [], *[[name, "--help"] for name in SOURCES]],
                         ids=lambda argv: " ".join(argv) or "(nothing)")
def test_help_imports_no_driver(argv: list[str]) -> None:
    assert _imported(*argv) == []


def test_the_builtin_sources_are_there() -> None:
    assert {"postgres", "mysql", "sqlserver"} <= set(SOURCES)


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv))
    assert info.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", SOURCES)
def test_every_source_help_lists_its_options(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from cdc.metrics import options_for

    text = _help(capsys, name, "--help")
    options = [*CORE_OPTIONS, *registry.source_options(name), *cli._sink_options(), *options_for(name)]
    missing = [o.name for o in options if o.pattern is None and not re.search(re.escape(cli._flag(o)) + r"\b", text)]
    assert missing == []
    assert "--config" in text and "--set" in text
    entry = registry.available(registry.SOURCES)[name]
    first_line = registry.docstring(entry).strip().splitlines()[0]
    assert " ".join(first_line.split()) in " ".join(text.split())  # the description, as argparse wraps it


@pytest.mark.parametrize("name", SOURCES)
def test_light_declarations_are_the_sources_own(name: str) -> None:
    """``cdc.source_options`` names the very tuple the source class declares, and the docstring read
    from the file is the one the class has."""
    try:
        source = registry.load(registry.SOURCES, name)
    except registry.PluginNotFoundError as exc:  # its extra is not installed here
        pytest.skip(str(exc))
    assert registry.source_options(name) == tuple(source.options)
    entry = registry.available(registry.SOURCES)[name]
    module = sys.modules[source.__module__]
    assert registry.docstring(entry) == (source.__doc__ or module.__doc__ or "")


def test_flags_are_parsed_when_the_command_is_given() -> None:
    args = cli.build_parser().parse_args(["postgres", "--database-hostname", "db", "--topic-prefix", "p"])
    assert vars(args)["prop:database.hostname"] == "db" and vars(args)["prop:topic.prefix"] == "p"
    parser = cli.declare_all(cli.build_parser())
    assert parser.parse_args(["mysql", "--database-server-id", "7"]).__dict__["prop:database.server.id"] == "7"


def test_unknown_flag_is_still_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["postgres", "--no-such-flag"])
    assert info.value.code == 2 and "--no-such-flag" in capsys.readouterr().err


def test_version_is_written_in_one_place(capsys: pytest.CaptureFixture[str]) -> None:
    """pyproject's [project] version is cdc's (cdc.__version__, ``cdc --version``, source.version);
    the codec's Cargo.toml and cdc-debezium's pin of cdc-debezium-native repeat it."""
    import cdc
    from cdc.version import DISTRIBUTION, VERSION

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "cdc-debezium"
    assert cdc.__version__ == VERSION == project["version"]
    cargo = tomllib.loads((ROOT / "native" / "Cargo.toml").read_text())["package"]
    assert cargo["version"] == project["version"]
    native = tomllib.loads((ROOT / "native" / "pyproject.toml").read_text())["project"]
    assert native["name"] == "cdc-debezium-native" and "version" in native["dynamic"]
    native_pin = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cdc"]["native"]
    assert native_pin == f"cdc-debezium-native=={project['version']}"  # the published wheel's (setup.py)
    out = _help(capsys, "--version")
    assert out.startswith(f"cdc {project['version']} (cdc-debezium, ") and "compiled row codec: " in out


def test_version_from_a_source_checkout() -> None:
    """Not installed (no metadata): read from the pyproject.toml beside the package."""
    code = ("import importlib.metadata as m\n"
            "def missing(name):\n"
            "    raise m.PackageNotFoundError(name)\n"
            "m.version = missing\n"
            "from cdc.version import VERSION\n"
            "print(VERSION)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
