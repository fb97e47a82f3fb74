#!/usr/bin/env bash
# Runs the steps of docs/key-rotation.md against a real `offer-signer serve`, as an admin would type them:
# a planned rotation (add a key file, reload with SIGHUP, activate, retire) and a leak (activate a new
# key, revoke the old one), then a restart to check that the states survived.
#
#   IntegrationTests/runbook-check.sh PATH/TO/offer-signer
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL $*"; exit 1; }
ok() { echo "ok   $*"; }

port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
export OFFER_SIGNER_URL=http://127.0.0.1:$port
export OFFER_SIGNER_ADMIN_TOKEN=$(openssl rand -hex 32)
mkdir -p "$work/keys"
"$bin" keys generate --output "$work/keys/SubscriptionKey_OLDKEY0001.p8"

start() {
  OFFER_SIGNER_PORT=$port OFFER_SIGNER_BUNDLE_ID=com.example.app OFFER_SIGNER_DATABASE_URL="sqlite:$work/store.sqlite" OFFER_SIGNER_KEYS_DIR="$work/keys" \
  OFFER_SIGNER_ADMIN_TOKENS="runbook:$OFFER_SIGNER_ADMIN_TOKEN" OFFER_SIGNER_CLIENT_AUTH=none OFFER_SIGNER_STATE_FILE="$work/key-states.json" \
    "$bin" serve --pid-file "$work/offer-signer.pid" >>"$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -fs "$OFFER_SIGNER_URL/readyz" >/dev/null && { [ "$(cat "$work/offer-signer.pid")" = "$pid" ] || fail "--pid-file holds $(cat "$work/offer-signer.pid"), not $pid"; return; }; sleep 0.1; done
  cat "$work/serve.log"; fail "the service did not become ready"
}
sign() {
  curl -fs -X POST "$OFFER_SIGNER_URL/v1/offers/sign" -H 'Content-Type: application/json' \
    -d '{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-0001"}' \
    | python3 -c 'import json,sys;print(json.load(sys.stdin)["keyIdentifier"])'
}
state() { "$bin" keys list | python3 -c "import json,sys;print(next(k['state'] for k in json.load(sys.stdin)['keys'] if k['keyIdentifier']=='$1'))"; }

start
[ "$(sign)" = OLDKEY0001 ] && ok "signing with OLDKEY0001"
curl -fs -X POST "$OFFER_SIGNER_URL/v1/offers/sign" -H 'Content-Type: application/json' \
  -d '{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-0002"}' >"$work/old-bundle.json"

# Planned rotation, step 1-2: put the new key file in the folder, reload with SIGHUP.
"$bin" keys generate --output "$work/keys/SubscriptionKey_NEWKEY0001.p8"
kill -HUP "$(cat "$work/offer-signer.pid")"   # the runbook's way: this process only, by its PID file
for _ in $(seq 50); do [ "$(state NEWKEY0001 2>/dev/null)" = retired ] && break; sleep 0.1; done
[ "$(state NEWKEY0001)" = retired ] && ok "SIGHUP loaded NEWKEY0001 (retired: verifies, does not sign yet)"
[ "$(sign)" = OLDKEY0001 ] && ok "still signing with OLDKEY0001"

# Step 3: activate the new key.
"$bin" keys activate NEWKEY0001 >/dev/null
[ "$(sign)" = NEWKEY0001 ] && ok "keys activate NEWKEY0001: new offers are signed with it"
[ "$(state OLDKEY0001)" = retired ] && ok "OLDKEY0001 is retired"

# A leak: revoke the old key.
"$bin" keys revoke OLDKEY0001 >/dev/null
[ "$(state OLDKEY0001)" = revoked ] && ok "keys revoke OLDKEY0001"
"$bin" keys revoke NEWKEY0001 >/dev/null 2>"$work/err" && fail "revoking the active key must be refused"
grep -q key_state_conflict "$work/err" && ok "revoking the active key is refused (activate another key first)"
"$bin" keys activate MISTYPED01 >/dev/null 2>"$work/err" && fail "activating a key that is not loaded must be refused"
grep -q unknown_key "$work/err" && grep -q "MISTYPED01 is loaded\|No key MISTYPED01" "$work/err" \
  && ok "a mistyped key: the service's own answer (unknown_key), not a wrong-port hint" || { cat "$work/err"; fail "a mistyped key's refusal"; }
