"""How long the ``cdc`` command takes to answer ``--help`` / ``--version`` / ``<source> --help``.

    python bench/bench_cli.py [--runs 9] [--command postgres --help] ...

Each command runs as a fresh process, the way the ``cdc`` console script runs it
(``from cdc.cli import main; sys.exit(main())``, without the shell wrapper of pyenv or a venv's
script), ``--runs`` times; min / median / max in seconds. The references measured in the same run:
a bare ``python -c pass`` (the interpreter's own start) and the time of a 10-million-step Python
loop on this machine (to compare figures taken on machines, or days, of other speeds).
Target (an aim, not a gate): each under 0.5 s here.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import loop_seconds  # noqa: E402

ENTRY = "import sys; from cdc.cli import main; sys.exit(main())"
COMMANDS: list[list[str]] = [["--help"], ["--version"], ["postgres", "--help"], ["mysql", "--help"],
                             ["sqlserver", "--help"]]


def timed(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--command", nargs=argparse.REMAINDER, help="time this command line only (after 'cdc')")
    args = parser.parse_args()
    commands = [args.command] if args.command else COMMANDS
    timed([sys.executable, "-c", ENTRY, "--help"], 1)  # warm the file cache and the .pyc files
    loop = loop_seconds()
    print(f"python {sys.version.split()[0]}; 10-million-step loop: {loop:.3f} s; {args.runs} runs each")
    rows = [("python -c pass", timed([sys.executable, "-c", "pass"], args.runs))]
    rows += [("cdc " + " ".join(c), timed([sys.executable, "-c", ENTRY, *c], args.runs)) for c in commands]
    print(f"{'command':28} {'min':>7} {'median':>7} {'max':>7}")
    for name, times in rows:
        print(f"{name:28} {min(times):7.3f} {statistics.median(times):7.3f} {max(times):7.3f}")


if __name__ == "__main__":
    main()
