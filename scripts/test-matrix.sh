#!/usr/bin/env bash
# The server version matrix, in full: every conformance workload on PostgreSQL 17 and 18 and on
# MariaDB 11.4 (at its defaults), plus the stream and failure tests on each newer server. The test
# command (scripts/test.sh) runs a representative subset of it; this runs all of it (about 15 minutes
# here). Servers are started by scripts/server-matrix.sh from Maven Central's binaries.
#
#   bash scripts/test-matrix.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
bash scripts/setup.sh
dsn() { bash scripts/server-matrix.sh | awk -v n="$1" '$1 == n {print $2}'; }
pg17=$(dsn pg17); pg18=$(dsn pg18); maria=$(dsn mariadb11.4); maria_defaults=$(dsn mariadb11.4-defaults)
status=0
CDC_MATRIX_ALL=1 CDC_TEST_PG17_DSN=$pg17 CDC_TEST_PG18_DSN=$pg18 CDC_TEST_MARIADB11_DEFAULTS_DSN=$maria_defaults \
  "$python" -m pytest -q -rs -p no:cacheprovider tests/conformance/test_server_versions.py "$@" || status=1
for pg in "$pg17" "$pg18"; do
  echo "== the PostgreSQL stream and failure tests on $pg"
  CDC_TEST_PG_DSN=$pg "$python" -m pytest -q -rs -p no:cacheprovider tests/integration/test_pg_stream.py \
    tests/integration/test_pg_failures.py tests/integration/test_pg_snapshot.py "$@" || status=1
done
echo "== the MariaDB stream tests on $maria"
CDC_TEST_MYSQL_DSN=$maria "$python" -m pytest -q -rs -p no:cacheprovider tests/integration/test_mysql_stream.py \
  tests/integration/test_mysql_failures.py "$@" || status=1
exit $status
