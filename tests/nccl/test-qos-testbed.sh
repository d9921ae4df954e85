#!/usr/bin/env bash
# QoS between jobs on the emulated cluster, its mechanics (bench-qos.sh
# measures the figures): 4 hosts on 2 leaves, one spine; both leaf-spine
# links at 100 Mbit/s scheduled by class (fabriciq-testbed qos: latency,
# DSCP 46, strict priority; bulk, DSCP 10, weight 4). A latency job (n1,
# n3: 8 KiB allreduce, FABRICIQ_DSCP=46) beside a bulk job (n2, n4: 16 MiB
# alltoall, FABRICIQ_DSCP=10), control mode: every lane socket of both
# ends carries its job's class (ss --tos), leaf1's port to the spine
# counts each job's bytes in its class and next to nothing unmarked, the
# bulk class holds a standing queue while the latency class holds at most
# its one message (tc's backlog, sampled every 100 ms), and the latency job prints its
# per-iteration quantiles over every iteration. Then the latency job
# unmarked: its lanes carry no class and its bytes go to the default
# class, none to the latency class. Every result is verified.
. "$(dirname "$0")/testbed.sh"
nccl_tb_setup qos
command -v ss >/dev/null && command -v tc >/dev/null || skip_all "needs ss and tc (iproute2)"
plan 15
LAT="latency,dscp=46,prio=0"
BULK="bulk,dscp=10,weight=4"
ITERS=2500

check "up: 4 hosts on 2 leaves, 1 spine, 1 rail" tb up --prefix "$TB_PFX" --hosts 4 --rails 1 --leaves 2 \
	--spines 1 --services none --clock-offsets zero
check "both leaf-spine links at 100mbit, scheduled by class" sh -c "'$TB' qos leaf1-spine1 100mbit '$LAT' '$BULK' &&
	'$TB' qos leaf2-spine1 100mbit '$LAT' '$BULK'"
# cubic, Linux's default, fills a queue (the machine's may be BBR, which
# keeps it low by itself); per route, as a namespace may only default to
# the machine's allowed ones
check "the bulk job's hosts run TCP cubic toward each other" sh -c "'$TB' exec n2 ip route add 198.19.0.9/32 via 198.19.0.4 dev rail0 congctl cubic &&
	'$TB' exec n4 ip route add 198.19.0.5/32 via 198.19.0.8 dev rail0 congctl cubic"
# MTU packets on the wire, as a NIC's TSO makes them (bench-qos.sh: a GSO
# packet crossing the emulated switches whole holds a link for ms)
check "the hosts' rails send one segment per packet" sh -c "for i in 1 2 3 4; do '$TB' exec n\$i ip link set dev rail0 gso_max_segs 1 || exit 1; done"
tmp=$(mktemp -d)
trap 'rc=$?; rm -rf "$tmp"; (exit $rc); tb_teardown' EXIT
read -r LNS LIF _ _ < <(TB_STATE=$FQTB_STATE link_lookup leaf1-spine1) # leaf1's port toward the spine
filters=$(ip netns exec "$LNS" tc filter show dev "$LIF" parent 2: | grep -c -e 'match 00b80000/00fc0000' -e 'match 00280000/00fc0000')
is "$filters" 2 "leaf1's spine port sends DSCP 46 and DSCP 10 each to its class"
port=31900

# job TAG HOST0 HOST1 DSCP|- ARGS...: 2 collbench ranks in the background (pids appended to $pids)
job() {
	local tag=$1 h0=$2 h1=$3 dscp=$4 r h envs=(FABRICIQ_MODE=control FABRICIQ_IFACES=rail0 FABRICIQ_TELEMETRY=0)
	shift 4
	port=$((port + 1))
	envs+=(FABRICIQ_PATH_PAGE="$tmp/none")
	[ "$dscp" = - ] || envs+=("FABRICIQ_DSCP=$dscp")
	for r in 1 0; do
		h=$([ $r -eq 0 ] && echo "$h0" || echo "$h1")
		tb exec "$h" env "${envs[@]}" timeout 120 "$CB" -p "$SO" --rank "$r" --nranks 2 \
			--bootstrap "198.18.0.$((10 + ${h0#n})):$port" "$@" >"$tmp/$tag.$r" 2>"$tmp/$tag.err.$r" &
		pids+=($!)
	done
}
wait_all() { local rc=0 p; for p in "${pids[@]}"; do wait "$p" || rc=1; done; pids=(); return $rc; }
# sent CLASS: bytes leaf1's spine port sent in HTB class 1:CLASS so far
sent() { ip netns exec "$LNS" tc -s class show dev "$LIF" classid "2:$1" | awk '/Sent/ { print $2; exit }'; }
# backlog CLASS: the bytes queued in it now
backlog() {
	ip netns exec "$LNS" tc -s class show dev "$LIF" classid "2:$1" |
		awk '/backlog/ { v = $2; sub(/b$/, "", v); m = 1; if (v ~ /K$/) { m = 1000; sub(/K$/, "", v) } else if (v ~ /M$/) { m = 1000000; sub(/M$/, "", v) }; print v * m; exit }'
}
# tos HOST PEER_IP TOS: "MARKED/TOTAL" of HOST's established TCP sockets
# to PEER_IP (its lanes) whose tos is TOS, as ss writes it (0, 0xb8)
tos() {
	tb exec "$1" ss -Htn --tos state established dst "$2" |
		awk -v w="tos:$3" '{ n++; for (i = 1; i <= NF; i++) if ($i == w) k++ } END { printf "%d/%d\n", k, n }'
}
p90() { sort -g "$1" | awk '{ v[NR] = $1 } END { print NR ? v[int(0.9 * (NR - 1)) + 1] : 0 }'; }
verified() { grep -q '^# OK' "$tmp/$1.0" && [ -z "$(awk '!/^#/ && $8 != 0' "$tmp/$1.0")" ]; }

