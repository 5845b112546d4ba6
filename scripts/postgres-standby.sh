#!/usr/bin/env bash
# A local PostgreSQL primary and a streaming standby that synchronises failover slots, for failover tests
# and for reading from a standby (tests/faults/test_pg_failover.py): PostgreSQL 17 (or 18) from Maven
# Central, each server started by scripts/postgres.sh (same settings, users and pg_hba.conf). Idempotent:
# servers that run are left as they are.
#
#   scripts/postgres-standby.sh start          both servers, the standby streaming from the primary
#   scripts/postgres-standby.sh caught-up      exit 0 when the standby replayed all the primary wrote
#   scripts/postgres-standby.sh kill-primary   kill -9 the primary's processes (a crash, not a shutdown)
#   scripts/postgres-standby.sh promote        the standby leaves recovery and takes writes
#   scripts/postgres-standby.sh stop           stop whichever of the two runs
#   scripts/postgres-standby.sh destroy        stop both and remove their folders
#   scripts/postgres-standby.sh status | dsn   (dsn: the primary's, then the standby's)
#
# The standby is a copy of the primary's data directory taken while it is stopped (the Maven builds ship no
# pg_basebackup, and Debian's 15 refuses a newer server), with what slot synchronisation needs:
#   standby:  primary_conninfo with dbname, primary_slot_name (a physical slot on the primary),
#             hot_standby_feedback=on, sync_replication_slots=on
#   primary:  synchronized_standby_slots naming that physical slot (logical walsenders of failover slots send
#             nothing the standby has not flushed), and, with CDC_STANDBY_SYNC=1 (the default), synchronous
#             replication to the standby (synchronous_commit=on): no committed transaction is lost in a failover
# Set on the primary with ALTER SYSTEM after the copy, so the promoted standby does not inherit them.
#
# Environment: CDC_STANDBY_DIR (default .local/postgres-standby: primary/ and standby/ in it),
# CDC_STANDBY_PRIMARY_PORT (default 54337), CDC_STANDBY_PORT (default 54338): away from 54329 (the shared
# server), 54317 and 54318 (scripts/postgres.sh's 17 and 18); CDC_PG_VERSION 17 (default) or 18.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${CDC_STANDBY_DIR:-$here/.local/postgres-standby}
primary_port=${CDC_STANDBY_PRIMARY_PORT:-54337}
standby_port=${CDC_STANDBY_PORT:-54338}
major=${CDC_PG_VERSION:-17}
sync=${CDC_STANDBY_SYNC:-1}
physical_slot=cdc_standby
case "$major" in
  17|18) ;;
  *) echo "CDC_PG_VERSION=$major: slot synchronisation needs 17 or 18" >&2; exit 2 ;;
esac

server() {  # server primary|standby start|stop|status|bin
  local port=$primary_port
  [ "$1" = standby ] && port=$standby_port
  CDC_PG_VERSION=$major CDC_PG_PORT=$port CDC_PG_DIR=$dir/$1 bash "$here/scripts/postgres.sh" "$2"
}

psql_tool() {
  local v
  for v in 18 17 16 15; do
    if [ -x "/usr/lib/postgresql/$v/bin/psql" ]; then echo "/usr/lib/postgresql/$v/bin/psql"; return 0; fi
  done
  echo "no psql (scripts/postgres.sh installs Debian's client)" >&2
  return 1
}

sql() {  # sql primary|standby STATEMENT
  local port=$primary_port
  [ "$1" = standby ] && port=$standby_port
  "$(psql_tool)" -X -q -t -A -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "$2"
}

as_pg() { runuser -u postgres -- "$@"; }

make_standby() {
  local data=$dir/standby/data
  server primary start
  sql primary "SELECT 1 FROM pg_create_physical_replication_slot('$physical_slot', true)
               WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = '$physical_slot')" >/dev/null
  server primary stop
  rm -rf "$dir/standby"
  mkdir -p "$dir/standby/run"
  cp -a "$dir/primary/data" "$data"
  # Not the primary's: its slots (the standby has its own), its pid file, its log.
  rm -rf "$data/pg_replslot/"* "$data/postmaster.pid" "$data/postmaster.opts"
  cat >>"$data/postgresql.conf" <<CONF
