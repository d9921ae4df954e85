# ctl-lib.sh: helpers for the controller's integration tests (sourced, under
# tests/db/with-postgres.sh): a private munged (tests/lib/munged.sh), the
# controller with a generated config in a temporary directory, psql counts.
# Needs: top_srcdir, top_builddir, PGHOST (from with-postgres.sh).
. "$top_srcdir/tests/lib/tap.sh"
. "$top_srcdir/tests/lib/munged.sh"

CTL_BIN=$top_builddir/controller/fabriciq-controller
SIM=$top_builddir/tests/controller/fq-agentsim
[ -x "$CTL_BIN" ] && [ -x "$SIM" ] || skip_all "build fabriciq-controller and fq-agentsim first (make check builds them)"
command -v munged >/dev/null || skip_all "munged not installed (apt-get install munge)"

T=$(mktemp -d /tmp/fq-ctl-test.XXXXXX)
chmod 0700 "$T"
CTL_PID=
ctl_cleanup() {
	[ -n "$CTL_PID" ] && kill "$CTL_PID" 2>/dev/null && wait "$CTL_PID" 2>/dev/null
	munged_stop
	rm -rf "$T"
}
trap ctl_cleanup EXIT

munge_up() {
	munged_start "$T" || return 1
	# the fabriciq CLI mints its API credentials there
	export FABRICIQ_MUNGE_SOCKET=$MUNGE_SOCKET
}

# ctl_up [KEY=VALUE]...: start the controller; CTL_PORT, HTTP_PORT, CTL_LOG
# (new free ports, or the last ones again when CTL_KEEP_PORTS is set).
ctl_up() {
	if [ -z "${CTL_KEEP_PORTS:-}" ] || [ -z "${CTL_PORT:-}" ]; then
		CTL_PORT=$(free_port)
		HTTP_PORT=$(free_port)
	fi
	CTL_N=$((${CTL_N:-0} + 1))
	CTL_LOG=$T/controller.$CTL_N.log
	cat >"$T/fabriciq.conf" <<CONF
controller.listen = "127.0.0.1:$CTL_PORT"
controller.http_listen = "127.0.0.1:$HTTP_PORT"
controller.db = "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE connect_timeout=2"
controller.munge_socket = "$T/munge.socket"
controller.spool_dir = "$T/spool"
controller.log_level = info
# fq-agentsim runs many agents from one address, 127.0.0.1
controller.max_unauthenticated_per_source = 1000
CONF
	local sets=""
	for kv in "$@"; do sets="$sets -s $kv"; done
	# shellcheck disable=SC2086
	"$CTL_BIN" -c "$T/fabriciq.conf" $sets >>"$CTL_LOG" 2>&1 &
	CTL_PID=$!
	for _ in $(seq 100); do
		grep -q "listening on" "$CTL_LOG" 2>/dev/null && return 0
		kill -0 "$CTL_PID" 2>/dev/null || { CTL_PID=; return 1; }
		sleep 0.1
	done
	return 1
}

ctl_down() {
	[ -n "$CTL_PID" ] || return 0
	kill -TERM "$CTL_PID"
	wait "$CTL_PID"
	local rc=$?
	CTL_PID=
	return $rc
}

sim() { "$SIM" --connect "127.0.0.1:$CTL_PORT" --munge-socket "$T/munge.socket" "$@"; }

q() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1" 2>&1; }
