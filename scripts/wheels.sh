#!/usr/bin/env bash
# Build every wheel a user needs, or install this checkout with its compiled codec.
#
#   scripts/wheels.sh OUT
#       into OUT: cdc_debezium-<v>-py3-none-any.whl (pure Python; it depends on the codec on Linux
#       x86_64/aarch64 and macOS x86_64/arm64) and the codec's wheels for those, one abi3 wheel
#       each for CPython 3.11+: cdc_debezium_native-<v>-cp311-abi3-<tag>.whl with the tags
#       manylinux2014_<arch>.manylinux_2_17_<arch> (glibc 2.17+), musllinux_1_2_<arch> (musl 1.2+,
#       Alpine), macosx_10_12_x86_64 and macosx_11_0_arm64. The codec is built with maturin and
#       linked by zig (against the oldest libc of each Linux tag; with zig's own macOS stubs, no
#       SDK), both installed from PyPI into a throwaway virtual environment; the Rust standard
#       library of each target comes from rustup. The macOS wheels are cross-built, never run here.
#       CDC_WHEEL_TARGETS (Rust target triples) chooses others; empty: the pure-Python wheel only.
#       Needs cargo (and rustup for the targets that are not the host's). Prints each wheel's size.
#
#   scripts/wheels.sh --develop [EXTRAS]
#       pip install -e ".[EXTRAS]" for a source checkout (what `pip install -e .` does by itself:
#       setup.py builds the codec from native/ when cargo is on PATH and leaves it out otherwise),
#       after removing installs from before the rename; when the codec fails to build, cdc is
#       installed without it (CDC_NATIVE=none) and converts rows in Python.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}

develop() {
  local extras=$1 spec=. log=.local/pip.log
  [ -n "$extras" ] && spec=".[$extras]"
  mkdir -p .local
  # An install from before the rename (distribution "cdc", codec "cdc-native") would shadow this one.
  if "$python" -c 'import importlib.metadata as m, sys; sys.exit(0 if any(e.group == "cdc.sources" for e in m.distribution("cdc").entry_points) else 1)' 2>/dev/null; then
    "$python" -m pip uninstall -q -y cdc >/dev/null 2>&1 || true
  fi
  "$python" -m pip uninstall -q -y cdc-native >/dev/null 2>&1 || true
  # setup.py decides: with cargo on PATH the codec is built from native/ (pip install ./native, by
  # pip itself), without it cdc is installed alone (CDC_NATIVE=pin|build|none overrides).
  if [ -n "${CDC_NATIVE:-}" ]; then
    echo "CDC_NATIVE=$CDC_NATIVE: the compiled row codec as setup.py says for it" >&2
  elif command -v cargo >/dev/null; then
    echo "building the compiled row codec (native/, Rust) with cdc..." >&2
  else
    echo "no Rust toolchain (cargo): cdc without the compiled row codec (rows converted in Python)" >&2
  fi
  if "$python" -m pip install -q --disable-pip-version-check -e "$spec" >"$log" 2>&1; then
    return 0
  fi
  if [ "${CDC_NATIVE:-}" = none ] || ! grep -q "cdc-debezium-native\|cdc_native\|maturin\|cargo" "$log"; then
    cat "$log" >&2; echo "pip install failed (log above)" >&2; return 1
  fi
  # The codec did not build (or, with CDC_NATIVE=pin, is not on the index): cdc without it, rather than nothing.
  cp "$log" .local/native.log
  echo "the compiled row codec could not be installed (.local/native.log): installing cdc without it" \
    "(rows converted in Python)" >&2
  if ! CDC_NATIVE=none "$python" -m pip install -q --disable-pip-version-check -e "$spec" >"$log" 2>&1; then
    cat "$log" >&2; echo "pip install failed (log above)" >&2; return 1
  fi
}

if [ "${1:-}" = "--develop" ]; then
  develop "${2:-}"
  exit
fi

out=${1:?usage: scripts/wheels.sh OUT | scripts/wheels.sh --develop [EXTRAS]}
targets=${CDC_WHEEL_TARGETS-x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl
  aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
"$python" -m venv "$tools/venv"
if [ -n "$targets" ]; then
  command -v cargo >/dev/null || { echo "wheels.sh: needs a Rust toolchain (cargo) to build the codec" >&2; exit 1; }
  echo "installing maturin and zig (PyPI) into a throwaway virtual environment..." >&2
  "$tools/venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.5,<2" "ziglang>=0.13,<0.18" >&2
fi
export PATH="$tools/venv/bin:$PATH"
for target in $targets; do
  case $target in
    *-linux-musl) compatibility=(--compatibility musllinux_1_2) ;;
    *-linux-gnu) compatibility=(--compatibility manylinux2014) ;;
    *) compatibility=() ;;
  esac
  if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$target"; then
    echo "adding the Rust standard library for $target (rustup)..." >&2
    rustup target add "$target" >&2
  fi
  echo "building cdc-debezium-native for $target (a minute or more on a cold cache)..." >&2
  maturin build --release --manifest-path native/Cargo.toml --target "$target" --zig \
    "${compatibility[@]}" --out "$out" >&2
done
echo "building the pure-Python wheel of cdc-debezium..." >&2
# CDC_NATIVE=pin: the published wheel requires cdc-debezium-native==<version> where it has a wheel
# (setup.py), so that `pip install cdc-debezium` brings the codec; a checkout's install does not.
CDC_NATIVE=pin "$tools/venv/bin/pip" wheel -q --disable-pip-version-check --no-deps --wheel-dir "$out" . >&2
if ! "$python" - "$out" <<'PY'; then
import sys, tomllib, zipfile
version = tomllib.load(open("pyproject.toml", "rb"))["project"]["version"]
name = f"cdc_debezium-{version}-py3-none-any.whl"
metadata = zipfile.ZipFile(f"{sys.argv[1]}/{name}").read(f"cdc_debezium-{version}.dist-info/METADATA").decode()
if f"Requires-Dist: cdc-debezium-native=={version}; " not in metadata:
    sys.exit(f"wheels.sh: {name} does not require cdc-debezium-native=={version}")
PY
  exit 1
fi
for wheel in "$out"/*.whl; do
  printf '%s\t%s bytes\n' "$(basename "$wheel")" "$(stat -c %s "$wheel")"
done
