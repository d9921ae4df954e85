#!/usr/bin/env bash
# bench-ctl-ingest: lane samples/s through the controller (fq-agentsim's
# agents authenticate with munge and send LaneReport frames as fast as the
# acks come back; the time is from the first frame to the last ack, so every
# row is committed) vs psql's \copy of the very same rows (dumped from the
# table afterwards) on the same private PostgreSQL in the same run. Each
# side runs ROUNDS times (default 3), alternating, the best of each is
# compared: the machine is shared, the best round is the least disturbed.
# Prints both rates, the ratio (goal >= 0.7) and the controller's CPU time
# per row (user + system, from /proc), which load on the machine disturbs
# less than wall time. AGENTS / LANES override the defaults (20 agents x
# 10000 lane frames).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$top_srcdir/tests/db/with-postgres.sh" "$0" "$@"
fi
. "$top_srcdir/tests/controller/ctl-lib.sh"
agents=${AGENTS:-20}
lanes=${LANES:-10000}
rounds=${ROUNDS:-3}
munge_up || { echo "bench-ctl-ingest: munged did not start"; exit 1; }
cols="interval_start, interval_end, job_id, step_id, src_rank, dst_rank, lane, lane_kind, src_node, src_nic,
      dst_node, dst_nic, bytes, chunks, messages, owd_min_ns, owd_p50_ns, owd_p99_ns, owd_max_ns, tcp_rtt_us,
      tcp_retrans, tcp_ce, synchronised"
cols=$(echo $cols)
data=$T/lanes.copy
want=$((agents * lanes))
# user + system CPU ticks of a process
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

ctl_best=0 psql_best=0 cpu_best=
for round in $(seq "$rounds"); do
	q "truncate fabriciq.lane_windows" >/dev/null
	q "checkpoint" >/dev/null
	ctl_up || { echo "bench-ctl-ingest: controller did not start"; exit 1; }
	c0=$(cpu_ticks "$CTL_PID")
	# A fresh prefix per round: the same node names would be replays.
	out=$(sim --agents "$agents" --burst "$lanes" --drain 120 --prefix "r$round-") ||
		{ echo "bench-ctl-ingest: not all acked: $out"; exit 1; }
	c1=$(cpu_ticks "$CTL_PID")
	secs=$(echo "$out" | sed -n 's/^burst: \([0-9.]*\) s/\1/p')
	rows=$(q "select count(*) from fabriciq.lane_windows")
	[ "$rows" -eq "$want" ] || { echo "bench-ctl-ingest: $rows rows stored, $want sent"; exit 1; }
	ctl_down
	rate=$(awk -v r="$rows" -v s="$secs" 'BEGIN { printf "%d", r / s }')
	# (includes authenticating the agents: a constant, small next to the rows)
	us_row=$(awk -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v r="$rows" 'BEGIN { printf "%.2f", c / hz * 1e6 / r }')
	echo "round $round: controller: $rows lane samples from $agents agents in $secs s: $rate rows/s, $us_row us CPU/row"
	[ "$rate" -gt "$ctl_best" ] && ctl_best=$rate
	if [ -z "$cpu_best" ] || awk -v a="$us_row" -v b="$cpu_best" 'BEGIN { exit !(a < b) }'; then cpu_best=$us_row; fi

	rm -f "$data"
	q "\\copy (select $cols from fabriciq.lane_windows) to '$data'" >/dev/null
	chown postgres: "$data" 2>/dev/null
	q "truncate fabriciq.lane_windows" >/dev/null
	q "checkpoint" >/dev/null
	t0=$(date +%s%N)
	q "\\copy fabriciq.lane_windows ($cols) from '$data'" >/dev/null || { echo "bench-ctl-ingest: psql \\copy failed"; exit 1; }
	t1=$(date +%s%N)
	rate=$(( rows * 1000000000 / (t1 - t0) ))
	echo "round $round: psql \\copy of the same rows: $rate rows/s"
	[ "$rate" -gt "$psql_best" ] && psql_best=$rate
done
echo "controller: $ctl_best rows/s (best of $rounds), $cpu_best us controller CPU per row"
echo "psql \\copy of the same rows: $psql_best rows/s (baseline, best of $rounds)"
awk -v a="$ctl_best" -v b="$psql_best" 'BEGIN { printf "ratio controller / psql \\copy: %.2f (goal >= 0.7)\n", a / b }'
