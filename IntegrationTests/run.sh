#!/usr/bin/env bash
# The checks CI runs after the Swift suites, against real processes and implementations that are not ours (Apple's
# Python library, `cryptography`, the openssl command line, Chromium, Prometheus, schemathesis, libFuzzer), and the
# format lint. scripts/test.sh sources this file for `step`, `report` and `integration_checks`; run alone, it runs the
# checks against a built binary:
#
#   IntegrationTests/run.sh [path/to/offer-signer]      # default: the debug build (`swift build` first)
#
# Every step runs, whatever the steps before it did; the failed ones are listed at the end with the last lines of their
# output, and the exit status is then 1. IntegrationTests/replica-check.py (two processes on one database) runs when
# OFFER_SIGNER_TEST_DATABASE_URL is set (`eval "$(scripts/start-postgres.sh)"`).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

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

# The end of the run: the failed steps and, for each, what went wrong — `explain_failure NAME LOG` when the caller
# defines it and it says so (scripts/test.sh names the failed Swift tests), else the last lines of the step's output.
# Exits 1 when a step failed.
report() {
  if [ ${#failed[@]} -eq 0 ]; then
    echo "=== all $steps steps passed (after the build), in $SECONDS s"
    return 0
  fi
  echo "=== ${#failed[@]} of $steps steps failed (after the build):" >&2
  printf '  %s\n' "${failed[@]}" >&2
  local entry name log
  for entry in "${failed_logs[@]}"; do
    name=${entry%%|*} log=${entry#*|}
    if declare -F explain_failure >/dev/null && explain_failure "$name" "$log" >&2; then
      continue
    fi
    # The checks print each failed assertion as a line starting FAIL: those first, wherever they are in the output.
    if grep -q '^FAIL' "$log"; then
      echo "=== $name's failed checks:" >&2
      grep '^FAIL' "$log" | head -n 20 | cut -c1-400 >&2
    fi
    echo "=== the end of $name's output ($log):" >&2
    # Without the terminal's colours (Swift Testing writes them when TERM says it may).
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -v '^$' | tail -n 12 | cut -c1-400 >&2
  done
  exit 1
}

venv=${OFFER_SIGNER_VENV:-.venv}
python_packages() {
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || return
  "$venv/bin/python" -c 'import cryptography, appstoreserverlibrary, openapi_spec_validator, yaml, selenium, opentelemetry.proto' 2>/dev/null \
    || "$venv/bin/pip" install --quiet --disable-pip-version-check -r IntegrationTests/requirements-interop.txt \
      -r IntegrationTests/requirements-console.txt -r IntegrationTests/requirements-traces.txt
}

# The checks, each a step, against the binary given.
integration_checks() {
  local bin=$1
  # .swift-format (Hummingbird's, 150-character lines) and the comments swift format does not wrap.
  step "format lint (scripts/format.sh --lint)" scripts/format.sh --lint
  step "the Python checks' virtualenv ($venv)" python_packages
  step "interop.py" "$venv/bin/python" IntegrationTests/interop.py "$bin"
  step "readme-check.py" "$venv/bin/python" IntegrationTests/readme-check.py "$bin"
  # The console in Debian's Chromium against `serve --demo` (docs/console.md); a screenshot of every page in
  # .build/console-check (or OFFER_SIGNER_CONSOLE_SCREENSHOTS).
  step "console-check.py" "$venv/bin/python" IntegrationTests/console-check.py "${OFFER_SIGNER_CONSOLE_SCREENSHOTS:-.build/console-check}" \
    --binary "$bin"
  step "runbook-check.sh" IntegrationTests/runbook-check.sh "$bin"
  step "config-check.py" python3 IntegrationTests/config-check.py "$bin"
  step "kill-check.py" python3 IntegrationTests/kill-check.py "$bin"
  step "connection-check.py" python3 IntegrationTests/connection-check.py "$bin"
  step "replica-check.py" python3 IntegrationTests/replica-check.py "$bin"
  step "observability-check.py" python3 IntegrationTests/observability-check.py "$bin"
  step "trace-check.py" "$venv/bin/python" IntegrationTests/trace-check.py "$bin"
  step "edge-check.py" "$venv/bin/python" IntegrationTests/edge-check.py "$bin"
  # The fuzzing and schema campaign (docs/fuzzing.md), bounded for CI: schemathesis against a live `serve --demo`
  # (a few minutes), then each libFuzzer target for OFFER_SIGNER_FUZZ_SECONDS (default 30) after its own build.
  step "schema-check.sh" IntegrationTests/schema-check.sh "$bin"
  step "fuzz.sh" IntegrationTests/fuzz.sh "${OFFER_SIGNER_FUZZ_SECONDS:-30}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  bin=${1:-}
  if [ -z "$bin" ]; then
    swift build --product offer-signer || exit 1
    bin="$(swift build --show-bin-path)/offer-signer"
  fi
  integration_checks "$bin"
  report
fi
