#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, broker + controller in one process, loopback only) from
# Maven Central jars, without Docker. Idempotent: a running broker is left as it is.
#
#   scripts/kafka.sh start|stop|status|bootstrap
#
# Environment: CDC_KAFKA_PORT (default 59092; the controller uses the next port),
# CDC_KAFKA_DIR (default .local/kafka in the repo), CDC_CACHE (jar cache, ~/.cache/cdc).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
port=${CDC_KAFKA_PORT:-59092}
controller=$((port + 1))
dir=${CDC_KAFKA_DIR:-$here/.local/kafka}
jars=${CDC_CACHE:-$HOME/.cache/cdc}/kafka-jars
log=$dir/server.log

fetch() {
  [ -f "$jars/.complete" ] && return 0
  command -v mvn >/dev/null || { echo "Maven is needed to fetch the Kafka jars (apt-get install maven)" >&2; exit 1; }
  mkdir -p "$jars"
  echo "fetching Kafka jars with Maven into $jars ..." >&2
  mvn -q -B -f "$here/scripts/kafka/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$jars" >&2
  touch "$jars/.complete"
}

ready() {
  # a TCP connect to the listener (bash's /dev/tcp: no extra tool needed)
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

start() {
  if ready; then echo "Kafka already answering on $(bootstrap): using it" >&2; return 0; fi
  fetch
  mkdir -p "$dir/data"
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPS
  if [ ! -f "$dir/data/meta.properties" ]; then
    id=$(java -cp "$jars/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
    java -cp "$jars/*" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" --standalone >/dev/null 2>&1 \
      || java -cp "$jars/*" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" >/dev/null
  fi
  nohup java -Xms256m -Xmx512m -Dlog4j2.level=WARN -cp "$jars/*" kafka.Kafka "$dir/server.properties" >"$log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 1 120); do
    if ready; then echo "Kafka ready: $(bootstrap)" >&2; return 0; fi
    running || break
    sleep 0.5
  done
  echo "Kafka did not start; the end of $log:" >&2
  tail -n 30 "$log" >&2
  exit 1
}

stop() {
  if running; then
    kill "$(cat "$dir/pid")" 2>/dev/null || true
    for _ in $(seq 1 60); do running || break; sleep 0.5; done
    running && kill -9 "$(cat "$dir/pid")" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
}

bootstrap() { echo "127.0.0.1:$port"; }

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) running && ready && echo "running: $(bootstrap)" || { echo "stopped"; exit 1; } ;;
  bootstrap) bootstrap ;;
  *) echo "usage: $0 start|stop|status|bootstrap" >&2; exit 2 ;;
esac
