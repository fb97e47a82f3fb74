#!/bin/bash
# POST /v1/offers/sign over loopback, side by side in one run:
#   offer-signer  the release build, every signature durably recorded in a SQLite file before its reply
#   node          Benchmarks/Signing/peers/node_peer.js: what Apple's Node.js sample does (node:http + node:crypto, one
#                 worker per core through node:cluster)
#   python        Benchmarks/Signing/peers/python_peer.py: Flask + gunicorn (one worker per core) around Apple's
#                 app-store-server-library
# Every server gets the same request with the same API key header, signs with the same throw-away P-256 key and
# verifies its own signature before replying. The servers are loaded in turn, in alternating rounds (all three,
# then all three again…), so a slow patch on the machine touches each of them. Per server: req/s, p99, non-2xx,
# and server CPU per request (utime + stime of the server's processes from /proc, before and after its load),
# and the ratio of its req/s to Node's in the same run. Compare ratios within one run, not times across runs.
#
#   Benchmarks/Signing/compare.sh [seconds per round, 10] [connections, 32] [rounds, 3]
#   OFFER_SIGNER_BIN_B=path/to/other/offer-signer Benchmarks/Signing/compare.sh …   (an A/B of two builds in the same rounds)
#
# Policy mode, the product as users run it (docs/PERFORMANCE.md "With a policy"):
#
#   Benchmarks/Signing/compare.sh policy [seconds per round, 10] [connections, 32] [rounds, 3]
#
# adds two more copies of the same build, serving Benchmarks/Signing/policy.yaml (rules on stored facts, a cap, a cool-down):
# "policy-sqlite" on a SQLite file and "policy-postgres" on a PostgreSQL database (scripts/start-postgres.sh's
# server, a database of its own, offersigner_bench_a; skipped with a note when it is not reachable), each store
# seeded with 1,000,000 customers (CUSTOMERS to change) by Benchmarks/Signing/seed-customers.sh. Every server, the peers and
# the no-policy "offer-signer" (the floor) included, is sent a random customer per request (bench-0 …), so a
# policy server reads a different customer's facts and signatures each time; a customer asked for twice in a run
# meets the cool-down (403, counted as non-2xx). The summary adds each policy server's CPU per request over the
# no-policy copy of the same build and PostgreSQL's req/s over SQLite's. The database server's own CPU is not in
# the column (another process): where it runs on this machine, the summary gives it apart, a request's CPU of the
# PostgreSQL server's processes while a policy-postgres server was loaded. With OFFER_SIGNER_BIN_B, build B gets the
# same three servers ("b-…"). The seeded stores are flushed to disk (sync, CHECKPOINT) before the first round, so that
# their writeback does not land in the rounds' fsyncs.
#
# Linux only (/proc). Needs swift (or OFFER_SIGNER_BIN, below), wrk and node (apt-get install -y wrk nodejs), curl, openssl, python3; the Python
# peer's packages (Benchmarks/Signing/requirements.txt) are installed into .venv if they are missing there.
set -eu
mode=plain; if [ "${1:-}" = policy ]; then mode=policy; shift; fi
dur=${1:-10}; conns=${2:-32}; rounds=${3:-3}
customers=${CUSTOMERS:-1000000}
cd "$(dirname "$0")/../.."
for tool in wrk node curl openssl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (wrk and node: apt-get install -y wrk nodejs)" >&2; exit 2; }
done

venv=${BENCH_VENV:-.venv}
if ! "$venv/bin/python" -c 'import flask, gunicorn, appstoreserverlibrary' 2>/dev/null; then
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r Benchmarks/Signing/requirements.txt
fi

# The release build (or OFFER_SIGNER_BIN), $work with a throw-away key and the wrk script (post.lua), as the other
# benchmark scripts; its exported server configuration is what offer-signer is started with below.
. Benchmarks/Signing/bench-setup.sh
pg_databases=""  # the policy mode's PostgreSQL databases, dropped on exit
stop() {  # the servers this script started, and their workers
  local p d; for p in $(jobs -p); do kill $(pgrep -P "$p") "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true; rm -rf "$work"
  for d in $pg_databases; do psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done
}
trap stop EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
url() { echo "http://127.0.0.1:$1/v1/offers/sign"; }
wait_up() {  # until the server on port $1 answers the sign route (with anything)
  for _ in $(seq 300); do curl -s -o /dev/null -X POST "$(url "$1")" && return; sleep 0.1; done
  echo "no server on port $1 after 30 s" >&2; exit 1
}
# utime + stime, in clock ticks, of a process and its children (Node's and gunicorn's workers), read after the
# ")" that ends the command name in /proc/<pid>/stat.
ticks() {
  local total=0 p
  for p in $1 $(pgrep -P "$1"); do total=$((total + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}'))); done
  echo "$total"
}
# The CPU ticks of this machine's PostgreSQL server processes, every cluster's (0 where none runs here): each
# process's own and its reaped children's (the postmaster's cutime and cstime hold the backends and workers that
# ended, so one that ends or starts and ends between two readings is counted once).
pg_ticks() {
  local total=0 p t
  for p in $(pgrep -x postgres || true); do  # the postmaster and its backends, all named postgres
    t=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13 + $14 + $15}') || true
    total=$((total + ${t:-0}))
  done
  echo "$total"
}

