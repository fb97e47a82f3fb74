# Sourced by the HTTP benchmark scripts: the release build (or OFFER_SIGNER_BIN), a scratch folder removed on exit, a throw-away
# P-256 key ($work/key.p8), the wrk script posting the sign request of compare.sh ($work/post.lua), a free port,
# the server's configuration exported (only OFFER_SIGNER_DATABASE_URL is left to each run), and:
#   wait_up       until POST /v1/offers/sign answers on $port (any server: ours or a peer)
#   load ARGS…    wrk with the script's connections against the sign endpoint
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
# The release build in .build-release (as compare.sh and retention-perf.sh), or OFFER_SIGNER_BIN to measure a
# binary built elsewhere (another checkout, an older commit).
if [ -n "${OFFER_SIGNER_BIN:-}" ]; then
  bin=$OFFER_SIGNER_BIN
else
  # SwiftPM waits by itself if another build holds .build-release; a failed build shows its log.
  build_log=$(mktemp)
  swift build -c release --scratch-path .build-release --product offer-signer >"$build_log" 2>&1 ||
    { cat "$build_log" >&2; rm -f "$build_log"; exit 1; }
  rm -f "$build_log"
  bin=$(swift build -c release --scratch-path .build-release --show-bin-path)/offer-signer
fi
work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/key.p8"
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body   = '{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-0001"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer bench-client-key-0123456789abcdef"
LUA
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
export OFFER_SIGNER_HOST=127.0.0.1 OFFER_SIGNER_PORT=$port OFFER_SIGNER_BUNDLE_ID=com.example.app
export OFFER_SIGNER_API_KEYS=bench:bench-client-key-0123456789abcdef  # the credential compare.sh sends
OFFER_SIGNER_KEY_BENCHKEY01=$(cat "$work/key.p8"); export OFFER_SIGNER_KEY_BENCHKEY01
wait_up() { for _ in $(seq 100); do curl -s -o /dev/null -X POST "http://127.0.0.1:$port/v1/offers/sign" && return; sleep 0.1; done; }
load() { wrk -t1 -c"$conns" -s "$work/post.lua" "$@" "http://127.0.0.1:$port/v1/offers/sign"; }
