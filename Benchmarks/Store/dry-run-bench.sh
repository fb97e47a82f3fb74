#!/usr/bin/env bash
# The dry-run's benchmark (docs/PERFORMANCE.md "Dry-run replay"): fills a store with 1,000,000 logged decisions
# and times `offer-signer policy dry-run` replaying them, on SQLite and (when PostgreSQL is reachable) PostgreSQL;
# prints the decision log's bytes per decision on SQLite. Not a test: run it by hand.
#
#   Benchmarks/Store/dry-run-bench.sh                 # builds offer-signer in release mode first (.build-release)
#   DECISIONS=200000 Benchmarks/Store/dry-run-bench.sh
#   BIN=.build/debug/offer-signer Benchmarks/Store/dry-run-bench.sh
#
# Signing beside a dry-run (issue 38; docs/PERFORMANCE.md "Signing beside a dry-run"):
#
#   Benchmarks/Store/dry-run-bench.sh beside-load [seconds per phase, 20] [connections, 32] [rounds, 2]
#
# serves the same SQLite store (`offer-signer serve`, release build; OFFER_SIGNER_BIN measures another binary) and
# loads POST /v1/offers/sign with wrk (Benchmarks/Signing/bench-setup.sh's request and credential), in rounds of two phases:
# `seconds` of signing alone, then `seconds` of signing while POST /admin/policy/dry-run replays the 1,000,000
# decisions — one dry-run at a time, the next asked as soon as one answers, so one is running through the whole
# phase. Prints each phase's req/s and p99 and the ratios with / without (goal: p99 at most 1.5x, req/s at least
# 0.8x), and how long the dry-runs took under load. Needs wrk (apt-get install -y wrk), curl, sqlite3.
#
# The rows are the service's format (schema version 9, made by the binary's own migrations), written by SQL for
# speed: 1,000,000 decisions over the last 29 days, three quarters for `winback` (two thirds granted), a quarter
# for `welcome`; 100,000 distinct customers and facts snapshots (a subscription, a churn-risk flag), each customer
# deciding ten times, their decisions interleaved with 999 other customers' (a block of 10,000 decisions holds
# 1,000 customers). PostgreSQL: a database of its own (offersigner_bench), created with the superuser of
# scripts/start-postgres.sh, so the shared test database is not touched.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-replay}
decisions=${DECISIONS:-1000000}
customers=$((decisions / 10))
block=$((customers < 1000 ? customers : 1000))
if [ "$mode" = beside-load ]; then
  dur=${2:-20}; conns=${3:-32}; rounds=${4:-2}
  # The release build (or OFFER_SIGNER_BIN), $work, a signing key, $work/post.lua, a free $port, the server's
  # configuration exported (API keys: the offline commands below accept them too), wait_up and load.
  . Benchmarks/Signing/bench-setup.sh
  trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT  # bench-setup's, without failing when no job is left
  BIN=$bin
  export OFFER_SIGNER_ADMIN_TOKENS=bench:bench-admin-token-0123456789abcdef
