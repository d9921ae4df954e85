#!/usr/bin/env bash
# FABRICIQ_TRANSPORT without an RDMA device (what this machine has): ib
# fails init with a clear WARN (NCCL falls back visibly), auto runs TCP
# lanes, a bad value is refused; the IB variables are validated.
. "$(dirname "$0")/../lib/tap.sh"
: "${top_builddir:=.}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
PROBE="$top_builddir/tests/nccl/ib-devices"
[ -x "$CB" ] && [ -f "$SO" ] && [ -x "$PROBE" ] || skip_all "collbench, plugin or ib-devices not built"
[ "$("$PROBE" | head -1)" = 0 ] || skip_all "an RDMA device is present (test-ib-device.sh covers it)"
export FABRICIQ_IFACES=lo FABRICIQ_CLOCK_PAGE=/nonexistent FABRICIQ_TELEMETRY=0
plan 8

err=$(FABRICIQ_TRANSPORT=ib "$CB" -p "$SO" --rank 0 --nranks 1 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "plugin init failed" <<<"$err"
ok $? "FABRICIQ_TRANSPORT=ib, no device: init fails" || diag "$err"
grep -q "FABRICIQ_TRANSPORT=ib but no usable RDMA device: .*; the plugin does not load" <<<"$err"
ok $? "the WARN says why ($(grep -o 'FABRICIQ_TRANSPORT=ib but[^;]*' <<<"$err" | head -1))"

port=$(free_port)
r1err=$(mktemp)
trap 'rm -f "$r1err"' EXIT
FABRICIQ_TRANSPORT=auto timeout 60 "$CB" -p "$SO" --rank 1 --nranks 2 --bootstrap "127.0.0.1:$port" \
	--coll allreduce -b 8 -e 1M -f 16 -n 2 -w 0 >/dev/null 2>"$r1err" &
p1=$!
out=$(FABRICIQ_TRANSPORT=auto timeout 60 "$CB" -p "$SO" --rank 0 --nranks 2 --bootstrap "127.0.0.1:$port" \
	--coll allreduce -b 8 -e 1M -f 16 -n 2 -w 0 2>&1); rc=$?
wait $p1; rc1=$?
[ $rc -eq 0 ] && [ $rc1 -eq 0 ]
ok $? "FABRICIQ_TRANSPORT=auto, no device: allreduce runs" ||
	{ diag "port $port, rank 0 exit $rc, rank 1 exit $rc1"; diag "$out"; sed 's/^/# rank 1: /' "$r1err"; }
[ -z "$(awk '!/^#/ && $8 != 0' <<<"$out")" ]; ok $? "auto: allreduce verified"

for bad in "FABRICIQ_TRANSPORT=rdma:must be tcp, ib or auto" \
	"FABRICIQ_IB_GID_INDEX=x3:must be a GID table index" \
	"FABRICIQ_IB_TIMEOUT=32:must be between 1 and 31" \
	"FABRICIQ_IB_RETRY_CNT=8:must be between 0 and 7"; do
	var=${bad%%:*}; msg=${bad#*:}
	err=$(env "$var" "$CB" -p "$SO" --rank 0 --nranks 1 2>&1); rc=$?
	[ $rc -eq 2 ] && grep -q "$msg" <<<"$err"; ok $? "$var refused: $msg" || diag "$err"
done
done_testing
