#!/bin/bash
# Benchmarks/Signing/compare.sh on a shared machine: the same servers, request, rounds and table, with a fixed CPU load running
# beside them for the whole comparison — LOAD busy-loop processes (default 1), each at nice LOAD_NICE (default 0,
# the servers' own priority), pinned to core LOAD_CPU when it is set (taskset). compare.sh loads the servers in
# alternating rounds, so every server meets the same load in every round; what this measures is how a server
# keeps its pace when another process competes for its cores (issue 26: a release build compiling beside the
# benchmark took OfferSigner from 0.88x to 0.58x Node). Prints compare.sh's table, the load's CPU over the run
# (it must be ~LOAD cores-worth of time, or the load was not fixed), and the ratio of OfferSigner's req/s to Node's.
#
#   Benchmarks/Signing/compare-loaded.sh [seconds per round, 10] [connections, 32] [rounds, 3]
#   LOAD=2 LOAD_NICE=0 LOAD_CPU=1 Benchmarks/Signing/compare-loaded.sh 10 32 4
#
# Everything compare.sh needs (OFFER_SIGNER_BIN, OFFER_SIGNER_BIN_B, wrk, node, the Python peer's .venv) applies.
set -eu
cd "$(dirname "$0")/../.."
load=${LOAD:-1}; nice_level=${LOAD_NICE:-0}; cpu=${LOAD_CPU:-}
out=$(mktemp)
loaders=()
stop_load() {
  local p; for p in "${loaders[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${loaders[@]}" 2>/dev/null || true
  rm -f "$out"
}
trap stop_load EXIT

# The release build first (compare.sh would build it too), so the load does not slow the build instead.
if [ -z "${OFFER_SIGNER_BIN:-}" ]; then
  build_log=$(mktemp)
  swift build -c release --scratch-path .build-release --product offer-signer >"$build_log" 2>&1 ||
    { cat "$build_log" >&2; rm -f "$build_log"; exit 1; }
  rm -f "$build_log"
  OFFER_SIGNER_BIN=$(swift build -c release --scratch-path .build-release --show-bin-path)/offer-signer
  export OFFER_SIGNER_BIN
fi

pin=(); [ -n "$cpu" ] && pin=(taskset -c "$cpu")
for _ in $(seq "$load"); do
  # A process that never sleeps and makes no system call: the same competitor in every round.
  "${pin[@]}" nice -n "$nice_level" python3 -c 'while True: pass' &
  loaders+=($!)
done
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}'))); done; echo "$t"; }
start=$(date +%s.%N); before=$(ticks "${loaders[@]}")
echo "fixed load: $load busy-loop process(es), nice $nice_level${cpu:+, pinned to core $cpu}"
Benchmarks/Signing/compare.sh "$@" | tee "$out"
after=$(ticks "${loaders[@]}"); end=$(date +%s.%N)

python3 - "$out" "$before" "$after" "$start" "$end" "$(getconf CLK_TCK)" "$load" <<'PY'
import re, sys
out, before, after, start, end, tick, load = sys.argv[1:]
cores = (int(after) - int(before)) / int(tick) / (float(end) - float(start))
print("the load used %.2f cores on average over the run (%s process(es) of one core each asked)" % (cores, load))
rows = {}
for line in open(out):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 7 and cells[0] not in ("server", "---"):
        rows[cells[0]] = cells
if "offer-signer" in rows:
    ratio = rows["offer-signer"][2].split()[0]
    cpu = lambda name: float(re.sub(r"[^0-9.]", "", rows[name][6]))
    print("under load: offer-signer / node = %s x req/s (issue 26 asks >= 0.85); CPU per request %s / %s = %.2f x" % (
        ratio, rows["offer-signer"][6], rows["node"][6], cpu("offer-signer") / cpu("node")))
PY