# Start the servers; each is idle while another one is loaded.
unset port  # bench-setup.sh's single port: here one per server
declare -A port pid
start_signer() {  # $1: name, $2: binary, $3: database URL, $4: policy file or empty
  port[$1]=$(free_port)
  OFFER_SIGNER_PORT=${port[$1]} OFFER_SIGNER_DATABASE_URL="$3" OFFER_SIGNER_POLICY="$4" \
    "$2" serve >"$work/$1.log" 2>&1 &
  pid[$1]=$!
}
start_signer offer-signer "$bin" "sqlite:$work/store.sqlite" ""
port[node]=$(free_port)
KEY_FILE=$work/key.p8 KEY_ID=BENCHKEY01 BUNDLE_ID=com.example.app PORT=${port[node]} WORKERS=$(nproc) \
  node Benchmarks/Signing/peers/node_peer.js >"$work/node.log" 2>&1 &
pid[node]=$!
port[python]=$(free_port)
KEY_FILE=$work/key.p8 KEY_ID=BENCHKEY01 BUNDLE_ID=com.example.app \
  "$venv/bin/gunicorn" --chdir Benchmarks/Signing/peers -w "$(nproc)" -b "127.0.0.1:${port[python]}" python_peer:app \
  >"$work/python.log" 2>&1 &
pid[python]=$!

servers="offer-signer node python"
# An A/B of two builds in one run: OFFER_SIGNER_BIN_B (another build, e.g. of an earlier commit) as a fourth server,
# "offer-signer-b", loaded in the same alternating rounds and configured the same way (its own SQLite file).
if [ -n "${OFFER_SIGNER_BIN_B:-}" ]; then
  start_signer offer-signer-b "$OFFER_SIGNER_BIN_B" "sqlite:$work/store-b.sqlite" ""
  servers="offer-signer node offer-signer-b python"
fi

