#!/usr/bin/env bash
# fabriciq-agent on the emulated cluster: 4 hosts with random clock offsets
# (up to +-100 ms) probe each other on both rails. Every host's estimate of
# every other host's clock matches the testbed's truth; a cut rail is seen
# DOWN on exactly its paths within the detection time; 9 flaps count 9;
# malformed probes and bad configuration are refused.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
tb_setup ta
AGENT="$top_builddir/slurmd-agent/fabriciq-agent"
[ -x "$AGENT" ] || skip_all "fabriciq-agent not built"
plan 14

check "up: 4 hosts x 2 rails, random offsets up to 100 ms" tb up --prefix "$TB_PFX" --services none --max-offset 100ms
status() { "$AGENT" -c /dev/null -s "status_file=$FQTB_STATE/agent-$1.json" --status --json; }
table() { "$AGENT" -c /dev/null -s "status_file=$FQTB_STATE/agent-$1.json" --status; }
downs() { table "$1" | awk '$3 == "down" { print $1, $2 }'; }
tb_agents_start "$AGENT"
# Every path needs a clock fit over its window (agent.window, 4 s): wait
# until all 24 have one, bounded, instead of a fixed sleep that a loaded
# machine outruns.
estimates() { for i in 1 2 3 4; do status "n$i"; done | grep -c '"offset_ns"'; }
for ((t = 0; t < 60; t++)); do
	[ "$(estimates)" -ge 24 ] && break
	sleep 0.5
done
diag "clock estimates after $((t / 2)).$((t % 2 * 5)) s of waiting: $(estimates)"

# each agent's loop runs SCHED_FIFO 1 (agent.rt_priority), by the status
# file and by the kernel (ps: class FF, priority 1)
sched=$(for i in 1 2 3 4; do status "n$i" | tr -d ' \n' | grep -o '"scheduling":"[a-z0-9:]*"' | cut -d'"' -f4; done | sort | uniq -c | xargs)
kern=$(for i in 1 2 3 4; do ps -o cls=,rtprio= -p "$(status "n$i" | tr -d ' \n' | grep -o '"pid":[0-9]*' | cut -d: -f2)"; done |
	xargs -n2 | sort | uniq -c | xargs)
[ "$sched" = "4 fifo:1" ] && [ "$kern" = "4 FF 1" ]
ok $? "the agents' loops run SCHED_FIFO 1: status $sched; kernel $kern"

# offsets: every (host, path) estimate against truth
declare -A truth
while read -r h off; do truth[$h]=$off; done < <(tb truth)
worst=0 bad=0 outside=0 n=0
for i in 1 2 3 4; do
	while read -r peer off bound; do
		want=$((truth[$peer] - truth[n$i]))
		err=$((off - want))
		err=${err#-}
		n=$((n + 1))
		[ "$err" -gt "$worst" ] && worst=$err
		[ "$err" -le 50000 ] || { bad=1; diag "n$i -> $peer: estimate $off, truth $want"; }
		[ "$err" -le "$bound" ] || { outside=$((outside + 1)); diag "n$i -> $peer: error $err ns beyond its bound $bound ns"; }
	done < <(status "n$i" | awk -F'"' '/"peer_node"/ { p = $4 } /"offset_ns"/ { gsub(/[^0-9-]/, "", $3); o = $3 }
		/"bound_ns"/ { gsub(/[^0-9-]/, "", $3); print p, o, $3 }')
done
is "$n" 24 "24 paths have a clock estimate"
ok $bad "every estimate within 50 us of truth (worst: $worst ns)"
diag "$outside of $n estimates beyond their own bound"
is "$outside" 0 "every error within the estimate's own error bound"

# a cut rail: exactly its paths go down, and fast
tb link down n2 1
sleep 1.5 # detection (250 ms) + the next status write (every 1 s)
is "$(for i in 1 3 4; do downs "n$i"; done | tr '\n' ' ')" "rail1 n2:rail1 rail1 n2:rail1 rail1 n2:rail1 " \
	"link down n2 rail1: n1, n3 and n4 each see exactly their rail1 -> n2:rail1 path down"
is "$(downs n2 | awk '$1 == "rail1"' | wc -l)" 3 "n2 sees its 3 rail1 paths down (its NIC is cut)"
cut=$(tb events | awk '/link down n2-rail1/ { print $1; exit }')
det=$(status n1 | tr -d ' \n' | grep -o '"state":"down","since_realtime_ns":[0-9]*,"detected_realtime_ns":[0-9]*' | head -1 | grep -o '[0-9]*$')
lat=$(((det - cut) / 1000000))
diag "detection latency: $lat ms (down_after 250 ms)"
[ "$lat" -ge 0 ] && [ "$lat" -le 400 ]; ok $? "detected within 400 ms ($lat ms)"
tb link up n2 1
sleep 1.5
is "$(downs n1; downs n2)" "" "after link up: every path of n1 and n2 is up again"

# 9 flaps of n3 rail0 (600 ms down each, detection takes 250 ms) -> 9 flaps counted by n1
tb flap n3 0 --count 9 --period 1200
sleep 2 # the last DOWN/UP, then a fresh status write
flaps=$(status n1 | tr -d ' \n' | grep -o '"local_nic":"rail0","peer_node":"n3"[^}]*"flaps_last_hour":[0-9]*' | grep -o '[0-9]*$')
is "$flaps" 9 "9 flaps of n3 rail0 counted by n1" ||
	{ tb events | grep n3-rail0 | sed 's/^/# testbed: /'; status n1 | tr -d ' \n' | grep -o '{"local_nic":"rail0","peer_node":"n3","peer_nic":"rail0","state":"[a-z]*","since_realtime_ns":[0-9]*,"detected_realtime_ns":[0-9]*}' | sed 's/^/# agent: /'; }
other=$(status n1 | tr -d ' \n' | grep -o '"local_nic":"rail1","peer_node":"n3"[^}]*"flaps_last_hour":[0-9]*' | grep -o '[0-9]*$')
is "$other" 0 "n1 -> n3 rail1 saw no flap"

# hostile input: garbage on the probe port; bad configuration
tb exec n2 "$FQTB_HELPERS/tb-flow" send --udp --dst 198.19.0.3 --port 7101 --count 20 --size 30 >/dev/null
sleep 1.2
bad=$(status n1 | tr -d ' \n' | grep -o '"malformed_packets":[0-9]*' | grep -o '[0-9]*$')
[ "${bad:-0}" -ge 20 ] && kill -0 "$(cat "$FQTB_STATE/daemons/n1.agent.pid")"
ok $? "20 malformed probes counted ($bad), agent still running"
out=$("$AGENT" -c /dev/null -s bogus=1 2>&1)
[ $? -ne 0 ] && grep -q "unknown key 'agent.bogus'" <<<"$out"; ok $? "an unknown setting is refused: $out"
printf 'agent.probe_interval = fast\n' >"$FQTB_STATE/bad.conf"
out=$("$AGENT" -c "$FQTB_STATE/bad.conf" 2>&1)
[ $? -ne 0 ] && grep -q "bad.conf:1: agent.probe_interval: 'fast' is not a valid duration" <<<"$out"
ok $? "a bad value is refused with file:line: $out"