started=$(date +%s)
status=0; OFFER_SIGNER_URL=http://127.0.0.1:1 "$bin" keys list >/dev/null 2>"$work/err" || status=$?
[ "$status" = 2 ] && [ $(( $(date +%s) - started )) -lt 6 ] && grep -q "connection refused" "$work/err" \
  && ok "no service at the URL: exit 2 at once, saying the connection was refused" || { cat "$work/err"; fail "an unreachable service (exit $status)"; }

# The offline command line applies the same saved states (the state file) as the server.
offline() { OFFER_SIGNER_KEYS_DIR="$work/keys" OFFER_SIGNER_STATE_FILE="$work/key-states.json" OFFER_SIGNER_BUNDLE_ID=com.example.app "$bin" "$@"; }
"$bin" verify --key-file "$work/keys/SubscriptionKey_OLDKEY0001.p8" "$work/old-bundle.json" >/dev/null \
  && ok "a bundle signed with OLDKEY0001 verifies with the key alone"
offline verify "$work/old-bundle.json" >"$work/verified" && fail "offline verify must refuse a bundle of the revoked key"
grep -q revoked "$work/verified" && ok "offline verify refuses a bundle of the revoked key OLDKEY0001, as the server would"
[ "$(offline sign --product-id com.example.monthly --offer-id winback_50 --username user-0003 | python3 -c 'import json,sys;print(json.load(sys.stdin)["keyIdentifier"])')" = NEWKEY0001 ] \
  && ok "offline sign uses NEWKEY0001, the key an admin activated"

# A bad file in the folder is rejected whole, the current keys keep serving.
echo garbage >"$work/keys/SubscriptionKey_BROKEN0001.p8"
"$bin" keys reload >/dev/null 2>"$work/err" && fail "a corrupt key file must fail the reload"
grep -q key_reload_failed "$work/err" && grep -q BROKEN0001 "$work/err" && ok "keys reload with a corrupt file: rejected, naming BROKEN0001"
[ "$(sign)" = NEWKEY0001 ] && ok "the previous key set keeps serving"
rm "$work/keys/SubscriptionKey_BROKEN0001.p8"

# Restart: the states survive.
kill "$pid"; wait "$pid" 2>/dev/null || true
[ ! -e "$work/offer-signer.pid" ] && ok "the PID file is removed when the service stops"
mv "$work/serve.log" "$work/serve.log.before"
start
# The start-up log says the saved states were applied and shows each key in the state it serves in.
grep -q '"key states applied"\|key states applied' "$work/serve.log" && ok "after a restart the log says the saved key states were applied" \
  || { cat "$work/serve.log"; fail "no line that the saved key states were applied"; }
python3 - "$work/serve.log" <<'PY' && ok "after a restart the log shows NEWKEY0001 active and OLDKEY0001 revoked" || fail "the log shows a key in a state it does not serve in"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
states = {l.get("keyIdentifier"): l.get("state") for l in lines if l.get("message") == "key"}
sys.exit(0 if states.get("NEWKEY0001") == "active" and states.get("OLDKEY0001") == "revoked" else 1)
PY
cat "$work/serve.log.before" >>"$work/serve.log"
[ "$(sign)" = NEWKEY0001 ] && [ "$(state OLDKEY0001)" = revoked ] && ok "after a restart: NEWKEY0001 active, OLDKEY0001 revoked"
python3 -c "import json;h=json.load(open('$work/key-states.json'))['history'];assert [c['action'] for c in h]==['activate','revoke'] and all(c['admin']=='runbook' for c in h)" \
  && ok "the state file records who did what"
grep -q "$OFFER_SIGNER_ADMIN_TOKEN" "$work/serve.log" && fail "the admin token appears in the log"
grep -q "PRIVATE KEY-----" "$work/serve.log" && fail "key material appears in the log"
ok "no token and no key material in the log"
echo "runbook checks passed"