if [ "$mode" = policy ]; then
  # One seeded SQLite file, copied for each build; one seeded PostgreSQL database per build.
  echo "seeding $customers customers (Benchmarks/Signing/seed-customers.sh)"
  BIN=$bin Benchmarks/Signing/seed-customers.sh "sqlite:$work/seed.sqlite" "$customers"
  pg_admin=${PG_ADMIN_URL:-postgres://postgres@127.0.0.1:${PGPORT:-54329}/postgres}
  pg_reachable=no
  psql "$pg_admin" -qtAc "SELECT 1" >/dev/null 2>&1 && pg_reachable=yes
  [ "$pg_reachable" = yes ] || echo "PostgreSQL is not reachable at $pg_admin: no policy-postgres (scripts/start-postgres.sh starts it)"
  builds="a:$bin"; [ -n "${OFFER_SIGNER_BIN_B:-}" ] && builds="$builds b:$OFFER_SIGNER_BIN_B"
  for build in $builds; do
    letter=${build%%:*}; build_bin=${build#*:}; prefix=""; [ "$letter" = b ] && prefix=b-
    cp "$work/seed.sqlite" "$work/policy-$letter.sqlite"
    start_signer "${prefix}policy-sqlite" "$build_bin" "sqlite:$work/policy-$letter.sqlite" Benchmarks/Signing/policy.yaml
    servers="$servers ${prefix}policy-sqlite"
    if [ "$pg_reachable" = yes ]; then
      database=offersigner_bench_$letter; pg_databases="$pg_databases $database"
      psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $database" -qc "CREATE DATABASE $database OWNER offersigner" >/dev/null 2>&1
      pg_url="postgres://offersigner:offersigner@127.0.0.1:${PGPORT:-54329}/$database"
      BIN=$build_bin Benchmarks/Signing/seed-customers.sh "$pg_url" "$customers"
      start_signer "${prefix}policy-postgres" "$build_bin" "$pg_url" Benchmarks/Signing/policy.yaml
      servers="$servers ${prefix}policy-postgres"
    fi
  done
  rm -f "$work/seed.sqlite"
  # The seeded files' and databases' pages written out now, not by the kernel's or PostgreSQL's writeback during
  # the first rounds (it held up their fsyncs: the server measured first in a round lost up to 20 %).
  sync
  [ "$pg_reachable" = yes ] && { psql "$pg_admin" -qc "CHECKPOINT" >/dev/null || echo "CHECKPOINT refused (not a superuser?); going on" >&2; }
  # A random customer per request, for every server.
  cat >>"$work/post.lua" <<'LUA'
math.randomseed(os.time())
request = function()
  return wrk.format(nil, nil, nil, string.format(
    '{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"bench-%d"}',
    math.random(0, CUSTOMERS - 1)))
end
LUA
  sed -i "1i CUSTOMERS = $customers" "$work/post.lua"
fi

check_user=user-0001; [ "$mode" = policy ] && check_user=bench-0  # a seeded customer: the policy servers sign
for s in $servers; do
  wait_up "${port[$s]}"
  # One signed reply, so a misconfigured server is obvious before the numbers are.
  status=$(curl -s -o "$work/$s.reply" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -H 'Authorization: Bearer bench-client-key-0123456789abcdef' \
    -d '{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"'"$check_user"'"}' \
    "$(url "${port[$s]}")")
  [ "$status" = 200 ] || { echo "$s answered $status: $(cat "$work/$s.reply")" >&2; exit 1; }
  wrk -t1 -c"$conns" -d2s -s "$work/post.lua" "$(url "${port[$s]}")" >/dev/null  # warm-up, not counted
done

# One line per round and server: name, round, requests, seconds, p99, non-2xx, socket errors, server CPU ticks,
# PostgreSQL server CPU ticks (policy-postgres only).
echo "$dur s per round, $conns connections, $rounds rounds, $(nproc) cores; wrk -t1 on the same cores;" \
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
  for s in $servers; do
    before=$(ticks "${pid[$s]}"); pg_before=0; [[ $s == *postgres ]] && pg_before=$(pg_ticks)
    wrk -t1 -c"$conns" -d"${dur}s" --latency -s "$work/post.lua" "$(url "${port[$s]}")" >"$work/wrk.txt"
    after=$(ticks "${pid[$s]}"); pg_after=0; [[ $s == *postgres ]] && pg_after=$(pg_ticks)
    awk -v s="$s" -v r="$round" -v cpu=$((after - before)) -v pg=$((pg_after - pg_before)) '
      / requests in /  { n = $1; t = $4; sub(/s,$/, "", t) }
      $1 == "99%"      { p99 = $2 }
      /Non-2xx/        { bad = $NF }
      /Socket errors/  { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
      END { print s, r, n, t, p99, bad + 0, err + 0, cpu, pg }' "$work/wrk.txt" | tee -a "$work/results.txt" |
      awk '{ printf "  round %s  %-13s %8.0f req/s   p99 %s\n", $2, $1, $3 / $4, $5 }'
  done
done

python3 - "$work/results.txt" "$(getconf CLK_TCK)" <<'PY'
import sys
from collections import defaultdict

def ms(text):  # wrk latency: 850.00us, 4.32ms, 1.02s
    for unit, scale in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(text)

rows = defaultdict(list)
for line in open(sys.argv[1]):
    name, _round, n, secs, p99, bad, err, cpu, pg = line.split()
    rows[name].append((int(n), float(secs), ms(p99), int(bad), int(err), int(cpu), int(pg)))
tick = int(sys.argv[2])

def rate(name):
    return sum(r[0] for r in rows[name]) / sum(r[1] for r in rows[name])

def ratios(name):  # per round, against Node in the same round
    return [a[0] / a[1] / (b[0] / b[1]) for a, b in zip(rows[name], rows["node"])]

print()
print("| server | req/s (all rounds) | ratio to Node (per round) | p99 (worst round) | non-2xx | errors | server CPU per request |")
print("|---|---|---|---|---|---|---|")
for name in rows:
    requests = sum(r[0] for r in rows[name])
    cpu_us = sum(r[5] for r in rows[name]) / tick / requests * 1e6
    per_round = ", ".join("%.2f" % x for x in ratios(name))
    print("| %s | %s | %.2f (%s) | %.1f ms | %d | %d | %.0f µs |" % (
        name, format(round(rate(name)), ","), rate(name) / rate("node"), per_round,
        max(r[2] for r in rows[name]), sum(r[3] for r in rows[name]), sum(r[4] for r in rows[name]), cpu_us))

def cpu(name):
    return sum(r[5] for r in rows[name]) / tick / sum(r[0] for r in rows[name]) * 1e6

# Policy mode: each policy server against the no-policy copy of its own build, and PostgreSQL against SQLite.
for prefix, floor in (("", "offer-signer"), ("b-", "offer-signer-b")):
    sqlite, postgres = prefix + "policy-sqlite", prefix + "policy-postgres"
    if sqlite not in rows:
        continue
    print()
    for name in (sqlite, postgres):
        if name in rows:
            print("%s: CPU per request %.2fx %s's (goal <= 1.3x); req/s %.2fx Node's (goal >= 0.8x); %d of %d answers non-2xx" % (
                name, cpu(name) / cpu(floor), floor, rate(name) / rate("node"),
                sum(r[3] for r in rows[name]), sum(r[0] for r in rows[name])))
    if postgres in rows:
        print("%s: req/s %.2fx %s's (goal >= 0.8x)" % (postgres, rate(postgres) / rate(sqlite), sqlite))
        server = sum(r[6] for r in rows[postgres]) / tick / sum(r[0] for r in rows[postgres]) * 1e6
        if server > 0:
            print("%s: the PostgreSQL server's CPU per request %.0f µs on the same cores; with it, %.2fx %s's CPU per request" % (
                postgres, server, (cpu(postgres) + server) / cpu(sqlite), sqlite))
PY
