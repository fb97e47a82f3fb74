#!/usr/bin/env bash
# The project's test command: the Swift Testing suite, then the interoperability checks against
# implementations that are not ours (Apple's Python library, `cryptography`, the openssl command line, Chromium).
#
#   scripts/test.sh
#
# PostgreSQL tests (and scripts/replica-check.py, two processes on one database) run when
# OFFER_SIGNER_TEST_DATABASE_URL is set (`.ci/run` starts a server and sets it).
#
# Every step runs, whatever the steps before it did, except after a failed `swift build`: the others need its
# binary. The failed steps are listed at the end, and the exit status is then 1.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
failed_logs=()
steps=0
# Runs one step (its name, then the command); a failure is noted, and the next step runs.
step() {
  local name=$1 start=$SECONDS status
  shift
  steps=$((steps + 1))
  echo "--- $name"
  local log=${TMPDIR:-/tmp}/offer-signer-step.$$.$steps.log
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    failed+=("$name: exit $status after $((SECONDS - start)) s")
    failed_logs+=("$name|$log")
    echo "--- $name failed (exit $status); the other steps still run" >&2
  fi
  return 0
}

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
  MigrationWaitTests RotationUnderLoadTests StoreCloseTests ConcurrencyTests CustomerTransactionTests)
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

venv=${OFFER_SIGNER_VENV:-.venv}
python_packages() {
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || return
  "$venv/bin/python" -c 'import cryptography, appstoreserverlibrary, openapi_spec_validator, yaml, selenium, opentelemetry.proto' 2>/dev/null \
    || "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/requirements-interop.txt -r scripts/requirements-console.txt \
      -r scripts/requirements-traces.txt
}
step "the Python checks' virtualenv ($venv)" python_packages
step "interop.py" "$venv/bin/python" scripts/interop.py "$bin"
step "readme-check.py" "$venv/bin/python" scripts/readme-check.py "$bin"
# The console in Debian's Chromium against `serve --demo` (docs/console.md); a screenshot of every page in
# .build/console-check (or OFFER_SIGNER_CONSOLE_SCREENSHOTS).
step "console-check.py" "$venv/bin/python" scripts/console-check.py "${OFFER_SIGNER_CONSOLE_SCREENSHOTS:-.build/console-check}" --binary "$bin"
step "runbook-check.sh" scripts/runbook-check.sh "$bin"
step "config-check.py" python3 scripts/config-check.py "$bin"
step "kill-check.py" python3 scripts/kill-check.py "$bin"
step "connection-check.py" python3 scripts/connection-check.py "$bin"
step "replica-check.py" python3 scripts/replica-check.py "$bin"
step "observability-check.py" python3 scripts/observability-check.py "$bin"
step "trace-check.py" "$venv/bin/python" scripts/trace-check.py "$bin"
step "edge-check.py" "$venv/bin/python" scripts/edge-check.py "$bin"
# The fuzzing and schema campaign (docs/fuzzing.md), bounded for CI: schemathesis against a live `serve --demo`
# (a few minutes), then each libFuzzer target for OFFER_SIGNER_FUZZ_SECONDS (default 30) after its own build.
step "schema-check.sh" scripts/schema-check.sh "$bin"
step "fuzz.sh" scripts/fuzz.sh "${OFFER_SIGNER_FUZZ_SECONDS:-30}"

if [ ${#failed[@]} -gt 0 ]; then
  echo "=== ${#failed[@]} of $steps steps failed (after the build):" >&2
  printf '  %s\n' "${failed[@]}" >&2
  # Without the terminal's colours (Swift Testing writes them when TERM says it may).
  failures=$(cat "${test_logs[@]}" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' | grep '^✘ Test .* recorded an issue' | cut -c1-600 | head -40)
  if [ -n "$failures" ]; then
    echo "=== the Swift tests that failed (the whole output: ${test_logs[*]}):" >&2
    echo "$failures" >&2
  fi
  # The end of each failed step's output (the Swift suites' failures are named above).
  for entry in "${failed_logs[@]}"; do
    name=${entry%%|*} log=${entry#*|}
    case $name in "swift test"*)
      if grep -q '^--- swift test did not finish within' "$log"; then
        echo "=== $name did not finish; the tests that started and never ended:" >&2
        unfinished "$log" >&2
        continue
      fi
      # Failures named above; a run that ended without any (a crash, a signal) shows its end below.
      sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -q '^✘ Test .* recorded an issue' && continue
      ;;
    esac
    echo "=== the end of $name's output ($log):" >&2
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -v '^$' | tail -n 12 | cut -c1-400 >&2
  done
  exit 1
fi
echo "=== all $steps steps passed (after the build), in $SECONDS s"
