#!/usr/bin/env bash
# The full fault suite (tests/faults, issue 27 item 5): every case, PostgreSQL and MariaDB, then a table
# case x source -> result (pass / xfail and why / skip and why / FAIL), with the time each case took and,
# where a case records it, how the pipeline came through (retried by itself, or failed clearly and resumed).
# The test command runs a quick subset of it (see docs/operations.md#fault-suite).
#
#   scripts/fault-suite.sh [pytest arguments...]      e.g. -k kill_storm, -x
#
# Servers as for the test command (scripts/postgres.sh, scripts/mariadb.sh, scripts/kafka.sh, or
# CDC_TEST_PG_DSN / CDC_TEST_MYSQL_DSN); CDC_FAULTS_SEED=<n> replays a case's random schedule (each case
# prints its seed). The disk-full cases mount a small tmpfs and the server-restart cases start private
# servers (never the shared ones): both need root. Output: the pytest run, then the table (Markdown);
# the exit status is pytest's.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
report=$(mktemp -t cdc-fault-suite.XXXXXX.xml)
trap 'rm -f "$report"' EXIT
started=$(date +%s)
CDC_FAULTS=all "$python" -m pytest -p no:cacheprovider -q -rA -m faults tests/faults --junitxml="$report" "$@"
status=$?
"$python" - "$report" "$(( $(date +%s) - started ))" <<'PY'
"""The junit report as a table: one row a case, one column a source."""
import re
import sys
import xml.etree.ElementTree as ET

SOURCES = ("postgres", "mariadb")
cells: dict[str, dict[str, str]] = {}
notes: list[str] = []
totals: dict[str, int] = {}
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    match = re.fullmatch(r"test_(\w+?)(?:\[(.+)\])?", case.get("name", ""))
    if match is None:
        continue
    name, params = match.group(1).replace("_", " "), (match.group(2) or "").split("-")
    source = next((p for p in params if p in SOURCES), "")
    rest = [p for p in params if p and p not in SOURCES]
    row = name + (f" ({', '.join(rest)})" if rest else "")
    seconds = float(case.get("time", "0"))
    skipped, failed = case.find("skipped"), case.find("failure")
    if failed is None:
        failed = case.find("error")
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    if failed is not None:
        result = f"**FAIL** {seconds:.0f} s"
        notes.append(f"{row} [{source}]: {(failed.get('message') or '').splitlines()[0][:300]}")
    elif skipped is not None and skipped.get("type") == "pytest.xfail":
        notes.append(f"{row} [{source}], xfail: {skipped.get('message', '').removeprefix('reason: ')}")
        result = f"xfail {seconds:.0f} s [{len(notes)}]"
    elif skipped is not None:
        notes.append(f"{row} [{source}], skipped: {skipped.get('message', '')}")
        result = f"skip [{len(notes)}]"
    else:
        result = f"pass {seconds:.0f} s"
    if properties.get("outcome"):
        result += f" ({properties['outcome']})"
    kind = result.split()[0].strip("*").lower()
    totals[kind] = totals.get(kind, 0) + 1
    cells.setdefault(row, {})[source] = result
print()
print("| case | PostgreSQL | MariaDB |")
print("|---|---|---|")
for row, by_source in cells.items():
    print(f"| {row} | {by_source.get('postgres', 'n/a')} | {by_source.get('mariadb', 'n/a')} |")
print()
for number, note in enumerate(notes, 1):
    print(f"{number}. {note}")
minutes, seconds = divmod(int(sys.argv[2]), 60)
print(f"\n{', '.join(f'{n} {k}' for k, n in sorted(totals.items()))}; the whole suite took {minutes} min {seconds} s")
PY
exit $status
