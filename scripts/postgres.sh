#!/usr/bin/env bash
# Install (Debian packages), configure for logical replication and start a local PostgreSQL,
# without systemd. Idempotent: a running server is left as it is.
#
#   scripts/postgres.sh start|stop|status|dsn
#
# Environment: CDC_PG_PORT (default 54329), CDC_PG_DIR (default .local/postgres under the repo).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
port=${CDC_PG_PORT:-54329}
dir=${CDC_PG_DIR:-$here/.local/postgres}
data=$dir/data
sock=$dir/run
log=$dir/server.log
bin=""

find_bin() {
  for v in 17 16 15; do
    if [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then bin=/usr/lib/postgresql/$v/bin; return 0; fi
  done
  return 1
}

install() {
  find_bin && return 0
  echo "installing PostgreSQL from Debian's packages..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq postgresql-15 postgresql-client-15 >/dev/null
  find_bin
}

as_pg() { runuser -u postgres -- "$@"; }

start() {
  install
  if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    echo "PostgreSQL already accepting connections on port $port: using it" >&2
    return 0
  fi
  mkdir -p "$dir" "$sock"
  chown -R postgres:postgres "$dir"
  if [ ! -f "$data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    cat >>"$data/postgresql.conf" <<CONF
# cdc: logical replication for change data capture
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$sock'
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
wal_sender_timeout = 60s
fsync = off
synchronous_commit = off
wal_writer_delay = 10ms
full_page_writes = off
CONF
    # password auth over TCP so wrong-password errors are real; trust on the socket for set-up
    cat >"$data/pg_hba.conf" <<HBA
local all all trust
local replication all trust
host all postgres 127.0.0.1/32 trust
host replication postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
host replication all 127.0.0.1/32 scram-sha-256
HBA
  fi
  if ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    as_pg "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null
  fi
  for _ in $(seq 1 60); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break
    sleep 0.5
  done
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" || { echo "PostgreSQL did not start; see $log" >&2; exit 1; }
  echo "PostgreSQL ready: $(dsn)" >&2
}

stop() {
  find_bin || return 0
  [ -f "$data/PG_VERSION" ] || return 0
  as_pg "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
}

dsn() { echo "postgresql://postgres@127.0.0.1:$port/postgres"; }

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) find_bin && as_pg "$bin/pg_ctl" -D "$data" status ;;
  dsn) dsn ;;
  bin) find_bin && echo "$bin" ;;
  *) echo "usage: $0 start|stop|status|dsn|bin" >&2; exit 2 ;;
esac
