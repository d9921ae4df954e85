#!/usr/bin/env bash
# bench-ctl-ingest: lane samples/s through the controller vs psql's \copy
# of the very same rows (dumped from the table after the first controller
# round) into the same table, with the same indexes, on the same private
# PostgreSQL in the same run.
#
# Controller side: fq-agentsim's agents authenticate with munge, encode
# all their LaneReport frames before the clock starts (the simulator's
# protobuf encoding shares the 2 cores and is no part of the controller's
# cost), then hand them to their sockets at once; the time runs to the ack
# that completes the last agent, so every row is committed (acks follow
# the commit). psql side: \copy of the dumped file, timed around psql.
# The sides alternate, ROUNDS rounds each (default 5); the medians are
# compared, and the median of the per-round ratios is printed too (each
# round's pair shares the same load on a shared machine). Also printed:
# the controller's CPU time per row (user + system, from /proc) and its
# per-flush breakdown (log line "ingest: ... flushes"). AGENTS / LANES
# override the defaults (20 agents x 10000 lane frames). BEFORE_CTL=PATH
# (another fabriciq-controller build, e.g. the previous commit's) is timed
# in the same rounds too, for a before/after under the same load.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$top_srcdir/tests/db/with-postgres.sh" "$0" "$@"
fi
. "$top_srcdir/tests/controller/ctl-lib.sh"
agents=${AGENTS:-20}
lanes=${LANES:-10000}
rounds=${ROUNDS:-5}
munge_up || { echo "bench-ctl-ingest: munged did not start"; exit 1; }
cols="interval_start, interval_end, job_id, step_id, src_rank, dst_rank, lane, lane_kind, src_node, src_nic,
      dst_node, dst_nic, bytes, chunks, messages, owd_min_ns, owd_p50_ns, owd_p99_ns, owd_max_ns, tcp_rtt_us,
      tcp_retrans, tcp_ce, synchronised"
cols=$(echo $cols)
data=$T/lanes.copy
want=$((agents * lanes))
# user + system CPU ticks of a process
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ctl_rates= psql_rates= ratios= cpus=
# ctl_round BINARY ROUND: one controller round; sets crate and us_row.
ctl_round() {
	local bin=$1 r=$2 out c0 c1 secs rows
	q "truncate fabriciq.lane_windows" >/dev/null
	q "checkpoint" >/dev/null
	CTL_BIN=$bin ctl_up || { echo "bench-ctl-ingest: controller $bin did not start"; exit 1; }
	c0=$(cpu_ticks "$CTL_PID")
	# A fresh prefix per run: the same node names would be replays.
	out=$(sim --agents "$agents" --burst "$lanes" --drain 120 --prefix "r$r-$CTL_N-") ||
		{ echo "bench-ctl-ingest: not all acked: $out"; exit 1; }
	c1=$(cpu_ticks "$CTL_PID")
	secs=$(echo "$out" | sed -n 's/^burst: \([0-9.]*\) s/\1/p')
	rows=$(q "select count(*) from fabriciq.lane_windows")
	[ "$rows" -eq "$want" ] || { echo "bench-ctl-ingest: $rows rows stored, $want sent"; exit 1; }
	ctl_down
	crate=$(awk -v r="$rows" -v s="$secs" 'BEGIN { printf "%d", r / s }')
	# (includes authenticating the agents: a constant, small next to the rows)
	us_row=$(awk -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v r="$rows" 'BEGIN { printf "%.2f", c / hz * 1e6 / r }')
	echo "round $r: controller $bin: $rows lane samples from $agents agents in $secs s: $crate rows/s, $us_row us CPU/row"
	grep -h "ingest: .*flushes" "$CTL_LOG" | tail -1 | sed "s/^/round $r:   /"
}
before_rates=
for round in $(seq "$rounds"); do
	if [ -n "${BEFORE_CTL:-}" ]; then
		ctl_round "$BEFORE_CTL" "$round"
		before_rates="$before_rates $crate"
	fi
	ctl_round "$CTL_BIN" "$round"

	# The baseline loads exactly the rows the controller stored.
	[ -s "$data" ] || q "\\copy (select $cols from fabriciq.lane_windows) to '$data'" >/dev/null
	q "truncate fabriciq.lane_windows" >/dev/null
	q "checkpoint" >/dev/null
	t0=$(date +%s%N)
	q "\\copy fabriciq.lane_windows ($cols) from '$data'" >/dev/null || { echo "bench-ctl-ingest: psql \\copy failed"; exit 1; }
	t1=$(date +%s%N)
	prate=$(( want * 1000000000 / (t1 - t0) ))
	echo "round $round: psql \\copy of the same rows: $prate rows/s (ratio this round $(awk -v a="$crate" -v b="$prate" 'BEGIN { printf "%.2f", a / b }'))"
	ctl_rates="$ctl_rates $crate" psql_rates="$psql_rates $prate" cpus="$cpus $us_row"
	ratios="$ratios $(awk -v a="$crate" -v b="$prate" 'BEGIN { printf "%.4f", a / b }')"
done
ctl_med=$(echo $ctl_rates | tr ' ' '\n' | median)
psql_med=$(echo $psql_rates | tr ' ' '\n' | median)
echo "controller: $ctl_med rows/s (median of $rounds: $ctl_rates), $(echo $cpus | tr ' ' '\n' | median) us controller CPU per row"
[ -n "$before_rates" ] &&
	echo "controller $BEFORE_CTL (before): $(echo $before_rates | tr ' ' '\n' | median) rows/s (median of $rounds: $before_rates)"
echo "psql \\copy of the same rows: $psql_med rows/s (baseline, median of $rounds: $psql_rates)"
awk -v a="$ctl_med" -v b="$psql_med" -v r="$(echo $ratios | tr ' ' '\n' | median)" \
	'BEGIN { printf "ratio controller / psql \\copy: %.2f (medians; median of per-round ratios %.2f; goal >= 0.7)\n", a / b, r }'
