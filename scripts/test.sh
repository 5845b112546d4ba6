#!/usr/bin/env bash
# The project's test command (README and CI): set up, check the code, then run every test.
# -rs lists every skipped test with its reason; CDC_REQUIRE_SERVERS=1 (CI) turns a skip for a
# missing server or library into a failure (tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python=${PYTHON:-python3}
"$python" -m ruff check cdc tests bench
"$python" -m mypy cdc
exec "$python" -m pytest -q -rs -p no:cacheprovider "$@"
