#!/usr/bin/env bash
# A Spark standalone cluster on this machine, from pyspark's own bin/spark-class (no Spark
# download, no systemd, no Docker): one master and two workers, loopback only. Idempotent: a
# running cluster is left as it is; missing workers are started again.
#
#   scripts/spark-cluster.sh start|stop|status|url
#
# A driver connects with cdc.spark.cluster.cluster_session(url) (same jars, same interpreter,
# small executors); `python -m cdc.spark.cluster URL` runs a smoke job that says where it ran.
#
# What a real (multi-machine) cluster needs, beyond what this script does for one machine:
#   - every executor host runs Python 3.11 with `pip install 'cdc-debezium[spark]'` (pyspark 4.2.0,
#     pyarrow, cdc itself): Python Data Source readers and UDFs run there, and must import cdc;
#     the driver tells executors which interpreter to run (PYSPARK_PYTHON / spark.pyspark.python),
#     so that path must exist on every host;
#   - Java 17+ on every host, the same Spark version (4.2.0) for master, workers and driver;
#   - network access from every executor to the source database (the cdc reader connects from
#     the executors, not only from the driver), and to Kafka when a Kafka sink/source is used;
#   - the driver reachable from the executors (spark.driver.host / port), and the jars
#     (Delta, Kafka connector: scripts/spark-jars.sh) passed with spark.jars, which the driver
#     serves to the executors;
#   - a checkpoint and table location every executor and the driver can reach (HDFS, S3,
#     a shared file system): local paths work only because everything here is one machine.
#
# Environment:
#   CDC_SPARK_MASTER_PORT         master port (default 57077)
#   CDC_SPARK_WEBUI_PORT          master web UI, also its JSON status at /json/ (default 58180)
#   CDC_SPARK_WORKER_WEBUI_PORT   first worker's web UI port; the next ones follow (default 58181;
#                                 58081 is the schema registry's)
#   CDC_SPARK_WORKERS             number of workers (default 2)
#   CDC_SPARK_WORKER_CORES        cores each worker offers (default 1)
#   CDC_SPARK_WORKER_MEMORY       memory each worker offers to executors (default 1g)
#   CDC_SPARK_DAEMON_MEMORY       heap of the master and worker JVMs themselves (default 256m)
#   CDC_SPARK_DIR                 logs, pid files, work dirs (default .local/spark in the repo)
#   CDC_SPARK_START_TIMEOUT       seconds to wait for the workers to be ALIVE (default 120)
#   PYSPARK_PYTHON                interpreter whose pyspark runs the daemons, and the workers'
#                                 default for Python workers (default: python3's sys.executable);
#                                 a driver's own PYSPARK_PYTHON / spark.pyspark.python wins
#
# Measured here (2 cores, shared): start ≈ 12 s on a quiet machine, 25-35 s at load 8-12; stop
# ≈ 2.5 s. RSS: master ≈ 235 MB, each worker daemon ≈ 220 MB (256m heap), each executor of a
# cluster_session ≈ 270 MB (512m heap) plus ≈ 55 MB per Python worker.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
port=${CDC_SPARK_MASTER_PORT:-57077}
webui=${CDC_SPARK_WEBUI_PORT:-58180}
worker_webui=${CDC_SPARK_WORKER_WEBUI_PORT:-58181}
workers=${CDC_SPARK_WORKERS:-2}
cores=${CDC_SPARK_WORKER_CORES:-1}
memory=${CDC_SPARK_WORKER_MEMORY:-1g}
daemon_memory=${CDC_SPARK_DAEMON_MEMORY:-256m}
dir=${CDC_SPARK_DIR:-$here/.local/spark}
timeout=${CDC_SPARK_START_TIMEOUT:-120}
python=${PYSPARK_PYTHON:-python3}
spark_home=""

fail() { echo "$1" >&2; exit 1; }

url() { echo "spark://127.0.0.1:$port"; }

check_tools() {
  command -v java >/dev/null \
    || fail "Java 17+ is needed to run Spark (apt-get install openjdk-17-jre-headless)"
  local major
  major=$(java -version 2>&1 | sed -nE 's/.*version "([0-9]+)[."].*/\1/p' | head -n1)
  if [ -n "$major" ] && [ "$major" -lt 17 ]; then fail "Spark 4 needs Java 17+, found Java $major"; fi
  command -v "$python" >/dev/null 2>&1 || fail "no Python interpreter '$python' (set PYSPARK_PYTHON)"
  # An absolute path: the workers (and the executors they launch) must run this very interpreter.
  python=$("$python" -c 'import sys; print(sys.executable)')
  spark_home=$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null) \
    || fail "pyspark is not installed for $python (pip install 'cdc-debezium[spark]')"
  [ -x "$spark_home/bin/spark-class" ] || fail "no bin/spark-class in $spark_home: a broken pyspark install?"
}

# The master's JSON status (the web UI's /json/), or nothing when it does not answer.
master_json() {
  if command -v curl >/dev/null; then
    curl -fsS --max-time 3 "http://127.0.0.1:$webui/json/" 2>/dev/null || true
  else
    "${python:-python3}" - "$webui" <<'PY' 2>/dev/null || true
import sys, urllib.request
print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/", timeout=3).read().decode())
PY
  fi
}

