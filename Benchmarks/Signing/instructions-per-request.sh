#!/bin/bash
# Instructions per signing request, by layer: the release server under valgrind's callgrind (configured as
# Benchmarks/Signing/compare.sh starts it: a SQLite file log, an API key required, JSON access lines to a file), warmed up,
# then exactly N requests of compare.sh (Benchmarks/Signing/fixed-requests.py, C keep-alive connections at once); the
# instructions counted over those N requests only, divided by N, grouped by layer from callgrind_annotate's
# inclusive costs (Benchmarks/Signing/instructions-layers.py), with malloc and free calls per request. Instruction counts
# hold on a busy machine where timings do not (docs/PERFORMANCE.md, "Instructions per request by layer").
#
# callgrind counts user-space instructions only: the kernel's share (socket reads and writes, fsync, epoll,
# getrandom) is not in them; the system calls per request are counted apart with strace when STRACE=1.
#
#   Benchmarks/Signing/instructions-per-request.sh [requests, 2000] [connections, 16]
#   OFFER_SIGNER_BIN=.build/release/offer-signer Benchmarks/Signing/instructions-per-request.sh 2000 16
#   KEEP=dir Benchmarks/Signing/instructions-per-request.sh …   (keeps callgrind.out and the annotation in dir)
#
# Under valgrind BoringSSL sees a CPU without ADX/BMI2 and takes its generic P-256 code (the *_nohw functions), so
# the two ECDSA rows count more instructions than the same work natively; the other rows are the code as it runs.
#
# Linux only. Needs valgrind (apt-get install -y valgrind), objcopy and cc (binutils, gcc), curl, openssl, python3;
# strace for STRACE=1.
set -eu
requests=${1:-2000}; conns=${2:-16}
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 2; }
. Benchmarks/Signing/bench-setup.sh
server=
cleanup() {
  [ -n "$server" ] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }
  rm -rf "$work"
}
trap cleanup EXIT

sign_up() {  # until the sign route answers (slow under valgrind: a minute or more to start)
  for _ in $(seq 1200); do
    kill -0 "$server" 2>/dev/null || { echo "the server stopped under valgrind:" >&2; tail -20 "$work/server.log" >&2; exit 1; }
    curl -s -o /dev/null -X POST "http://127.0.0.1:$port/v1/offers/sign" && return; sleep 0.25; done
  echo "the server did not answer within 5 minutes" >&2; exit 1
}

# valgrind 3.19 cannot read the DWARF 5 debug information Swift 6 writes (it gives up on the binary): a copy
# without it keeps the symbol table, which is all callgrind needs for function names.
objcopy --strip-debug "$bin" "$work/offer-signer"
# Swift's async main parks the main thread in libdispatch's sigsuspend on a read-only signal mask, which valgrind
# writes to (its own signals) and crashes on; this shim hands sigsuspend a copy of the mask.
cat >"$work/sigsuspend.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return (int)syscall(SYS_rt_sigsuspend, &copy, 8); }
C
cc -shared -fPIC -O2 -o "$work/sigsuspend.so" "$work/sigsuspend.c"

# Instrumentation starts off (start-up in valgrind is slow enough), is switched on for the warm-up (the first
# requests fill caches and metric series), and the counters are zeroed before the N requests are sent.
LD_PRELOAD="$work/sigsuspend.so" OFFER_SIGNER_DATABASE_URL="sqlite:$work/store.sqlite" valgrind --tool=callgrind \
  --instr-atstart=no --callgrind-out-file="$work/callgrind.out" "$work/offer-signer" serve >"$work/server.log" 2>&1 &
server=$!
sign_up
callgrind_control -i on "$server" >/dev/null
python3 Benchmarks/Signing/fixed-requests.py "$port" 200 "$conns" >/dev/null
callgrind_control -z "$server" >/dev/null
python3 Benchmarks/Signing/fixed-requests.py "$port" "$requests" "$conns"
callgrind_control -d "$server" >/dev/null
kill "$server"; wait "$server" 2>/dev/null || true; server=
dump=$work/callgrind.out.1  # the dump asked for after the N requests (callgrind.out itself: what followed, to exit)
callgrind_annotate --inclusive=yes --threshold=100 "$dump" >"$work/inclusive.txt"
callgrind_annotate --inclusive=no --threshold=100 "$dump" >"$work/self.txt"
python3 Benchmarks/Signing/instructions-layers.py "$dump" "$work/inclusive.txt" "$work/self.txt" "$requests"
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$dump" "$KEEP/callgrind.out"; cp "$work/inclusive.txt" "$work/self.txt" "$KEEP/"; fi

if [ "${STRACE:-0}" = 1 ] && command -v strace >/dev/null; then
  # System calls per request, every thread, over the same N requests (strace's own counts).
  OFFER_SIGNER_DATABASE_URL="sqlite:$work/store2.sqlite" "$bin" serve >"$work/server2.log" 2>&1 &
  server=$!
  wait_up
  python3 Benchmarks/Signing/fixed-requests.py "$port" 200 "$conns" >/dev/null
  strace -c -f -p "$server" -o "$work/strace.txt" & tracer=$!
  sleep 1
  python3 Benchmarks/Signing/fixed-requests.py "$port" "$requests" "$conns" >/dev/null
  sleep 0.5; kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
  kill "$server"; wait "$server" 2>/dev/null || true; server=
  echo
  echo "system calls per request (strace -c -f, $requests requests):"
  awk -v n="$requests" 'NR > 2 && $0 !~ /^-/ && $4 / n >= 0.01 { printf "  %-16s %6.2f\n", $NF, $4 / n }' "$work/strace.txt"
fi
