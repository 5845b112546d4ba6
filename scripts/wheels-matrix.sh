#!/usr/bin/env bash
# Every platform's wheels, built and checked: Linux x86_64/aarch64 (glibc and musl) and macOS x86_64/arm64,
# cross-built with zig (several minutes on a cold cache), then installed here in a fresh virtual environment
# (tests/integration/test_wheels.py). The test command (scripts/test.sh) builds this machine's wheel only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CDC_ALL_WHEELS=1 exec "${PYTHON:-python3}" -m pytest -q -rs -p no:cacheprovider tests/integration/test_wheels.py "$@"