# Classed: the bulk job first, the latency job inside its run.
for c in 10 11 99; do eval "s0_$c=$(sent $c)"; done
pids=()
job bulk n2 n4 10 --coll alltoall -b 16M -e 16M -n 8 -w 1 --idle-us 50
sleep 3
job lat n1 n3 46 --coll allreduce -b 8K -e 8K -n "$ITERS" -w 20 --gap-us 1000 --idle-us 5 --percentiles
: >"$tmp/q10" && : >"$tmp/q11"
for ((k = 0; k < 25; k++)); do
	sleep 0.1
	backlog 10 >>"$tmp/q10"
	backlog 11 >>"$tmp/q11"
	[ $k -eq 10 ] && { tos n1 198.19.0.7 0xb8 >"$tmp/tos.n1"; tos n3 198.19.0.3 0xb8 >"$tmp/tos.n3"; tos n2 198.19.0.9 0x28 >"$tmp/tos.n2"; }
done
wait_all
ok $? "classed: both jobs ran" || cat "$tmp"/*.err.* | grep -v INFO | head -6 | sed 's/^/#   /'
verified lat && verified bulk
ok $? "classed: every result of both jobs right"
is "$(cat "$tmp/tos.n1") $(cat "$tmp/tos.n3")" "4/4 4/4" "the latency job's lanes carry DSCP 46 (tos 0xb8) at both ends (n1 to n3, n3 to n1: 2 dialed, 2 accepted each)"
is "$(cat "$tmp/tos.n2")" "4/4" "the bulk job's lanes carry DSCP 10 (tos 0x28)"
for c in 10 11 99; do eval "d_$c=\$(( \$(sent $c) - s0_$c ))"; done
# n1 -> n3 and n2 -> n4 cross leaf1's spine port: each job's payload one way
want_lat=$(((ITERS + 20) * 8192)) want_bulk=$((9 * 8 << 20))
ok "$([ "$d_10" -ge "$want_lat" ] && [ "$d_11" -ge "$want_bulk" ]; echo $?)" \
	"leaf1's spine port: the latency class sent $d_10 B (payload $want_lat), the bulk class $d_11 B (payload $want_bulk)"
ok "$([ $((d_99 * 100)) -lt $((d_10 + d_11)) ]; echo $?)" \
	"unmarked on it: $d_99 B, under 1% (the lanes' handshakes, before their class is set)"
# the latency class's queue is its own message being serialized at the
# link's rate (8 KiB: at most 6 packets, 9000 B on the wire); the bulk
# class's is a standing queue
ok "$([ "$(p90 "$tmp/q10")" -le 9000 ] && [ "$(p90 "$tmp/q11")" -gt 100000 ]; echo $?)" \
	"the bulk class holds a queue (p90 $(p90 "$tmp/q11") B) while the latency class holds at most its one message (p90 $(p90 "$tmp/q10") B)"
is "$(awk '/^# latency/ { print $3, NF }' "$tmp/lat.0")" "$ITERS 7" \
	"the latency job's quantiles are over its $ITERS iterations ($(grep '^# latency' "$tmp/lat.0"))"

# Unmarked: the same latency job with no class.
s10=$(sent 10) s99=$(sent 99)
job plain n1 n3 - --coll allreduce -b 8K -e 8K -n 1500 -w 20 --gap-us 1000 --idle-us 5
sleep 1
tos n1 198.19.0.7 0 >"$tmp/tos.plain"
wait_all && verified plain
ok $? "unmarked: the latency job ran, every result right"
d10=$(($(sent 10) - s10)) d99=$(($(sent 99) - s99))
is "$(cat "$tmp/tos.plain") $d10 $([ "$d99" -ge $((1520 * 8192)) ] && echo default)" "4/4 0 default" \
	"unmarked: its lanes carry tos 0, the latency class sent nothing more, the default class its $d99 B"
