#!/bin/bash
# CPU per request, server and load generator apart, for OfferSigner (SQLite file log) and the Node peer of
# Benchmarks/Signing/compare.sh (Benchmarks/Signing/peers/node_peer.js): how much of the machine each spends on one POST /v1/offers/sign.
# Reads the CPU time of the server processes from /proc before and after one wrk run. Linux only. Needs wrk, curl,
# openssl, python3; the Node peer is measured when node is installed (apt-get install -y nodejs).
#
#   Benchmarks/Signing/cpu-per-request.sh [seconds] [connections]
set -eu
dur=${1:-10}; conns=${2:-32}
cd "$(dirname "$0")/../.."
peer=Benchmarks/Signing/peers/node_peer.js
. Benchmarks/Signing/bench-setup.sh
tick=$(getconf CLK_TCK)
# utime + stime of whole processes (threads that exited included), read after the ")" that ends the name.
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}'))); done; echo "$t"; }

measure() {  # name, pid of the server (its children are counted too)
  wait_up
  local pids; pids="$2 $(pgrep -P "$2" | tr '\n' ' ')"  # Node's workers are children of its primary
  load -d2s >/dev/null
  local before; before=$(ticks $pids)
  local out; out=$( { TIMEFORMAT='%R %U %S'; time load -d"${dur}s"; } 2>&1 )
  local after; after=$(ticks $pids)
  python3 -c "
rps = float('$(echo "$out" | awk '/Requests\/sec/{print $2}')')
elapsed, user, system = map(float, '$(echo "$out" | tail -1)'.split())
server = ($after - $before) / $tick / elapsed; wrk = (user + system) / elapsed
print('%-13s %7.0f req/s   server %.2f cores = %6.1f us/request   wrk %.2f cores = %5.1f us/request' % ('$1', rps, server, server / rps * 1e6, wrk, wrk / rps * 1e6))"
  kill "$2"; wait "$2" 2>/dev/null || true
}

OFFER_SIGNER_DATABASE_URL="sqlite:$work/store.sqlite" "$bin" serve >/dev/null 2>&1 &
measure offer-signer $!
if [ -f "$peer" ] && command -v node >/dev/null; then
  KEY_FILE=$work/key.p8 KEY_ID=BENCHKEY01 BUNDLE_ID=com.example.app PORT=$port WORKERS=$(nproc) node "$peer" &
  measure node $!
fi
echo "openssl speed (one core): $(openssl speed -seconds 2 ecdsap256 2>/dev/null | awk '/nistp256/{printf "%.1f us a sign, %.1f us a verify", 1e6/$(NF-1), 1e6/$NF}')"
