#!/usr/bin/env bash
# The fabric: ECMP spreads flows over both spines by source port, `link
# down` cuts exactly one rail of one host and `up` restores it, a TBF-shaped
# spine link under load queues while an unshaped one does not, and `flap`
# produces the events it promises.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
tb_setup tf
plan 30

printf '# host offsets\nn1 -12.5ms\nn2 0.0421\nn4 750us\n' >"$FQTB_STATE.offsets"
check "up: fabric only (4 hosts, 2 rails, 2 leaves, 2 spines), offsets from a file" \
	tb up --prefix "$TB_PFX" --services none --clock-offsets "$FQTB_STATE.offsets"
rm -f "$FQTB_STATE.offsets"
is "$(tb truth | tr '\n' ' ')" "n1 -12500000 n2 42100000 n4 750000 n3 0 " "truth holds the file's offsets (n3 unnamed: 0)"
tb_offsets_match 100000
ok $? "each host's MONOTONIC_RAW is offset as the file says (within 100 us)"
FLOW="$FQTB_HELPERS/tb-flow"
txp() { tb exec "$1" cat "/sys/class/net/$2/statistics/tx_packets"; }

# --- ECMP: n1 (leaf1) -> n3 (leaf2) over rail 0, 16 flows by source port
"$TB" exec n3 "$FLOW" sink --udp --port 9000 --seconds 30 >/dev/null &
sink=$!
disown "$sink" # killed below; no job-status noise
sleep 0.3
on1=0 on2=0 split=0
for k in $(seq 0 15); do
	a1=$(txp leaf1 s1) a2=$(txp leaf1 s2)
	tb exec n1 "$FLOW" send --udp --dst 198.19.0.7 --port 9000 --sport $((41000 + k)) --count 50 --size 200 >/dev/null
	d1=$(($(txp leaf1 s1) - a1)) d2=$(($(txp leaf1 s2) - a2))
	if [ $d1 -ge 50 ] && [ $d2 -lt 5 ]; then on1=$((on1 + 1))
	elif [ $d2 -ge 50 ] && [ $d1 -lt 5 ]; then on2=$((on2 + 1))
	else split=$((split + 1)); diag "flow sport $((41000 + k)): spine1 $d1, spine2 $d2 packets"; fi
done
kill "$sink" 2>/dev/null
diag "16 flows: $on1 via spine1, $on2 via spine2, $split split"
is $split 0 "each flow's packets all take one spine"
[ $on1 -ge 1 ] && [ $on2 -ge 1 ]; ok $? "flows with different source ports use both spines"

# --- link down cuts exactly one rail of one host
reach() { tb exec "$1" ping -c1 -W1 -I "$2" "$3" >/dev/null 2>&1; }
check "before: n1 rail1 reaches n3 rail1" reach n1 198.19.1.3 198.19.1.7
check "link down n3 1" tb link down n3 1
! reach n1 198.19.1.3 198.19.1.7; ok $? "n3 rail1 is unreachable"
reach n1 198.19.0.3 198.19.0.7 && reach n2 198.19.1.5 198.19.1.9 && reach n4 198.19.1.9 198.19.1.3
ok $? "n3 rail0 and every other host's rail1 still work"
tb status --json | grep -q '"link":"n3-rail1","state":"down"'; ok $? "status reports n3-rail1 down"
check "link up n3 1" tb link up n3 1
wait_reach() { for _ in $(seq 1 20); do reach "$@" && return 0; sleep 0.1; done; return 1; }
check "n3 rail1 reachable again" wait_reach n1 198.19.1.3 198.19.1.7

# --- a spine link down: ECMP routes around it
check "link down leaf1-spine1" tb link down leaf1-spine1
a1=$(txp leaf1 s1 2>/dev/null || echo 0)
all=0
for k in 0 1 2 3 4 5; do reach n1 198.19.0.3 198.19.0.7 || all=1; done
ok $all "n1 still reaches n3 through spine2"
! tb exec leaf2 ip route show 198.19.0.2/31 | grep -q 'dev s1'
ok $? "leaf2 stops sending leaf1's hosts through spine1"
tb link up leaf1-spine1 && wait_reach n1 198.19.1.3 198.19.1.7 && tb exec leaf1 ip route show 198.19.0.6/31 | grep -q 'dev s1'
ok $? "link up leaf1-spine1 restores the ECMP route over spine1"