else
  # The tools read the service's configuration (an app, client authentication); the dry-run needs only the store.
  export OFFER_SIGNER_BUNDLE_ID=com.example.bench OFFER_SIGNER_CLIENT_AUTH=none
  work=$(mktemp -d /tmp/offer-signer-dry-run-bench.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  if [ -z "${BIN:-}" ]; then
    swift build -c release --scratch-path .build-release --product offer-signer >&2
    BIN=$(swift build -c release --scratch-path .build-release --show-bin-path)/offer-signer
  fi
fi

cat > "$work/candidate.yaml" <<'YAML'
apps:
  - bundleIdentifier: com.example.bench
    products:
      - productIdentifier: com.example.monthly
        subscriptionGroupIdentifier: "21000001"
        offers:
          - offerIdentifier: winback
            rules: [{ churn-risk: { values: [high, medium] } }, { cap: { count: 3, days: 30 } }]
          - offerIdentifier: welcome
YAML

now_ms=$(($(date +%s) * 1000))
span_ms=$((29 * 86400 * 1000))
# One statement for both databases: `n` is the decision's number, `s` its customer (and snapshot).
customer="((n % $block) + $block * (n / ($block * 10)))"
snapshot_sql() {  # $1: the dialect's hex of $customer padded to 32, $2: to 12
  cat <<SQL
SELECT $now_ms - $span_ms + (n * $span_ms / $decisions), n + 1, 'legacy', 'com.example.bench', 'com.example.monthly',
  CASE WHEN n % 4 = 0 THEN 'welcome' ELSE 'winback' END, NULL, $2, '$(printf '%064d' 7)',
  CASE WHEN n % 4 = 0 OR n % 3 <> 0 THEN 1 ELSE 0 END,
  CASE WHEN n % 4 = 0 OR n % 3 <> 0 THEN '' ELSE 'churn-risk:not_churn_risk' END, 2592000, $1
SQL
}
facts_sql() {  # $1: hex of s padded to 32
  cat <<SQL
SELECT $1,
  '{"f":{"flags":{"churnRisk":"' || CASE s % 3 WHEN 0 THEN 'high' WHEN 1 THEN 'medium' ELSE 'low' END ||
  '"},"grants":[],"key":{"applicationUsername":"","bundleIdentifier":"com.example.bench"},"subscriptions":[{"autoRenewEnabled":false,"downgraded":false,"expiresDate":' ||
  (1760000000000 + s * 1000) || ',"hadIntroductoryOffer":true,"originalTransactionId":"' || (2000000000000000 + s) ||
  '","productIdentifier":"com.example.monthly","renewalCount":' || (s % 24) ||
  ',"state":"expired","subscriptionGroupIdentifier":"21000001"}],"updatedAt":0},"i":[{"o":"winback","p":"com.example.monthly","t":' ||
  ($now_ms - 86400000) || '}]}', $now_ms
SQL
}
columns="decided_at, id, channel, bundle_identifier, product_identifier, offer_identifier, retention_entry, customer_hash, policy_version, granted, reasons, lookback_seconds, facts_hash"

replay() {  # $1: database URL, $2: label
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%M %U %S" -o "$work/rss" env OFFER_SIGNER_DATABASE_URL="$1" "$BIN" policy dry-run "$work/candidate.yaml" --days 30 > "$work/answer.json"
  end=$(date +%s.%N)
  python3 - "$work/answer.json" "$2" "$start" "$end" $(cat "$work/rss") "$(cat /proc/loadavg)" <<'PY'
import json, sys
answer = json.load(open(sys.argv[1]))
seconds = float(sys.argv[4]) - float(sys.argv[3])
cpu = float(sys.argv[6]) + float(sys.argv[7])
print(f"{sys.argv[2]}: replayed {answer['replayed']:,} decisions in {seconds:.1f} s "
      f"({answer['replayed'] / seconds:,.0f}/s; offer-signer's CPU {cpu:.1f} s; load {sys.argv[8].split()[0]}), "
      f"peak RSS {int(sys.argv[5]) / 1024:.0f} MiB; "
      f"refusedToGranted {answer['refusedToGranted']:,}, signatures/day {answer['signaturesPerDay']}")
PY
}

# SQLite: the binary creates the schema (an empty replay), SQL fills it.
db="$work/bench.sqlite"
: > "$db"  # the read-only tools refuse a file that does not exist; an empty one they migrate
OFFER_SIGNER_DATABASE_URL="sqlite:$db" "$BIN" policy dry-run "$work/candidate.yaml" > /dev/null
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" > /dev/null
before=$(sqlite3 "$db" "PRAGMA page_count;")
page=$(sqlite3 "$db" "PRAGMA page_size;")
sqlite3 "$db" > /dev/null <<SQL
BEGIN;
WITH RECURSIVE c(s) AS (SELECT 0 UNION ALL SELECT s + 1 FROM c WHERE s + 1 < $customers)
INSERT INTO decision_facts (hash, facts, last_used_at) $(facts_sql "printf('%032x', s)") FROM c;
WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $decisions)
INSERT INTO policy_decisions ($columns) $(snapshot_sql "printf('%032x', $customer)" "printf('%012x', $customer)") FROM c;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
after=$(sqlite3 "$db" "PRAGMA page_count;")
echo "SQLite: $(( (after - before) * page / decisions )) bytes per decision ($decisions decisions, $customers snapshots; file grew $(( (after - before) * page / 1048576 )) MiB)"
sqlite3 "$db" "SELECT name, SUM(pgsize) / $decisions FROM dbstat WHERE name IN ('policy_decisions', 'decision_facts') OR name LIKE 'sqlite_autoindex_policy_decisions%' OR name LIKE 'sqlite_autoindex_decision_facts%' OR name = 'decision_facts_by_last_use' GROUP BY name;" 2>/dev/null \
  | sed 's/^/  bytes per decision in /; s/|/: /' || true

