#!/usr/bin/env bash
# The profiler plugin's cost on the emulated cluster (bench-profiler.sh
# runs it; issue 18's figure): 4 ranks on 4 testbed hosts (1 rail, 1
# leaf), every part real (Slurm with the SPANK plugin, munge, PostgreSQL,
# the controller, an agent per host), each job `srun --fabriciq=monitor`
# with the site's default (monitor_via=profiler). fabriciq-collbench stands
# for NCCL over the net plugin with FABRICIQ_TELEMETRY=0 (NCCL's own
# transport: it sends fabriciq nothing) and drives:
#   baseline: bench/prof-null (--profiler: entry points that return, so
#             the driver's proxy thread and calls are the same), no
#             telemetry;
#   fabriciq: the profiler SPANK names (NCCL_PROFILER_PLUGIN), its
#             telemetry thread sending to the node's agent, which tags,
#             spools and forwards it to the controller and PostgreSQL.
# allreduce 64 MiB (busbw) and 8 B (time per op), baseline and fabriciq
# alternating (ABBA per round, BENCH_PROF_ROUNDS rounds, default 3), each
# figure the median over its runs with the spread (min-max). Goal: at
# most 1 % of busbw lost at 64 MiB; at 8 B at most 2 % of the per-op time.
# The hosts share this machine's cores: the spread is what one run moves.
# Needs root and namespaces; says why and exits 0 if not.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
. "$top_srcdir/tests/scenarios/scenario.sh" >/dev/null
skip_all() { echo "bench-profiler-testbed: skipped ($*)"; exit 0; }
sc_require bprf
NET=$B/nccl-plugin/.libs/libnccl-net-fabriciq.so
NULLP=$(cd "$B" && pwd)/bench/.libs/libfqprofnull.so
[ -f "$B/nccl-profiler/.libs/libnccl-profiler-fabriciq.so" ] && [ -f "$NULLP" ] ||
	skip_all "the profiler plugin or bench/prof-null is not built"
SC_SPANK_MONITOR="profiler_libdir=$B/nccl-profiler/.libs"
ROUNDS=${BENCH_PROF_ROUNDS:-3}
sc_up 4 1 1 1 >/dev/null || { echo "bench-profiler-testbed: the cluster did not come up"; exit 1; }
port=17400

# run WHO SIZE ITERS: rank 0's "busbw time_us" (WHO: base or prof)
run() {
	local extra=() out
	[ "$1" = base ] && extra=(--profiler "$NULLP")
	port=$((port + 1))
	out=$(FABRICIQ_TELEMETRY=0 timeout 300 "$TB" slurm srun -w 'n[1-4]' -N4 -n4 -J "b$1" --fabriciq=monitor sh -c \
		'exec "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' sh \
		"$CB" -p "$NET" "${extra[@]}" --bootstrap "198.19.0.3:$port" --coll allreduce -b "$2" -e "$2" -n "$3" -w 2 \
		--timeout 120 2>&1)
	awk '$1 == "[r0]" && $2 ~ /^[0-9]+$/ && NF == 9 { print $8, $6 }' <<<"$out" | tail -1
	grep -q "^\[r0\] # OK\|^\[r0\] *[0-9]" <<<"$out" || echo "$out" | tail -3 >&2
}
# stats FILE COL: "median (min-max)" of column COL
stats() {
	awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s %s %s", m, v[1], v[NR] }'
}
tmp=$S/bench
mkdir -p "$tmp"
for r in $(seq "$ROUNDS"); do
	for spec in "64M 5" "8 2000"; do
		set -- $spec
		for who in base prof prof base; do
			x=$(run $who "$1" "$2")
			[ -n "$x" ] || { echo "bench-profiler-testbed: round $r, $who $1 failed"; exit 1; }
			echo "$x" >>"$tmp/$who-$1"
		done
	done
done
for size in 64M 8; do
	read -r bb bb0 bb1 <<<"$(stats "$tmp/base-$size" 1)"
	read -r pb pb0 pb1 <<<"$(stats "$tmp/prof-$size" 1)"
	read -r bt bt0 bt1 <<<"$(stats "$tmp/base-$size" 2)"
	read -r pt pt0 pt1 <<<"$(stats "$tmp/prof-$size" 2)"
	awk -v s="$size" -v n="$(wc -l <"$tmp/base-$size")" -v bb="$bb" -v bb0="$bb0" -v bb1="$bb1" -v pb="$pb" \
		-v pb0="$pb0" -v pb1="$pb1" -v bt="$bt" -v bt0="$bt0" -v bt1="$bt1" -v pt="$pt" -v pt0="$pt0" -v pt1="$pt1" 'BEGIN {
		printf "allreduce %s, 4 ranks on the emulated cluster, %d runs each: baseline busbw %.3f GB/s (%.3f-%.3f), time %.1f us (%.1f-%.1f); fabriciq busbw %.3f GB/s (%.3f-%.3f), time %.1f us (%.1f-%.1f): busbw ratio %.3f, time %+.1f %%\n",
			s, n, bb, bb0, bb1, bt, bt0, bt1, pb, pb0, pb1, pt, pt0, pt1, (bb > 0 ? pb / bb : 0), (bt > 0 ? (pt - bt) / bt * 100 : 0) }'
done
# what the profiler's telemetry did meanwhile: the agents' counts, the rows stored
fwd=$(for n in n1 n2 n3 n4; do "$AGENT" -c /dev/null -s "status_file=$S/agent-$n.json" --status --json |
	json '"%d/%d" % (j["profiler_forwarded"], j["profiler_removed"])'; done | tr '\n' ' ')
echo "telemetry: the agents forwarded/removed profiler reports: $fwd; stored: $(psql_ctl "select count(distinct job_id) || ' jobs, ' ||
	count(*) || ' windows' from fabriciq.profiler_windows") and $(psql_ctl "select count(*) || ' op records'
	from fabriciq.profiler_ops")"
