#!/usr/bin/env bash
# The console's overview and Offers pages on a large store (docs/console.md "How the overview counts, and how
# fast"), written by SQL into a store the binary migrated first; then each page (the default range, 30 days, and 90
# days) signed in, after a warm-up request, five times, with the server's CPU a page. Not a test: run it by hand.
# Two shapes of store, over the last 90 days, with their daily rollups:
#   SHAPE=team (default)  a large team's store: 10 apps × 2 products × 5 offers, 2,000,000 signatures of 500,000 customers,
#                         1,000,000 decisions, 100,000 redemptions (about 110 signatures an offer a day)
#   SHAPE=wide            16,000 offers (2,000 apps × 2 products × 4 offers), 165,000 signatures — about one
#                         daily row a signature, the worst case of the rollups — 105,000 decisions, 5,000 redemptions
#
#   Benchmarks/Console/console-bench.sh                       # the debug build, SQLite and (when reachable) PostgreSQL
#   BIN=/tmp/offer-signer ONLY=sqlite Benchmarks/Console/console-bench.sh      # or ONLY=postgres; KEEP=1 keeps its database
#   DATABASE_URL=postgres://… Benchmarks/Console/console-bench.sh              # times the pages on that store, writes no rows
#
# PostgreSQL: a database of its own (offersigner_console_bench) on scripts/start-postgres.sh's server, created with
# its superuser (`postgres`, trusted on 127.0.0.1), so the shared test database is not touched.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-.build/x86_64-unknown-linux-gnu/debug/offer-signer}
pgport=${PGPORT:-54329}
BENCH=console-bench BENCH_BUNDLE_ID=com.example.app0
. Benchmarks/Store/store-bench-setup.sh

day_ms=86400000
now_ms=$(($(date +%s) * 1000))
start_ms=$((now_ms - 90 * day_ms))
case ${SHAPE:-team} in
  team) apps=10 products=2 offers=5 signatures=2000000 decisions=1000000 redemptions=100000 customers=500000 ;;
  wide) apps=2000 products=2 offers=4 signatures=165000 decisions=105000 redemptions=5000 customers=50000 ;;
  *) echo "SHAPE is team or wide" >&2; exit 2 ;;
esac
ap=$((apps * products))
span_ms=$((90 * day_ms))
fill_sql() {  # $1: the rows 0..n-1 of the dialect, as `numbers(n)`: a FROM clause for $2 rows
  cat <<SQL
INSERT INTO issued_signatures (nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier,
  application_username, timestamp, format, channel, request_identifier)
SELECT 'nonce-' || n, 'BENCHKEY01', 'com.example.app' || (n % $apps),
  CASE WHEN (n / $apps) % $products = 0 THEN 'com.example.monthly' ELSE 'com.example.yearly' END, 'offer_' || ((n / $ap) % $offers),
  'customer-' || ((n * 48271) % 2147483647 % $customers), $start_ms + n * $span_ms / $signatures, 'jws',
  CASE WHEN n % 10 = 3 THEN 'retention' ELSE 'api' END, NULL
FROM $(numbers $signatures);
INSERT INTO issued_daily (day, bundle_identifier, product_identifier, offer_identifier, channel, issued)
SELECT timestamp / $day_ms, bundle_identifier, product_identifier, offer_identifier, channel, COUNT(*)
FROM issued_signatures GROUP BY timestamp / $day_ms, bundle_identifier, product_identifier, offer_identifier, channel;
INSERT INTO policy_decisions (decided_at, id, channel, bundle_identifier, product_identifier, offer_identifier, retention_entry,
  customer_hash, policy_version, granted, reasons, lookback_seconds, facts_hash)
SELECT $start_ms + n * $span_ms / $decisions, n, 'jws', 'com.example.app' || (n % $apps), 'com.example.monthly', 'offer_1', NULL,
  'hash-' || (n % $customers), 'bench', CASE WHEN n % 3 = 0 THEN 0 ELSE 1 END, '[]', 0, 'facts'
FROM $(numbers $decisions);
INSERT INTO redemptions (environment, transaction_id, original_transaction_id, bundle_identifier, application_username,
  product_identifier, offer_type, offer_identifier, offer_discount_type, offer_period, price, currency, storefront, purchase_date,
  recorded_at, signature_nonce, signature_timestamp, signature_channel, renewed_at, refunded_at, expired_at)
SELECT 'Production', '' || (3000000000000000 + n), '' || (2000000000000000 + n), 'com.example.app' || (n % $apps),
  'customer-' || n, CASE WHEN (n / $apps) % $products = 0 THEN 'com.example.monthly' ELSE 'com.example.yearly' END,
  CASE WHEN n % 25 = 0 THEN 3 ELSE 2 END, 'offer_' || (n % $offers), 'PAY_UP_FRONT', 'P1M', 4990,
  CASE WHEN n % 7 = 0 THEN 'EUR' ELSE 'USD' END, 'USA', $start_ms + n * $span_ms / $redemptions, $now_ms,
  CASE WHEN n % 5 = 0 THEN NULL ELSE 'nonce-' || n END, NULL,
  CASE WHEN n % 5 = 0 THEN NULL WHEN n % 10 = 3 THEN 'retention' ELSE 'app' END,
  CASE WHEN n % 3 = 0 THEN $now_ms END, CASE WHEN n % 50 = 0 THEN $now_ms END, NULL
FROM $(numbers $redemptions);
INSERT INTO redemption_daily (day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type, channel, currency,
  redeemed, attributed, renewed, refunded, priced, milliunits)
SELECT purchase_date / $day_ms, environment, bundle_identifier, product_identifier, offer_identifier, offer_type,
  COALESCE(signature_channel, 'app'), COALESCE(currency, ''), COUNT(*), COUNT(signature_nonce), COUNT(renewed_at), COUNT(refunded_at),
  COUNT(price), CAST(COALESCE(SUM(price), 0) AS BIGINT)
FROM redemptions WHERE period_of IS NULL AND purchase_date >= 0
GROUP BY purchase_date / $day_ms, environment, bundle_identifier, product_identifier, offer_identifier, offer_type,
  COALESCE(signature_channel, 'app'), COALESCE(currency, '');
SQL
}

