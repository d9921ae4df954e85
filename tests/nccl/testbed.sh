# The plugin's emulated-cluster tests (sourced): TAP, the testbed library,
# $CB (fabriciq-collbench) and $SO (the plugin); nccl_tb_setup PREFIX
# [FILE...] skips unless they (and any FILE) are built and the testbed can
# run, then gives the test its own testbed prefix.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../testbed/lib/testlib.sh"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"

nccl_tb_setup() {
	local pfx=$1 f
	shift
	for f in "$CB" "$SO" "$@"; do [ -e "$f" ] || skip_all "$f not built"; done
	tb_require
	tb_setup "$pfx"
}

# Ranks without Slurm (the test sets $tmp, a scratch directory, and $port,
# bumped for each run):
# start N ENV... -- ARGS...: collbench ranks 0..N-1 on n1..nN in the
# background, each with its host's path page, pids in $pids.
start() {
	local n=$1 envs=()
	shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	port=$((port + 1)) pids=()
	rm -f "$tmp"/out.* "$tmp"/err.*
	for r in $(seq $((n - 1)) -1 0); do
		tb exec "n$((r + 1))" env FABRICIQ_IFACES=rail0,rail1 FABRICIQ_TELEMETRY=0 \
			FABRICIQ_PATH_PAGE="$FQTB_STATE/run/n$((r + 1))/paths" "${envs[@]}" \
			timeout 120 "$CB" -p "$SO" --rank "$r" --nranks "$n" --bootstrap "198.18.0.11:$port" "$@" \
			>"$tmp/out.$r" 2>"$tmp/err.$r" &
		pids+=($!)
	done
}
# finish: wait for them; 0 if all exited 0; rank 0's output in $out.
finish() {
	local rc=0
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	out=$(cat "$tmp/out.0")
	return $rc
}
# verified: rank 0's table has no wrong result and says OK.
verified() { [ -n "$out" ] && [ -z "$(awk '!/^#/ && $8 != 0' <<<"$out")" ] && grep -q '^# OK' <<<"$out"; }
# errs [N]: the first N lines of the ranks' stderr, as TAP comments.
errs() { cat "$tmp"/err.* | sed 's/^/#   /' | head -"${1:-12}"; }
