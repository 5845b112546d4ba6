#!/usr/bin/env bash
# Every conformance workload with the compiled codec on (its default) and off (native.rows=false, Python's
# converters), against Debezium's recorded events. The test command runs the workloads the codec takes on
# both paths; this runs all of them (about twice the conformance suite's time).
set -euo pipefail
cd "$(dirname "$0")/.."
CDC_CONFORMANCE_PATHS=all exec "${PYTHON:-python3}" -m pytest -q -rs -p no:cacheprovider \
  tests/conformance/test_conformance.py "$@"
