#!/usr/bin/env bash
# Apple's Retention Messaging performance test, played locally (docs/retention.md, docs/PERFORMANCE.md):
#
#   Benchmarks/Retention/retention-perf.sh [REQUESTS=2000] [CONCURRENCY=32] [DATABASE_URL] [MODE=apple|mix]
#
# Builds the release binary, starts it with a policy that has retention entries and a test App Store chain,
# sends REQUESTS signed real-time requests at CONCURRENCY, and prints p50/p90/p95/p99 and the success rate.
# Exit status 1 unless every request succeeded within Apple's 700 ms.
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release --scratch-path .build-release --product offer-signer >/dev/null
venv=${OFFER_SIGNER_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import cryptography, jwt' 2>/dev/null \
  || "$venv/bin/pip" install --quiet --disable-pip-version-check -r IntegrationTests/requirements-interop.txt
exec "$venv/bin/python" Benchmarks/Retention/retention-perf.py "$(swift build -c release --scratch-path .build-release --show-bin-path)/offer-signer" \
  "${1:-2000}" "${2:-32}" "${3:-}" "${4:-apple}"
