#!/bin/sh
# temporal-schema: the one-shot job of docker-compose.yaml that creates the
# Temporal databases on PostgreSQL and brings their schemas up to the
# server's version. Runs in the temporalio/admin-tools image, after
# PostgreSQL is healthy and before the server starts. Every step is
# idempotent, so it runs again harmlessly at each `docker compose up` and
# migrates the schemas after a server upgrade.
#
# Environment: POSTGRES_SEEDS, POSTGRES_PORT, POSTGRES_USER, SQL_PASSWORD.
set -eu

schema=/etc/temporal/schema/postgresql/v12
sqltool() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "${POSTGRES_PORT:-5432}" -u "$POSTGRES_USER" "$@"
}

for db in temporal:temporal temporal_visibility:visibility; do
  name=${db%%:*}
  dir=${db#*:}
  echo "setting up database $name"
  sqltool --db "$name" create
  sqltool --db "$name" setup-schema -v 0.0
  sqltool --db "$name" update-schema -d "$schema/$dir/versioned"
done
echo "the Temporal schemas are up to date"
