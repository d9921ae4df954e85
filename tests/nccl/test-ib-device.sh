#!/usr/bin/env bash
# The IB lane on a real RDMA device: fabriciq-collbench (allreduce and
# alltoall verified, pingpong) with FABRICIQ_TRANSPORT=ib (which never
# falls back to TCP lanes: init fails instead) over the first RDMA netdev,
# through two ABI versions, and the ncclNet conformance suite (test-abi)
# over the ib lane. Skips without a device.
. "$(dirname "$0")/../lib/tap.sh"
: "${top_builddir:=.}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
PROBE="$top_builddir/tests/nccl/ib-devices"
[ -x "$CB" ] && [ -f "$SO" ] && [ -x "$PROBE" ] || skip_all "collbench, plugin or ib-devices not built"
probe=$("$PROBE")
if [ "$(head -1 <<<"$probe")" = 0 ]; then
	grep -q "without verbs" <<<"$probe" && skip_all "built --without-verbs"
	skip_all "no RDMA device (ibv_get_device_list returned none)"
fi
netdev=$(awk '$1 == "netdev" { print $2; exit }' <<<"$probe")
[ -n "$netdev" ] || skip_all "RDMA device without a netdev with an address (IB without IPoIB): no side channel"
export FABRICIQ_IFACES=$netdev FABRICIQ_TRANSPORT=ib FABRICIQ_CLOCK_PAGE=/nonexistent FABRICIQ_TELEMETRY=0
plan 8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run2() {
	port=$(free_port)
	timeout 120 "$CB" -p "$SO" --rank 1 --nranks 2 --bootstrap "127.0.0.1:$port" "$@" >/dev/null 2>"$tmp/r1.err" &
	local p1=$!
	out=$(timeout 120 "$CB" -p "$SO" --rank 0 --nranks 2 --bootstrap "127.0.0.1:$port" "$@" 2>"$tmp/r0.err")
	local rc0=$? rc1=0
	wait $p1 || rc1=$?
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && return 0
	diag "rank 0 rc $rc0, rank 1 rc $rc1"; sed 's/^/#   /' "$tmp/r0.err" "$tmp/r1.err" | head -20
	return 1
}
run2 --coll allreduce -b 8 -e 64M -f 4 -n 3 -w 1; ok $? "ib: allreduce 8 B..64 MiB over $netdev"
[ -z "$(awk '!/^#/ && $8 != 0' <<<"$out")" ]; ok $? "ib: allreduce verified"
run2 --coll alltoall -b 64 -e 4M -f 8 -n 3 -w 1; ok $? "ib: alltoall"
[ -z "$(awk '!/^#/ && $8 != 0' <<<"$out")" ]; ok $? "ib: alltoall verified"
run2 --coll pingpong -b 8 -e 1M -f 32 -n 20 -w 5; ok $? "ib: pingpong"
sed 's/^/# /' <<<"$out" | head -12
for v in 8 11; do
	run2 --coll allreduce -b 4K -e 1M -f 16 -n 2 -w 0 --abi $v; ok $? "ib: allreduce through ncclNetPlugin_v$v"
done
ABI="$top_builddir/tests/nccl/test-abi"
if [ -x "$ABI" ]; then
	FQ_NCCL_PLUGIN=$SO timeout 300 "$ABI" >"$tmp/abi.out" 2>&1
	rc=$?
	grep '^not ok' "$tmp/abi.out" | sed 's/^/#   /' | head -20
	[ $rc -eq 0 ] && ! grep -q '^not ok' "$tmp/abi.out"
	ok $? "ib: ncclNet conformance (test-abi, ABI 8..12) over $netdev"
else
	skip "test-abi not built"
fi
done_testing
