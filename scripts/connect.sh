#!/usr/bin/env bash
# A Kafka Connect worker (standalone) from Maven Central jars, without Docker, with Debezium's own
# connectors as plugins: the JDBC sink (a real consumer of our topics) and the PostgreSQL source
# (the producer of real Debezium topics to compare with). Used by tests/integration/connect_fixtures.py.
#
#   scripts/connect.sh fetch                           jars and plugins into the cache (idempotent)
#   scripts/connect.sh classpath                       the worker's classpath (DIR/*)
#   scripts/connect.sh plugins                         the folder to give as plugin.path
#   scripts/connect.sh run WORKER.properties CONNECTOR.properties...
#                                                      ConnectStandalone in the foreground (exec)
#
# Environment:
#   CDC_CACHE              cache (default ~/.cache/cdc); everything lands in $CDC_CACHE/connect:
#                          lib/ (Connect 4.1.1's runtime), plugins/ (unpacked plugin archives)
#   CDC_CONNECT_LOG4J      a log4j2 properties file for `run` (default: INFO to stdout, with the
#                          chattiest client/Jetty/Hibernate loggers at WARN)
#   CDC_CONNECT_HEAP       -Xmx for `run` (default 768m)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${CDC_CACHE:-$HOME/.cache/cdc}/connect
lib=$dir/lib
plugins=$dir/plugins

# Debezium's plugin archives: each is the connector with exactly the jars it needs, as Debezium
# ships it for a Connect plugin.path. Copying the jar's Maven dependencies instead puts Jackson into
# the plugin folder and Connect fails (ServiceConfigurationError ... Jdk8Module not a subtype).
# The JDBC sink's newest release on Maven Central is 3.5.0.Final (there is no 3.6.x).
ARCHIVES=(
  io.debezium:debezium-connector-jdbc:3.5.0.Final:tar.gz:plugin
  io.debezium:debezium-connector-postgres:3.6.1.Final:tar.gz:plugin
)

mvn_q() { mvn -q -B -Dstyle.color=never "$@" >&2; }

fetch() {
  # .complete is written last, so an interrupted download is redone rather than half-used; a lock
  # (when flock is there) makes a second caller wait for the first one's download.
  [ -f "$dir/.complete" ] && return 0
  mkdir -p "$dir"
  if command -v flock >/dev/null; then
    exec 9>"$dir/.lock"
    flock 9
    [ -f "$dir/.complete" ] && return 0
  fi
  command -v java >/dev/null || { echo "Java 17+ is needed to run Kafka Connect (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "Maven is needed to fetch the Kafka Connect jars (apt-get install maven)" >&2; exit 1; }
  echo "fetching Kafka Connect 4.1.1 and Debezium's connector plugins from Maven Central into $dir ..." >&2
  rm -rf "$lib" "$plugins" "$dir/archives"
  mkdir -p "$lib" "$plugins" "$dir/archives"
  mvn_q -f "$here/scripts/connect/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$lib"
  local artifact
  for artifact in "${ARCHIVES[@]}"; do
    mvn_q org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy -Dartifact="$artifact" \
      -DoutputDirectory="$dir/archives"
  done
  local archive
  for archive in "$dir"/archives/*.tar.gz; do
    tar -xzf "$archive" -C "$plugins"   # each archive holds one top-level folder: one plugin
  done
  touch "$dir/.complete"
}

log4j() {
  # Written anew by each run (so an older cache gets today's levels), atomically: a worker starting
  # at the same moment never reads half a file.
  local file
  file=$(mktemp "$dir/log4j2.XXXXXX")
  cat >"$file" <<'LOG'
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.out.ref=out
logger.clients.name=org.apache.kafka.clients
logger.clients.level=WARN
logger.common.name=org.apache.kafka.common
logger.common.level=WARN
logger.config.name=org.apache.kafka.connect.runtime.ConnectorConfig
logger.config.level=WARN
logger.jetty.name=org.eclipse.jetty
logger.jetty.level=WARN
logger.jersey.name=org.glassfish
logger.jersey.level=WARN
logger.rest.name=org.apache.kafka.connect.runtime.rest.RestServer
logger.rest.level=WARN
logger.reflections.name=org.reflections
logger.reflections.level=ERROR
logger.hibernate.name=org.hibernate
logger.hibernate.level=WARN
logger.c3p0.name=com.mchange
logger.c3p0.level=WARN
LOG
  mv -f "$file" "$dir/log4j2.properties"
}

run() {
  [ "$#" -ge 2 ] || { echo "usage: $0 run WORKER.properties CONNECTOR.properties..." >&2; exit 2; }
  fetch
  [ -n "${CDC_CONNECT_LOG4J:-}" ] || log4j
  exec java -Xms128m -Xmx"${CDC_CONNECT_HEAP:-768m}" \
    -Dlog4j2.configurationFile="${CDC_CONNECT_LOG4J:-$dir/log4j2.properties}" \
    -cp "$lib/*" org.apache.kafka.connect.cli.ConnectStandalone "$@"
}

case "${1:-}" in
  fetch) fetch ;;
  classpath) fetch; echo "$lib/*" ;;
  plugins) fetch; echo "$plugins" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 fetch|classpath|plugins|run WORKER.properties CONNECTOR.properties..." >&2; exit 2 ;;
esac