# cdc: a streaming standby of the server on port $primary_port, synchronising its failover slots
port = $standby_port
unix_socket_directories = '$dir/standby/run'
primary_conninfo = 'host=127.0.0.1 port=$primary_port user=postgres dbname=postgres application_name=$physical_slot'
primary_slot_name = '$physical_slot'
hot_standby = on
hot_standby_feedback = on
sync_replication_slots = on
CONF
  touch "$data/standby.signal"
  chown -R postgres:postgres "$dir/standby"
  server primary start
  # Primary only (postgresql.auto.conf was not copied): a promoted standby must not wait for itself.
  sql primary "ALTER SYSTEM SET synchronized_standby_slots = '$physical_slot'" >/dev/null
  if [ "$sync" = 1 ]; then
    sql primary "ALTER SYSTEM SET synchronous_standby_names = '$physical_slot'" >/dev/null
    sql primary "ALTER SYSTEM SET synchronous_commit = on" >/dev/null
  fi
  sql primary "SELECT pg_reload_conf()" >/dev/null
}

start() {
  mkdir -p "$dir"
  chmod 755 "$dir"  # the postgres user runs the servers: it must get through
  if [ ! -f "$dir/standby/data/PG_VERSION" ]; then
    if [ -f "$dir/primary/data/PG_VERSION" ] && [ -z "${CDC_STANDBY_FORCE:-}" ]; then
      echo "$dir/primary exists without a standby (a half-made pair?): run destroy, then start again" >&2
      exit 1
    fi
    make_standby
  fi
  server primary start
  server standby start
  for _ in $(seq 1 120); do
    if [ "$(sql primary "SELECT count(*) FROM pg_stat_replication WHERE application_name = '$physical_slot'
                         AND state = 'streaming'" 2>/dev/null)" = 1 ]; then
      echo "standby on port $standby_port streams from the primary on port $primary_port (PostgreSQL $major)" >&2
      return 0
    fi
    sleep 0.5
  done
  echo "the standby does not stream from the primary; see $dir/standby/server.log" >&2
  exit 1
}

caught_up() {  # the standby replayed everything the primary wrote
  local primary
  primary=$(sql primary "SELECT pg_current_wal_lsn()")
  [ "$(sql standby "SELECT pg_last_wal_replay_lsn() >= '$primary'::pg_lsn")" = t ]
}

kill_primary() {
  local pidfile=$dir/primary/data/postmaster.pid pid children
  [ -f "$pidfile" ] || { echo "no primary running (no $pidfile)" >&2; exit 1; }
  pid=$(head -1 "$pidfile")
  children=$(ps -o pid= --ppid "$pid" || true)
  # shellcheck disable=SC2086  # one word a child
  kill -9 "$pid" $children 2>/dev/null || true
  echo "primary on port $primary_port killed (kill -9 of the postmaster $pid and its processes)" >&2
}

promote() {
  as_pg "$(server standby bin)/pg_ctl" -D "$dir/standby/data" -w -t 60 promote >/dev/null
  echo "standby on port $standby_port promoted: it takes writes at $(sql standby 'SELECT pg_current_wal_lsn()')" >&2
}

stop() {
  server standby stop
  server primary stop
}

destroy() {
  stop
  rm -rf "$dir"
}

status() {
  local state=0
  server primary status || state=$?
  server standby status || state=$?
  return $state
}

case "${1:-start}" in
  start) start ;;
  caught-up) caught_up ;;
  kill-primary) kill_primary ;;
  promote) promote ;;
  stop) stop ;;
  destroy) destroy ;;
  status) status ;;
  dsn) echo "postgresql://postgres@127.0.0.1:$primary_port/postgres postgresql://postgres@127.0.0.1:$standby_port/postgres" ;;
  *) echo "usage: $0 start|caught-up|kill-primary|promote|stop|destroy|status|dsn" >&2; exit 2 ;;
esac
