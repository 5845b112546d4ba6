#!/usr/bin/env bash
# Two local MariaDB servers with GTID replication, for failover tests (tests/faults/test_failover.py): a
# primary and a replica that logs what it replicates (log_slave_updates), both with gtid_strict_mode, started
# by scripts/mariadb.sh (Debian's mariadbd, no systemd; same users and grants). Idempotent: servers that run
# and a replica that replicates are left as they are.
#
#   scripts/mariadb-replica.sh start          both servers, the replica replicating the primary
#   scripts/mariadb-replica.sh caught-up      exit 0 when the replica has every transaction of the primary
#   scripts/mariadb-replica.sh kill-primary   kill -9 the primary (a crash, not a shutdown)
#   scripts/mariadb-replica.sh promote        the replica stops replicating and takes writes
#   scripts/mariadb-replica.sh stop           stop whichever of the two runs
#   scripts/mariadb-replica.sh destroy        stop both and remove their folders
#   scripts/mariadb-replica.sh status | dsn   (dsn: the primary's, then the replica's)
#
# Environment: CDC_REPLICA_DIR (default .local/mariadb-replica under the repo: primary/ and replica/ in it),
# CDC_REPLICA_PRIMARY_PORT (default 53316), CDC_REPLICA_PORT (default 53317): away from 53306/53307, which
# other tests use. Root has no password over TCP from 127.0.0.1; the replica connects to the primary as root.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${CDC_REPLICA_DIR:-$here/.local/mariadb-replica}
primary_port=${CDC_REPLICA_PRIMARY_PORT:-53316}
replica_port=${CDC_REPLICA_PORT:-53317}

# One of the two through scripts/mariadb.sh: its port, folder and server id.
server() {  # server primary|replica start|stop|status
  local role=$1 port=$primary_port id=1
  [ "$role" = replica ] && { port=$replica_port; id=2; }
  CDC_MARIADB_PORT=$port CDC_MARIADB_DIR=$dir/$role CDC_MARIADB_VERSION="" CDC_MARIADB_DEFAULTS=0 \
    CDC_MARIADB_ARGS="--server-id=$id --log-slave-updates=ON --gtid-strict-mode=ON --relay-log=$dir/$role/data/relay-bin" \
    bash "$here/scripts/mariadb.sh" "$2"
}

sql() {  # sql primary|replica STATEMENTS
  local port=$primary_port
  [ "$1" = replica ] && port=$replica_port
  mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -uroot -N -B -e "$2"
}

replicating() { [ -n "$(sql replica 'SHOW SLAVE STATUS' 2>/dev/null)" ]; }

slave_status() {
  mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$replica_port" -uroot -e "SHOW SLAVE STATUS\G"
}

start() {
  mkdir -p "$dir"
  chmod 755 "$dir"  # the mysql user runs the servers: it must get through
  local fresh=0
  [ -d "$dir/replica/data/mysql" ] || fresh=1
  server primary start
  server replica start
  for role in primary replica; do
    # A fresh datadir's anonymous accounts shadow user@'%' for logins from localhost (FACTS.md).
    sql "$role" "DELETE FROM mysql.global_priv WHERE User=''; FLUSH PRIVILEGES"
  done
  if replicating; then
    echo "replica on port $replica_port already set up" >&2
    return 0
  fi
  if [ "$fresh" = 0 ] && [ -z "${CDC_REPLICA_FORCE:-}" ]; then
    echo "the replica on port $replica_port replicates nothing, but it is not new (promoted?): run destroy, then" \
         "start again (or CDC_REPLICA_FORCE=1 to point it at the primary anyway)" >&2
    exit 1
  fi
  # The replica's own set-up (users, grants) went into its binlog under domain 0: drop it, so that its binlog
  # holds the primary's transactions only, and start from the primary's position.
  local position
  position=$(sql primary "SELECT @@GLOBAL.gtid_binlog_pos")
  sql replica "RESET MASTER; SET GLOBAL gtid_slave_pos='$position';
    CHANGE MASTER TO master_host='127.0.0.1', master_port=$primary_port, master_user='root', master_password='',
      master_use_gtid=slave_pos, master_connect_retry=1;
    START SLAVE; SET GLOBAL read_only=1"
  for _ in $(seq 1 120); do
    if [ "$(slave_status | grep -c -E '^ *Slave_(IO|SQL)_Running: Yes$' || true)" = 2 ]; then
      echo "replica on port $replica_port replicates the primary on port $primary_port from GTID '$position'" >&2
      return 0
    fi
    sleep 0.5
  done
  echo "the replica did not start replicating:" >&2
  slave_status >&2 || true
  exit 1
}

caught_up() {  # every GTID the primary logged is in the replica's binlog
  local primary replica
  primary=$(sql primary "SELECT @@GLOBAL.gtid_binlog_pos")
  replica=$(sql replica "SELECT @@GLOBAL.gtid_binlog_pos")
  [ "$primary" = "$replica" ]
}

kill_primary() {
  local pidfile=$dir/primary/mariadbd.pid
  [ -f "$pidfile" ] || { echo "no primary running (no $pidfile)" >&2; exit 1; }
  kill -9 "$(cat "$pidfile")"
  rm -f "$pidfile" "$dir/primary/mysqld.sock"
  echo "primary on port $primary_port killed (kill -9)" >&2
}

promote() {
  sql replica "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only=0"
  echo "replica on port $replica_port promoted: it takes writes, at GTID $(sql replica 'SELECT @@GLOBAL.gtid_binlog_pos')" >&2
}

stop() {
  server replica stop
  server primary stop
}

destroy() {
  stop
  rm -rf "$dir"
}

status() {
  local state=0
  server primary status || state=$?
  server replica status || state=$?
  if replicating; then echo "replicating: $(sql replica 'SELECT @@GLOBAL.gtid_slave_pos')"; fi
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
  dsn) echo "mysql://root@127.0.0.1:$primary_port/ mysql://root@127.0.0.1:$replica_port/" ;;
  *) echo "usage: $0 start|caught-up|kill-primary|promote|stop|destroy|status|dsn" >&2; exit 2 ;;
esac
