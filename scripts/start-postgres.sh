#!/usr/bin/env bash
# Starts a throw-away PostgreSQL server for the tests (idempotent), and prints the variable the tests read:
#
#   eval "$(scripts/start-postgres.sh)"      # sets OFFER_SIGNER_TEST_DATABASE_URL
#
# Installs Debian's postgresql package if no server is installed. Data lives in $PGDATA_DIR
# (default /tmp/offer-signer-pg); the server listens on 127.0.0.1:$PGPORT (default 54329). Logs go to stderr.
set -euo pipefail
port=${PGPORT:-54329}
data=${PGDATA_DIR:-/tmp/offer-signer-pg}
url="postgres://offersigner:offersigner@127.0.0.1:$port/offersigner"
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "installing postgresql (Debian)" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi

# PostgreSQL refuses to run as root: run it as the postgres user when we are root.
run_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then useradd --system --no-create-home postgres; fi

if [ ! -f "$data/PG_VERSION" ]; then
  mkdir -p "$data"
  [ "$(id -u)" = 0 ] && chown postgres "$data"
  run_pg "'$bindir/initdb' -D '$data' -U postgres --auth=trust" >&2
fi
if ! run_pg "'$bindir/pg_ctl' -D '$data' status" >/dev/null 2>&1; then
  run_pg "'$bindir/pg_ctl' -D '$data' -o \"-p $port -k /tmp -c listen_addresses=127.0.0.1\" -l '$data/server.log' -w start" >&2
fi
psql() { "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 -qtA "$@"; }
[ "$(psql -c "SELECT 1 FROM pg_roles WHERE rolname='offersigner'")" = 1 ] || psql -c "CREATE ROLE offersigner LOGIN PASSWORD 'offersigner'" >&2
[ "$(psql -c "SELECT 1 FROM pg_database WHERE datname='offersigner'")" = 1 ] || psql -c "CREATE DATABASE offersigner OWNER offersigner" >&2
echo "export OFFER_SIGNER_TEST_DATABASE_URL=$url"
