#!/usr/bin/env bash
# The outcome report's benchmark (docs/PERFORMANCE.md "The outcome report"): a log of 10,000,000 issued signatures
# and 1,000,000 redemptions over the last 180 days, on SQLite and (when PostgreSQL is reachable) PostgreSQL; times
# the migration that rolls the log up, then `GET /admin/outcomes` over 30 whole days and over the default window
# (the 30 days before now), each three times. Not a test: run it by hand.
#
#   Benchmarks/Store/outcomes-bench.sh                          # builds offer-signer in release mode first
#   SIGNATURES=1000000 REDEMPTIONS=100000 Benchmarks/Store/outcomes-bench.sh
#   BIN=.build/release/offer-signer ONLY=sqlite Benchmarks/Store/outcomes-bench.sh    # or ONLY=postgres
#
# The rows are the service's format, written by SQL for speed (setup, not measured): the binary makes the schema,
# the rollups of schema version 11 are dropped and the log filled as version 10 had it, then the binary's own
# migration 11 rolls it up as it does for an existing database. Signatures: evenly over 180 days, 1,000,000
# customers at pseudo-random (each about ten times, anywhere in the 180 days), 2 products × 5 offers, a tenth for
# retention, a twentieth introductory-offer eligibility. Redemptions: evenly over the same days, four fifths
# attributed, a third renewed. PostgreSQL: a database of its own (offersigner_outcomes_bench), created with the
# superuser of scripts/start-postgres.sh, so the shared test database is not touched.
set -euo pipefail
cd "$(dirname "$0")/../.."
signatures=${SIGNATURES:-10000000}
redemptions=${REDEMPTIONS:-1000000}
customers=${CUSTOMERS:-1000000}
if [ -z "${BIN:-}" ]; then
  swift build -c release --product offer-signer >&2
  BIN=.build/release/offer-signer
fi
BENCH=outcomes-bench BENCH_BUNDLE_ID=com.example.bench
. Benchmarks/Store/store-bench-setup.sh

now_ms=$(($(date +%s) * 1000))
day_ms=86400000
span_ms=$((180 * day_ms))
# One statement for both databases: `n` numbers the row, `c` its customer.
customer="(((n * 48271) % 2147483647) % $customers)"
signatures_sql() {  # $1: the dialect's string concatenation of a number as text: nonce
  cat <<SQL
SELECT $1, 'BENCHKEY01', 'com.example.bench', CASE WHEN n % 2 = 0 THEN 'com.example.monthly' ELSE 'com.example.yearly' END,
  'offer_' || ((n / 2) % 5), 'customer-' || $customer, $now_ms - $span_ms + (n * $span_ms / $signatures),
  CASE WHEN n % 20 = 7 THEN 'introductory-eligibility' WHEN n % 2 = 0 THEN 'jws' ELSE 'legacy' END,
  CASE WHEN n % 10 = 3 THEN 'retention' ELSE 'api' END, NULL
SQL
}
redemptions_sql() {
  cat <<SQL
SELECT 'Production', '' || (3000000000000000 + n), '' || (2000000000000000 + n), 'com.example.bench', 'customer-' || $customer,
  CASE WHEN n % 2 = 0 THEN 'com.example.monthly' ELSE 'com.example.yearly' END, CASE WHEN n % 25 = 0 THEN 3 ELSE 2 END,
  'offer_' || ((n / 2) % 5), 'PAY_UP_FRONT', 'P1M', 4990, 'USD', 'USA', $now_ms - $span_ms + (n * $span_ms / $redemptions), $now_ms,
  CASE WHEN n % 5 = 0 THEN NULL ELSE 'bench-nonce-' || n END, CASE WHEN n % 5 = 0 THEN NULL ELSE $now_ms - $span_ms + (n * $span_ms / $redemptions) - 3600000 END,
  CASE WHEN n % 5 = 0 THEN NULL WHEN n % 10 = 3 THEN 'retention' ELSE 'app' END,
  CASE WHEN n % 3 = 0 THEN $now_ms - $span_ms + (n * $span_ms / $redemptions) + $((30 * day_ms)) END,
  CASE WHEN n % 50 = 0 THEN $now_ms - $span_ms + (n * $span_ms / $redemptions) + $((2 * day_ms)) END, NULL
SQL
}
signature_columns="nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier, application_username, timestamp, format, channel, request_identifier"
redemption_columns="environment, transaction_id, original_transaction_id, bundle_identifier, application_username, product_identifier, offer_type, offer_identifier, offer_discount_type, offer_period, price, currency, storefront, purchase_date, recorded_at, signature_nonce, signature_timestamp, signature_channel, renewed_at, refunded_at, expired_at"
# As schema version 10 left a database: no rollups, no period_of (and no redemption_daily, which version 21 fills
# from the redemptions loaded here).
downgrade_sql="DROP TABLE issued_daily; DROP TABLE issued_customer_days; DROP TABLE issued_rollup_days; DROP TABLE redemption_daily;
  ALTER TABLE redemptions DROP COLUMN period_of; DELETE FROM schema_migrations WHERE version IN (11, 21);"

