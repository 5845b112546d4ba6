#!/usr/bin/env bash
# The project's test command (README and CI): set up, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider "$@"
