#!/bin/bash
# How long each of the server's busy threads waits for a core each time it wakes, under load: the release build
# (or OFFER_SIGNER_BIN) serving compare.sh's sign request from a SQLite file, wrk at 32 connections, LOAD busy-loop
# processes beside it (default 1, as compare-loaded.sh; LOAD=0 for none). Per thread, from
# /proc/<pid>/task/<tid>/schedstat before and after the load: time running, time runnable but waiting for a core,
# wake-ups (times scheduled in), and the wait per wake-up. The event loops are NIO-SGLTN-…; the group commit's log
# writer runs on a dispatch queue (a thread named …qos.overcommit). docs/PERFORMANCE.md, "A shared machine".
#
#   Benchmarks/Signing/thread-waits.sh [seconds, 10] [connections, 32]
#   LOAD=0 OFFER_SIGNER_BIN=/path/to/offer-signer Benchmarks/Signing/thread-waits.sh 10 32
#
# Linux only (/proc, schedstat). Needs wrk, curl, openssl, python3.
set -eu
cd "$(dirname "$0")/../.."
dur=${1:-10}; conns=${2:-32}; load_processes=${LOAD:-1}
. Benchmarks/Signing/bench-setup.sh
OFFER_SIGNER_DATABASE_URL="sqlite:$work/store.sqlite" "$bin" serve >"$work/offer-signer.log" 2>&1 &
server=$!
loaders=()
trap 'kill "$server" "${loaders[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
wait_up
load -t1 -d2s >/dev/null  # warm-up, not counted
for _ in $(seq "$load_processes"); do python3 -c 'while True: pass' & loaders+=($!); done
snapshot() { for t in /proc/"$server"/task/*; do echo "$(basename "$t") $(tr ' ' _ <"$t/comm") $(cat "$t/schedstat")"; done; }
snapshot >"$work/before"
load -d"${dur}s" --latency >"$work/wrk.txt"
snapshot >"$work/after"
echo "$dur s, $conns connections, $load_processes busy-loop process(es) beside, $(nproc) cores"
awk '/Requests\/sec/ { print "req/s " $2 } / 50%/ { print "p50 " $2 } / 99%/ { print "p99 " $2 }' "$work/wrk.txt" | paste -sd' '
python3 - "$work/before" "$work/after" <<'PY'
import sys
before = {line.split()[0]: line.split() for line in open(sys.argv[1])}
print("| thread | running | waiting for a core | wake-ups | wait per wake-up |")
print("|---|---|---|---|---|")
for line in open(sys.argv[2]):
    tid, name, run, wait, slices = line.split()
    if tid not in before:
        continue
    run = (int(run) - int(before[tid][2])) / 1e6
    wait = (int(wait) - int(before[tid][3])) / 1e6
    slices = int(slices) - int(before[tid][4])
    if run < 50:  # threads that barely ran (start-up, the shared pool when idle)
        continue
    print("| %s | %.0f ms | %.0f ms | %d | %.0f µs |" % (name, run, wait, slices, 1000 * wait / max(slices, 1)))
PY
