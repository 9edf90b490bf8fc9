#!/bin/sh
# A slotlock exec job's fenced write to PostgreSQL: in one transaction, the
# guard statement raises the fence row of $RESOURCE to this run's token
# (refused when a higher one is there), then the write runs. A stale run
# (one that was frozen past its lease while a newer run wrote) writes
# nothing and exits 75 with "stale fencing token" on stderr: the exit code
# slotlock records with error class stale_token. Any other failure exits
# with psql's code (3: an SQL error).
#
#   params:
#     command: [sh, /etc/slotlock/psql-write.sh]
#     env: {DATABASE_URL: "postgres://app@db/app", RESOURCE: daily-report, BODY: "..."}
#     inherit_env: [PGPASSWORD]
#
# The fence table is the one fence.SQL.CreateTable makes:
#   CREATE TABLE IF NOT EXISTS slotlock_fence (
#     resource text PRIMARY KEY, token bigint NOT NULL CHECK (token >= 0));
# The write here (the INSERT INTO reports) is the example's; put yours in
# its place, between the guard and COMMIT.
set -eu
# psql cannot choose its exit code, so the refusal prints a marker on stdout
# (nothing else does: -q, and the guard's SELECT goes to \gset) and the
# shell turns it into exit 75. set -e: a psql failure exits with its code.
out=$(psql -X -q -v ON_ERROR_STOP=1 -v token="$SLOTLOCK_FENCING_TOKEN" \
  -v resource="$RESOURCE" -v body="$BODY" "$DATABASE_URL" <<'SQL'
\set VERBOSITY terse
BEGIN;
WITH guard AS (
  INSERT INTO slotlock_fence AS f (resource, token) VALUES (:'resource', :'token')
  ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
  WHERE f.token <= EXCLUDED.token
  RETURNING 1)
SELECT count(*) = 1 AS fenced FROM guard \gset
\if :fenced
  INSERT INTO reports (name, body) VALUES (:'resource', :'body')
  ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body;
  COMMIT;
\else
  ROLLBACK;
  \warn stale fencing token :token for :resource: a newer run wrote first; nothing written
  \echo slotlock:stale
\endif
SQL
)
case "$out" in
*slotlock:stale) exit 75 ;;
esac