# Signing alone, then beside a running dry-run, in rounds (`beside-load`).
beside_load() {
  local admin="Authorization: Bearer bench-admin-token-0123456789abcdef"
  OFFER_SIGNER_DATABASE_URL="sqlite:$db" "$BIN" serve >"$work/serve.log" 2>&1 &
  local pid=$!
  wait_up
  kill -0 "$pid" 2>/dev/null || { echo "the server exited:" >&2; tail -5 "$work/serve.log" >&2; return 1; }
  load -d3s >/dev/null  # warm-up
  : >"$work/phases.txt"
  phase() {  # $1: label; wrk's req/s and p99 (in ms) go to phases.txt
    load -d"${dur}s" --latency >"$work/$1.txt"
    awk -v label="$1" '
      /Requests\/sec/ { rps = $2 }
      $1 == "99%" { v = $2; unit = v; sub(/[0-9.]+/, "", unit); sub(/[a-z]+$/, "", v)
                    p99 = v * (unit == "us" ? 0.001 : unit == "s" ? 1000 : unit == "m" ? 60000 : 1) }
      /Non-2xx/ { bad = $NF }
      END { printf "%s %.1f %.2f %d\n", label, rps, p99, bad }' "$work/$1.txt" >>"$work/phases.txt"
    tail -1 "$work/phases.txt" | awk '{ printf "  %-22s %8.0f req/s   p99 %8.2f ms   non-2xx %d\n", $1, $2, $3, $4 }'
  }
  local round
  for round in $(seq "$rounds"); do
    echo "round $round (load average $(cut -d' ' -f1 /proc/loadavg))"
    phase "alone-$round"
    # Dry-runs back to back until the phase ends: one is replaying throughout.
    rm -f "$work/stop"
    (
      while [ ! -e "$work/stop" ]; do
        curl -s -o "$work/dry-run.json" -w '%{http_code} %{time_total}\n' -X POST -H "$admin" \
          --data-binary @"$work/candidate.yaml" "http://127.0.0.1:$port/admin/policy/dry-run?days=30" >>"$work/dry-runs-$round.txt"
      done
    ) &
    local replaying=$!
    sleep 1  # the dry-run is replaying when the load starts
    phase "with-dry-run-$round"
    touch "$work/stop"
    local t0; t0=$(date +%s.%N)
    wait "$replaying"
    awk -v waited="$(python3 -c "import sys, time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$t0")" '
      { n++; codes[$1]++; if ($1 == 200) { done++; s = s (s ? ", " : "") sprintf("%.1f s", $2) } }
      END { c = ""; for (k in codes) c = c (c ? ", " : "") k " x" codes[k]
            printf "  dry-runs: %d asked (%s); answered 200 after %s; the last finished %s s after the load stopped\n", n, c, (s ? s : "none"), waited }' \
      "$work/dry-runs-$round.txt"
    python3 -c "import json, sys; a = json.load(open(sys.argv[1])); print('  last dry-run: replayed %s decisions' % format(a.get('replayed', 0), ','))" "$work/dry-run.json" 2>/dev/null || true
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
  awk '
    $1 ~ /^alone-/ { a_rps += $2; a_p99 += $3; na++ }
    $1 ~ /^with-dry-run-/ { w_rps += $2; w_p99 += $3; nw++; r = r sprintf("%s%.2fx / %.2fx", (r ? "; " : ""), $3 / p99[substr($1, 14)], $2 / rps[substr($1, 14)]) }
    $1 ~ /^alone-/ { rps[substr($1, 7)] = $2; p99[substr($1, 7)] = $3 }
    END {
      printf "signing alone:        %8.0f req/s   p99 %8.2f ms  (mean of %d phases)\n", a_rps / na, a_p99 / na, na
      printf "beside a dry-run:     %8.0f req/s   p99 %8.2f ms  (mean of %d phases)\n", w_rps / nw, w_p99 / nw, nw
      printf "with / without: p99 %.2fx (goal <= 1.5x), req/s %.2fx (goal >= 0.8x); per round (p99 / req/s): %s\n",
        (w_p99 / nw) / (a_p99 / na), (w_rps / nw) / (a_rps / na), r
    }' "$work/phases.txt"
}

if [ "$mode" = beside-load ]; then
  beside_load
  exit 0
fi

replay "sqlite:$db" "SQLite"

# PostgreSQL, when scripts/start-postgres.sh's server is up (or PG_ADMIN_URL names a superuser connection).
admin=${PG_ADMIN_URL:-postgres://postgres@127.0.0.1:${PGPORT:-54329}/postgres}
if psql "$admin" -qtAc "SELECT 1" > /dev/null 2>&1; then
  psql "$admin" -qc "DROP DATABASE IF EXISTS offersigner_bench" -qc "CREATE DATABASE offersigner_bench OWNER offersigner" > /dev/null 2>&1 \
    || psql "$admin" -qc "CREATE DATABASE offersigner_bench" > /dev/null
  url="postgres://offersigner:offersigner@127.0.0.1:${PGPORT:-54329}/offersigner_bench"
  OFFER_SIGNER_DATABASE_URL="$url" "$BIN" policy dry-run "$work/candidate.yaml" > /dev/null
  psql "$url" -q <<SQL
BEGIN;
INSERT INTO decision_facts (hash, facts, last_used_at) $(facts_sql "lpad(to_hex(s), 32, '0')") FROM generate_series(0, $customers - 1) AS s;
INSERT INTO policy_decisions ($columns) $(snapshot_sql "lpad(to_hex($customer), 32, '0')" "lpad(to_hex($customer), 12, '0')") FROM generate_series(0, $decisions - 1) AS n;
COMMIT;
VACUUM ANALYZE policy_decisions;
VACUUM ANALYZE decision_facts;
SQL
  echo "PostgreSQL: policy_decisions + decision_facts $(psql "$url" -qtAc "SELECT (pg_total_relation_size('policy_decisions') + pg_total_relation_size('decision_facts')) / $decisions") bytes per decision"
  replay "$url" "PostgreSQL"
  psql "$admin" -qc "DROP DATABASE offersigner_bench" > /dev/null
else
  echo "PostgreSQL: not reachable at $admin (eval \"\$(scripts/start-postgres.sh)\" starts one); skipped"
fi