# The log's secondary indexes are made after the rows (as the migrations define them): faster than keeping them.
drop_indexes_sql="DROP INDEX issued_by_customer; DROP INDEX issued_by_key;"
create_indexes_sql="CREATE INDEX issued_by_customer ON issued_signatures (bundle_identifier, application_username, timestamp);
  CREATE INDEX issued_by_key ON issued_signatures (key_identifier, timestamp);"

# The report over [from, to) three times: seconds each (curl's total), and the answer's figures.
report() {  # $1: label, $2: query string
  local times=()
  for _ in 1 2 3; do
    times+=("$(curl -fs -o "$work/report.json" -w '%{time_total}' -H "Authorization: Bearer $token" "http://127.0.0.1:$port/admin/outcomes?$2")")
  done
  python3 - "$work/report.json" "$1" "${times[@]}" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
issued = sum(row["issued"] for row in report["offers"])
customers = sum(row["customers"] for row in report["offers"])
redeemed = sum(row["redeemed"] for row in report["offers"])
print(f"  {sys.argv[2]}: {', '.join(f'{float(t):.2f}' for t in sys.argv[3:6])} s (load {sys.argv[6]}); "
      f"{len(report['offers'])} rows, issued {issued:,}, customers {customers:,}, redeemed {redeemed:,}")
PY
}
# The same 30 whole days counted straight from the log, as the report did before the rollups (schema version 10):
# the figures must be the report's, and the time is what the rollups save.
direct_sql() {
  local today=$((now_ms / day_ms * day_ms))
  echo "SELECT SUM(issued), SUM(customers) FROM (SELECT COUNT(*) AS issued, COUNT(DISTINCT application_username) AS customers
    FROM issued_signatures WHERE timestamp >= $((today - 29 * day_ms)) AND timestamp < $((today + day_ms)) AND format <> 'introductory-eligibility'
    GROUP BY bundle_identifier, product_identifier, offer_identifier, channel) counts;"
}
direct() {  # $1: label, then the client's command
  local label=$1 start end answer
  shift
  start=$(date +%s.%N)
  answer=$("$@" <<< "$(direct_sql)" | tr '|' ' ')
  end=$(date +%s.%N)
  echo "  the log counted directly (30 whole days): $(python3 -c "print(f'{$end - $start:.2f}')") s; issued, customers: $answer"
}
daily() {  # $1: label, $2: query string; GET /admin/outcomes/daily three times
  local times=()
  for _ in 1 2 3; do
    times+=("$(curl -fs -o "$work/daily.json" -w '%{time_total}' -H "Authorization: Bearer $token" "http://127.0.0.1:$port/admin/outcomes/daily?$2")")
  done
  python3 - "$work/daily.json" "$1" "${times[@]}" <<'PY'
import json, sys
days = json.load(open(sys.argv[1]))["days"]
print(f"  {sys.argv[2]}: {', '.join(f'{float(t):.2f}' for t in sys.argv[3:6])} s; {len(days)} days, "
      f"issued {sum(row['issued'] for day in days for row in day['offers']):,}")
PY
}
measure() {  # $1: database URL, $2: label
  local start end
  start=$(date +%s.%N)
  serve "$1"
  end=$(date +%s.%N)
  echo "$2: migration 11 (rolls up $signatures signatures) and start-up: $(python3 -c "print(f'{$end - $start:.1f}')") s"
  local today=$((now_ms / day_ms * day_ms))
  report "30 whole days (from, to: dates)" "from=$((today - 29 * day_ms))&to=$((today + day_ms))"
  report "the default window (the 30 days before now)" ""
  report "30 whole days, one app" "from=$((today - 29 * day_ms))&to=$((today + day_ms))&bundleId=com.example.bench"
  daily "/admin/outcomes/daily, the same 30 days" "from=$((today - 29 * day_ms))&to=$((today + day_ms))"
  # A signature today makes today stale: the report rolls it again from the log (one day of it).
  local times=()
  for _ in 1 2 3; do
    curl -fs -o /dev/null -H 'Content-Type: application/json' "http://127.0.0.1:$port/v1/offers/sign" \
      -d '{"productIdentifier":"com.example.monthly","offerIdentifier":"offer_1","applicationUsername":"customer-42"}'
    times+=("$(curl -fs -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $token" \
      "http://127.0.0.1:$port/admin/outcomes?from=$((today - 29 * day_ms))&to=$((today + day_ms))")")
  done
  echo "  30 whole days, each after a new signature (today rolled again): ${times[*]} s"
  stop
}

if [ "${ONLY:-sqlite}" != postgres ]; then
  db="$work/bench.sqlite"
  serve "sqlite:$db"; stop
  start=$(date +%s)
  sqlite3 -bail "$db" > /dev/null <<SQL
PRAGMA journal_mode=WAL;
PRAGMA cache_size=-2000000;
$downgrade_sql
$drop_indexes_sql
BEGIN;
WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $signatures)
INSERT INTO issued_signatures ($signature_columns) $(signatures_sql "printf('%032x', n)") FROM c;
WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $redemptions)
INSERT INTO redemptions ($redemption_columns) $(redemptions_sql) FROM c;
COMMIT;
$create_indexes_sql
ANALYZE;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
  echo "SQLite: loaded $signatures signatures and $redemptions redemptions by SQL in $(( $(date +%s) - start )) s ($(du -m "$db" | cut -f1) MiB)"
  measure "sqlite:$db" "SQLite"
  direct "SQLite" sqlite3 "$db"
  rm -f "$db"*
