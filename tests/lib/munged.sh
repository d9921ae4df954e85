# munged.sh: the one launcher of a private munged for the tests (sourced):
# its own key, socket, pid and seed files in a directory the caller made,
# stopped by its recorded pid. Used by tests/unit/with-munged.sh,
# tests/controller/ctl-lib.sh, test-uplink-trust.sh, test-fuzz.sh, the
# testbed (tests/testbed/lib/services.sh) and test-agent-stall.sh.
#
#   munged_start DIR [MUNGED-ARG...]  0 with MUNGE_SOCKET (DIR/munge.socket)
#                                     and MUNGE_PID once it answers; else 1
#                                     with MUNGED_ERR saying why
#   munged_stop                       stop it (it writes its seed file on
#                                     the way out: waits for that)
# Set for one call: MUNGED_KEY (an existing key instead of a new
# DIR/munge.key), MUNGED_LOG (instead of DIR/munged.log), MUNGED_EXEC (a
# command prefix munged runs under, e.g. the testbed's "node_exec ctl").

munged_start() {
	local dir=$1 key=${MUNGED_KEY:-$1/munge.key}
	shift
	MUNGE_PID='' MUNGE_SOCKET='' MUNGED_ERR=''
	command -v munged >/dev/null || { MUNGED_ERR="munged not installed (apt-get install munge)"; return 1; }
	if [ -z "${MUNGED_KEY:-}" ]; then
		dd if=/dev/urandom of="$key" bs=1024 count=1 status=none && chmod 0400 "$key" ||
			{ MUNGED_ERR="cannot write a munge key in $dir"; return 1; }
	fi
	# --force: munged refuses to run as root otherwise; the key and socket
	# live in a root-only directory of the caller's.
	# shellcheck disable=SC2086 # MUNGED_EXEC is a command and its words
	${MUNGED_EXEC:-} munged --force --socket="$dir/munge.socket" --key-file="$key" \
		--pid-file="$dir/munged.pid" --log-file="${MUNGED_LOG:-$dir/munged.log}" \
		--seed-file="$dir/munged.seed" "$@" 2>"$dir/munged.err" ||
		{ MUNGED_ERR="private munged did not start: $(head -1 "$dir/munged.err")"; return 1; }
	for _ in $(seq 100); do
		[ -s "$dir/munged.pid" ] && munge -S "$dir/munge.socket" -n >/dev/null 2>&1 && break
		sleep 0.1
	done
	MUNGE_PID=$(cat "$dir/munged.pid" 2>/dev/null)
	[ -n "$MUNGE_PID" ] || { MUNGED_ERR="private munged wrote no pid file"; return 1; }
	munge -S "$dir/munge.socket" -n >/dev/null 2>&1 ||
		{ MUNGED_ERR="private munged does not answer on $dir/munge.socket after 10 s"; return 1; }
	MUNGE_SOCKET=$dir/munge.socket
}

munged_stop() {
	[ -n "${MUNGE_PID:-}" ] || return 0
	kill "$MUNGE_PID" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$MUNGE_PID" 2>/dev/null || break; sleep 0.1; done
	MUNGE_PID=''
}
