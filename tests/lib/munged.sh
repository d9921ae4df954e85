# munged.sh: the one launcher of a private munged for the tests (sourced):
# its own key, socket, pid, log and seed files in a directory the caller
# made, stopped by its recorded pid. Used by tests/unit/with-munged.sh,
# tests/controller/ctl-lib.sh, test-uplink-trust.sh and test-fuzz.sh.
#
#   munged_start DIR [MUNGED-ARG...]  0 with MUNGE_SOCKET (DIR/munge.socket)
#                                     and MUNGE_PID once it answers; else 1
#                                     with MUNGED_ERR saying why
#   munged_stop                       stop it (it writes its seed file on
#                                     the way out: waits for that)

munged_start() {
	local dir=$1
	shift
	MUNGE_PID='' MUNGE_SOCKET='' MUNGED_ERR=''
	command -v munged >/dev/null || { MUNGED_ERR="munged not installed (apt-get install munge)"; return 1; }
	dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none && chmod 0400 "$dir/munge.key" ||
		{ MUNGED_ERR="cannot write a munge key in $dir"; return 1; }
	munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
		--log-file="$dir/munged.log" --seed-file="$dir/munged.seed" "$@" 2>"$dir/munged.err" ||
		{ MUNGED_ERR="private munged did not start: $(head -1 "$dir/munged.err")"; return 1; }
	for _ in $(seq 50); do
		[ -s "$dir/munged.pid" ] && munge -S "$dir/munge.socket" -n >/dev/null 2>&1 && break
		sleep 0.1
	done
	MUNGE_PID=$(cat "$dir/munged.pid" 2>/dev/null)
	[ -n "$MUNGE_PID" ] || { MUNGED_ERR="private munged wrote no pid file"; return 1; }
	MUNGE_SOCKET=$dir/munge.socket
}

munged_stop() {
	[ -n "${MUNGE_PID:-}" ] || return 0
	kill "$MUNGE_PID" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$MUNGE_PID" 2>/dev/null || break; sleep 0.1; done
	MUNGE_PID=
}
