#!/usr/bin/env bash
# The long cases the test command leaves out for its time (marked LONG in tests/: each has a shorter
# sibling that stays in the test command): the snapshot and stream on a standalone Spark cluster,
# kill -9 of a Spark driver under a writer (while it streams, and during run_changes' JDBC snapshot),
# columns renamed and widened while a Spark stream runs, continuous replication with a restart into
# Delta and the Parquet fallback, the TOAST stream into the Parquet fallback, the at-least-once kill
# storm beside the exactly-once one, and the exactly-once storm on MariaDB (its offsets stopping
# inside transactions). About 8 minutes here.
#
#   bash scripts/long-suite.sh [pytest args...]
#
# Servers as for the test command (scripts/setup.sh starts them).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
bash scripts/setup.sh
CDC_LONG=1 exec "$python" -m pytest -q -rs -p no:cacheprovider \
  tests/integration/test_spark_cluster.py::test_snapshot_and_stream_into_delta_on_the_cluster \
  tests/integration/test_spark_schema_changes.py::test_columns_renamed_and_widened_reach_delta_while_the_stream_runs \
  tests/integration/test_spark.py::test_continuous_replication_with_restart \
  tests/integration/test_spark.py::test_kill_9_of_the_driver_then_restart \
  tests/integration/test_spark_jdbc_snapshot.py::test_kill_9_of_the_driver_during_the_jdbc_snapshot \
  "tests/integration/test_spark_unavailable.py::test_toasted_values_through_format_cdc[parquet]" \
  tests/integration/test_kafka_exactly_once.py::test_kill_storm_at_least_once_for_contrast \
  tests/integration/test_kafka_exactly_once.py::test_kill_storm_exactly_once_mariadb "$@"
