"""Record Debezium's output for conformance workloads, as fixtures the tests compare cdc against.

    python -m tests.conformance.record                 # every workload
    python -m tests.conformance.record pg_keys mariadb_types
    python -m tests.conformance.record --compare pg_keys   # also run cdc and print the differences
    CDC_TEST_PG_DSN=... python -m tests.conformance.record --versus-fixture   # another server version:
                                            # Debezium's output there against the recorded fixture

Needs Java and Maven (Debezium's jars come from Maven Central through debezium/fetch.sh) and the
suite's servers (scripts/postgres.sh; scripts/mariadb.sh with CDC_MARIADB_DEFAULTS=1), which it
starts when they are not running. A fixture is written only when Debezium ran cleanly.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tests.conformance import compare, deviations, runners
from tests.conformance import workloads as wl


def dsn_for(db: str) -> str:
    return wl.postgres_dsn() if db == "postgres" else wl.mariadb_dsn()


def record(name: str, work: Path, *, write: bool = True, into: Path | None = None) -> list[dict]:
    workload = wl.load(name)
    dsn = dsn_for(workload.db)
    if workload.db == "mariadb":
        wl.set_global(dsn, {"binlog_row_metadata": "NO_LOG"})  # the server's default
    records = runners.run_debezium(workload, dsn, work / name)
    if not write:
        return records
    fixture = (into / f"{name}.jsonl") if into is not None else workload.fixture
    fixture.parent.mkdir(parents=True, exist_ok=True)
    with open(fixture, "w", encoding="utf-8") as out:
        for r in records:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="workloads (default: all)")
    parser.add_argument("--compare", action="store_true", help="run cdc too and report the differences")
    parser.add_argument("--only-compare", action="store_true",
                        help="do not run Debezium: compare cdc with the recorded fixture")
    parser.add_argument("--versus-fixture", action="store_true",
                        help="run Debezium but keep the fixture: report how its output here differs from it "
                             "(does another server version change Debezium's events?)")
    parser.add_argument("--server", help="record into fixtures/SERVER/ (a server version whose Debezium output "
                                         "differs from the default fixtures', e.g. mariadb11.4)")
    parser.add_argument("--limit", type=int, default=25, help="differences shown per workload")
    args = parser.parse_args(argv)
    names = args.names or wl.names()
    failed = 0
    runs = wl.ROOT / ".local" / "conformance-runs"  # kept: Debezium's log and offsets, for a failed run
    runs.mkdir(parents=True, exist_ok=True)
    if True:
        tmp = tempfile.mkdtemp(prefix="run-", dir=runs)
        for name in names:
            try:
                if args.only_compare:
                    theirs = [json.loads(line) for line in wl.load(name).fixture.read_text().splitlines() if line]
                elif args.versus_fixture:
                    fresh = record(name, Path(tmp), write=False)
                    stored = [json.loads(line) for line in wl.load(name).fixture.read_text().splitlines() if line]
                    a = compare.normalize(deviations.apply_raw(name, "default", fresh))
                    b = compare.normalize(deviations.apply_raw(name, "default", stored))
                    print(f"{name}: Debezium here vs the fixture: identical {compare.identical_count(a, b)} of "
                          f"{len(b)}")
                    text = compare.report(a, b, args.limit)
                    if text:
                        print(text)
                        failed += 1
                    continue
                else:
                    theirs = record(name, Path(tmp), into=wl.FIXTURES / args.server if args.server else None)
            except Exception as exc:  # noqa: BLE001 - report and go on with the others
                print(f"{name}: Debezium run failed: {exc}", file=sys.stderr)
                failed += 1
                continue
            where = (wl.FIXTURES / args.server / f"{name}.jsonl") if args.server else wl.load(name).fixture
            print(f"{name}: {len(theirs)} records -> {where.relative_to(wl.ROOT)}")
            if args.compare or args.only_compare:
                workload = wl.load(name)
                try:
                    ours = runners.run_cdc(workload, dsn_for(workload.db), Path(tmp) / f"{name}-cdc", len(theirs))
                except Exception as exc:  # noqa: BLE001
                    print(f"  cdc failed: {exc}")
                    continue
                a, b = deviations.prepare(name, "default", ours, theirs)
                print(f"  identical: {compare.identical_count(a, b)} of {len(b)}")
                text = compare.report(a, b, args.limit)
                if text:
                    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
