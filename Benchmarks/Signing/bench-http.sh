#!/bin/bash
# POST /v1/offers/sign over loopback with each issued-signature store, in one run: what compare.sh measures for
# the SQLite file, plus PostgreSQL and SQLite in memory, with peak resident memory and start-up to ready.
#
#   Benchmarks/Signing/bench-http.sh [seconds] [connections] [rounds, 1]
#
# With several rounds the stores are loaded in turn, round after round (a slow patch of a shared machine touches
# each), and the last line gives PostgreSQL's req/s over the SQLite file's, per round and over all rounds.
# Each line also gives the CPU a request costs (utime + stime from /proc, over the measured load): the server's,
# and for PostgreSQL on this machine its server processes serving the benchmark's database too ("+ N pg") — a
# figure that other load on a shared machine moves far less than req/s.
#
# PostgreSQL is measured when OFFER_SIGNER_BENCH_DATABASE_URL names a database the run may fill (each run adds
# its ~100,000 signatures to issued_signatures): a throw-away one, such as the server scripts/start-postgres.sh
# starts (export OFFER_SIGNER_BENCH_DATABASE_URL=postgres://offersigner:offersigner@127.0.0.1:54329/offersigner).
# Linux only (/proc). Needs wrk, curl, openssl, python3. Release build, as compare.sh.
set -eu
dur=${1:-10}; conns=${2:-32}; rounds=${3:-1}
cd "$(dirname "$0")/../.."
. Benchmarks/Signing/bench-setup.sh

# Start-up to ready: from exec to the first 200 of /readyz (store opened and migrated, keys loaded); median of 5.
startup() {
  python3 - "$bin" "$1" "$port" <<'PY'
import os, subprocess, sys, time, urllib.request
binary, url, port = sys.argv[1:4]
env = dict(os.environ, OFFER_SIGNER_DATABASE_URL=url)  # the rest is exported by bench-setup.sh
times = []
for _ in range(5):
    t0 = time.monotonic()
    p = subprocess.Popen([binary, 'serve'], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{port}/readyz', timeout=1) as r:
                if r.status == 200: break
        except Exception:
            if p.poll() is not None: sys.exit('the server exited during start-up')
            if time.monotonic() - t0 > 30: p.kill(); sys.exit('the server was not ready within 30 s')
            time.sleep(0.002)
    times.append((time.monotonic() - t0) * 1000)
    p.terminate(); p.wait()
print('%.0f ms' % sorted(times)[2])
PY
}

tick=$(getconf CLK_TCK)
# utime + stime of processes, in clock ticks (0 for none); read after the ")" that ends the name.
ticks() { local t=0 p; for p in "$@"; do [ -r "/proc/$p/stat" ] && t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}'))); done; echo "$t"; }

run() {  # name, database URL
  local ready; ready=$(startup "$2")
  OFFER_SIGNER_DATABASE_URL="$2" "$bin" serve >"$work/$1.log" 2>&1 &
  local pid=$!
  wait_up
  kill -0 "$pid" 2>/dev/null || { echo "$1: the server exited:" >&2; tail -5 "$work/$1.log" >&2; return 1; }
  load -d2s >/dev/null  # warm-up
  # PostgreSQL's processes for the benchmark's database (their titles name it; none for a server elsewhere).
  local pg=""
  case $2 in postgres*) local db=${2##*/}; pg=$(pgrep -f "^postgres: [^ ]+ ${db%%\?*} " | tr '\n' ' ') ;; esac
  local before pgbefore; before=$(ticks "$pid"); pgbefore=$(ticks $pg)
  local t0; t0=$(date +%s.%N)
  load -d"${dur}s" --latency >"$work/$1.txt"
  local cpu; cpu=$(python3 -c "
import sys; t = float(sys.argv[1]) - float(sys.argv[2]); rps = float(sys.argv[3]); tick = float(sys.argv[4])
server, pg = (float(sys.argv[5]) - float(sys.argv[6])) / tick / t, (float(sys.argv[7]) - float(sys.argv[8])) / tick / t
print('%.0f us' % (server / rps * 1e6) + (' + %.0f pg' % (pg / rps * 1e6) if sys.argv[9] else ''))" \
    "$(date +%s.%N)" "$t0" "$(awk '/Requests\/sec/{print $2}' "$work/$1.txt")" "$tick" "$(ticks "$pid")" "$before" "$(ticks $pg)" "$pgbefore" "$pg")
  local peak; peak=$(awk '/VmHWM/{printf "%.0f MiB", $2/1024}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  awk -v s="$1" '/Requests\/sec/{print s, $2}' "$work/$1.txt" >>"$work/rates.txt"
  printf '%-14s %7s req/s   p50 %7s   p99 %7s   non-2xx %s   socket errors %s   peak RSS %-8s  start-up to ready %-6s  CPU a request %s\n' "$1" \
    "$(awk '/Requests\/sec/{print int($2)}' "$work/$1.txt")" "$(awk '$1=="50%"{print $2}' "$work/$1.txt")" \
    "$(awk '$1=="99%"{print $2}' "$work/$1.txt")" "$(awk '/Non-2xx/{n=$NF} END{print n+0}' "$work/$1.txt")" \
    "$(awk -F'[ ,]+' '/Socket errors/{e=$5+$7+$9+$11} END{print e+0}' "$work/$1.txt")" "$peak" "$ready" "$cpu"
}

for round in $(seq "$rounds"); do
  [ "$rounds" -gt 1 ] && echo "round $round (load average $(cut -d' ' -f1 /proc/loadavg))"
  run sqlite-file "sqlite:$work/store.sqlite"
  if [ -n "${OFFER_SIGNER_BENCH_DATABASE_URL:-}" ]; then
    run postgresql "$OFFER_SIGNER_BENCH_DATABASE_URL"
  else
    echo "postgresql     (not measured: set OFFER_SIGNER_BENCH_DATABASE_URL to a throw-away database; see the top of this script)"
  fi
  run sqlite-memory "sqlite::memory:"
done
if [ -n "${OFFER_SIGNER_BENCH_DATABASE_URL:-}" ]; then
  awk '$1 == "sqlite-file" { f[++n] = $2; tf += $2 } $1 == "postgresql" { p[++m] = $2; tp += $2 }
    END { line = ""; for (i = 1; i <= m; i++) line = line (i > 1 ? ", " : "") sprintf("%.2f", p[i] / f[i])
          printf "postgresql / sqlite-file req/s: %.2f (per round: %s)\n", tp / tf, line }' "$work/rates.txt"
fi
