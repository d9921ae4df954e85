# TAP for shell tests (sourced). plan N | skip_all REASON; ok COND DESC;
# is GOT WANT DESC; diag MSG; done_testing. Exit status: 0 iff all passed.
_tap_n=0
_tap_fail=0
_tap_planned=

plan() { _tap_planned=$1; echo "1..$1"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
diag() { printf '# %s\n' "$*"; }

# ok STATUS DESC: STATUS is an exit status (0 = pass), as from `[ ... ]; ok $? desc`.
ok() {
	_tap_n=$((_tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $_tap_n - $2"
	else
		echo "not ok $_tap_n - $2"
		_tap_fail=$((_tap_fail + 1))
	fi
	return "$1"
}

# check DESC CMD...: runs CMD, passes if it succeeds; shows its output on failure.
check() {
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	ok $rc "$desc" || printf '%s\n' "$out" | sed 's/^/#   /' | head -20
	return $rc
}

is() {
	if [ "$1" = "$2" ]; then ok 0 "$3"; else ok 1 "$3"; diag "got '$1', want '$2'"; return 1; fi
}

# free_port: the tests' one free port: a port on 127.0.0.1 that nothing is
# bound to now, for TCP and UDP both, below the kernel's ephemeral range (so
# no outgoing connection takes it while a test's server starts); falls back
# to any free port the kernel names.
free_port() {
	python3 - <<'PY'
import os, random, socket
def free(p):
    socks = [socket.socket(socket.AF_INET, t) for t in (socket.SOCK_STREAM, socket.SOCK_DGRAM)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        for s in socks:
            s.close()
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for p in random.Random(os.getpid()).sample(range(20000, max(20001, lo)), 200):
    if free(p):
        print(p); break
else:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP $*"; }

# todo STATUS DESC WHY: a check of something not built yet (WHY says what):
# a failure is reported as TODO (XFAIL) and does not fail the test; a pass
# is an XPASS, which the suite counts as a failure: the TODO must go.
todo() {
	_tap_n=$((_tap_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $_tap_n - $2 # TODO $3"; else echo "not ok $_tap_n - $2 # TODO $3"; fi
}

done_testing() {
	[ -n "$_tap_planned" ] || echo "1..$_tap_n"
	[ "$_tap_fail" -eq 0 ]
	exit $?
}
