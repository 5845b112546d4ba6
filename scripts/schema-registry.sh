#!/usr/bin/env bash
# A real schema registry with Confluent's REST API, for the Avro converter's tests: Apicurio
# Registry 2.4.2.Final (in-memory H2 storage, Confluent-compatible API under /apis/ccompat/v7),
# built from its Maven Central jars with Quarkus's Maven plugin, without Docker. Loopback only.
# Idempotent: a running registry is left as it is.
#
#   scripts/schema-registry.sh start|stop|status|url
#
# Why Apicurio 2.4.2: Confluent's own registry is not on Maven Central; Apicurio publishes its
# application module there, but 2.6.x and 3.x miss modules on Central (schema-util-provider) and
# 3.x needs Java 21. 2.4.2 builds on Java 17 with two adjustments made below: everit-json-schema
# from Central's com.github.erosb (the registry's pom names a jitpack-only copy), and the
# dynamic-config index extension, whose build-time half is not published, replaced by an empty
# index (only runtime-editable registry settings depend on it, not the schema API).
#
# Environment:
#   CDC_SCHEMA_REGISTRY_PORT   HTTP port (default 58081)
#   CDC_SCHEMA_REGISTRY_DIR    state: log, pid (default .local/schema-registry in the repo)
#   CDC_CACHE                  build cache (default ~/.cache/cdc); the runnable lands in
#                              $CDC_CACHE/schema-registry/target
#   CDC_SCHEMA_REGISTRY_START_TIMEOUT  seconds to wait for it to answer (default 120)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
port=${CDC_SCHEMA_REGISTRY_PORT:-58081}
dir=${CDC_SCHEMA_REGISTRY_DIR:-$here/.local/schema-registry}
build=${CDC_CACHE:-$HOME/.cache/cdc}/schema-registry
runner=$build/target/schema-registry-1-runner.jar
log=$dir/server.log
timeout=${CDC_SCHEMA_REGISTRY_START_TIMEOUT:-120}
apicurio=2.4.2.Final
quarkus=2.16.4.Final  # the Quarkus version Apicurio 2.4.2 is built with

url() { echo "http://127.0.0.1:$port/apis/ccompat/v7"; }

write_project() {
  mkdir -p "$build/src/main/java/local/cdc" "$build/src/main/resources"
  cat >"$build/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.cdc</groupId>
  <artifactId>schema-registry</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>io.apicurio</groupId>
        <artifactId>apicurio-registry</artifactId>
        <version>$apicurio</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>io.apicurio</groupId>
      <artifactId>apicurio-registry-app</artifactId>
      <version>$apicurio</version>
      <exclusions>
        <exclusion><groupId>com.github.everit-org.json-schema</groupId><artifactId>org.everit.json.schema</artifactId></exclusion>
        <exclusion><groupId>io.apicurio</groupId><artifactId>apicurio-common-app-components-config-index</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>com.github.erosb</groupId>
      <artifactId>everit-json-schema</artifactId>
      <version>1.14.2</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.11.0</version>
      </plugin>
      <plugin>
        <groupId>io.quarkus</groupId>
        <artifactId>quarkus-maven-plugin</artifactId>
        <version>$quarkus</version>
        <executions><execution><goals><goal>build</goal></goals></execution></executions>
      </plugin>
    </plugins>
  </build>
</project>
POM
  # The empty dynamic-config index that the unpublished extension would have generated.
  cat >"$build/src/main/java/local/cdc/EmptyDynamicConfigIndex.java" <<'JAVA'
package local.cdc;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;

public class EmptyDynamicConfigIndex {
    @Produces
    @ApplicationScoped
    DynamicConfigPropertyList dynamicProperties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
JAVA
}

fetch() {
  # .complete is written last, so an interrupted build is redone rather than half-used.
  [ -f "$build/.complete" ] && [ -f "$runner" ] && return 0
  command -v java >/dev/null || { echo "Java 17+ is needed (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "Maven is needed to build the registry (apt-get install maven)" >&2; exit 1; }
  echo "building Apicurio Registry $apicurio from Maven Central jars into $build ..." >&2
  mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$apicurio" \
    -DoutputDirectory="$build/app" -Dmdep.stripVersion=true >&2
  write_project
  # The registry's own build-time settings (the app module is the application in its own build),
  # plus: index its beans, since here it is a dependency.
  unzip -p "$build/app/apicurio-registry-app.jar" application.properties >"$build/src/main/resources/application.properties"
  cat >>"$build/src/main/resources/application.properties" <<'PROPS'
quarkus.index-dependency.registry-app.group-id=io.apicurio
quarkus.index-dependency.registry-app.artifact-id=apicurio-registry-app
PROPS
  mvn -q -B -Dstyle.color=never -f "$build/pom.xml" package >"$build/build.log" 2>&1 \
    || { echo "building the registry failed; the end of $build/build.log:" >&2; tail -n 40 "$build/build.log" >&2; exit 1; }
  touch "$build/.complete"
}

# A registry answers GET /subjects with a JSON list; another server on the port (a web UI) does not.
answers() { curl -sf "$(url)/subjects" 2>/dev/null | grep -q '^\['; }

running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

start() {
  if running; then
    wait_until answers
    echo "schema registry already running: $(url)" >&2
    return 0
  fi
  if answers; then echo "something already answers on $(url): using it" >&2; return 0; fi
  command -v curl >/dev/null || { echo "curl is needed (apt-get install curl)" >&2; exit 1; }
  fetch
  mkdir -p "$dir"
  nohup java -Xms128m -Xmx512m -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
    -jar "$runner" >"$log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  wait_until answers
  echo "schema registry ready: $(url)" >&2
}

wait_until() {
  local deadline=$((SECONDS + timeout))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if "$1"; then return 0; fi
    running || fail "the schema registry exited during start-up"
    sleep 0.5
  done
  fail "the schema registry did not answer on $(url) within ${timeout}s"
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
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$dir/pid"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) if running && answers; then echo "running: $(url)"; else echo "stopped"; exit 1; fi ;;
  url) url ;;
  *) echo "usage: $0 start|stop|status|url" >&2; exit 2 ;;
esac
