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
max_long_lines=0  # lines over 150 characters allowed in Sources and Tests (--lint fails above)
case ${1:-} in
  --lint)
    status=0
    swift format lint --strict --parallel --recursive "${paths[@]}" || status=1
    python3 scripts/reflow-comments.py --check "${paths[@]}" || status=1
    # Lines over 150 characters in Sources and Tests: swift format breaks code, never a string literal, so a long
    # literal is split by hand (a multi-line literal with `\` line continuations keeps its bytes). At most
    # $max_long_lines may remain.
    python3 - "$max_long_lines" Sources Tests <<'PY' || status=1
import pathlib, sys
limit, roots = int(sys.argv[1]), sys.argv[2:]
long = [f"{path}:{number}" for root in roots for path in sorted(pathlib.Path(root).rglob("*.swift"))
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if len(line) > 150]
if len(long) > limit:
    print("\n".join(long))
    sys.exit(f"{len(long)} lines over 150 characters in Sources and Tests (at most {limit}): split the literals above")
PY
    exit "$status"
    ;;
  "")
    swift format format --in-place --parallel --recursive "${paths[@]}"
    python3 scripts/reflow-comments.py "${paths[@]}"
    ;;
  *) echo "usage: scripts/format.sh [--lint]" >&2; exit 64 ;;
esac
