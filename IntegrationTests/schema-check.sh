#!/usr/bin/env bash
# The schema campaign: schemathesis against a live `offer-signer serve --demo`, driven by the /openapi.yaml the
# server itself serves, over every route of the JSON API (the admin ones with a bearer token; the console's HTML
# pages, /console/*, are a browser's: ConsoleTests and IntegrationTests/console-check.py test them). Fails on any failure: a 5xx (the
# demo's declared 503s on App Store data excepted, see IntegrationTests/schemathesis.toml), a status, content type,
# header or body the document does not declare, or a request the document forbids that the server accepts.
#
#   IntegrationTests/schema-check.sh [path/to/offer-signer]
#
# The budget: SCHEMA_CHECK_MAX_EXAMPLES examples per operation (default 40) and SCHEMA_CHECK_MAX_TIME seconds
# for the whole run (default 150); raise both for a longer campaign (docs/fuzzing.md). SCHEMA_CHECK_SEED
# replays a run. The report (JUnit; SCHEMA_CHECK_REPORTS=junit,vcr adds a cassette of every request and response,
# tens of MB) and the server's log go to SCHEMA_CHECK_REPORT_DIR (default .build/schema-check).
set -euo pipefail
cd "$(dirname "$0")/.."

binary=${1:-$(swift build --show-bin-path)/offer-signer}
max_examples=${SCHEMA_CHECK_MAX_EXAMPLES:-40}
max_time=${SCHEMA_CHECK_MAX_TIME:-150}
report_dir=${SCHEMA_CHECK_REPORT_DIR:-.build/schema-check}
venv=${OFFER_SIGNER_VENV:-.venv}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pinned=$(sed -n 's/^schemathesis==//p' IntegrationTests/requirements-schema.txt)
"$venv/bin/python" -c "import sys, importlib.metadata as m; sys.exit(m.version('schemathesis') != '$pinned')" 2>/dev/null \
  || "$venv/bin/pip" install --quiet --disable-pip-version-check -r IntegrationTests/requirements-schema.txt
venv=$(cd "$venv" && pwd)

port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token="schema-check-$("$venv/bin/python" -c 'import secrets; print(secrets.token_hex(16))')"
mkdir -p "$report_dir"
log="$report_dir/server.log"

OFFER_SIGNER_HOST=127.0.0.1 OFFER_SIGNER_PORT=$port OFFER_SIGNER_ADMIN_TOKENS="schema-check:$token" LOG_LEVEL=warning \
  "$binary" serve --demo >"$log" 2>&1 &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
}
trap cleanup EXIT

base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "schema-check: the server did not start:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.1
done

# In CI the gate is reproducible: a fixed seed (the cases of a run that passed; a failure reproduces exactly).
# Elsewhere every run draws new cases; set SCHEMA_CHECK_SEED to replay one.
if [ -z "${SCHEMA_CHECK_SEED:-}" ] && [ "${CI:-}" = true ]; then SCHEMA_CHECK_SEED=285783006106030689238739827983071313273; fi
seed_option=()
[ -n "${SCHEMA_CHECK_SEED:-}" ] && seed_option=(--seed "$SCHEMA_CHECK_SEED")

started=$(date +%s)
status=0
# One worker: hypothesis's lambda descriptions are not thread-safe on CPython 3.11 ("AST constructor recursion
# depth mismatch" with two). Run from the report folder, where schemathesis keeps its cache (.schemathesis/).
root=$(pwd)
(cd "$report_dir" && "$venv/bin/st" --no-color --config-file "$root/IntegrationTests/schemathesis.toml" run "$base/openapi.yaml" \
  --header "Authorization: Bearer $token" \
  --phases examples,coverage,fuzzing \
  --exclude-path-regex '^/console' \
  --max-examples "$max_examples" --max-time "$max_time" --workers 1 \
  --request-timeout 10 \
  --report "${SCHEMA_CHECK_REPORTS:-junit}" --report-dir . \
  "${seed_option[@]}") || status=$?
echo "schema-check: schemathesis finished in $(( $(date +%s) - started )) s with status $status (report in $report_dir)"

# The server must have survived the campaign, and answer.
if ! kill -0 "$server" 2>/dev/null || ! curl -fsS "$base/healthz" >/dev/null; then
  echo "schema-check: the server died or stopped answering during the campaign; its log:" >&2
  tail -50 "$log" >&2
  exit 1
fi
exit "$status"
