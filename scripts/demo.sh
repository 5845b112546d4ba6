#!/usr/bin/env bash
# Embedded demo: a local PostgreSQL, a sample table, changes made while `cdc postgres` captures
# them into JSON-lines files under out/demo/, then a summary of the events.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
mkdir -p .local
# cdc (editable) and its compiled row codec: built here once when cargo is present (a minute or two),
# else from the package index where it has a wheel, else rows are converted in Python.
PYTHON="$python" bash scripts/wheels.sh --develop ""
bash scripts/postgres.sh start
dsn=$(bash scripts/postgres.sh dsn)
port=${CDC_PG_PORT:-54329}
psql -q "$dsn" -c "DROP DATABASE IF EXISTS cdc_demo WITH (FORCE)" -c "CREATE DATABASE cdc_demo"
db=${dsn%/postgres}/cdc_demo
psql -q "$db" <<'SQL'
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email text, balance numeric(10,2), joined date);
INSERT INTO customers (name, email, balance, joined) VALUES
  ('Ada', 'ada@example.com', 120.50, '2024-01-02'), ('Grace', 'grace@example.com', 99.99, '2024-03-04');
SQL
rm -rf out/demo
cdc -v postgres --database-hostname 127.0.0.1 --database-port "$port" --database-user postgres \
  --database-dbname cdc_demo --topic-prefix demo --slot-name cdc_demo --publication-name cdc_demo \
  --decimal-handling-mode string --slot-drop-on-stop true --output out/demo --offsets out/demo/offsets.json &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
# the snapshot (op r) of the two rows, then streamed changes
wait_for() {  # wait_for N: until the customers topic has N events (or cdc died)
  for _ in $(seq 1 150); do
    kill -0 $pid 2>/dev/null || { echo "cdc stopped unexpectedly" >&2; exit 1; }
    [ "$(cat out/demo/demo.public.customers.jsonl 2>/dev/null | wc -l)" -ge "$1" ] && return 0
    sleep 0.2
  done
  echo "timed out waiting for events" >&2; exit 1
}
wait_for 2
psql -q "$db" <<'SQL'
INSERT INTO customers (name, email, balance, joined) VALUES ('Linus', 'linus@example.com', 0, '2024-05-06');
UPDATE customers SET balance = balance + 10 WHERE name = 'Ada';
DELETE FROM customers WHERE name = 'Grace';
SQL
wait_for 6
kill -INT $pid; wait $pid || true
trap - EXIT
echo
echo "events in out/demo/ (one JSON line per event: topic, key, value, headers):"
"$python" - <<'PY'
import json, pathlib
for path in sorted(pathlib.Path("out/demo").glob("*.jsonl")):
    for line in path.read_text().splitlines():
        r = json.loads(line)
        v = r["value"] and r["value"]["payload"]
        if v is None:
            print(f"{r['topic']:28} key={r['key']['payload']} tombstone")
        else:
            print(f"{r['topic']:28} op={v['op']} key={r['key']['payload']} before={v['before']} after={v['after']}")
PY
