#!/usr/bin/env bash
# Clock accuracy on the emulated cluster: fabriciq-agent vs chrony, same
# hosts, same links, same load, same run.
#
# 4 hosts (n1 n2 on leaf1, n3 n4 on leaf2, two spines) with random offsets
# (up to +-100 ms on MONOTONIC_RAW) run fabriciq-agent (all pairs, both
# rails). Every second each agent's offset estimate for every peer is
# compared with the testbed's truth.
#
# chrony (software timestamps, xleave, minpoll/maxpoll -6: its fastest)
# runs on three client/server pairs that all cross the leaf-spine links:
#   n3 -> n1 (rail0, 198.19.0.3), n4 -> n1 (rail0), n2 -> n3 (rail1, 198.19.1.7)
# (n2 -> n1 would stay inside leaf1 and never meet the load). Every chronyd
# runs with -x so that nobody touches the shared CLOCK_REALTIME. With -x
# chronyd uses its null clock driver (sys_null.c): the corrections it would
# apply (offset and frequency) accumulate in an offset register, and the
# clock it believes in, and measures its server against, is REALTIME plus
# that register. Since the true REALTIME offset between any two emulated
# hosts is 0, chrony's true error is that accumulated correction, which
# `chronyc tracking` prints as "System time" (REF_GetTrackingReport ->
# LCL_GetOffsetCorrection). The "offset" of tracking.log is only the
# residual of each update against its own (already corrected) clock: small
# by construction even when the clock is far off, so it is NOT chrony's
# error (the old version of this bench used it; it is printed below only
# for comparison, as "self-reported"). chrony's error is sampled once a
# second, like fabriciq's, over a private command socket per chronyd.
#
# The fabriciq estimates compared with chrony are those of the same three
# client -> server paths (n3 rail0 -> n1, n4 rail0 -> n1, n2 rail1 -> n3).
#
# Two phases: idle, then under load: TCP bulk both ways between leaf1 and
# leaf2 through 200 Mbit/s TBF-shaped spine links (both ends shaped), four
# flows whose source ports are chosen (ip route get in the leaves, L4 ECMP
# hashing) so that every spine link carries one in each direction: any
# path between the leaves, chrony's or fabriciq's, crosses a standing
# queue in both directions. The route each compared path takes is printed
# (chrony clients use a fixed source port, acquisitionport 7123, so their
# route is known). Prints |error| p50/p99/max per phase, chrony's p99 over
# fabriciq's on the same paths, and the machine's load average (1 min,
# sampled every second: mean/max) during each phase.
# BENCH_CLOCK_SECONDS (default 300) per phase. BENCH_CLOCK_KEEP=DIR keeps
# the samples (PHASE.fqpath: "second host nic peer error_ns" per fabriciq
# path, PHASE.chrony, PHASE.load) and chrony's logs there.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir/build}"
. "$top_srcdir/tests/testbed/lib/testlib.sh" # TB, FQTB_HELPERS, tb_agents_start
AGENT="$top_builddir/slurmd-agent/fabriciq-agent"
export FQTB_STATE=${TMPDIR:-/tmp}/fqtb-bclk-$$
SECS=${BENCH_CLOCK_SECONDS:-300}

[ "$(id -u)" -eq 0 ] || { echo "bench-clock: SKIP: needs root"; exit 0; }
command -v chronyd >/dev/null && command -v chronyc >/dev/null ||
	{ echo "bench-clock: SKIP: chronyd/chronyc not installed (apt-get install chrony)"; exit 0; }
[ -x "$AGENT" ] || { echo "bench-clock: fabriciq-agent not built"; exit 1; }
keep() {
	[ -n "${BENCH_CLOCK_KEEP:-}" ] || return 0
	mkdir -p "$BENCH_CLOCK_KEEP" && cp -r "$FQTB_STATE"/idle.* "$FQTB_STATE"/load.* "$FQTB_STATE/chrony" \
		"$BENCH_CLOCK_KEEP"/ 2>/dev/null
}
trap 'keep; "$TB" down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

"$TB" up --prefix bclk --services none --max-offset 100ms >/dev/null 2>&1 || { echo "bench-clock: testbed up failed"; exit 1; }
declare -A truth
while read -r h off; do truth[$h]=$off; done < <("$TB" truth)

tb_agents_start "$AGENT" || { echo "bench-clock: agents did not start"; exit 1; }
cdir=$FQTB_STATE/chrony
mkdir -p -m 0700 "$cdir"
# CLIENT SERVER_HOST SERVER_IP RAIL: the compared pairs
PAIRS="n3 n1 198.19.0.3 0
n4 n1 198.19.0.3 0
n2 n3 198.19.1.7 1"
chrony_server() { # NAME HOST IP
	mkdir -p -m 0700 "$cdir/$1"
	cat >"$cdir/$1/conf" <<CONF
local stratum 1
allow 198.18.0.0/15
bindaddress $3
cmdport 0
bindcmdaddress $cdir/$1/sock
pidfile $cdir/$1/pid
CONF
	"$TB" daemon start "$2" "$1" -- chronyd -u root -x -d -f "$cdir/$1/conf" >/dev/null
}
chrony_server chrony-srv-n1 n1 198.19.0.3
chrony_server chrony-srv-n3 n3 198.19.1.7
while read -r c s ip r; do
	mkdir -p -m 0700 "$cdir/$c"
	cat >"$cdir/$c/conf" <<CONF
