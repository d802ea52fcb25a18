#!/bin/sh
# Schema step of the compose stack (runs in temporalio/admin-tools, before the Temporal server):
# creates the Temporal and visibility databases and brings their schemas to this image's version,
# and creates the host's own database (live-text bus, rate limits, worker reports, audit chain,
# OAuth tokens). Safe to run on every start: existing databases and schemas are kept, and
# update-schema applies only what is missing, so a newer image upgrades the schema in place.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
# Refused before anything is created with it (the API and workers refuse it too, in POSTGRES_URL).
. "$(dirname "$0")/refuse-placeholder.sh"
refuse_placeholder POSTGRES_PASSWORD "$SQL_PASSWORD" || exit 1
port="${DB_PORT:-5432}"
sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"; }
schema=/etc/temporal/schema/postgresql/v12

echo "waiting for PostgreSQL at $POSTGRES_SEEDS:$port ..."
tries=0
until nc -z -w 2 "$POSTGRES_SEEDS" "$port"; do
  tries=$((tries + 1))
  [ "$tries" -lt 60 ] || { echo "PostgreSQL did not answer" >&2; exit 1; }
  sleep 1
done

for db in temporal temporal_visibility "${DMH_DATABASE:-dmh}"; do
  sql --db "$db" create 2>/dev/null && echo "created database $db" || echo "database $db exists"
done
for pair in temporal:temporal temporal_visibility:visibility; do
  db="${pair%%:*}"
  dir="${pair#*:}"
  # setup-schema refuses a database that already has one: that is the normal case after the first start.
  sql --db "$db" setup-schema -v 0.0 2>/dev/null && echo "initialized schema of $db" || echo "schema of $db exists"
  sql --db "$db" update-schema -d "$schema/$dir/versioned"
done
echo "schemas ready"
