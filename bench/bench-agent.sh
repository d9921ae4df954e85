#!/usr/bin/env bash
# The node agent at scale on the emulated cluster: 11 hosts x 2 rails, every
# host probing every other on both rails, so each NIC has K = 10 peers (the
# default K). Prints:
#  - one agent's CPU (share of one core) and memory (RSS) over
#    BENCH_AGENT_SECONDS (default 30), and its probe overhead on the wire
#    against the link speed (goal <= 0.1 %);
#  - the detection latency of `link down` over BENCH_AGENT_TRIALS (default
#    20) cuts of one rail: p50/p99/max from the testbed's cut to the agent's
#    decision, against the configured detection time (agent.down_after,
#    250 ms; goal p99 <= 300 ms).
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir/build}"
. "$top_srcdir/tests/testbed/lib/testlib.sh" # TB, FQTB_HELPERS, tb_agents_start
AGENT="$top_builddir/slurmd-agent/fabriciq-agent"
export FQTB_STATE=${TMPDIR:-/tmp}/fqtb-bagt-$$
SECS=${BENCH_AGENT_SECONDS:-30}
TRIALS=${BENCH_AGENT_TRIALS:-20}
HOSTS=11

[ "$(id -u)" -eq 0 ] || { echo "bench-agent: SKIP: needs root"; exit 0; }
[ -x "$AGENT" ] || { echo "bench-agent: fabriciq-agent not built"; exit 1; }
trap '"$TB" down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

"$TB" up --prefix bagt --hosts $HOSTS --rails 2 --services none --max-offset 100ms >/dev/null 2>&1 ||
	{ echo "bench-agent: testbed up failed"; exit 1; }
tb_agents_start "$AGENT" || { echo "bench-agent: agents did not start"; exit 1; }
status() { "$AGENT" -c /dev/null -s "status_file=$FQTB_STATE/agent-$1.json" --status --json; }
sleep 8

pid=$(status n1 | tr -d ' \n' | grep -o '"pid":[0-9]*' | grep -o '[0-9]*$')
paths=$(status n1 | grep -c '"peer_node"')
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(date +%s.%N)
c0=$(ticks)
sleep "$SECS"
c1=$(ticks)
t1=$(date +%s.%N)
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
over=$(status n1 | tr -d ' \n' | grep -o '"probe_overhead_pct":[0-9.e-]*' | head -1 | cut -d: -f2)
bps=$(status n1 | tr -d ' \n' | grep -o '"probe_bits_per_s":[0-9.e+]*' | head -1 | cut -d: -f2)
echo "bench-agent: n1 probes $paths paths (K = $((HOSTS - 1)) peers x 2 NICs), one pair per path every 20 ms"
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v rss="$rss" -v hwm="$hwm" -v s="$SECS" \
	'BEGIN { printf "bench-agent: agent CPU %.2f %% of one core over %d s; RSS %.1f MiB (peak %.1f MiB)\n",
		100 * (c1 - c0) / hz / (t1 - t0), s, rss / 1024, hwm / 1024 }'
awk -v o="$over" -v b="$bps" 'BEGIN { printf "bench-agent: probe overhead per NIC %.0f bit/s on the wire = %.4f %% of the link (goal <= 0.1 %%)\n", b, o }'

# detection latency: cut rail 1 of n2, n1 decides its rail1 -> n2 path is DOWN
lat=$FQTB_STATE/latencies
: >"$lat"
for ((k = 1; k <= TRIALS; k++)); do
	"$TB" link down n2 1 >/dev/null
	cut=$("$TB" events | awk '/link down n2-rail1/ { t = $1 } END { print t }')
	sleep 1.3 # detection + a status write
	det=$(status n1 | tr -d ' \n' | grep -o '"local_nic":"rail1","peer_node":"n2","peer_nic":"rail1","state":"down","since_realtime_ns":[0-9]*,"detected_realtime_ns":[0-9]*' |
		tail -1 | grep -o '[0-9]*$')
	[ -n "$det" ] && [ "$det" -gt "$cut" ] && echo $(((det - cut) / 1000)) >>"$lat"
	"$TB" link up n2 1 >/dev/null
	sleep 1.2
done
n=$(wc -l <"$lat")
sort -n "$lat" | awk -v n="$n" -v trials="$TRIALS" '{ v[NR] = $1 }
	END {
		if (n == 0) { print "bench-agent: no detection measured"; exit 1 }
		p50 = v[int((n + 1) * 0.5)]; p99 = v[n > 1 ? int(n * 0.99 + 0.999) : 1]
		if (p99 > v[n]) p99 = v[n]
		printf "bench-agent: link-down detection over %d of %d trials: p50 %.1f ms, p99 %.1f ms, max %.1f ms (min %.1f ms)\n",
			n, trials, p50 / 1000, p99 / 1000, v[n] / 1000, v[1] / 1000
		printf "bench-agent: p99 / configured detection time (250 ms) = %.2f; goal p99 <= 300 ms: %s\n",
			p99 / 250000, p99 <= 300000 ? "met" : "NOT met"
	}'