server $ip iburst minpoll -6 maxpoll -6 xleave
port 0
acquisitionport 7123
cmdport 0
bindcmdaddress $cdir/$c/sock
pidfile $cdir/$c/pid
logdir $cdir/$c
log tracking measurements
CONF
	"$TB" daemon start "$c" chrony-cli -- chronyd -u root -x -d -f "$cdir/$c/conf" >/dev/null
done <<<"$PAIRS"

# route_of SRC_HOST SRC_IP DST_IP PROTO SPORT DPORT -> "spineN" (the
# leaf's ECMP choice for that 5-tuple), or "leaf" if it stays in the leaf
route_of() {
	local leaf r
	leaf=leaf$(((${1#n} - 1) / 2 + 1))
	r=$(awk -v ip="$2" 'BEGIN { split(ip, a, "."); print a[3] }')
	"$TB" exec "$leaf" ip route get "$3" from "$2" iif "$1r$r" ipproto "$4" sport "$5" dport "$6" 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { d = $(i + 1); exit } }
			END { if (d ~ /^s[0-9]+$/) print "spine" substr(d, 2); else print "leaf" }'
}
host_ip() { echo "198.19.$2.$((2 * ${1#n} + 1))"; } # HOST RAIL

show_routes() {
	local c s ip r cip
	while read -r c s ip r; do
		cip=$(host_ip "$c" "$r")
		printf '  route %s -> %s rail%s: chrony (udp 7123->123) %s, back %s; fabriciq (udp 7101) %s, back %s\n' \
			"$c" "$s" "$r" "$(route_of "$c" "$cip" "$ip" udp 7123 123)" "$(route_of "$s" "$ip" "$cip" udp 123 7123)" \
			"$(route_of "$c" "$cip" "$ip" udp 7101 7101)" "$(route_of "$s" "$ip" "$cip" udp 7101 7101)"
	done <<<"$PAIRS"
}

# start_load: one TCP bulk flow per (direction between the leaves, spine),
# its source port picked so that the leaf hashes it onto that spine
start_load() {
	local f src sip dip spine sp
	for f in "n1 0 n3 spine1" "n2 1 n4 spine2" "n3 0 n1 spine1" "n4 1 n2 spine2"; do
		set -- $f
		sip=$(host_ip "$1" "$2")
		dip=$(host_ip "$3" "$2")
		spine=
		for ((sp = 40000; sp < 40200; sp++)); do
			if [ "$(route_of "$1" "$sip" "$dip" tcp "$sp" 9200)" = "$4" ]; then spine=$4; break; fi
		done
		[ -n "$spine" ] || { echo "bench-clock: no source port hashes $1 -> $3 onto $4"; return 1; }
		"$TB" exec "$3" "$FQTB_HELPERS/tb-flow" sink --port 9200 --seconds $((SECS + 20)) >/dev/null 2>&1 &
		sleep 0.2
		"$TB" exec "$1" "$FQTB_HELPERS/tb-flow" send --dst "$dip" --bind "$sip" --sport "$sp" --port 9200 \
			--seconds $((SECS + 10)) >/dev/null 2>&1 &
		printf '  load: tcp %s:%s -> %s:9200 over %s\n' "$sip" "$sp" "$dip" "$spine"
	done
}

# sample SECONDS OUT: every second, |estimate - truth| of every fabriciq
# path (OUT.fq; the compared paths also in OUT.fqcmp; OUT.fqpath: "second
# host nic peer error"), chrony's true error (OUT.chrony: |System time| of
# `chronyc tracking`) and the 1-min loadavg. The agents' status files are
# read directly (one awk for all four): the sampler itself must stay cheap
# on a busy machine.
sample() {
	local t0=$EPOCHSECONDS end=$((EPOCHSECONDS + $1)) c s ip r v la rest tr cmp
	tr=$(for h in "${!truth[@]}"; do printf '%s=%s,' "$h" "${truth[$h]}"; done)
	cmp=$(while read -r c s ip r; do printf '%s/rail%s/%s,' "$c" "$r" "$s"; done <<<"$PAIRS")
	: >"$2.fq"
	: >"$2.fqcmp"
	: >"$2.chrony"
	: >"$2.load"
	: >"$2.fqpath"
	while [ "$EPOCHSECONDS" -lt "$end" ]; do
		sleep 1
		awk -F'"' -v sec=$((EPOCHSECONDS - t0)) -v tr="$tr" -v cmp="$cmp" \
			-v o_all="$2.fq" -v o_cmp="$2.fqcmp" -v o_path="$2.fqpath" '
			BEGIN { n = split(tr, a, ","); for (i = 1; i <= n; i++) if (split(a[i], kv, "=") == 2) T[kv[1]] = kv[2]
				n = split(cmp, a, ","); for (i = 1; i <= n; i++) C[a[i]] = 1 }
			FNR == 1 { me = FILENAME; sub(/.*agent-/, "", me); sub(/\.json$/, "", me) }
			/"local_nic"/ { nic = $4 } /"peer_node"/ { p = $4 }
			/"offset_ns"/ { v = $3; gsub(/[^0-9-]/, "", v); e = v - (T[p] - T[me]); ae = e < 0 ? -e : e
				printf "%d\n", ae >> o_all
				if ((me "/" nic "/" p) in C) printf "%d\n", ae >> o_cmp
				printf "%d %s %s %s %d\n", sec, me, nic, p, e >> o_path }' \
			"$FQTB_STATE"/agent-n[1-4].json 2>/dev/null
		while read -r c s ip r; do
			# CSV field 5: System time, seconds (the accumulated correction)
			v=$(chronyc -n -c -h "$cdir/$c/sock" tracking 2>/dev/null | awk -F, 'NF >= 14 { v = $5 * 1e9; if (v < 0) v = -v; printf "%d", v }')
			[ -n "$v" ] && echo "$v" >>"$2.chrony"
		done <<<"$PAIRS"
		read -r la rest </proc/loadavg
		echo "$la" >>"$2.load"
	done
}

# chrony's self-reported offset (tracking.log field 7, seconds) at each
# update after T0 -> |ns|: NOT its error (see the header), for comparison
chrony_selfreported() { # T0_EPOCH OUT
	local c s ip r since
	since=$(date -u -d "@$1" '+%Y-%m-%d %H:%M:%S')
	: >"$2"
	while read -r c s ip r; do
		# "YYYY-MM-DD HH:MM:SS" compares as a string
		awk -v since="$since" '/^ *[0-9][0-9][0-9][0-9]-/ && ($1 " " $2) >= since {
				v = $7 * 1e9; if (v < 0) v = -v; printf "%d\n", v }' \
			"$cdir/$c/tracking.log" 2>/dev/null >>"$2"
	done <<<"$PAIRS"
}

pct() { # FILE -> "p50 p99 max n" in ns (nearest rank)
	sort -n "$1" | awk '
		function rank(q,   r) { r = int(q * NR + 0.999999); if (r < 1) r = 1; return r }
		{ v[NR] = $1 }
		END { if (NR == 0) { print "0 0 0 0"; exit }
		      printf "%d %d %d %d\n", v[rank(0.5)], v[rank(0.99)], v[NR], NR }'
}

phase() { # NAME
	local t0 f
	t0=$(date +%s)
	f=$FQTB_STATE/$1
	sample "$SECS" "$f"
	chrony_selfreported "$t0" "$f.chrony-self"
	read -r fp50 fp99 fmax fn <<<"$(pct "$f.fq")"
	read -r gp50 gp99 gmax gn <<<"$(pct "$f.fqcmp")"
	read -r cp50 cp99 cmax cn <<<"$(pct "$f.chrony")"
	read -r sp50 sp99 smax sn <<<"$(pct "$f.chrony-self")"
	printf '%-5s fabriciq, all 24 paths        |err| p50 %8s ns  p99 %8s ns  max %8s ns  (%s estimates)\n' "$1" "$fp50" "$fp99" "$fmax" "$fn"
	printf '%-5s fabriciq, the 3 chrony paths  |err| p50 %8s ns  p99 %8s ns  max %8s ns  (%s estimates)\n' "$1" "$gp50" "$gp99" "$gmax" "$gn"
	printf '%-5s chrony,   true error (System time) p50 %8s ns  p99 %8s ns  max %8s ns  (%s samples)\n' "$1" "$cp50" "$cp99" "$cmax" "$cn"
	printf '%-5s chrony,   self-reported offset     p50 %8s ns  p99 %8s ns  max %8s ns  (%s updates; not its error)\n' "$1" "$sp50" "$sp99" "$smax" "$sn"
	if [ "$gn" -gt 0 ] && [ "$cn" -gt 0 ] && [ "$gp99" -gt 0 ]; then
		awk -v c="$cp99" -v f="$gp99" 'BEGIN { printf "%-5s ratio chrony p99 / fabriciq p99 (same paths): %.1fx (goal >= 10x under load)\n", "", c / f }'
	fi
	awk -v n="$1" '{ s += $1; if ($1 > m) m = $1 } END { if (NR) printf "%-5s machine loadavg (1 min) during the phase: mean %.2f max %.2f (%d cores)\n", n, s / NR, m, '"$(nproc)"' }' "$f.load"
}

echo "bench-clock: 4 hosts, random offsets <= 100 ms, $SECS s per phase; warming up 20 s"
sleep 20
show_routes
phase idle
"$TB" shape leaf1-spine1 200mbit && "$TB" shape leaf1-spine2 200mbit
start_load || exit 1
sleep 5
phase load
wait
