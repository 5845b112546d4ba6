#!/usr/bin/env bash
# Fetch Debezium's embedded engine and one connector from Maven Central into a cache folder,
# compile the runner (and the option lister) there, and print the folder (its lib/* and classes/ form the classpath).
#
#   tests/conformance/debezium/fetch.sh postgres|mariadb|mysql   (mysql: the MySQL and SQL Server connectors)
#
# Idempotent: a changed pom or runner fetches/compiles again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
db=${1:?usage: fetch.sh postgres|mariadb|mysql}
pom="$here/pom-$db.xml"
[ -f "$pom" ] || { echo "no pom for $db" >&2; exit 2; }
cache=${CDC_CACHE:-$HOME/.cache/cdc}/debezium-$db
stamp=$(cat "$pom" "$here/DebeziumRunner.java" "$here/OptionSurface.java" | sha1sum | cut -c1-12)
if [ -f "$cache/.complete-$stamp" ]; then echo "$cache"; exit 0; fi
if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
  echo "Java or Maven missing: installing them from Debian's packages" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven >/dev/null
fi
rm -rf "$cache"
mkdir -p "$cache/lib" "$cache/classes"
mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$cache/lib" -DincludeScope=runtime >&2
javac -d "$cache/classes" -cp "$cache/lib/*" "$here/DebeziumRunner.java" "$here/OptionSurface.java" >&2
touch "$cache/.complete-$stamp"
echo "$cache"
