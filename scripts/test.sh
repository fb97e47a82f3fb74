#!/usr/bin/env bash
# The project's test command: the Swift Testing suite, then the interoperability checks against
# implementations that are not ours (Apple's Python library, `cryptography`, the openssl command line, Chromium).
#
#   scripts/test.sh
#
# PostgreSQL tests (and scripts/replica-check.py, two processes on one database) run when
# OFFER_SIGNER_TEST_DATABASE_URL is set (`.ci/run` starts a server and sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --build-tests
swift test

venv=${OFFER_SIGNER_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import cryptography, appstoreserverlibrary, openapi_spec_validator, yaml, selenium' 2>/dev/null \
  || "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/requirements-interop.txt -r scripts/requirements-console.txt
"$venv/bin/python" scripts/interop.py "$(swift build --show-bin-path)/offer-signer"
"$venv/bin/python" scripts/readme-check.py "$(swift build --show-bin-path)/offer-signer"
# The console in Debian's Chromium against `serve --demo` (docs/console.md); a screenshot of every page in
# .build/console-check (or OFFER_SIGNER_CONSOLE_SCREENSHOTS).
"$venv/bin/python" scripts/console-check.py "${OFFER_SIGNER_CONSOLE_SCREENSHOTS:-.build/console-check}" --binary "$(swift build --show-bin-path)/offer-signer"
scripts/runbook-check.sh "$(swift build --show-bin-path)/offer-signer"
python3 scripts/config-check.py "$(swift build --show-bin-path)/offer-signer"
python3 scripts/kill-check.py "$(swift build --show-bin-path)/offer-signer"
python3 scripts/connection-check.py "$(swift build --show-bin-path)/offer-signer"
python3 scripts/replica-check.py "$(swift build --show-bin-path)/offer-signer"
python3 scripts/observability-check.py "$(swift build --show-bin-path)/offer-signer"
"$venv/bin/python" scripts/edge-check.py "$(swift build --show-bin-path)/offer-signer"
# The fuzzing and schema campaign (docs/fuzzing.md), bounded for CI: schemathesis against a live `serve --demo`
# (a few minutes), then each libFuzzer target for OFFER_SIGNER_FUZZ_SECONDS (default 30) after its own build.
scripts/schema-check.sh "$(swift build --show-bin-path)/offer-signer"
scripts/fuzz.sh "${OFFER_SIGNER_FUZZ_SECONDS:-30}"
