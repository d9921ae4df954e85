#!/usr/bin/env bash
# fabriciq-collbench over loopback: 2 ranks as 2 processes with a TCP
# bootstrap; allreduce (verified), alltoall (verified), pingpong; each ABI
# version; one-line errors for a bad plugin path or a missing symbol.
. "$(dirname "$0")/../lib/tap.sh"
: "${top_builddir:=.}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
[ -x "$CB" ] && [ -f "$SO" ] || skip_all "collbench or plugin not built"
export FABRICIQ_IFACES=lo FABRICIQ_CLOCK_PAGE=/nonexistent FABRICIQ_TELEMETRY=0
plan 18

# run2 ARGS...: rank 1 in the background, rank 0 in front; rank 0's output
# in $out, status 0 iff both ranks exit 0.
run2() {
	port=$(free_port)
	timeout 120 "$CB" -p "$SO" --rank 1 --nranks 2 --bootstrap "127.0.0.1:$port" "$@" >/dev/null 2>"$tmp/r1.err" &
	local p1=$!
	out=$(timeout 120 "$CB" -p "$SO" --rank 0 --nranks 2 --bootstrap "127.0.0.1:$port" "$@" 2>"$tmp/r0.err")
	local rc0=$? rc1=0
	wait $p1 || rc1=$?
	[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && return 0
	diag "rank 0 rc $rc0, rank 1 rc $rc1"; sed 's/^/#   /' "$tmp/r0.err" "$tmp/r1.err" | head -10
	return 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run2 --coll allreduce -b 8 -e 8M -f 4 -n 3 -w 1; ok $? "allreduce 8 B..8 MiB, 2 ranks"
[ -z "$(awk '!/^#/ && $8 != 0' <<<"$out")" ]; ok $? "allreduce: every size verified (#wrong 0)"
rows=$(grep -vc '^#' <<<"$out"); is "$rows" 11 "allreduce: one row per size (8 B, x4 each, to 8 MiB)"
run2 --coll alltoall -b 64 -e 4M -f 8 -n 3 -w 1; ok $? "alltoall 64 B..4 MiB, 2 ranks"
[ -z "$(awk '!/^#/ && $8 != 0' <<<"$out")" ]; ok $? "alltoall: contents verified"
# Every iteration verified into a poisoned buffer (--timeline): a stale
# buffer cannot pass. Small socket buffers make a lane stop mid-payload
# while the other lands a message's last chunk: the message is complete
# only when both have landed (a receive once completed with the tail of
# a 512 KiB chunk still in its socket).
for coll in alltoall allreduce; do
	FABRICIQ_SOCKET_BUFFER=256K FABRICIQ_LANES=2 run2 --coll $coll -b 4M -e 4M -n 20 -w 1 --timeline 1000 &&
		[ -z "$(awk '!/^#/ && $8 != 0' <<<"$out")" ]
	ok $? "$coll 4 MiB over 2 lanes with 256 KiB socket buffers, every iteration verified ($(awk '/^# timeline/ { w = $6 } END { print w + 0 }' <<<"$out") wrong)"
done
run2 --coll pingpong -b 8 -e 1M -f 32 -n 20 -w 5; ok $? "pingpong 8 B..1 MiB"
run2 --coll allreduce -b 1M -e 1M -n 2 -w 0 --json
grep -q '"busbw_gbps"' <<<"$out" && python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["results"][0]["wrong"]==0' <<<"$out"
ok $? "--json is valid JSON with busbw"
for v in 8 9 10 11; do
	run2 --coll allreduce -b 4K -e 1M -f 16 -n 2 -w 0 --abi $v; ok $? "allreduce through ncclNetPlugin_v$v"
done
err=$("$CB" -p /nonexistent/plugin.so --rank 0 --nranks 1 2>&1); rc=$?
[ $rc -ne 0 ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -q "cannot load plugin" <<<"$err"
ok $? "bad plugin path: one-line error ($err)"
err=$("$CB" -p "$(ldd "$CB" | awk '/libc.so/ { print $3 }')" --rank 0 --nranks 1 2>&1); rc=$?
[ $rc -ne 0 ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -q "no symbol ncclNetPlugin_v" <<<"$err"
ok $? "a .so without ncclNetPlugin_vN: one-line error ($err)"
err=$(FABRICIQ_LANES=0 "$CB" -p "$SO" --rank 0 --nranks 1 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "FABRICIQ_LANES='0': must be between 1 and 16" <<<"$err" && grep -q "plugin init failed" <<<"$err"
ok $? "a bad FABRICIQ_ variable: the plugin's WARN names it, init fails" || diag "$err"
err=$(FABRICIQ_IFACES=nosuchif0 "$CB" -p "$SO" --rank 0 --nranks 1 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "interface 'nosuchif0' does not exist" <<<"$err"
ok $? "FABRICIQ_IFACES naming a missing interface: init fails, says which" || diag "$err"
err=$("$CB" -p "$SO" --coll bogus --rank 0 --nranks 1 2>&1); rc=$?
[ $rc -eq 2 ]; ok $? "bad option value: exit 2 ($err)"
done_testing