# The server's CPU so far (user + system), in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server/stat"; }
# A page five times after a warm-up request (the first one rolls the customer days up): seconds each.
page() {  # $1: path
  # The warm-up may outlast the server's request timeout while it rolls many days up: it goes on, ask again.
  for _ in 1 2 3; do curl -fs -b "$work/jar" -o /dev/null "http://127.0.0.1:$port$1" && break; done
  local times=() before after
  before=$(cpu_ticks)
  for _ in 1 2 3 4 5; do
    times+=("$(curl -fs -b "$work/jar" -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port$1")")
  done
  after=$(cpu_ticks)
  echo "  $1: ${times[*]} s; server CPU $(( (after - before) * 1000 / $(getconf CLK_TCK) / 5 )) ms a page (load $(cut -d' ' -f1 /proc/loadavg))"
}
measure() {  # $1: database URL, $2: label
  serve "$1"
  curl -fs -c "$work/jar" -o /dev/null --data-urlencode "token=$token" "http://127.0.0.1:$port/console/login"
  echo "$2 (SHAPE=${SHAPE:-team})"
  page /console
  page /console/offers
  page "/console/offers?days=90"
  stop
}

if [ -n "${DATABASE_URL:-}" ]; then  # a store of your own (a copy: the first Offers page rolls its customer days up)
  measure "$DATABASE_URL" "DATABASE_URL (your store)"
  exit 0
fi
if [ "${ONLY:-sqlite}" != postgres ]; then
  numbers() { echo "(WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < $1 - 1) SELECT n FROM s) numbers"; }
  serve "sqlite://$work/bench.sqlite"
  stop
  fill_sql | sqlite3 "$work/bench.sqlite"
  measure "sqlite://$work/bench.sqlite" "SQLite"
fi
if [ "${ONLY:-postgres}" != sqlite ] && pg_isready -q -h 127.0.0.1 -p "$pgport"; then
  numbers() { echo "generate_series(0::bigint, $1 - 1) AS numbers(n)"; }
  database=offersigner_console_bench
  url="postgres://offersigner:offersigner@127.0.0.1:$pgport/$database"
  psql -q -h 127.0.0.1 -p "$pgport" -U postgres -c "DROP DATABASE IF EXISTS $database" -c "CREATE DATABASE $database OWNER offersigner"
  serve "$url"
  stop
  fill_sql | PGPASSWORD=offersigner psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pgport" -U offersigner "$database"
  psql -q -h 127.0.0.1 -p "$pgport" -U postgres "$database" -c ANALYZE
  measure "$url" "PostgreSQL"
  [ -n "${KEEP:-}" ] || psql -q -h 127.0.0.1 -p "$pgport" -U postgres -c "DROP DATABASE $database"
fi
