#!/usr/bin/env bash
# The project's test command: the Swift Testing suite, then the checks of IntegrationTests/run.sh (the format lint,
# and live checks against implementations that are not ours: Apple's Python library, `cryptography`, the openssl
# command line, Chromium, Prometheus, schemathesis, libFuzzer).
#
#   scripts/test.sh
#
# PostgreSQL tests (and IntegrationTests/replica-check.py, two processes on one database) run when
# OFFER_SIGNER_TEST_DATABASE_URL is set (`.ci/run` starts a server and sets it).
#
# Every step runs, whatever the steps before it did, except after a failed `swift build`: the others need its
# binary. The failed steps are listed at the end (IntegrationTests/run.sh's `report`), and the exit status is then 1.
set -uo pipefail
cd "$(dirname "$0")/.."

# `step`, `report` and `integration_checks`: one runner for every step after the build.
. IntegrationTests/run.sh

echo "--- swift build --build-tests"
if ! swift build --build-tests; then
  echo "=== swift build failed: no other step can run without its binaries" >&2
  exit 1
fi
bin="$(swift build --show-bin-path)/offer-signer"

# The suites whose assertions bound wall-clock time (a 503 within the store's timeout, a throttle's refill, Apple's
# deadline, a partial body's wait), or whose 64 requests at once each wait at most the store's timeout for their turn
# (the concurrency races): they run after the others, one test at a time, so that the rest of the suite — a few hundred
# tests at once on two cores — is not what they measure. Every other suite runs in parallel.
timed=(StoreOutageTests AppStoreFactsTests AppStoreConfigurationTests ClientAuthenticationTests
  AdminEdgeTests AppStoreServerAPIClientTests ResilienceTests RetentionMessagingClientTests RetentionTests
  AsyncGateTests DecisionLogRetryTests SQLiteFileLockTests EventLoopSigningTests HTTPConformanceTests
  MigrationWaitTests RotationUnderLoadTests StoreCloseTests ConcurrencyTests CustomerTransactionTests SharedLimitTests
  SharedAppStoreQuotaTests ClosedConnectionLeaseTests)
timed_suites="\\.($(IFS='|'; echo "${timed[*]}"))\\b"

# The suites' output is kept, so that the tests which failed (or never finished) can be named again at the end, where
# CI shows it.
test_logs=("${TMPDIR:-/tmp}/offer-signer-swift-test.$$.parallel.log" "${TMPDIR:-/tmp}/offer-signer-swift-test.$$.timed.log")
# Runs `swift test` with the given arguments (after the log file's path), bounded (OFFER_SIGNER_TEST_TIMEOUT seconds, default 1200; the whole
# suite takes 2-5 minutes on 2 cores), so that a test that never returns fails its step instead of taking CI's whole
# time — and is named — and the checks after it still run.
swift_test() {
  local limit=${OFFER_SIGNER_TEST_TIMEOUT:-1200} log=$1
  shift
  timeout -k 10 "$limit" swift test --skip-build "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "--- swift test did not finish within $limit s; the tests that started and never ended:" >&2
    unfinished "$log" >&2
  fi
  return "$status"
}
# The tests a log shows started but not ended (a parameterized test's cases are not ended one by one).
unfinished() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    /^◇ Test case passing / || /^◇ Test run started\.$/ { next }
    /^◇ Test .* started\.$/ { name = substr($0, length("◇ Test ") + 1); sub(/ started\.$/, "", name); open[name]++ }
    /^(✔|✘) Test .* (passed|failed) after / {
      rest = substr($0, length("✔ Test ") + 1)
      for (name in open) if (index(rest, name " ") == 1) { open[name]--; break }
    }
    END { n = 0; for (name in open) if (open[name] > 0) { print "  " name; n++ } if (n == 0) print "  (none: every test that started ended)" }'
}
step "swift test (in parallel)" swift_test "${test_logs[0]}" --skip "$timed_suites"
step "swift test (the timed suites, one test at a time)" swift_test "${test_logs[1]}" --no-parallel --filter "$timed_suites"

# A failed Swift pass is explained by its tests: those that failed, or those that never ended (a timed-out pass); a
# pass that ended without either (a crash, a signal) shows its last lines, as every other failed step does.
explain_failure() {
  local name=$1 log=$2 failures
  case $name in "swift test"*) ;; *) return 1 ;; esac
  if grep -q '^--- swift test did not finish within' "$log"; then
    echo "=== $name did not finish; the tests that started and never ended:"
    unfinished "$log"
    return 0
  fi
  failures=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep '^✘ Test .* recorded an issue' | cut -c1-600 | head -40)
  [ -n "$failures" ] || return 1
  echo "=== the Swift tests that failed in $name (the whole output: $log):"
  echo "$failures"
}

integration_checks "$bin"
report
