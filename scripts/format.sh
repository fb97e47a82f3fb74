#!/usr/bin/env bash
# The Swift sources in the project's format (.swift-format: Hummingbird's, 150-character lines): `swift format`, then
# the comments it leaves over 150 characters rewrapped (scripts/reflow-comments.py; swift format breaks code, never a
# comment). Lines it cannot break either (a long string literal) are counted at the end; split them by hand.
#
#   scripts/format.sh          # rewrites the files in place
#   scripts/format.sh --lint   # writes nothing; exit status 1 on any finding (IntegrationTests/run.sh runs this in CI)
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Package.swift Sources Tests Fuzz Benchmarks)
case ${1:-} in
  --lint)
    status=0
    swift format lint --strict --parallel --recursive "${paths[@]}" || status=1
    python3 scripts/reflow-comments.py --check "${paths[@]}" || status=1
    exit "$status"
    ;;
  "")
    swift format format --in-place --parallel --recursive "${paths[@]}"
    python3 scripts/reflow-comments.py "${paths[@]}"
    ;;
  *) echo "usage: scripts/format.sh [--lint]" >&2; exit 64 ;;
esac
