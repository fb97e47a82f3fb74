#!/usr/bin/env bash
# The fuzz campaign: builds the libFuzzer targets (Fuzz/OfferSignerFuzz, added to the package only with
# OFFER_SIGNER_FUZZ=1) with -sanitize=fuzzer, then runs each for a bounded time from its seed corpus
# (Fuzz/corpus/<target>). Exits non-zero if any target crashes, traps, leaks past the RSS limit or hangs on one
# input; the input that did it is saved for a regression test (docs/fuzzing.md).
#
#   IntegrationTests/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 30 (CI); TARGET defaults to all of them: jws legacy pem policy signed-data json.
# Crash inputs go to FUZZ_CRASH_DIR/<target>/ (default .build-fuzz/crashes); the corpus each run grows is kept in
# .build-fuzz/corpus/<target>/ and reused by the next run. Extra libFuzzer flags: FUZZ_FLAGS (for example
# "-fork=2" to use two cores, or "-max_len=16384").
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(jws legacy pem policy signed-data json)
scratch=.build-fuzz
crash_root=${FUZZ_CRASH_DIR:-$scratch/crashes}

build=(swift build --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library --product offer-signer-fuzz)
started=$(date +%s)
OFFER_SIGNER_FUZZ=1 "${build[@]}"
binary="$(OFFER_SIGNER_FUZZ=1 "${build[@]}" --show-bin-path)/offer-signer-fuzz"
echo "fuzz: built $binary in $(( $(date +%s) - started )) s"

failed=()
for target in "${targets[@]}"; do
  seeds=Fuzz/corpus/$target
  [ -d "$seeds" ] || { echo "fuzz: no seed corpus $seeds" >&2; exit 2; }
  corpus=$scratch/corpus/$target
  crashes=$crash_root/$target
  mkdir -p "$corpus" "$crashes"
  echo "--- fuzz $target for ${seconds}s"
  status=0
  # -timeout: one input taking longer is a hang (a finding); -rss_limit_mb: a leak or a blow-up is one too.
  log=$scratch/fuzz-$target.log
  # shellcheck disable=SC2086
  FUZZ_TARGET=$target "$binary" "$corpus" "$seeds" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$crashes/" ${FUZZ_FLAGS:-} >"$log" 2>&1 || status=$?
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::number_of_executed_units|^stat::peak_rss_mb|ERROR|SUMMARY|Test unit written|deadly signal|Fatal error' "$log" || true
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $target FAILED (exit $status); inputs in $crashes:" >&2
    ls -l "$crashes" >&2 || true
    failed+=("$target")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]}; turn each input into a regression test (docs/fuzzing.md)" >&2
  exit 1
fi
echo "fuzz: ${targets[*]}: no crash in ${seconds}s each"
