#!/usr/bin/env bash
# with-postgres.sh CMD [ARGS...]: run CMD against a private PostgreSQL 15
# (initdb in a temporary directory, unix socket only, no TCP), stopped by its
# data directory and removed on exit. CMD sees PGHOST, PGPORT, PGUSER and
# PGDATABASE (a fresh database "fabriciq"), FQ_TEST_PG=1, and FQ_TEST_PG_CTL,
# the pg_ctl command of this server (words: `$FQ_TEST_PG_CTL -m fast stop`),
# for a test that stops or restarts it. Started by tests/lib/postgres.sh,
# as the testbed's.
# Prints a TAP skip with the reason when this cannot run here.
set -u
. "$(dirname "$0")/../lib/postgres.sh"
[ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] ||
	{ echo "1..0 # SKIP PostgreSQL 15 server binaries not in $PG_BIN (apt-get install postgresql-15)"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root to run a private PostgreSQL as user postgres"; exit 0; }
id postgres >/dev/null 2>&1 || { echo "1..0 # SKIP no 'postgres' user (apt-get install postgresql-15)"; exit 0; }
command -v psql >/dev/null || { echo "1..0 # SKIP psql not installed (apt-get install postgresql-client-15)"; exit 0; }

dir=$(mktemp -d /tmp/fq-pg.XXXXXX)
chown postgres: "$dir"
chmod 0700 "$dir"
cleanup() {
	pg_stop "$dir" immediate
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 129' HUP INT TERM

pg_init "$dir" || { echo "1..0 # SKIP $PG_ERR"; exit 0; }
# Small and fast: a test server, not a durable one (the same for the
# benchmark's baseline and the library, so their ratio is fair).
pg_start "$dir" "-c listen_addresses='' -c unix_socket_directories='$dir' -c port=5432 -c fsync=off \
	-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=64MB -c max_connections=20" ||
	{ echo "1..0 # SKIP private $PG_ERR"; exit 0; }

export PGHOST=$dir PGPORT=5432 PGUSER=postgres PGDATABASE=fabriciq FQ_TEST_PG=1
FQ_TEST_PG_CTL=$(pg_ctl_cmd "$dir")
export FQ_TEST_PG_CTL
unset PGSERVICE PGPASSWORD PGOPTIONS
psql -X -q -d postgres -c 'create database fabriciq' >/dev/null ||
	{ echo "1..0 # SKIP could not create the test database"; exit 0; }
"$@"