# How many workers the master sees ALIVE (0 when it does not answer).
alive_workers() {
  master_json | "${python:-python3}" -c '
import json, sys
try:
    status = json.load(sys.stdin)
except ValueError:
    print(0)
else:
    print(sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE"))' 2>/dev/null || echo 0
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

# Start one daemon in its own session (so that stop can end the executors a worker launched:
# they stay in its process group), its log and pid file under $dir.
launch() {
  local name=$1; shift
  # Resolved before the daemon starts: SPARK_HOME, the interpreter for Python workers, the
  # loopback address, and small daemon heaps (Spark's default is 1g each).
  SPARK_HOME="$spark_home" SPARK_CONF_DIR="$dir/conf" SPARK_LOCAL_IP=127.0.0.1 \
    SPARK_DAEMON_MEMORY="$daemon_memory" PYSPARK_PYTHON="$python" \
    SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=true -Dspark.worker.cleanup.interval=600 -Dspark.worker.cleanup.appDataTtl=3600" \
    setsid nohup "$spark_home/bin/spark-class" "$@" >"$dir/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

start() {
  check_tools
  mkdir -p "$dir/conf"
  # The interpreter the daemons were started with, for `status` (and this check): executors run
  # the driver's PYSPARK_PYTHON, the workers' one is only their default.
  if pid_alive "$dir/master.pid" && [ "$(cat "$dir/python" 2>/dev/null)" != "$python" ]; then
    echo "warning: the running cluster was started with Python $(cat "$dir/python" 2>/dev/null || echo '?'), not $python;" \
      "drivers must set PYSPARK_PYTHON (cluster_session does), or run: $0 stop" >&2
  fi
  if ! pid_alive "$dir/master.pid"; then
    if answers; then
      [ "$(alive_workers)" -ge "$workers" ] \
        || fail "something else listens on port $port (not this checkout's master, and without $workers ALIVE workers): set CDC_SPARK_MASTER_PORT"
      echo "a Spark master with $workers ALIVE workers already answers on $(url): using it" >&2
      return 0
    fi
    echo "$python" >"$dir/python"
    launch master org.apache.spark.deploy.master.Master \
      --host 127.0.0.1 --port "$port" --webui-port "$webui"
  fi
  local i
  for i in $(seq 1 "$workers"); do
    pid_alive "$dir/worker-$i.pid" && continue
    mkdir -p "$dir/work-$i"
    launch "worker-$i" org.apache.spark.deploy.worker.Worker "$(url)" \
      --host 127.0.0.1 --cores "$cores" --memory "$memory" --work-dir "$dir/work-$i" \
      --webui-port $((worker_webui + i - 1))
  done
  local deadline=$((SECONDS + timeout)) alive=0
  while [ "$SECONDS" -lt "$deadline" ]; do
    alive=$(alive_workers)
    [ "$alive" -ge "$workers" ] && { echo "Spark cluster ready: $(url), $alive workers ALIVE, web UI http://127.0.0.1:$webui" >&2; return 0; }
    pid_alive "$dir/master.pid" || { tail -n 30 "$dir/master.log" >&2; fail "the Spark master exited; see $dir/master.log"; }
    for i in $(seq 1 "$workers"); do
      pid_alive "$dir/worker-$i.pid" \
        || { tail -n 30 "$dir/worker-$i.log" >&2; fail "Spark worker $i exited; see $dir/worker-$i.log"; }
    done
    sleep 0.5
  done
  fail "the master at $(url) saw $alive of $workers workers ALIVE after ${timeout}s; see the logs in $dir"
}

# SIGTERM (Spark's shutdown hooks: a worker kills its executors), then SIGKILL for whatever of
# the daemon's process group is left after 30 s. Python workers (pyspark.daemon, a process group
# of their own) exit when their executor goes.
stop_one() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  # The group outlives its leader when an executor or a Python worker is still there (a
  # zombie left by spark-class's launcher does not count: it is gone once reaped).
  for _ in $(seq 1 25); do group_alive "$pid" || break; sleep 0.2; done
  if group_alive "$pid"; then kill -9 -- "-$pid" 2>/dev/null || true; fi
  rm -f "$pidfile"
}

group_alive() { ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ {found = 1} END {exit !found}'; }

stop() {
  # All at once: each JVM takes 1-2 s to shut down, and none needs another to do so.
  local f
  for f in "$dir"/worker-*.pid "$dir/master.pid"; do [ -e "$f" ] && stop_one "$f" & done
  wait
  # Each application leaves a copy of its jars (~24 MB with Delta and Kafka) in every worker's
  # work dir; the executors' stdout/stderr next to them are kept.
  if [ -d "$dir" ]; then find "$dir" -path "$dir/work-*/app-*" -name '*.jar' -delete 2>/dev/null || true; fi
}

status() {
  local alive
  if ! answers; then echo "stopped"; exit 1; fi
  alive=$(alive_workers)
  echo "running: $(url), $alive workers ALIVE, web UI http://127.0.0.1:$webui, Python $(cat "$dir/python" 2>/dev/null || echo '?')"
  [ "$alive" -ge "$workers" ] || exit 1
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  url) url ;;
  *) echo "usage: $0 start|stop|status|url" >&2; exit 2 ;;
esac
