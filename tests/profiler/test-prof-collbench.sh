#!/usr/bin/env bash
# fabriciq-collbench drives the profiler plugin as NCCL does, beside the
# real net plugin, 2 ranks over loopback: for each profiler version the
# plugin's own counts (its finalize report, FABRICIQ_PROFILER_DUMP) equal
# the operations collbench ran, computed here from the run's sizes and
# iterations, and the proxy operations, steps and network events the
# driver sent; nothing dropped, rejected or left live.
. "$(dirname "$0")/../lib/tap.sh"
: "${top_builddir:=.}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
NET="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
PROF="$(cd "$top_builddir" && pwd)/nccl-profiler/.libs/libnccl-profiler-fabriciq.so"
[ -x "$CB" ] && [ -f "$NET" ] && [ -f "$PROF" ] || skip_all "collbench, net plugin or profiler not built"
export FABRICIQ_IFACES=lo FABRICIQ_CLOCK_PAGE=/nonexistent FABRICIQ_TELEMETRY=0
plan 35
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run2 ARGS...: both ranks with the profiler; rank R's report in
# $tmp/dumpR, its stdout in $tmp/outR.
run2() {
	local port p1 rc0 rc1=0
	port=$(free_port)
	rm -f "$tmp"/dump0 "$tmp"/dump1
	FABRICIQ_PROFILER_DUMP="$tmp/dump1" timeout 120 "$CB" -p "$NET" --profiler "$PROF" --rank 1 --nranks 2 \
		--bootstrap "127.0.0.1:$port" "$@" >"$tmp/out1" 2>"$tmp/err1" &
	p1=$!
	FABRICIQ_PROFILER_DUMP="$tmp/dump0" timeout 120 "$CB" -p "$NET" --profiler "$PROF" --rank 0 --nranks 2 \
		--bootstrap "127.0.0.1:$port" "$@" >"$tmp/out0" 2>"$tmp/err0"
	rc0=$?
	wait $p1 || rc1=$?
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && return 0
	diag "rank 0 rc $rc0, rank 1 rc $rc1"; sed 's/^/#   /' "$tmp/err0" "$tmp/err1" | head -10
	return 1
}

