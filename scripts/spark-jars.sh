#!/usr/bin/env bash
# Fetch Delta Lake and Spark's Kafka connector (with their dependencies, minus what pyspark
# ships) from Maven Central into a cache folder, and print that folder. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${CDC_CACHE:-$HOME/.cache/cdc}/spark-jars
marker="$cache/.complete-$(sha1sum "$here/spark/pom.xml" | cut -c1-12)"  # a changed pom fetches again
if [ -f "$marker" ]; then echo "$cache"; exit 0; fi
rm -rf "$cache"
mkdir -p "$cache"
# Spark's own jars (provided by pyspark) are left out: only what pyspark lacks is copied.
mvn -q -B -f "$here/spark/pom.xml" dependency:copy-dependencies -DoutputDirectory="$cache" \
  -DincludeScope=runtime -DexcludeGroupIds=org.apache.spark,org.scala-lang,org.slf4j,org.apache.logging.log4j \
  >&2
# The Kafka connector itself is an org.apache.spark artifact: copy it explicitly.
mvn -q -B dependency:copy -Dartifact=org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0 -DoutputDirectory="$cache" >&2
mvn -q -B dependency:copy -Dartifact=org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.2.0 -DoutputDirectory="$cache" >&2
# Drop what pyspark already ships (another version of jackson, parquet, hadoop... would clash).
spark_jars=$("${PYTHON:-python3}" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' 2>/dev/null || true)
if [ -n "$spark_jars" ] && [ -d "$spark_jars" ]; then
  for jar in "$cache"/*.jar; do
    artifact=$(basename "$jar" .jar | sed -E 's/-[0-9][0-9.]*(-[A-Za-z0-9.]+)*$//')
    if ls "$spark_jars/$artifact"-[0-9]*.jar >/dev/null 2>&1; then rm -f "$jar"; fi
  done
fi
touch "$cache/.complete" "$marker"
echo "$cache"