# --- queueing: two TCP flows leaf1 -> leaf2, unshaped vs a 50 Mbit/s TBF on
# leaf1-spine1. leaf1-spine2 is cut meanwhile, so every flow (and the ping)
# crosses leaf1-spine1 whatever the ECMP hash picks.
rtt_under_load() { # median ping RTT (ms) n1 -> n3 while n1->n3 and n2->n4 push TCP
	tb exec n3 "$FLOW" sink --port 9100 --seconds 6 >/dev/null &
	tb exec n4 "$FLOW" sink --port 9100 --seconds 6 >/dev/null &
	sleep 0.3
	tb exec n1 "$FLOW" send --dst 198.19.0.7 --port 9100 --seconds 4 >/dev/null &
	tb exec n2 "$FLOW" send --dst 198.19.0.9 --port 9100 --seconds 4 >/dev/null &
	sleep 1
	tb exec n1 ping -q -c 12 -i 0.2 -I 198.19.0.3 198.19.0.7 | awk -F/ '/^rtt/ { print $5 }'
	wait
}
tb link down leaf1-spine2
base=$(rtt_under_load)
check "shape leaf1-spine1 at 50mbit" tb shape leaf1-spine1 50mbit
shaped=$(rtt_under_load)
tb shape leaf1-spine1 off
tb link up leaf1-spine2
diag "RTT under two-flow load: unshaped $base ms, shaped $shaped ms"
awk -v b="$base" -v s="$shaped" 'BEGIN { exit !(s - b >= 5) }'; ok $? "the shaped spine link queues (>= 5 ms more RTT)"
awk -v b="$base" 'BEGIN { exit !(b < 5) }'; ok $? "the unshaped links do not (< 5 ms RTT under the same load)"

# --- the TBF's bucket: link_burst's by default, --burst's when given (an
# idle link passes a bucket at once), both ends; a bucket under a packet
# refused. tc keeps a bucket in its clock's ticks at the rate: within 16 bytes.
tbf_bursts() { # tbf_bursts WANT: both ends' bucket of leaf1-spine1 within 16 bytes of WANT; prints them
	local got
	got=$(for ns in leaf1 spine1; do
		tb exec "$ns" tc qdisc show | awk '$2 == "tbf" { for (i = 1; i < NF; i++) if ($i == "burst") print $(i + 1) }'
	done | paste -sd' ')
	echo "$got"
	awk -v w="$1" -v g="$got" 'BEGIN { n = split(g, v, " "); for (i = 1; i <= n; i++) { sub(/b$/, "", v[i]); d = v[i] - w
		if (v[i] !~ /^[0-9]+$/ || d > 16 || d < -16) exit 1 } exit n != 2 }'
}
tb shape leaf1-spine1 200mbit && got=$(tbf_bursts 100000)
ok $? "shape: the bucket is 4 ms of the rate by default (100000 bytes at 200mbit), both ends ($got)"
tb shape leaf1-spine1 200mbit --latency 5 --burst 3028 && got=$(tbf_bursts 3028)
ok $? "shape --burst 3028: both ends' bucket ($got)"
tb qos leaf1-spine1 200mbit --burst 3028 --latency 5 "lat,dscp=46,prio=0" && got=$(tbf_bursts 3028)
ok $? "qos --burst 3028 (options in either order): both ends' bucket ($got)"
out=$(tb shape leaf1-spine1 200mbit --burst 1000 2>&1)
[ $? -ne 0 ] && [[ "$out" == *"--burst must be 1514-67108864 bytes"* ]]
ok $? "shape --burst 1000: refused, says why" || diag "$out"
tb shape leaf1-spine1 off

# --- flap: N down/up cycles, each an event
check "flap n2 0 --count 3 --period 100" tb flap n2 0 --count 3 --period 100
is "$(tb events | grep -c 'link down n2-rail0')/$(tb events | grep -c 'link up n2-rail0')" "3/3" "3 down and 3 up events for n2-rail0"

# --- status/truth JSON and the hook for our own daemons
tb status --json | json_pp >/dev/null && tb truth --json | json_pp >/dev/null
ok $? "status --json and truth --json are valid JSON"
dpid=$(tb daemon start n2 sleeper -- sleep 60)
for _ in $(seq 1 20); do [ "$(tr -d '\0' </proc/"$dpid"/cmdline)" = sleep60 ] && break; sleep 0.1; done
[ "$(ip netns identify "$dpid")" = "$TB_PFX-n2" ] && [ "$(tr -d '\0' </proc/"$dpid"/cmdline)" = sleep60 ]
ok $? "daemon start runs the command in n2 with its pid recorded"
check "daemon stop" tb daemon stop n2 sleeper
! kill -0 "$dpid" 2>/dev/null || [ "$(awk '{print $3}' /proc/"$dpid"/stat)" = Z ]
ok $? "the daemon is gone"
dpid=$(tb daemon start n4 sleeper -- sleep 60)
tb down >/dev/null 2>&1
! kill -0 "$dpid" 2>/dev/null || [ "$(awk '{print $3}' /proc/"$dpid"/stat)" = Z ]
ok $? "down stops daemons too"
