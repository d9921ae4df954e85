# fabriciq-testbed: shared helpers (sourced). Every function returns
# non-zero on failure; `die` prints one line naming the problem and exits.

TB_PROG=fabriciq-testbed

die() { printf '%s: %s\n' "$TB_PROG" "$*" >&2; TB_DIED=1; exit 1; }
warn() { printf '%s: warning: %s\n' "$TB_PROG" "$*" >&2; }
# Progress goes to stderr so that stdout stays parseable (status, truth).
say() { [ -n "${TB_QUIET:-}" ] || printf '%s: %s\n' "$TB_PROG" "$*" >&2; }

# Nanoseconds on CLOCK_REALTIME. Time namespaces do not offset REALTIME, so
# this is the one timeline every emulated host agrees on: the ground truth.
now_ns() { date +%s%N; }

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

# need CMD DEBIAN-PACKAGE: fail with the package to install.
need() {
	command -v "$1" >/dev/null 2>&1 || die "missing program '$1' (apt-get install $2)"
}

# Offsets: "12.5ms", "-3us", "100ns", "0.0125" (seconds) or "-42" (seconds)
# into signed nanoseconds.
parse_offset_ns() {
	local v=$1 sign=1 num unit int frac scale ns
	[[ "$v" =~ ^([+-]?)([0-9]+(\.[0-9]+)?)(s|ms|us|ns)?$ ]] || return 1
	[ "${BASH_REMATCH[1]}" = "-" ] && sign=-1
	num=${BASH_REMATCH[2]} unit=${BASH_REMATCH[4]:-s}
	case $unit in s) scale=1000000000 ;; ms) scale=1000000 ;; us) scale=1000 ;; ns) scale=1 ;; esac
	int=${num%%.*}
	frac=
	[[ "$num" == *.* ]] && frac=${num#*.}
	ns=$((10#$int * scale))
	if [ -n "$frac" ]; then
		local digits=${#scale}
		digits=$((digits - 1))
		frac=${frac:0:$digits}
		while [ ${#frac} -lt $digits ]; do frac=${frac}0; done
		[ $digits -gt 0 ] && ns=$((ns + 10#$frac))
	fi
	echo $((sign * ns))
}

# Wait (bounded) for a command to succeed: wait_for SECONDS WHAT CMD...
wait_for() {
	local secs=$1 what=$2 deadline
	shift 2
	deadline=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || { warn "timed out after ${secs}s waiting for $what"; return 1; }
		sleep 0.2
	done
}

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
