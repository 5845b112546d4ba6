#!/usr/bin/env bash
# Start every server of the version matrix and print one "NAME DSN" line each:
# PostgreSQL 15 (Debian's), 17 and 18 (Maven Central); MariaDB 10.11 (Debian's) and 11.4 (Maven
# Central), each also at the server's defaults (CDC_MARIADB_DEFAULTS=1). Each runs on its own
# default port and folder (scripts/postgres.sh, scripts/mariadb.sh).
#
#   scripts/server-matrix.sh [start]   start them (a server already answering is used as it is)
#   scripts/server-matrix.sh stop      stop those this script started, not those already running
#
# The servers it started are listed in .local/server-matrix.started.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
started=$here/.local/server-matrix.started
unset CDC_PG_PORT CDC_PG_DIR CDC_MARIADB_PORT CDC_MARIADB_DIR

# name, script, port, environment
matrix=(
  "pg15 postgres.sh 54329 CDC_PG_VERSION=15"
  "pg17 postgres.sh 54317 CDC_PG_VERSION=17"
  "pg18 postgres.sh 54318 CDC_PG_VERSION=18"
  "mariadb10.11 mariadb.sh 53306 CDC_MARIADB_VERSION= CDC_MARIADB_DEFAULTS=0"
  "mariadb10.11-defaults mariadb.sh 53307 CDC_MARIADB_VERSION= CDC_MARIADB_DEFAULTS=1"
  "mariadb11.4 mariadb.sh 53314 CDC_MARIADB_VERSION=11.4 CDC_MARIADB_DEFAULTS=0"
  "mariadb11.4-defaults mariadb.sh 53315 CDC_MARIADB_VERSION=11.4 CDC_MARIADB_DEFAULTS=1"
)

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

run() {  # run NAME SCRIPT PORT ENV... -- ARGS...
  local script=$2 vars=()
  shift 3
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env "${vars[@]}" bash "$here/scripts/$script" "$@"
}

start() {
  mkdir -p "$here/.local"
  touch "$started"
  local entry name port up
  for entry in "${matrix[@]}"; do
    read -r name _ port _ <<<"$entry"
    up=0
    answers "$port" && up=1
    # shellcheck disable=SC2086 # the entry splits into its fields
    run $entry -- start >&2
    if [ "$up" = 0 ] && ! grep -qx "$name" "$started"; then echo "$name" >>"$started"; fi
    # shellcheck disable=SC2086
    echo "$name $(run $entry -- dsn)"
  done
}

stop() {
  [ -f "$started" ] || return 0
  local entry name
  for entry in "${matrix[@]}"; do
    read -r name _ <<<"$entry"
    if grep -qx "$name" "$started"; then
      # shellcheck disable=SC2086
      run $entry -- stop >&2
      echo "stopped $name" >&2
    fi
  done
  rm -f "$started"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
