#!/bin/sh
# Creates Temporal's two databases on PostgreSQL when missing and brings both schemas up to
# date with the server's own sql tool and the schemas built into it; safe to run at every
# start (docker-compose's temporal-schema service, the tests' topology).
# Reads POSTGRES_SEEDS, DB_PORT, POSTGRES_USER, POSTGRES_PWD, DBNAME, VISIBILITY_DBNAME
# (as config.yaml does) and TEMPORAL_SQL_TOOL (default: temporal-sql-tool on PATH).
set -eu
tool=${TEMPORAL_SQL_TOOL:-temporal-sql-tool}
export SQL_PLUGIN=postgres12 SQL_HOST="${POSTGRES_SEEDS:?POSTGRES_SEEDS names the PostgreSQL host}"
export SQL_PORT="${DB_PORT:-5432}" SQL_USER="${POSTGRES_USER:-}" SQL_PASSWORD="${POSTGRES_PWD:-}"

for pair in "${DBNAME:-temporal}:temporal" "${VISIBILITY_DBNAME:-temporal_visibility}:visibility"; do
  export SQL_DATABASE="${pair%%:*}"
  schema="postgresql/v12/${pair#*:}"
  # Fails when the database exists (a restart): setup-schema then says whether it is reachable.
  "$tool" create-database >/dev/null 2>&1 || true
  "$tool" setup-schema -v 0.0
  "$tool" update-schema --schema-name "$schema"
done
