#!/usr/bin/env bash
# Headless Chromium from Debian's packages, and Pillow, for the status page test
# (tests/integration/test_status_page.py). Installs what is missing, then prints chromium's path.
#
#   scripts/chromium.sh            PYTHON=... picks the interpreter that gets Pillow (default python3)
set -euo pipefail
python=${PYTHON:-python3}
if ! command -v chromium >/dev/null; then
  echo "installing chromium from Debian's packages..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq chromium >/dev/null
fi
if ! "$python" -c "import PIL" 2>/dev/null; then
  echo "installing Pillow (reads the screenshots)..." >&2
  "$python" -m pip install -q --disable-pip-version-check pillow >&2
fi
command -v chromium
