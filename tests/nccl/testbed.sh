# The plugin's emulated-cluster tests (sourced): TAP, the testbed library,
# $CB (fabriciq-collbench) and $SO (the plugin); nccl_tb_setup PREFIX
# [FILE...] skips unless they (and any FILE) are built and the testbed can
# run, then gives the test its own testbed prefix.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../testbed/lib/testlib.sh"
CB="$top_builddir/nccl-plugin/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"

nccl_tb_setup() {
	local pfx=$1 f
	shift
	for f in "$CB" "$SO" "$@"; do [ -e "$f" ] || skip_all "$f not built"; done
	tb_require
	tb_setup "$pfx"
}
