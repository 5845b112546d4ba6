#!/usr/bin/env bash
# Install (Debian packages), configure for row-based binlog capture and start a local MariaDB,
# without systemd. Idempotent: a running server is left as it is.
#
#   scripts/mariadb.sh start|stop|status|dsn
#
# Environment: CDC_MARIADB_PORT (default 53306), CDC_MARIADB_DIR (default .local/mariadb under
# the repo). CDC_MARIADB_DEFAULTS=1 starts a server at MariaDB's own defaults but for what binlog
# capture cannot do without (log-bin, ROW format, a server id): binlog_row_metadata=NO_LOG, the
# latin1 server charset; the conformance suite runs on it (port 53307, .local/mariadb-defaults). The server listens on 127.0.0.1 only; root has an empty password over TCP from
# 127.0.0.1, and a user cdc/cdc has the privileges a CDC source needs.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
defaults=${CDC_MARIADB_DEFAULTS:-0}
if [ "$defaults" = 1 ]; then
  port=${CDC_MARIADB_PORT:-53307}
  dir=${CDC_MARIADB_DIR:-$here/.local/mariadb-defaults}
else
  port=${CDC_MARIADB_PORT:-53306}
  dir=${CDC_MARIADB_DIR:-$here/.local/mariadb}
fi
data=$dir/data
sock=$dir/mysqld.sock
pidfile=$dir/mariadbd.pid
log=$dir/server.log

have_server() { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; }

install() {
  have_server && command -v mariadb >/dev/null 2>&1 && return 0
  echo "installing MariaDB from Debian's packages..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # The package's post-install tries to start a service; without systemd that may fail: harmless.
  apt-get install -y -qq mariadb-server mariadb-client >/dev/null 2>&1 || true
  have_server || { echo "mariadb-server did not install" >&2; exit 1; }
  # A service the package may have started would hold the default port and socket: stop it.
  if [ -x /etc/init.d/mariadb ]; then /etc/init.d/mariadb stop >/dev/null 2>&1 || true; fi
}

mariadbd_bin() { command -v mariadbd 2>/dev/null || echo /usr/sbin/mariadbd; }

client() { mariadb --no-defaults --protocol=socket --socket="$sock" -uroot "$@"; }

running() {
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

ready() { client -N -e 'select 1' >/dev/null 2>&1; }

start() {
  install
  if running && ready; then
    echo "MariaDB already running on port $port: using it" >&2
    return 0
  fi
  # A server of another checkout (or the user's own) on this port: use it as it is.
  if mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -uroot -N -e 'select 1' >/dev/null 2>&1; then
    echo "MariaDB already accepting connections on port $port: using it" >&2
    return 0
  fi
  mkdir -p "$dir"
  chown mysql:mysql "$dir" 2>/dev/null || true
  if [ ! -d "$data/mysql" ]; then
    mkdir -p "$data"
    chown -R mysql:mysql "$dir" 2>/dev/null || true
    mariadb-install-db --no-defaults --user=mysql --datadir="$data" \
      --auth-root-authentication-method=normal >"$dir/install.log" 2>&1 \
      || { echo "mariadb-install-db failed; see $dir/install.log" >&2; exit 1; }
  fi
  local tuned=(--binlog-row-image=FULL --binlog-row-metadata=FULL --binlog-annotate-row-events=ON
               --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci)
  [ "$defaults" = 1 ] && tuned=()
  if ! running; then
    nohup "$(mariadbd_bin)" --no-defaults --user=mysql --datadir="$data" --port="$port" \
      --bind-address=127.0.0.1 --socket="$sock" --pid-file="$pidfile" --log-error="$log" \
      --server-id=1 --log-bin="$data/mariadb-bin" --binlog-format=ROW "${tuned[@]}" \
      >/dev/null 2>&1 &
  fi
  for _ in $(seq 1 120); do
    [ -S "$sock" ] && ready && break
    sleep 0.5
  done
  ready || { echo "MariaDB did not start; see $log" >&2; exit 1; }
  # root without password over TCP from 127.0.0.1 (the socket account exists already), and a
  # least-privilege user for the connector.
  client <<'SQL'
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'cdc'@'127.0.0.1' IDENTIFIED BY 'cdc';
CREATE USER IF NOT EXISTS 'cdc'@'localhost' IDENTIFIED BY 'cdc';
GRANT SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, REPLICATION CLIENT
  ON *.* TO 'cdc'@'127.0.0.1';
GRANT SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, REPLICATION CLIENT
  ON *.* TO 'cdc'@'localhost';
FLUSH PRIVILEGES;
SQL
  echo "MariaDB ready: $(dsn)" >&2
}

stop() {
  running || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.5
  done
  echo "MariaDB (pid $pid) did not stop within 60 s" >&2
  exit 1
}

status() {
  if running && ready; then
    echo "MariaDB running (pid $(cat "$pidfile")) on port $port"
  else
    echo "MariaDB not running"
    return 3
  fi
}

dsn() { echo "mysql://root@127.0.0.1:$port/"; }

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  dsn) dsn ;;
  *) echo "usage: $0 start|stop|status|dsn" >&2; exit 2 ;;
esac
