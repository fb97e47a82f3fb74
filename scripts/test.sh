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
steps=0
# Runs one step (its name, then the command); a failure is noted, and the next step runs.
step() {
  local name=$1 start=$SECONDS status
  shift
  steps=$((steps + 1))
  echo "--- $name"
  "$@"
  status=$?
  if [ "$status" -ne 0 ]; then
    failed+=("$name: exit $status after $((SECONDS - start)) s")
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

# The suite's output is kept, so that the tests which failed can be named again at the end, where CI shows it.
test_log=${TMPDIR:-/tmp}/offer-signer-swift-test.$$.log
# Bounded (OFFER_SIGNER_TEST_TIMEOUT seconds, default 1800; the suite takes 2-5 minutes on 2 cores), so that a test
# that never returns fails this step instead of taking CI's whole time, and the checks after it still run.
swift_test() {
  local limit=${OFFER_SIGNER_TEST_TIMEOUT:-1800}
  timeout -k 10 "$limit" swift test 2>&1 | tee "$test_log"
  local status=${PIPESTATUS[0]}
  [ "$status" -eq 124 ] || [ "$status" -eq 137 ] && echo "--- swift test did not finish within $limit s" >&2
  return "$status"
}
step "swift test" swift_test

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
  failures=$(sed 's/\x1b\[[0-9;]*m//g' "$test_log" 2>/dev/null | grep '^✘ Test .* recorded an issue' | cut -c1-600 | head -40)
  if [ -n "$failures" ]; then
    echo "=== the Swift tests that failed (the whole output: $test_log):" >&2
    echo "$failures" >&2
  fi
  exit 1
fi
echo "=== all $steps steps passed (after the build), in $SECONDS s"
