#!/usr/bin/env bash
# Starts a throw-away PostgreSQL server for the tests (idempotent), and prints the variable the tests read:
#
#   eval "$(scripts/start-postgres.sh)"      # sets OFFER_SIGNER_TEST_DATABASE_URL
#
# Installs Debian's postgresql package if no server is installed. OFFER_SIGNER_FRESH_DATABASE=1 starts the
# tests' database empty. Data lives in $PGDATA_DIR
# (default /tmp/offer-signer-pg); the server listens on 127.0.0.1:$PGPORT (default 54329). Logs go to stderr.
#
# max_connections is $PG_MAX_CONNECTIONS (default 500), not PostgreSQL's 100, which the suite exhausted
# ("remaining connection slots are reserved"): Swift Testing runs every test at once, and about 110 of them open
# a PostgreSQL store (a test's own, a replica's), each pool bounded to 4 connections by the tests' URL
# (pool_max_conns, Backend.postgresStoreURL in Tests/*): 440 at most, 16 more for the warm-up test's two
# server-sized pools (8 each), the rest for the live checks run after the suite (two replicas of 8) and psql.
# Measured (pg_stat_activity every 50 ms, the two test targets' PostgreSQL suites run apart): 42 + 108 connections
# at 4 a store, 66 + 145 at the production pool's 8 — more than the 97 a default server lets the tests have. A
# server already running with fewer is restarted with it (its clients are disconnected).
set -euo pipefail
port=${PGPORT:-54329}
data=${PGDATA_DIR:-/tmp/offer-signer-pg}
max_connections=${PG_MAX_CONNECTIONS:-500}
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
psql() { "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 -qtA "$@"; }
options="-p $port -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=$max_connections"
if ! run_pg "'$bindir/pg_ctl' -D '$data' status" >/dev/null 2>&1; then
  run_pg "'$bindir/pg_ctl' -D '$data' -o \"$options\" -l '$data/server.log' -w start" >&2
else
  current=$(psql -c "SHOW max_connections" 2>/dev/null || echo 0)
  if [ "$current" -lt "$max_connections" ]; then
    echo "restarting PostgreSQL: max_connections is $current, the tests need $max_connections" >&2
    run_pg "'$bindir/pg_ctl' -D '$data' -o \"$options\" -l '$data/server.log' -m fast -w restart" >&2
  fi
fi
[ "$(psql -c "SELECT 1 FROM pg_roles WHERE rolname='offersigner'")" = 1 ] || psql -c "CREATE ROLE offersigner LOGIN PASSWORD 'offersigner'" >&2
# OFFER_SIGNER_FRESH_DATABASE=1 (CI sets it): the tests' database is dropped and made again, so that a run never
# meets the tables of an earlier checkout's migrations (a server left in /tmp from another branch, where a version
# number named another table, fails the suite with "relation ... does not exist").
if [ "${OFFER_SIGNER_FRESH_DATABASE:-0}" = 1 ]; then
  echo "dropping and creating the database offersigner (OFFER_SIGNER_FRESH_DATABASE=1)" >&2
  psql -c "DROP DATABASE IF EXISTS offersigner WITH (FORCE)" >&2
fi
[ "$(psql -c "SELECT 1 FROM pg_database WHERE datname='offersigner'")" = 1 ] || psql -c "CREATE DATABASE offersigner OWNER offersigner" >&2
echo "export OFFER_SIGNER_TEST_DATABASE_URL=$url"