fi

admin=${PG_ADMIN_URL:-postgres://postgres@127.0.0.1:${PGPORT:-54329}/postgres}
if [ "${ONLY:-postgres}" != sqlite ]; then
  if psql "$admin" -qtAc "SELECT 1" > /dev/null 2>&1; then
    psql "$admin" -qc "DROP DATABASE IF EXISTS offersigner_outcomes_bench" -qc "CREATE DATABASE offersigner_outcomes_bench OWNER offersigner" > /dev/null
    url="postgres://offersigner:offersigner@127.0.0.1:${PGPORT:-54329}/offersigner_outcomes_bench"
    serve "$url"; stop
    start=$(date +%s)
    psql "$url" -q -v ON_ERROR_STOP=1 <<SQL
$downgrade_sql
SET maintenance_work_mem = '1GB';
$drop_indexes_sql
BEGIN;
INSERT INTO issued_signatures ($signature_columns) $(signatures_sql "lpad(to_hex(n), 32, '0')") FROM generate_series(0::bigint, $signatures - 1) AS n;
INSERT INTO redemptions ($redemption_columns) $(redemptions_sql) FROM generate_series(0::bigint, $redemptions - 1) AS n;
COMMIT;
$create_indexes_sql
VACUUM ANALYZE issued_signatures;
VACUUM ANALYZE redemptions;
SQL
    echo "PostgreSQL: loaded $signatures signatures and $redemptions redemptions by SQL in $(( $(date +%s) - start )) s"
    measure "$url" "PostgreSQL"
    direct "PostgreSQL" psql "$url" -qtA
    psql "$admin" -qc "DROP DATABASE offersigner_outcomes_bench" > /dev/null
  else
    echo "PostgreSQL: not reachable at $admin (eval \"\$(scripts/start-postgres.sh)\" starts one); skipped"
  fi
fi
