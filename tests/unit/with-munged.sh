#!/usr/bin/env bash
# with-munged.sh TEST: run TEST with a private munged (own key, socket and
# pid file in a temporary directory), stopped by its recorded pid on exit.
# Skips (TAP) with the reason when munged cannot run here.
set -u
test=$1
command -v munged >/dev/null || { echo "1..0 # SKIP munged not installed (apt-get install munge)"; exit 0; }
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root to run a private munged"; exit 0; }
dir=$(mktemp -d /tmp/fq-munge.XXXXXX)
chmod 0700 "$dir"
cleanup() {
	if [ -s "$dir/munged.pid" ]; then
		pid=$(cat "$dir/munged.pid")
		kill "$pid" 2>/dev/null
		# munged writes its seed file on the way out: let it finish
		# before its directory goes.
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
dd if=/dev/urandom of="$dir/key" bs=1024 count=1 status=none && chmod 0400 "$dir/key"
munged --force --socket="$dir/sock" --key-file="$dir/key" --pid-file="$dir/munged.pid" \
	--log-file="$dir/munged.log" --seed-file="$dir/seed" --origin=127.0.0.1 2>"$dir/start.err" ||
	{ echo "1..0 # SKIP private munged did not start: $(head -1 "$dir/start.err")"; exit 0; }
for _ in $(seq 1 50); do [ -S "$dir/sock" ] && break; sleep 0.1; done
FQ_TEST_MUNGE_SOCKET="$dir/sock" "$test"
