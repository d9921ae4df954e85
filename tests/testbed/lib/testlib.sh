# Shared by the testbed's integration tests (sourced after tests/lib/tap.sh).
# Each test gets its own state directory and namespace prefix, and tears
# the testbed down on any exit.

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
TB="$top_srcdir/tests/testbed/fabriciq-testbed"
export FQTB_HELPERS="$top_builddir/tests/testbed"

tb_require() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (network, UTS and time namespaces)"
	ip netns add "fqtbprobe$$" 2>/dev/null || skip_all "cannot create network namespaces here"
	ip netns del "fqtbprobe$$"
	unshare --time true 2>/dev/null || skip_all "kernel without time namespaces (CONFIG_TIME_NS)"
	[ -x "$FQTB_HELPERS/tb-hostns" ] || skip_all "tests/testbed helpers not built"
}

# tb_setup PREFIX: private state dir + prefix, torn down on exit.
tb_setup() {
	TB_PFX=$1
	export FQTB_STATE="${TMPDIR:-/tmp}/fqtb-$TB_PFX-$$"
	trap 'tb_teardown' EXIT
	trap 'exit 130' INT TERM
}

tb_teardown() {
	local rc=$?
	"$TB" down >/dev/null 2>&1
	exit $rc
}

tb() { "$TB" "$@"; }
