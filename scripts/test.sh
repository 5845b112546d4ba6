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
# The Rust codec's own checks (native/): its unit tests, then clippy on the crate and its tests with
# warnings as errors. Both build without pyo3's extension-module (a test binary links libpython:
# native/Cargo.toml) and share native/target as their cache: from an empty one about 35 s of CPU
# (pyo3 compiled twice: the test build and clippy's), warm about a second, after an edit of
# native/src a few seconds.
if command -v cargo >/dev/null && cargo clippy --version >/dev/null 2>&1; then
  (cd native && cargo test --quiet --no-default-features \
     && cargo clippy --quiet --all-targets --no-default-features -- -D warnings)
elif [ "${CDC_REQUIRE_SERVERS:-}" = 1 ]; then
  echo "test.sh: no Rust toolchain with clippy (cargo, cargo clippy) on PATH, and CDC_REQUIRE_SERVERS=1" \
       "requires native/'s cargo test and cargo clippy to run" >&2
  exit 1
else
  echo "test.sh: NOTE: no Rust toolchain with clippy (cargo, cargo clippy) on PATH: native/'s cargo test and" \
       "cargo clippy are skipped (CDC_REQUIRE_SERVERS=1 makes this a failure)" >&2
fi
# --durations: the slowest tests, printed for whoever looks at the test command's time next.
exec "$python" -m pytest -q -rs --durations=15 -p no:cacheprovider "$@"
