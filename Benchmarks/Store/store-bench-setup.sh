# Sourced by the store benchmarks (outcomes-bench.sh, console-bench.sh), with BIN (the binary), BENCH (the scratch
# folder's name) and BENCH_BUNDLE_ID (the app) set: a scratch folder removed on exit, an admin token ($token), a free
# port ($port), the server's configuration exported (OFFER_SIGNER_DATABASE_URL is left to each run), and:
#   serve URL   starts `offer-signer serve` on the store URL; returns when it answers (the migrations done)
#   stop        stops it
work=$(mktemp -d "/tmp/offer-signer-$BENCH.XXXXXX")
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
token=$(openssl rand -hex 32)
port=$((20000 + RANDOM % 20000))
export OFFER_SIGNER_BUNDLE_ID=$BENCH_BUNDLE_ID OFFER_SIGNER_CLIENT_AUTH=none OFFER_SIGNER_HOST=127.0.0.1 OFFER_SIGNER_PORT=$port \
  OFFER_SIGNER_ADMIN_TOKENS="bench:$token" OFFER_SIGNER_KEY_BENCHKEY01="$("$BIN" keys generate)"

serve() {  # $1: database URL
  OFFER_SIGNER_DATABASE_URL="$1" "$BIN" serve > "$work/server.log" 2>&1 & server=$!
  until curl -fs "http://127.0.0.1:$port/healthz" > /dev/null 2>&1; do
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
  done
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; server=""; }
