# postgres.sh: the one launcher of a private PostgreSQL 15 for the tests
# (sourced): a cluster in DIR/data (DIR owned by postgres), run as postgres,
# stopped through its data directory. Used by tests/db/with-postgres.sh
# (every test against a database outside the testbed) and the testbed
# (tests/testbed/lib/services.sh).
#
#   pg_init DIR [INITDB-ARG...]   initdb (trust, UTF8, C.UTF-8; its log in
#                                 PG_INITDB_LOG or DIR/initdb.log)
#   pg_start DIR SERVER-OPTIONS   pg_ctl start -o SERVER-OPTIONS, waiting up
#                                 to 60 s (the log in PG_LOG or
#                                 DIR/server.log; PG_EXEC: a command prefix
#                                 it runs under, e.g. "node_exec ctl")
#   pg_stop DIR [MODE]            pg_ctl stop (MODE: fast, the default, or
#                                 immediate) if it runs
# Each returns 0, or 1 with PG_ERR saying why. pg_ctl_cmd DIR prints the
# server's pg_ctl command (words) for a test that stops or restarts it.
PG_BIN=${FQ_PG_BINDIR:-${PG_BIN:-/usr/lib/postgresql/15/bin}}

pg_init() {
	local dir=$1 log=${PG_INITDB_LOG:-$1/initdb.log}
	shift
	PG_ERR=''
	runuser -u postgres -- "$PG_BIN/initdb" -D "$dir/data" --auth=trust -U postgres -E UTF8 --locale=C.UTF-8 \
		"$@" >"$log" 2>&1 || { PG_ERR="initdb failed: $(tail -1 "$log")"; return 1; }
}

pg_ctl_cmd() { echo "runuser -u postgres -- $PG_BIN/pg_ctl -D $1/data"; }

pg_start() {
	local dir=$1 opts=$2 log=${PG_LOG:-$1/server.log}
	PG_ERR=''
	# shellcheck disable=SC2046,SC2086 # PG_EXEC and the pg_ctl command are words
	${PG_EXEC:-} $(pg_ctl_cmd "$dir") -l "$log" -w -t 60 start -o "$opts" >"$dir/pg_ctl.log" 2>&1 ||
		{ PG_ERR="PostgreSQL did not start: $(tail -2 "$log" | tr '\n' ' ')"; return 1; }
}

pg_stop() {
	[ -f "$1/data/postmaster.pid" ] || return 0
	# shellcheck disable=SC2046 # the pg_ctl command is words
	$(pg_ctl_cmd "$1") -m "${2:-fast}" -t 10 -w stop >/dev/null 2>&1
}
