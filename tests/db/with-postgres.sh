#!/usr/bin/env bash
# with-postgres.sh CMD [ARGS...]: run CMD against a private PostgreSQL 15
# (initdb in a temporary directory, unix socket only, no TCP), stopped by its
# data directory and removed on exit. CMD sees PGHOST, PGPORT, PGUSER and
# PGDATABASE (a fresh database "fabriciq"), FQ_TEST_PG=1, and FQ_TEST_PG_CTL,
# the pg_ctl command of this server (words: `$FQ_TEST_PG_CTL -m fast stop`),
# for a test that stops or restarts it. The one PostgreSQL of the tests
# outside the testbed.
# Prints a TAP skip with the reason when this cannot run here.
set -u
pgbin=${FQ_PG_BINDIR:-/usr/lib/postgresql/15/bin}
[ -x "$pgbin/initdb" ] && [ -x "$pgbin/pg_ctl" ] ||
	{ echo "1..0 # SKIP PostgreSQL 15 server binaries not in $pgbin (apt-get install postgresql-15)"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root to run a private PostgreSQL as user postgres"; exit 0; }
id postgres >/dev/null 2>&1 || { echo "1..0 # SKIP no 'postgres' user (apt-get install postgresql-15)"; exit 0; }
command -v psql >/dev/null || { echo "1..0 # SKIP psql not installed (apt-get install postgresql-client-15)"; exit 0; }

dir=$(mktemp -d /tmp/fq-pg.XXXXXX)
chown postgres: "$dir"
chmod 0700 "$dir"
cleanup() {
	[ -f "$dir/data/postmaster.pid" ] &&
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 129' HUP INT TERM

runuser -u postgres -- "$pgbin/initdb" -D "$dir/data" --auth=trust -U postgres -E UTF8 --locale=C.UTF-8 \
	>"$dir/initdb.log" 2>&1 ||
	{ echo "1..0 # SKIP initdb failed: $(tail -1 "$dir/initdb.log")"; exit 0; }
# Small and fast: a test server, not a durable one (the same for the
# benchmark's baseline and the library, so their ratio is fair).
runuser -u postgres -- "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
	-o "-c listen_addresses='' -c unix_socket_directories='$dir' -c port=5432 -c fsync=off \
	    -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=64MB -c max_connections=20" \
	>"$dir/pg_ctl.log" 2>&1 ||
	{ echo "1..0 # SKIP private PostgreSQL did not start: $(tail -2 "$dir/server.log" | tr '\n' ' ')"; exit 0; }

export PGHOST=$dir PGPORT=5432 PGUSER=postgres PGDATABASE=fabriciq FQ_TEST_PG=1
export FQ_TEST_PG_CTL="runuser -u postgres -- $pgbin/pg_ctl -D $dir/data"
unset PGSERVICE PGPASSWORD PGOPTIONS
psql -X -q -d postgres -c 'create database fabriciq' >/dev/null ||
	{ echo "1..0 # SKIP could not create the test database"; exit 0; }
"$@"
