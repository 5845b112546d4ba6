#!/usr/bin/env bash
# Runs tests/integration/test_bad_input.py and prints every bad input it tries with the error cdc gives
# (what failed and why | the fix line), as a Markdown table: the list of bad inputs and their messages.
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp)
trap 'rm -f "$report"' EXIT
CDC_BAD_INPUT_REPORT="$report" python3 -m pytest -q -p no:cacheprovider tests/integration/test_bad_input.py "$@" >&2
echo "| case | error | fix |"
echo "|---|---|---|"
cat "$report"
