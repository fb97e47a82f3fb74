#!/bin/bash
# POST /v1/offers/sign over loopback, side by side in one run:
#   offer-signer  the release build, every signature durably recorded in a SQLite file before its reply
#   node          bench/peers/node_peer.js: what Apple's Node.js sample does (node:http + node:crypto, one
#                 worker per core through node:cluster)
#   python        bench/peers/python_peer.py: Flask + gunicorn (one worker per core) around Apple's
#                 app-store-server-library
# Every server gets the same request with the same API key header, signs with the same throw-away P-256 key and
# verifies its own signature before replying. The servers are loaded in turn, in alternating rounds (all three,
# then all three again…), so a slow patch on the machine touches each of them. Per server: req/s, p99, non-2xx,
# and server CPU per request (utime + stime of the server's processes from /proc, before and after its load),
# and the ratio of its req/s to Node's in the same run. Compare ratios within one run, not times across runs.
#
#   scripts/compare.sh [seconds per round, 10] [connections, 32] [rounds, 3]
#   OFFER_SIGNER_BIN_B=path/to/other/offer-signer scripts/compare.sh …   (an A/B of two builds in the same rounds)
#
# Linux only (/proc). Needs swift (or OFFER_SIGNER_BIN, below), wrk and node (apt-get install -y wrk nodejs), curl, openssl, python3; the Python
# peer's packages (bench/requirements.txt) are installed into .venv if they are missing there.
set -eu
dur=${1:-10}; conns=${2:-32}; rounds=${3:-3}
cd "$(dirname "$0")/.."
for tool in wrk node curl openssl python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (wrk and node: apt-get install -y wrk nodejs)" >&2; exit 2; }
done

venv=${BENCH_VENV:-.venv}
if ! "$venv/bin/python" -c 'import flask, gunicorn, appstoreserverlibrary' 2>/dev/null; then
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r bench/requirements.txt
fi

# The release build (or OFFER_SIGNER_BIN), $work with a throw-away key and the wrk script (post.lua), as the other
# benchmark scripts; its exported server configuration is what offer-signer is started with below.
. scripts/bench-setup.sh
stop() {  # the servers this script started, and their workers
  local p; for p in $(jobs -p); do kill $(pgrep -P "$p") "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true; rm -rf "$work"
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

# Start the three servers; each is idle while another one is loaded.
unset port  # bench-setup.sh's single port: here one per server
declare -A port pid
port[offer-signer]=$(free_port)
OFFER_SIGNER_PORT=${port[offer-signer]} OFFER_SIGNER_DATABASE_URL="sqlite:$work/store.sqlite" \
  "$bin" serve >"$work/offer-signer.log" 2>&1 &
pid[offer-signer]=$!
port[node]=$(free_port)
KEY_FILE=$work/key.p8 KEY_ID=BENCHKEY01 BUNDLE_ID=com.example.app PORT=${port[node]} WORKERS=$(nproc) \
  node bench/peers/node_peer.js >"$work/node.log" 2>&1 &
pid[node]=$!
port[python]=$(free_port)
KEY_FILE=$work/key.p8 KEY_ID=BENCHKEY01 BUNDLE_ID=com.example.app \
  "$venv/bin/gunicorn" --chdir bench/peers -w "$(nproc)" -b "127.0.0.1:${port[python]}" python_peer:app \
  >"$work/python.log" 2>&1 &
pid[python]=$!

servers="offer-signer node python"
# An A/B of two builds in one run: OFFER_SIGNER_BIN_B (another build, e.g. of an earlier commit) as a fourth server,
# "offer-signer-b", loaded in the same alternating rounds and configured the same way (its own SQLite file).
if [ -n "${OFFER_SIGNER_BIN_B:-}" ]; then
  port[offer-signer-b]=$(free_port)
  OFFER_SIGNER_PORT=${port[offer-signer-b]} OFFER_SIGNER_DATABASE_URL="sqlite:$work/store-b.sqlite" \
    "$OFFER_SIGNER_BIN_B" serve >"$work/offer-signer-b.log" 2>&1 &
  pid[offer-signer-b]=$!
  servers="offer-signer node offer-signer-b python"
fi
for s in $servers; do
  wait_up "${port[$s]}"
  # One signed reply, so a misconfigured server is obvious before the numbers are.
  status=$(curl -s -o "$work/$s.reply" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -H 'Authorization: Bearer bench-client-key-0123456789abcdef' \
    -d '{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-0001"}' \
    "$(url "${port[$s]}")")
  [ "$status" = 200 ] || { echo "$s answered $status: $(cat "$work/$s.reply")" >&2; exit 1; }
  wrk -t1 -c"$conns" -d2s -s "$work/post.lua" "$(url "${port[$s]}")" >/dev/null  # warm-up, not counted
done

# One line per round and server: name, round, requests, seconds, p99, non-2xx, socket errors, server CPU ticks.
echo "$dur s per round, $conns connections, $rounds rounds, $(nproc) cores; wrk -t1 on the same cores;" \
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
  for s in $servers; do
    before=$(ticks "${pid[$s]}")
    wrk -t1 -c"$conns" -d"${dur}s" --latency -s "$work/post.lua" "$(url "${port[$s]}")" >"$work/wrk.txt"
    after=$(ticks "${pid[$s]}")
    awk -v s="$s" -v r="$round" -v cpu=$((after - before)) '
      / requests in /  { n = $1; t = $4; sub(/s,$/, "", t) }
      $1 == "99%"      { p99 = $2 }
      /Non-2xx/        { bad = $NF }
      /Socket errors/  { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
      END { print s, r, n, t, p99, bad + 0, err + 0, cpu }' "$work/wrk.txt" | tee -a "$work/results.txt" |
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
    name, _round, n, secs, p99, bad, err, cpu = line.split()
    rows[name].append((int(n), float(secs), ms(p99), int(bad), int(err), int(cpu)))
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
PY