# field FILE PREFIX KEY: KEY's value on the first line starting with PREFIX.
field() { awk -v p="$2" -v k="$3" '$1 == p { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) { print kv[2]; exit } } }' "$1"; }
# sent R KEY: what the driver says it sent ('# profiler rank R: ... sent: KEY N').
sent() { awk -v k="$2" '/^# profiler rank/ { for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$tmp/out$1"; }
# nsizes MIN MAX FACTOR: how many sizes collbench runs.
nsizes() { local s=$1 n=0; while [ "$s" -le "$2" ]; do n=$((n + 1)); s=$((s * $3)); done; echo $n; }

# check R WHAT OPS PROXY STEPS NET: rank R's report against the figures.
check() {
	local d="$tmp/dump$1" bad=""
	[ -s "$d" ] || { ok 1 "$2: rank $1 wrote its report"; return; }
	for kv in "ops=$3" "proxy_ops=$4" "steps=$5" "net=$6" live=0 dropped_pool=0 dropped_windows=0 \
		dropped_ops=0 unknown_type=0 net_unknown=0 bad_handle=0 clock=raw; do
		[ "$(field "$d" profiler "${kv%%=*}")" = "${kv#*=}" ] ||
			bad="$bad ${kv%%=*}=$(field "$d" profiler "${kv%%=*}")(want ${kv#*=})"
	done
	[ -z "$bad" ]; ok $? "$2: rank $1 counts ops $3, proxyOps $4, steps $5, net $6; nothing dropped or live" ||
		diag "$bad"
}

# allreduce 8 B..1 MiB x4: each op is 2 ring steps per connection, one
# send and one receive proxyOp, one 1-MiB-or-less request per transfer.
S=$(nsizes 8 1048576 4); IT=3; WU=1
OPS=$((S * (IT + WU)))
for v in 1 2 3 4 5 6; do
	net=$((OPS * 4)); [ $v -lt 3 ] && net=0 # netPlugin events since v3
	if run2 --coll allreduce -b 8 -e 1M -f 4 -n $IT -w $WU --profiler-abi $v; then
		ok 0 "allreduce through ncclProfiler_v$v: both ranks ran, verified"
		check 0 "v$v allreduce" $OPS $((OPS * 2)) $((OPS * 4)) $net
		check 1 "v$v allreduce" $OPS $((OPS * 2)) $((OPS * 4)) $net
		[ "$(sent 0 colls)" = "$OPS" ] && [ "$(sent 0 proxyOps)" = "$(field "$tmp/dump0" profiler proxy_ops)" ] &&
			[ "$(sent 0 steps)" = "$(field "$tmp/dump0" profiler steps)" ] && [ "$(sent 0 net)" = "$(field "$tmp/dump0" profiler net)" ]
		ok $? "v$v: the plugin counted what the driver sent ($(grep '^# profiler rank 0' "$tmp/out0" | cut -d: -f3))"
	else
		ok 1 "allreduce through ncclProfiler_v$v"; skip "no run"; skip "no run"; skip "no run"
	fi
done
# Each op's record: AllReduce, RING, SIMPLE, bytes of the size, raw clock.
[ "$(grep -c '^op func=AllReduce algo=RING proto=SIMPLE .* sync=0 proxy_ops=2$' "$tmp/dump0")" = "$OPS" ]
ok $? "v6: $OPS op records, AllReduce/RING/SIMPLE, 2 proxyOps each, unsynchronised clock"
[ "$(awk '/^window kind=coll/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "count") print kv[2] } }' "$tmp/dump0")" = "$OPS" ]
ok $? "v6: one collective window holds all $OPS"
# pingpong: rank 0 Send then Recv, rank 1 the reverse, per iteration.
S=$(nsizes 8 65536 8); IT=5; WU=2
P=$((S * (IT + WU) * 2))
if run2 --coll pingpong -b 8 -e 64K -f 8 -n $IT -w $WU; then
	ok 0 "pingpong through ncclProfiler_v6"
	check 0 "pingpong" $P $P $P $P
	[ "$(field "$tmp/dump0" profiler p2ps)" = "$P" ] && [ "$(field "$tmp/dump0" profiler colls)" = 0 ]
	ok $? "pingpong: $P p2ps, no collective"
else
	ok 1 "pingpong"; skip "no run"; skip "no run"
fi
S=$(nsizes 64 65536 32); IT=2; WU=1
A=$((S * (IT + WU)))
if run2 --coll alltoall -b 64 -e 64K -f 32 -n $IT -w $WU --profiler-abi 5; then
	ok 0 "alltoall through ncclProfiler_v5"
	check 1 "v5 alltoall" $A $((A * 2)) $((A * 2)) $((A * 2))
else
	ok 1 "alltoall"; skip "no run"
fi
# The IB transport's events instead: one QP event per request; a send's
# carries its length, a receive's none (as NCCL's); QP 0x100 + connection.
S=$(nsizes 4096 65536 16); IT=2; WU=1
OPS=$((S * (IT + WU)))
if run2 --coll allreduce -b 4K -e 64K -f 16 -n $IT -w $WU --profiler-net ib; then
	ok 0 "allreduce with IB QP events through ncclProfiler_v6"
	check 0 "v6 allreduce, IB events" $OPS $((OPS * 2)) $((OPS * 4)) $((OPS * 4))
	ib=$(field "$tmp/dump0" profiler net_ib) sk=$(field "$tmp/dump0" profiler net_sock)
	# rank 0 sends to rank 1 on connection 2 (QP 0x102), receives on 3 (0x103)
	sendq=$(awk '/^window kind=net_ib/ && / id=258 / && / sub=1 / { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "count") c = kv[2]; if (kv[1] == "bytes") b = kv[2] } } END { print c + 0, b + 0 }' "$tmp/dump0")
	recvq=$(awk '/^window kind=net_ib/ && / id=259 / { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "count") c = kv[2]; if (kv[1] == "bytes") b = kv[2] } } END { print c + 0, b + 0 }' "$tmp/dump0")
	want_b=0; for ((sz = 4096; sz <= 65536; sz *= 16)); do want_b=$((want_b + (IT + WU) * sz)); done
	[ "$ib" = $((OPS * 4)) ] && [ "$sk" = 0 ] && [ "$sendq" = "$((OPS * 2)) $want_b" ] && [ "$recvq" = "$((OPS * 2)) 0" ]
	ok $? "IB QP windows: $ib QP events, none socket; QP 0x102 sends $((OPS * 2)) WRs, $want_b bytes; QP 0x103 receives $((OPS * 2)), length 0 (send $sendq, recv $recvq)"
else
	ok 1 "allreduce with IB events"; skip "no run"; skip "no run"
fi
err=$("$CB" -p "$NET" --profiler /nonexistent/prof.so --rank 0 --nranks 1 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "cannot load profiler" <<<"$err"
ok $? "a bad profiler path: exit $rc, says so"
done_testing
