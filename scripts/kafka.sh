#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, broker + controller in one process, loopback only) from
# Maven Central jars, without Docker. Idempotent: a running broker is left as it is.
#
#   scripts/kafka.sh start|stop|status|bootstrap
#
# Environment:
#   CDC_KAFKA_PORT   client port (default 59092); the controller listens on the next port
#   CDC_KAFKA_DIR    state: data, log, pid (default .local/kafka in the repo); a second
#                    broker (a test that stops its own) uses another port and directory
#   CDC_CACHE        jar cache (default ~/.cache/cdc); the jars land in $CDC_CACHE/kafka-jars
#   CDC_KAFKA_START_TIMEOUT  seconds to wait for "Kafka Server started" (default 90)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
port=${CDC_KAFKA_PORT:-59092}
controller=$((port + 1))
dir=${CDC_KAFKA_DIR:-$here/.local/kafka}
jars=${CDC_CACHE:-$HOME/.cache/cdc}/kafka-jars
log=$dir/server.log
timeout=${CDC_KAFKA_START_TIMEOUT:-90}

fetch() {
  # .complete is written last, so an interrupted download is redone rather than half-used.
  [ -f "$jars/.complete" ] && return 0
  command -v java >/dev/null || { echo "Java 17+ is needed to run Kafka (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "Maven is needed to fetch the Kafka jars (apt-get install maven)" >&2; exit 1; }
  mkdir -p "$jars"
  echo "fetching the Kafka jars from Maven Central into $jars ..." >&2
  mvn -q -B -Dstyle.color=never -f "$here/scripts/kafka/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$jars" >&2
  touch "$jars/.complete"
}

# A TCP connect to the listener (bash's /dev/tcp: no extra tool needed).
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

started() { [ -f "$log" ] && grep -q "Kafka Server started" "$log"; }

configure() {
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
share.coordinator.state.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPS
  # Quiet, except for the line that says the broker is ready.
  cat >"$dir/log4j2.properties" <<'LOG'
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.out.ref=out
logger.started.name=kafka.server.KafkaRaftServer
logger.started.level=INFO
LOG
}

start() {
  if running; then
    # Started earlier (maybe by an older version of this script, whose log is quieter): it is
    # ready once it answers.
    wait_until answers
    echo "Kafka already running: $(bootstrap)" >&2
    return 0
  fi
  if answers; then echo "something already answers on $(bootstrap): using it" >&2; return 0; fi
  fetch
  configure
  if [ ! -f "$dir/data/meta.properties" ]; then
    # A cluster id is 16 random bytes in URL-safe base64 (what StorageTool random-uuid prints,
    # without starting a JVM for it). One that starts with '-' reads as an option (1 in 64): drawn
    # again, as Kafka's own Uuid.randomUuid does.
    id=-
    while [ "${id#-}" != "$id" ]; do
      id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
    done
    java -cp "$jars/*" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 \
      || { echo "formatting $dir/data failed:" >&2; cat "$dir/format.log" >&2; exit 1; }
  fi
  nohup java -Xms256m -Xmx512m -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -cp "$jars/*" kafka.Kafka "$dir/server.properties" >"$log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  wait_until started_and_answers
  echo "Kafka ready: $(bootstrap)" >&2
}

started_and_answers() { started && answers; }

wait_until() {
  local deadline=$((SECONDS + timeout))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if "$1"; then return 0; fi
    running || fail "Kafka exited during start-up"
    sleep 0.2
  done
  fail "Kafka did not say 'Kafka Server started' (and answer on $(bootstrap)) within ${timeout}s"
}

fail() {
  echo "$1; the end of $log:" >&2
  tail -n 40 "$log" >&2 || true
  exit 1
}

stop() {
  if running; then
    local pid
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$dir/pid"
}

bootstrap() { echo "127.0.0.1:$port"; }

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) if running && answers; then echo "running: $(bootstrap)"; else echo "stopped"; exit 1; fi ;;
  bootstrap) bootstrap ;;
  *) echo "usage: $0 start|stop|status|bootstrap" >&2; exit 2 ;;
esac
