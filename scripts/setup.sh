#!/usr/bin/env bash
# Install the project (editable, with test extras) and start the local servers the tests use.
# Idempotent; safe to run again. Servers: PostgreSQL always; MariaDB and Kafka when their
# scripts exist (CDC_SKIP_MARIADB=1 / CDC_SKIP_KAFKA=1 leave them out).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
extras="dev"
[ -f cdc/sources/mysql/ddl.py ] && extras="$extras,mysql"
[ -f cdc/sinks/kafka.py ] && extras="$extras,kafka"
[ -d cdc/converters ] && extras="$extras,avro"
[ "${CDC_SKIP_SPARK:-0}" != 1 ] && extras="$extras,spark"
extras="$extras,sqlserver"  # pyodbc; its driver (FreeTDS) below lets the ODBC tests run
mkdir -p .local
if ! command -v odbcinst >/dev/null || ! odbcinst -q -d 2>/dev/null | grep -q FreeTDS; then
  echo "installing unixODBC and FreeTDS (the SQL Server source's ODBC driver) from Debian's packages" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unixodbc tdsodbc >/dev/null
fi
# The project (editable, distribution cdc-debezium) with the compiled row codec (native/, Rust,
# distribution cdc-debezium-native): built here when cargo is present (setup.py), else left out
# (rows converted in Python). scripts/wheels.sh OUT builds the wheels users install.
PYTHON="$python" bash scripts/wheels.sh --develop "$extras"
bash scripts/postgres.sh start
if [ -f scripts/mariadb.sh ] && [ "${CDC_SKIP_MARIADB:-0}" != 1 ]; then
  bash scripts/mariadb.sh start
  CDC_MARIADB_DEFAULTS=1 bash scripts/mariadb.sh start  # a second server at MariaDB's defaults (conformance)
fi
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  echo "Java or Maven missing: installing them from Debian's packages" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven >/dev/null
fi
if [ -f scripts/kafka.sh ] && [ "${CDC_SKIP_KAFKA:-0}" != 1 ]; then bash scripts/kafka.sh start; fi
if [ "${CDC_SKIP_SPARK:-0}" != 1 ]; then bash scripts/spark-jars.sh >/dev/null; fi
