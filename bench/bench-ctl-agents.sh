#!/usr/bin/env bash
# bench-ctl-agents: 1000 simulated agents (AGENTS) connected at once for
# ~20 s (SECONDS_RUN), each reporting 4 probe windows, 2 lane windows and
# a clock report per second: every frame must be acknowledged and stored
# (counted by seq); prints the controller's RSS and CPU time, and the
# frame rate against the agents' offered rate (the baseline of this run).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$top_srcdir/tests/db/with-postgres.sh" "$0" "$@"
fi
. "$top_srcdir/tests/controller/ctl-lib.sh"
agents=${AGENTS:-1000}
run=${SECONDS_RUN:-20}
ulimit -n 65536 2>/dev/null
munge_up || { echo "bench-ctl-agents: munged did not start"; exit 1; }
ctl_up || { echo "bench-ctl-agents: controller did not start"; exit 1; }
clk=$(getconf CLK_TCK)
t0=$(date +%s%N)
out=$(sim --agents "$agents" --duration "$run" --probes 4 --lanes 2 --drain 60)
rc=$?
t1=$(date +%s%N)
read -r ut st < <(awk '{print $14, $15}' "/proc/$CTL_PID/stat")
rss=$(awk '/VmHWM/{print $2}' "/proc/$CTL_PID/status")
echo "$out"
sent=$(echo "$out" | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
acked=$(echo "$out" | sed -n 's/.* acked=\([0-9]*\).*/\1/p')
stored=$(q "select (select count(*) from fabriciq.probe_windows) + (select count(*) from fabriciq.lane_windows) +
	(select count(distinct (node, reported_at)) from fabriciq.clock_estimates)")
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
cpu=$(awk -v u="$ut" -v s="$st" -v c="$clk" 'BEGIN { printf "%.1f", (u + s) / c }')
echo "agents: $agents for ${wall}s; frames sent $sent, acked $acked, stored $stored"
echo "controller: peak RSS $((rss / 1024)) MiB, CPU ${cpu}s over ${wall}s ($(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.0f", 100 * c / w }')% of one core)"
awk -v a="$stored" -v b="$sent" 'BEGIN { printf "ratio stored / sent: %.3f (goal 1.000)\n", a / b }'
ctl_down
[ "$rc" -eq 0 ] && [ "$stored" -eq "$sent" ]
