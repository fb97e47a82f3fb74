#!/usr/bin/env bash
# Fills a store with customers and their facts, fast (SQL straight into the database, not HTTP calls), for the
# policy mode of Benchmarks/Signing/compare.sh (docs/PERFORMANCE.md "With a policy"):
#
#   Benchmarks/Signing/seed-customers.sh sqlite:/path/store.sqlite [customers, 1000000]
#   Benchmarks/Signing/seed-customers.sh postgres://user:password@127.0.0.1:54329/database [customers]
#   BIN=path/to/offer-signer Benchmarks/Signing/seed-customers.sh …     (default: the release build in .build-release)
#
# The schema is the binary's own (its migrations run first, through `offer-signer policy dry-run`, which opens the
# store); a SQLite file is created if missing; the database must exist. Customers `bench-0` … `bench-<n-1>` of
# com.example.app, each with one expired subscription of com.example.monthly (group 21000001) that lapsed 31 to
# 330 days ago, storefront USA, GBR, DEU or JPN: every one passes Benchmarks/Signing/policy.yaml's facts rules. Customers
# already stored are replaced. Needs sqlite3 or psql. About 15 s for a million on SQLite, 20 s on PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/../.."
url=${1:?usage: Benchmarks/Signing/seed-customers.sh DATABASE_URL [customers]}
customers=${2:-1000000}
if [ -z "${BIN:-}" ]; then
  swift build -c release --scratch-path .build-release --product offer-signer >&2
  BIN=$(swift build -c release --scratch-path .build-release --show-bin-path)/offer-signer
fi
case "$url" in
  sqlite:*) file=${url#sqlite:}; file=${file#//}; [ -e "$file" ] || : > "$file" ;;
  postgres://*|postgresql://*) ;;
  *) echo "DATABASE_URL is sqlite:<file> or postgres://…" >&2; exit 2 ;;
esac
# The migrations: a dry-run over an empty log opens (and so migrates) the store and changes nothing.
OFFER_SIGNER_DATABASE_URL="$url" OFFER_SIGNER_BUNDLE_ID=com.example.app OFFER_SIGNER_CLIENT_AUTH=none \
  "$BIN" policy dry-run Benchmarks/Signing/policy.yaml > /dev/null

now_ms=$(($(date +%s) * 1000))
# `s` is the customer's number; the facts are CustomerFacts as the store encodes them (sorted keys, dates in ms).
facts_sql() {  # $1: the dialect's text of s
  cat <<SQL
SELECT 'com.example.app', 'bench-' || $1,
  '{"flags":{},"grants":[],"key":{"applicationUsername":"bench-' || $1 || '","bundleIdentifier":"com.example.app"},' ||
  '"storefront":"' || CASE s % 4 WHEN 0 THEN 'USA' WHEN 1 THEN 'GBR' WHEN 2 THEN 'DEU' ELSE 'JPN' END || '",' ||
  '"subscriptions":[{"autoRenewEnabled":false,"downgraded":false,"expiresDate":' ||
  ($now_ms - (31 + s % 300) * 86400000) || ',"hadIntroductoryOffer":true,"originalTransactionId":"' ||
  (2000000000000000 + s) || '","productIdentifier":"com.example.monthly","renewalCount":' || (s % 24) ||
  ',"state":"expired","subscriptionGroupIdentifier":"21000001"}],"updatedAt":' || $now_ms || '}', $now_ms
SQL
}
start=$(date +%s.%N)
case "$url" in
  sqlite:*)
    sqlite3 "$file" > /dev/null <<SQL
PRAGMA journal_mode=WAL;
BEGIN;
WITH RECURSIVE c(s) AS (SELECT 0 UNION ALL SELECT s + 1 FROM c WHERE s + 1 < $customers)
INSERT OR REPLACE INTO customers (bundle_identifier, application_username, facts, updated_at) $(facts_sql "s") FROM c;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
    ;;
  *)
    psql "$url" -q -v ON_ERROR_STOP=1 <<SQL
BEGIN;
DELETE FROM customers WHERE bundle_identifier = 'com.example.app' AND application_username LIKE 'bench-%';
INSERT INTO customers (bundle_identifier, application_username, facts, updated_at)
$(facts_sql "s::text") FROM generate_series(0::bigint, $customers - 1) AS s;
COMMIT;
VACUUM ANALYZE customers;
SQL
    ;;
esac
echo "seeded $customers customers in $(python3 -c "import sys, time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$start") s" >&2
